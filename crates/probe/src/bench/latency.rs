//! Memory latency as LMbench lat_mem_rd: a ring of pointers `stride` bytes apart over an
//! array of a given size, walked by dependent loads (`p = *p`, unrolled); sizes swept by
//! doubling up to the limit; the result per size is the minimum ns per load over passes.
//! `random` visits pages in random order and the lines within each page in random order
//! (lat_mem_rd `-t`), which defeats stride prefetchers.

use serde_json::json;

use super::{counted, BenchResult, Kind, Memory, Metric, Pages};
use crate::error::{ProbeError, Result};
use crate::rng::Rng;

/// Parameters.
#[derive(Clone, Debug)]
pub struct Params {
    /// Largest array size, bytes.
    pub max_bytes: usize,
    /// Smallest array size, bytes.
    pub min_bytes: usize,
    /// Distance between pointers, bytes (≥ 8, multiple of 8).
    pub stride: usize,
    /// Random page and line order.
    pub random: bool,
    /// Loads per timed pass.
    pub loads: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            max_bytes: 256 << 20,
            min_bytes: 4 << 10,
            stride: 64,
            random: true,
            loads: 2_000_000,
        }
    }
}

#[inline(never)]
fn walk(mut p: *const usize, n: usize) -> *const usize {
    for _ in 0..n / 10 {
        // SAFETY: p points into a closed ring built by `run`.
        unsafe {
            for _ in 0..10 {
                p = std::ptr::read_volatile(p) as *const usize;
            }
        }
    }
    std::hint::black_box(p)
}

/// Run the size sweep.
pub fn run(pages: Pages, p: &Params, seed: u64) -> Result<BenchResult> {
    if p.stride < 8 || p.stride % 8 != 0 || p.max_bytes < p.min_bytes || p.min_bytes < p.stride * 2 {
        return Err(ProbeError::Invalid(format!(
            "latency: stride {} must be a multiple of 8 and sizes {}..{} hold ≥ 2 strides",
            p.stride, p.min_bytes, p.max_bytes
        )));
    }
    let mem = Memory::alloc(pages, p.max_bytes, seed)?;
    let base = mem.region.as_ptr() as usize;
    let mut rng = Rng::new(seed);
    let mut curve = Vec::new();
    let mut size = p.min_bytes;
    let mut last_counters = (Vec::new(), None);
    loop {
        let n = size / p.stride;
        let mut idx: Vec<usize> = (0..n).collect();
        if p.random {
            // Random page order, random order within each page.
            let per_page = (4096 / p.stride).max(1);
            let mut pages_order: Vec<Vec<usize>> = idx.chunks(per_page).map(|c| c.to_vec()).collect();
            rng.shuffle(&mut pages_order);
            for c in pages_order.iter_mut() {
                rng.shuffle(c);
            }
            idx = pages_order.concat();
        }
        for k in 0..n {
            let a = base + idx[k] * p.stride;
            let b = base + idx[(k + 1) % n] * p.stride;
            // SAFETY: both inside the region (size ≤ max_bytes), 8-byte aligned.
            unsafe { std::ptr::write(a as *mut usize, b) };
        }
        let start = (base + idx[0] * p.stride) as *const usize;
        let mut q = walk(start, n.max(1000));
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            q = walk(q, p.loads);
            best = best.min(t.elapsed().as_nanos() as f64 / (p.loads / 10 * 10) as f64);
        }
        if size * 2 > p.max_bytes {
            let (_, c, note) = counted(p.loads as f64, || walk(q, p.loads));
            last_counters = (c, note);
        }
        curve.push((size, best));
        if size * 2 > p.max_bytes {
            break;
        }
        size *= 2;
    }
    let (largest, ns) = *curve.last().expect("at least one size");
    Ok(BenchResult {
        kind: Kind::Latency,
        pages: pages.label(),
        backing: mem.region.verify().unwrap_or(mem.backed.clone()),
        backing_note: mem.note.clone(),
        bytes: p.max_bytes,
        metrics: vec![Metric {
            name: "ns_per_load_at_max".into(),
            value: ns,
            unit: "ns".into(),
            higher_is_better: false,
        }],
        details: json!({
            "stride": p.stride,
            "random": p.random,
            "largest_bytes": largest,
            "curve": curve.iter().map(|(s, n)| json!({"size_mb": *s as f64 / (1 << 20) as f64, "ns": n})).collect::<Vec<_>>(),
        }),
        counters: last_counters.0,
        counters_note: last_counters.1,
    })
}
