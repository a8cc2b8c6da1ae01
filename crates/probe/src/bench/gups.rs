//! GUPS as HPCC RandomAccess (single-CPU core): a table of 2^n 64-bit words, T\[i\] = i;
//! 4 × table-size updates T[ran mod size] ^= ran, the stream being the 64-bit LFSR with
//! POLY = 0x7 (x⁶⁴ + x² + x + 1), run as 128 interleaved streams started by
//! [`starts`]; then verification replays the updates serially (XOR undoes them) and the
//! run passes if at most 1 % of the words differ from their index.

use serde_json::json;

use super::{counted, BenchResult, Kind, Memory, Metric, Pages};
use crate::error::{ProbeError, Result};

const STREAMS: usize = 128;

// The LFSR and its jump-ahead are the trace crate's (the same stream the simulator's
// `gups` workload generates), so the native and simulated GUPS cannot drift apart.
pub use mmulab_trace::workload::{hpcc_starts as starts, hpcc_step as step};

/// The updates (timed part).
fn update(t: &mut [u64], nupdate: usize) {
    let mask = (t.len() - 1) as u64;
    let mut ran = [0u64; STREAMS];
    for (j, r) in ran.iter_mut().enumerate() {
        *r = starts((nupdate / STREAMS * j) as i64);
    }
    for _ in 0..nupdate / STREAMS {
        for r in ran.iter_mut() {
            *r = step(*r);
            t[(*r & mask) as usize] ^= *r;
        }
    }
}

/// Replay serially and count words that are not their index.
fn verify(t: &mut [u64], nupdate: usize) -> usize {
    let mask = (t.len() - 1) as u64;
    let mut r = starts(0);
    for _ in 0..nupdate {
        r = step(r);
        t[(r & mask) as usize] ^= r;
    }
    t.iter().enumerate().filter(|(i, &v)| v != *i as u64).count()
}

/// Run GUPS on a table of `table_bytes` (a power of two, ≥ 64 KiB).
pub fn run(pages: Pages, table_bytes: usize, seed: u64) -> Result<BenchResult> {
    if !table_bytes.is_power_of_two() || table_bytes < (64 << 10) {
        return Err(ProbeError::Invalid(format!(
            "GUPS table {table_bytes} bytes: must be a power of two ≥ 64K"
        )));
    }
    let mut mem = Memory::alloc(pages, table_bytes, seed)?;
    let words = table_bytes / 8;
    // SAFETY: the region is table_bytes long, page aligned, written, and owned by `mem`.
    let t = unsafe { std::slice::from_raw_parts_mut(mem.region.as_ptr() as *mut u64, words) };
    for (i, w) in t.iter_mut().enumerate() {
        *w = i as u64;
    }
    let nupdate = 4 * words;
    let start = std::time::Instant::now();
    let ((), counters, cnote) = counted(nupdate as f64, || update(t, nupdate));
    let secs = start.elapsed().as_secs_f64();
    let errors = verify(t, nupdate);
    let passed = errors as f64 <= 0.01 * words as f64;
    let backed = mem.region.verify().unwrap_or(mem.backed.clone());
    mem.backed = backed;
    Ok(BenchResult {
        kind: Kind::Gups,
        pages: pages.label(),
        backing: mem.backed.clone(),
        backing_note: mem.note.clone(),
        bytes: table_bytes,
        metrics: vec![
            Metric {
                name: "gups".into(),
                value: nupdate as f64 / secs / 1e9,
                unit: "GUP/s".into(),
                higher_is_better: true,
            },
            Metric {
                name: "ns_per_update".into(),
                value: secs * 1e9 / nupdate as f64,
                unit: "ns".into(),
                higher_is_better: false,
            },
        ],
        details: json!({
            "table_log2": words.trailing_zeros(),
            "updates": nupdate,
            "seconds": secs,
            "errors": errors,
            "verification": if passed { "passed" } else { "failed" },
        }),
        counters,
        counters_note: cnote,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_jumps_ahead_like_stepping() {
        let mut r = 1u64;
        for n in 0..300i64 {
            assert_eq!(starts(n), r, "n = {n}");
            r = step(r);
        }
    }

    #[test]
    fn small_run_verifies() {
        let r = run(Pages::Base, 1 << 20, 1).unwrap();
        assert_eq!(r.details["verification"], "passed");
        assert_eq!(r.details["errors"], 0);
        assert!(r.metrics[0].value > 0.0);
    }
}
