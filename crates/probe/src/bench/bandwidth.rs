//! Memory bandwidth: read (sum of 64-bit words, four accumulators), write (fill) and copy
//! (first half to second half) over the buffer; the best of `passes` for each, in MB/s
//! (10⁶ bytes per second; copy counts the bytes copied once).

use serde_json::json;

use super::{counted, BenchResult, Kind, Memory, Metric, Pages};
use crate::error::{ProbeError, Result};

fn best(passes: usize, mut f: impl FnMut()) -> f64 {
    (0..passes)
        .map(|_| {
            let t = std::time::Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Run read, write and copy over `bytes` (≥ 1 MiB).
pub fn run(pages: Pages, bytes: usize, passes: usize, seed: u64) -> Result<BenchResult> {
    if bytes < (1 << 20) || passes == 0 {
        return Err(ProbeError::Invalid(
            "bandwidth: size must be ≥ 1M and passes ≥ 1".into(),
        ));
    }
    let mem = Memory::alloc(pages, bytes, seed)?;
    let words = bytes / 8;
    // SAFETY: region of `bytes` bytes, page aligned, owned by `mem`.
    let buf = unsafe { std::slice::from_raw_parts_mut(mem.region.as_ptr() as *mut u64, words) };
    let mut sink = 0u64;
    let read = best(passes, || {
        let (mut a, mut b, mut c, mut d) = (0u64, 0u64, 0u64, 0u64);
        for ch in buf.chunks_exact(4) {
            a = a.wrapping_add(ch[0]);
            b = b.wrapping_add(ch[1]);
            c = c.wrapping_add(ch[2]);
            d = d.wrapping_add(ch[3]);
        }
        sink ^= std::hint::black_box(a ^ b ^ c ^ d);
    });
    let mut v = 0u64;
    let write = best(passes, || {
        v += 1;
        buf.fill(std::hint::black_box(v));
    });
    let half = words / 2;
    let copy = best(passes, || {
        let (src, dst) = buf.split_at_mut(half);
        dst[..half].copy_from_slice(&src[..half]);
        std::hint::black_box(&dst[0]);
    });
    let (_, counters, cnote) = counted((words / 8) as f64, || {
        let s: u64 = buf.iter().step_by(8).fold(0u64, |x, y| x.wrapping_add(*y));
        std::hint::black_box(s)
    });
    let mbs = |b: usize, s: f64| b as f64 / s / 1e6;
    Ok(BenchResult {
        kind: Kind::Bandwidth,
        pages: pages.label(),
        backing: mem.region.verify().unwrap_or(mem.backed.clone()),
        backing_note: mem.note.clone(),
        bytes,
        metrics: vec![
            Metric {
                name: "read_mb_s".into(),
                value: mbs(bytes, read),
                unit: "MB/s".into(),
                higher_is_better: true,
            },
            Metric {
                name: "write_mb_s".into(),
                value: mbs(bytes, write),
                unit: "MB/s".into(),
                higher_is_better: true,
            },
            Metric {
                name: "copy_mb_s".into(),
                value: mbs(half * 8, copy),
                unit: "MB/s".into(),
                higher_is_better: true,
            },
        ],
        details: json!({ "passes": passes, "checksum": sink & 1 }),
        counters,
        counters_note: cnote.map(|n| format!("{n} (counters are per cache line read)")),
    })
}
