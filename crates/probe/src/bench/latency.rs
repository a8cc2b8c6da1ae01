//! Memory latency as LMbench lat_mem_rd: a ring of pointers `stride` bytes apart over an
//! array of a given size, walked by dependent loads (`p = *p`, unrolled); sizes swept by
//! doubling up to the limit; the result per size is the minimum ns per load over passes.
//! The ring's [`Order`]: `pages` (the default) visits pages in random order and the lines
//! within each page in random order (lat_mem_rd `-t`), which defeats stride prefetchers
//! and touches each page's lines back to back; `lines` sends every load to a random line
//! of the whole array (as lmbench's and test-tlb's fully random modes), so nearly every
//! load of an array beyond the TLB's reach is a TLB miss; `sequential` walks the ring in
//! address order.

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
    /// The ring's order.
    pub order: Order,
    /// Loads per timed pass.
    pub loads: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            max_bytes: 256 << 20,
            min_bytes: 4 << 10,
            stride: 64,
            order: Order::Pages,
            loads: 2_000_000,
        }
    }
}

/// The order in which the ring visits the array's lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Address order.
    Sequential,
    /// Pages in random order, each page's lines in random order (lat_mem_rd `-t`).
    Pages,
    /// Every load to a random line of the whole array.
    Lines,
}

impl Order {
    /// Parses `sequential`, `pages` or `lines`.
    pub fn parse(s: &str) -> Result<Order> {
        match s {
            "sequential" => Ok(Order::Sequential),
            "pages" => Ok(Order::Pages),
            "lines" => Ok(Order::Lines),
            other => Err(ProbeError::Invalid(format!(
                "latency order '{other}': use sequential, pages (random pages, random lines within each) or lines (every load a random line)"
            ))),
        }
    }
}

/// The ring's visiting order for `n` lines of `stride` bytes: a permutation of `0..n`.
pub fn ring_order(n: usize, stride: usize, order: Order, rng: &mut Rng) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    match order {
        Order::Sequential => {}
        Order::Pages => {
            let per_page = (4096 / stride).max(1);
            let mut pages_order: Vec<Vec<usize>> = idx.chunks(per_page).map(|c| c.to_vec()).collect();
            rng.shuffle(&mut pages_order);
            for c in pages_order.iter_mut() {
                rng.shuffle(c);
            }
            idx = pages_order.concat();
        }
        Order::Lines => rng.shuffle(&mut idx),
    }
    idx
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
        let idx = ring_order(n, p.stride, p.order, &mut rng);
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
            "random": p.order != Order::Sequential,
            "order": p.order,
            "largest_bytes": largest,
            "curve": curve.iter().map(|(s, n)| json!({"size_mb": *s as f64 / (1 << 20) as f64, "ns": n})).collect::<Vec<_>>(),
        }),
        counters: last_counters.0,
        counters_note: last_counters.1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of 4 KiB visited by consecutive loads of a ring (the last load wraps to the
    /// first): how many times the page changes.
    fn page_changes(idx: &[usize], stride: usize) -> usize {
        let page = |i: usize| idx[i % idx.len()] * stride / 4096;
        (0..idx.len()).filter(|&i| page(i) != page(i + 1)).count()
    }

    #[test]
    fn each_order_is_a_permutation_with_its_page_locality() {
        // 64 pages of 64 lines.
        let (n, stride) = (64 * 64, 64);
        let mut rng = Rng::new(3);
        for order in [Order::Sequential, Order::Pages, Order::Lines] {
            let idx = ring_order(n, stride, order, &mut rng);
            let mut sorted = idx.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{order:?}");
            let changes = page_changes(&idx, stride);
            match order {
                // One change per page: 63 forward steps and the wrap.
                Order::Sequential => assert_eq!(changes, 64),
                // Each page's lines back to back: one change per page.
                Order::Pages => assert_eq!(changes, 64),
                // Nearly every load changes page (a random next line is on the same
                // page with probability 1/64).
                Order::Lines => assert!(changes > n * 9 / 10, "{changes}"),
            }
        }
        assert_eq!(Order::parse("lines").unwrap(), Order::Lines);
        assert!(Order::parse("random").is_err());
    }
}
