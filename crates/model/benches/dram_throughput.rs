//! The DRAM model alone (issue #22 item 2: it must stay far above 10 M requests/s so the
//! whole path with caches can reach 10 M references/s): requests/s through
//! `MemoryBackend::access` on a sequential and a random stream, for each built-in
//! profile. Requests arrive every 8 core cycles (core clock = 2 x DRAM clock), so the
//! random stream is near the DRAM's limit and the placement windows are full. Figures
//! are this thread's CPU time (`/proc/thread-self/schedstat`; wall time where missing),
//! best of `--rounds` (default 3).
//!
//! Run: `cargo bench -p mmulab-model --bench dram_throughput [-- --requests 20000000 --rounds 3]`.
//! Results: docs/benchmarks.md.

use mmulab_model::dram::{profile, Dram};
use mmulab_model::mem::backend::{MemReq, MemoryBackend};
use std::time::Instant;

fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let (c, w) = (cpu_ns(), Instant::now());
    let v = f();
    let secs = match (c, cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e9,
        _ => w.elapsed().as_secs_f64(),
    };
    (v, secs)
}

fn run(name: &str, random: bool, n: u64) -> (u64, f64) {
    let spec = profile::load(name).expect("built-in profile");
    let lines = spec.capacity / spec.burst_bytes;
    let bb = spec.burst_bytes;
    let mut d = Dram::new(spec.clone(), 2.0 * spec.clock_mhz);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut sum = 0u64;
    for i in 0..n {
        let line = if random {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % lines
        } else {
            i % lines
        };
        let req = MemReq {
            pa: line * bb,
            write: i % 4 == 3,
            core: (i & 3) as u16,
            at: i * 8,
        };
        sum = sum.wrapping_add(d.access(&req));
    }
    (sum, d.stats().row_hit_rate())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |f: &str| args.iter().position(|a| a == f).and_then(|i| args.get(i + 1)).cloned();
    let n: u64 = get("--requests")
        .map(|s| s.parse().expect("--requests N"))
        .unwrap_or(20_000_000);
    let rounds: usize = get("--rounds").map(|s| s.parse().expect("--rounds N")).unwrap_or(3);
    println!("| profile | stream | requests | best s | M requests/s | row-hit rate |");
    println!("|---|---|---:|---:|---:|---:|");
    for p in profile::BUILTIN.map(|b| b.0) {
        for (kind, random) in [("seq", false), ("random", true)] {
            let mut best = f64::MAX;
            let mut hit = 0.0;
            for _ in 0..rounds {
                let ((sum, h), s) = timed(|| run(p, random, n));
                assert!(sum > 0);
                best = best.min(s);
                hit = h;
            }
            println!(
                "| {p} | {kind} | {n} | {best:.2} | {:.1} | {:.3} |",
                n as f64 / best / 1e6,
                hit
            );
        }
    }
}
