//! `mmulab bench`: native benchmarks (GUPS, latency, bandwidth) under a chosen page size,
//! each verifying the page size it got; `--compare` runs page sizes interleaved and prints
//! ratios with their spread.

use anyhow::bail;

/// Which benchmark to run.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Which {
    /// HPCC RandomAccess (GUP/s), with verification.
    Gups,
    /// lat_mem_rd-style dependent-load latency over a size sweep.
    Latency,
    /// Read, write and copy bandwidth.
    Bandwidth,
}

/// Native benchmarks under 4 KiB, THP, hugetlbfs or mTHP pages.
#[derive(clap::Args)]
pub struct Args {
    /// The benchmark.
    #[arg(value_enum)]
    which: Which,
    /// Page size: 4k, thp, hugetlb (2 MiB pool), hugetlb-1g (1 GiB pool) or mthp-SIZE
    /// (e.g. mthp-64K).
    #[arg(long, default_value = "4k")]
    pages: String,
    /// Run several page sizes interleaved and print ratios, e.g. `4k,thp`.
    #[arg(long, value_name = "P1,P2,...")]
    compare: Option<String>,
    /// Repeats per page size with --compare (default 3).
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Memory size: GUPS table (power of two), latency maximum array, bandwidth buffer
    /// (default 256M; K, M, G suffixes).
    #[arg(long, default_value = "256M")]
    size: String,
    /// Latency: bytes between pointers (default 64).
    #[arg(long, default_value_t = 64)]
    stride: usize,
    /// Latency: the ring's order: `pages` (random pages, random lines within each page,
    /// as lat_mem_rd -t), `lines` (every load to a random line of the array, as lmbench's
    /// and test-tlb's random modes) or `sequential`.
    #[arg(long, default_value = "pages", value_name = "pages|lines|sequential")]
    order: String,
    /// Latency: the same as `--order sequential`.
    #[arg(long, conflicts_with = "order")]
    sequential: bool,
    /// Latency: loads per timed pass.
    #[arg(long, default_value_t = 2_000_000)]
    loads: usize,
    /// Bandwidth: passes per operation (the best is kept).
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    #[cfg(not(target_os = "linux"))]
    {
        let _ = a;
        bail!("unsupported: `mmulab bench` needs Linux (mmap, madvise, smaps) to choose and verify page sizes");
    }
    #[cfg(target_os = "linux")]
    {
        run_linux(a)
    }
}

