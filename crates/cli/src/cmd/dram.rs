//! `mmulab dram STREAM --profile NAME|FILE [--json]`: runs the DRAM model alone on a
//! request stream in DRAMsim3's trace format (`0xADDR READ|WRITE cycle`, DRAM cycles)
//! and prints row hits, bandwidth, latency and per-rank use. `mmulab dram --generate
//! seq|random|two-rank --profile P` writes a synthetic stream instead (docs/memory.md).
//!
//! The model, the stream reader and the generators are the library's
//! (`mmulab_model::dram`); this command prints.

use anyhow::{bail, Context, Result};
use mmulab_model::dram::{profile, stream, DramSpec, DramStats};
use serde_json::{json, Value};
use std::io::{BufReader, Write};
use std::path::PathBuf;

/// Run the DRAM model on a DRAMsim3-format request stream (or generate one).
#[derive(clap::Args)]
#[command(after_help = "Built-in profiles: lpddr4x-4267-pi5, ddr4-3200, ddr5-4800 \
(machines/dram/*.toml; docs/config.md, \"DRAM profiles\").
Examples:
  mmulab dram tests/data/dram/seq.trace --profile ddr4-3200
  mmulab dram --generate random --profile ddr4-3200 --requests 20000 --gap 4 > random.trace")]
pub struct Args {
    /// Request stream, one `0xADDR READ|WRITE cycle` a line (cycles in DRAM clocks).
    #[arg(required_unless_present = "generate")]
    pub stream: Option<PathBuf>,
    /// A built-in DRAM profile name or a profile TOML file.
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: String,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Write a synthetic stream to stdout instead: seq, random or two-rank.
    #[arg(long, value_name = "KIND", conflicts_with = "stream")]
    pub generate: Option<String>,
    /// With --generate: requests.
    #[arg(long, default_value_t = 10_000)]
    pub requests: u64,
    /// With --generate: DRAM cycles between arrivals.
    #[arg(long, default_value_t = 1)]
    pub gap: u64,
    /// With --generate: every Nth request is a write (0: none).
    #[arg(long, default_value_t = 0)]
    pub write_every: u64,
    /// With --generate: seed of the random stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

pub fn run(a: Args) -> Result<()> {
    let spec = profile::load(&a.profile)?;
    if let Some(kind) = &a.generate {
        // Written as generated: any --requests fits in memory.
        let reqs = stream::generate(kind, &spec, a.requests, a.gap, a.write_every, a.seed)?;
        let out = std::io::stdout().lock();
        let mut w = std::io::BufWriter::new(out);
        stream::write(&mut w, reqs)?;
        w.flush()?;
        return Ok(());
    }
    let Some(path) = a.stream else {
        bail!("give a request stream file, or --generate KIND");
    };
    // The model's banks, ranks and queues scale with the profile's geometry: checked
    // against the host before they are allocated.
    let mut need = mmulab_base::host_memory::Need::new();
    need.add(
        format!(
            "{} channel(s) × {} rank(s) × {} bank group(s) × {} bank(s)",
            spec.channels, spec.ranks, spec.bank_groups, spec.banks_per_group
        ),
        spec.host_bytes(),
    );
    // The report lists every bank's requests: a count, its JSON value and its text.
    need.add(
        format!("the report's per-bank counts: {} bank(s)", spec.banks()),
        spec.report_bytes(std::mem::size_of::<serde_json::Value>()),
    );
    need.add("program and buffers (assumed)", 32 << 20);
    need.check(
        &format!("DRAM profile {}", a.profile),
        "lower its channels, ranks, bank_groups or banks_per_group",
    )
    .map_err(anyhow::Error::msg)?;
    let f = std::fs::File::open(&path).with_context(|| format!("cannot open request stream {}", path.display()))?;
    // Ctrl-C or SIGTERM ends the replay within 65,536 requests; what ran is reported,
    // marked incomplete.
    crate::signals::stop_on_interrupt();
    let origin = path.display().to_string();
    let (d, stopped) = stream::replay(BufReader::new(f), &origin, &spec, &mmulab_sim::stop_requested)?;
    let stats = d.stats();
    if stats.requests() == 0 && !stopped {
        bail!("{}: no requests", path.display());
    }
    let mut v = summary(&origin, &spec, &stats);
    if stopped {
        v["complete"] = Value::Bool(false);
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_table(&v);
        if stopped {
            outln!(
                "incomplete: interrupted by {} after {} requests; the figures above cover those only",
                crate::signals::interrupted().map_or("a stop request", crate::signals::name),
                stats.requests()
            );
        }
    }
    Ok(())
}

fn summary(file: &str, spec: &DramSpec, s: &DramStats) -> Value {
    let ns = |cycles: f64| cycles * 1e3 / spec.clock_mhz;
    json!({
        "stream": file,
        "profile": spec.name,
        "requests": s.requests(),
        "reads": s.reads,
        "writes": s.writes,
        "row_hits": s.row_hits,
        "row_misses": s.row_misses,
        "row_conflicts": s.row_conflicts,
        "row_hit_rate": s.row_hit_rate(),
        "bytes": s.bytes,
        "span_cycles": s.span(),
        "bandwidth_gbs": s.bandwidth_gbs(spec.clock_mhz),
        "mean_latency_cycles": s.mean_latency(),
        "mean_latency_ns": ns(s.mean_latency()),
        "mean_read_latency_cycles": s.mean_read_latency(),
        "per_rank": s.per_rank,
        "per_bank": s.per_bank,
        "beyond_capacity": s.beyond_capacity,
        "act_wait_cycles": s.act_wait_cycles,
        "wtr_wait_cycles": s.wtr_wait_cycles,
        "write_drains": s.write_drains,
    })
}

fn print_table(v: &Value) {
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    outln!("stream       {}", v["stream"].as_str().unwrap_or(""));
    outln!("profile      {}", v["profile"].as_str().unwrap_or(""));
    outln!(
        "requests     {}  (reads {}, writes {})",
        v["requests"],
        v["reads"],
        v["writes"]
    );
    outln!(
        "rows         hits {} ({:.1} %), misses {}, conflicts {}",
        v["row_hits"],
        100.0 * f("row_hit_rate"),
        v["row_misses"],
        v["row_conflicts"]
    );
    outln!(
        "bandwidth    {:.2} GB/s  ({} bytes over {} DRAM cycles)",
        f("bandwidth_gbs"),
        v["bytes"],
        v["span_cycles"]
    );
    outln!(
        "latency      mean {:.1} DRAM cycles ({:.1} ns), reads {:.1} cycles",
        f("mean_latency_cycles"),
        f("mean_latency_ns"),
        f("mean_read_latency_cycles")
    );
    let ranks: Vec<String> = v["per_rank"]
        .as_array()
        .map(|a| a.iter().map(|n| n.to_string()).collect())
        .unwrap_or_default();
    outln!("per rank     {}", ranks.join(" / "));
    if v["beyond_capacity"].as_u64().unwrap_or(0) > 0 {
        outln!(
            "beyond capacity {} requests (decoded modulo the capacity)",
            v["beyond_capacity"]
        );
    }
}
