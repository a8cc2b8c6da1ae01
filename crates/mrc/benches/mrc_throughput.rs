//! One-pass miss-ratio curve against one `sim` run per size (issue #24 item 4).
//!
//! For each workload, computes the fully associative curve for sizes 1..=4096 in one
//! pass, and times `sim` runs of the one-level LRU machine (tests/data/one-level.toml)
//! at sizes 1, 64, 512 and 4096; the cost of one `sim` run per size (4096 runs) is their
//! mean times 4096 (an estimate: a run's cost hardly depends on the size, as the four
//! times show). Every figure is this thread's on-CPU time (`/proc/thread-self/schedstat`;
//! wall time where that is missing), best of `--rounds` (default 3), so other jobs on a
//! shared machine do not count; the workload is generated on the same thread in both.
//! The curve's references/s and the ratio come from the same run.
//!
//! Run: `cargo bench -p mmulab-mrc --bench mrc_throughput [-- --refs 20M --rounds 3]`.
//! Results: docs/benchmarks.md.

use mmulab_mrc::{curve, MrcOptions};
use mmulab_sim::{config, Machine};
use mmulab_trace::workload;
use std::path::PathBuf;
use std::time::Instant;

const SIZES: [usize; 4] = [1, 64, 512, 4096];

fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Seconds of this thread's CPU time `f` takes (wall time if unknown).
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let (c, w) = (cpu_ns(), Instant::now());
    let v = f();
    let secs = match (c, cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => w.elapsed().as_secs_f64(),
    };
    (v, secs)
}

fn one_level() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/one-level.toml")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |f: &str| args.iter().position(|a| a == f).and_then(|i| args.get(i + 1)).cloned();
    let refs = get("--refs").unwrap_or_else(|| "20M".into());
    let rounds: usize = get("--rounds").map(|s| s.parse().expect("--rounds N")).unwrap_or(3);
    println!(
        "| workload | curve 1..4096: s | M refs/s | sim at 1 / 64 / 512 / 4096: s | 4096 sim runs (est.): s | ratio |"
    );
    println!("|---|---:|---:|---|---:|---:|");
    for w in ["gups:table=64MiB", "seq:size=1GiB,stride=4096", "chase:pages=8192"] {
        let spec_w = format!("{w},refs={refs}");
        let base = config::load(Some(&one_level()), &[]).unwrap();
        let o = MrcOptions::for_level(&base, None, None, 4096).unwrap();
        let mut best_curve = f64::MAX;
        let mut best_sim = [f64::MAX; SIZES.len()];
        let mut n = 0;
        for _ in 0..rounds {
            let (c, secs) = timed(|| curve(&mut workload::parse(&spec_w).unwrap(), &o).unwrap());
            n = c.references;
            best_curve = best_curve.min(secs);
            for (k, &e) in SIZES.iter().enumerate() {
                let sets = [format!("tlb.l1d.entries={e}"), format!("tlb.l1d.ways={e}")];
                let spec = config::load(Some(&one_level()), &sets).unwrap();
                let (misses, secs) = timed(|| {
                    let mut m = Machine::new(spec).unwrap();
                    let s = mmulab_sim::run(&mut m, &mut workload::parse(&spec_w).unwrap(), None).unwrap();
                    s.levels[0].counts.misses
                });
                assert_eq!(misses, c.curve[e - 1].misses, "{w}: {e} entries");
                best_sim[k] = best_sim[k].min(secs);
            }
        }
        let mean = best_sim.iter().sum::<f64>() / SIZES.len() as f64;
        let all = mean * 4096.0;
        println!(
            "| `{spec_w}` | {best_curve:.2} | {:.1} | {} | {all:.0} | {:.0} |",
            n as f64 / best_curve / 1e6,
            best_sim
                .iter()
                .map(|s| format!("{s:.2}"))
                .collect::<Vec<_>>()
                .join(" / "),
            all / best_curve
        );
    }
}