#[cfg(target_os = "linux")]
fn run_linux(a: Args) -> anyhow::Result<()> {
    use mmulab_probe::bench::{self, compare, parse_size, Pages};
    let size = parse_size(&a.size)?;
    let pages: Vec<Pages> = match &a.compare {
        Some(list) => list.split(',').map(Pages::parse).collect::<Result<_, _>>()?,
        None => vec![Pages::parse(&a.pages)?],
    };
    check_host(size, &pages)?;
    let order = if a.sequential {
        bench::latency::Order::Sequential
    } else {
        bench::latency::Order::parse(&a.order)?
    };
    // A benchmark reports when its runs are done; Ctrl-C ends it, saying so.
    crate::signals::end_on_interrupt("a benchmark reports only when its runs are done; nothing was measured to report");
    // The benchmarks have no progress callback: a line every few seconds says they run.
    let ticker = crate::progress::Ticker::start(&format!("bench {:?}", a.which), Box::new(|| None));
    let one = |p: Pages, seed: u64| -> mmulab_probe::Result<bench::BenchResult> {
        match a.which {
            Which::Gups => bench::gups::run(p, size, seed),
            Which::Latency => bench::latency::run(
                p,
                &bench::latency::Params {
                    max_bytes: size,
                    stride: a.stride,
                    order,
                    loads: a.loads,
                    ..Default::default()
                },
                seed,
            ),
            Which::Bandwidth => bench::bandwidth::run(p, size, a.passes, seed),
        }
    };
    if let Some(list) = &a.compare {
        if pages.len() < 2 {
            bail!("--compare {list}: give two or more page sizes, e.g. 4k,thp");
        }
        let mut seed = 1;
        let c = compare(&pages, a.repeats, |p| {
            seed += 1;
            errln!("bench: {:?} with {} (run {seed})", a.which, p.label());
            one(p, seed)
        })?;
        drop(ticker);
        check_gups(&c.runs)?;
        if a.json {
            outln!("{}", serde_json::to_string(&c)?);
        } else {
            for r in &c.runs {
                print_one(r);
            }
            outln!();
            for r in &c.ratios {
                outln!(
                    "ratio {} {}/{}: {:.3} (min {:.3}, max {:.3}, {} interleaved repeats): {}",
                    r.metric,
                    r.pages,
                    r.versus,
                    r.median,
                    r.min,
                    r.max,
                    r.n,
                    r.verdict()
                );
            }
        }
        return Ok(());
    }
    let p = Pages::parse(&a.pages)?;
    let r = one(p, 1)?;
    drop(ticker);
    check_gups(std::slice::from_ref(&r))?;
    if a.json {
        outln!("{}", serde_json::to_string(&r)?);
    } else {
        print_one(&r);
        if let Some(curve) = r.details.get("curve").and_then(|c| c.as_array()) {
            outln!("stride={}", a.stride);
            for pt in curve {
                outln!(
                    "{:.5} {:.3}",
                    pt["size_mb"].as_f64().unwrap_or(0.0),
                    pt["ns"].as_f64().unwrap_or(0.0)
                );
            }
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn check_gups(runs: &[mmulab_probe::bench::BenchResult]) -> anyhow::Result<()> {
    for r in runs {
        if r.details.get("verification").and_then(|v| v.as_str()) == Some("failed") {
            bail!(
                "GUPS verification failed with {} pages: {} errors",
                r.pages,
                r.details["errors"]
            );
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn print_one(r: &mmulab_probe::bench::BenchResult) {
    let m: Vec<String> = r
        .metrics
        .iter()
        .map(|m| format!("{} = {:.4} {}", m.name, m.value, m.unit))
        .collect();
    outln!(
        "{:?} pages={} {}: {}",
        r.kind,
        r.pages,
        if r.backing.ok {
            "backing verified"
        } else {
            "BACKING NOT AS REQUESTED"
        },
        m.join(", ")
    );
    outln!(
        "  backing: {} ({}; {:.0} % of requested size)",
        r.backing.how,
        r.backing_note,
        r.backing.fraction * 100.0
    );
    if let Some(v) = r.details.get("verification") {
        outln!("  verification: {v} ({} errors)", r.details["errors"]);
    }
    if r.counters.is_empty() {
        outln!("  counters: none ({})", r.counters_note.as_deref().unwrap_or("-"));
    } else {
        let c: Vec<String> = r.counters.iter().map(|(n, v)| format!("{n} {v:.4}/op")).collect();
        outln!("  counters: {}", c.join(", "));
    }
}

/// Refuses a benchmark whose buffer the host cannot hold before it is mapped: a mapping
/// larger than the available memory succeeds (overcommit) and the OOM killer ends the
/// run when it is touched. hugetlbfs pages come from their pool (its own error), not
/// from the available memory.
#[cfg(target_os = "linux")]
fn check_host(size: usize, pages: &[mmulab_probe::bench::Pages]) -> anyhow::Result<()> {
    use mmulab_probe::bench::Pages;
    if pages.iter().all(|p| matches!(p, Pages::Hugetlb | Pages::Hugetlb1G)) {
        return Ok(());
    }
    let mut need = mmulab_base::host_memory::Need::new();
    need.add(format!("--size {size} bytes: the benchmark's buffer"), size as u64);
    need.add("program and buffers (assumed)", 32 << 20);
    need.check("this benchmark", "lower --size").map_err(anyhow::Error::msg)
}
