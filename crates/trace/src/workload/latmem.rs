//! LMbench's lat_mem_rd: a dependent chase of pointers `stride` bytes apart over `size`
//! bytes.
//!
//! - Order. LMbench 2's lat_mem_rd.c (`loads()`) links the ring backward, "to try and
//!   defeat HP's fetch ahead": `for (i = stride; i < range; i += stride)
//!   *(char **)&addr[i] = (char *)&addr[i - stride]; *(char **)&addr[0] =
//!   (char *)&addr[i - stride];`, and starts at `addr[0]`: the loads visit slot 0, then
//!   the last slot, then every slot down to 1, and again (`order=backward`, the
//!   default). LMbench 3's lib_mem.c `stride_initialize` links it forward
//!   (`order=forward`). `-t` (`thrash_initialize`) visits the pages in a random
//!   permutation and, within each page, the lines in a random permutation
//!   (`order=random`: one permutation of the lines shared by every page; 4 KiB pages).
//! - Stride. With no stride argument lat_mem_rd uses `STRIDE (512/sizeof(char *))`:
//!   64 bytes on a 64-bit machine, 128 on a 32-bit one (the default here follows the
//!   machine's address width); each load reads one pointer (8 or 4 bytes).
//! - Initialisation. lat_mem_rd writes the ring before it times the loads: one pointer
//!   store per slot, in the order of its loop (`addr[stride]`, `addr[2·stride]`, …, then
//!   `addr[0]`; forward and random rings: slot order). Those `size / stride` stores come
//!   first (`init=on`, the default; `init=off` leaves them out) and are the workload's
//!   warm-up ([`TraceSource::warmup_refs`]), reported apart by `sim`.
//! - One size per run: lat_mem_rd sweeps `range` from 512 bytes up to `len`
//!   (`step()`); give `size=` per point (a sweep, docs/sweep.md) to reproduce its curve.

use super::{emit, Args, SplitMix64};
use crate::{AccessKind, MemRef, TraceError, TraceSource};

/// The page lat_mem_rd `-t` permutes (assumed 4 KiB, `getpagesize()` on the machines
/// the seeds used).
const PAGE: u64 = 4096;

/// Most slots (`size / stride`) of a random-order ring: the permutations take 4 bytes
/// of host memory per page and per line.
const MAX_SLOTS: u64 = 1 << 32;

/// The visiting order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Backward,
    Forward,
    Random,
}

/// LMbench lat_mem_rd's pointer chase.
pub struct LatMemRd {
    spec: String,
    base: u64,
    stride: u64,
    slots: u64,
    order: Order,
    /// `order=random`: page order and line order.
    pages: Vec<u32>,
    lines: Vec<u32>,
    ptr: u16,
    /// Initialising stores still to emit (slot `init_next + 1` mod `slots`), then loads.
    init_next: u64,
    init: u64,
    done: u64,
    total: u64,
}

impl super::Generator for LatMemRd {
    const NAME: &'static str = "lat_mem_rd";
    fn from_args(a: &mut Args) -> Result<LatMemRd, TraceError> {
        let size = a.size("size", None)?;
        let wide = a.va_bits > 32;
        let stride = a.size("stride", Some(if wide { 64 } else { 128 }))?;
        let ptr: u16 = if wide { 8 } else { 4 };
        if stride < ptr as u64 || stride % ptr as u64 != 0 {
            return Err(TraceError::Spec(format!(
                "workload '{}': stride must be a multiple of the pointer size ({ptr} bytes), as lat_mem_rd requires (\"stride must be aligned\")",
                a.spec()
            )));
        }
        if size < stride {
            return Err(TraceError::Spec(format!(
                "workload '{}': size ({size}) must be at least one stride ({stride})",
                a.spec()
            )));
        }
        let order = match a.choice("order", &["backward", "forward", "random"], "backward")? {
            "forward" => Order::Forward,
            "random" => Order::Random,
            _ => Order::Backward,
        };
        let slots = size / stride;
        let refs = a.refs(slots)?;
        let seed = a.count("seed", Some(0))?;
        let init = if a.flag("init", true)? { slots } else { 0 };
        let base = a.base(0x6000_0000_0000, Some(size))?;
        let (mut pages, mut lines) = (Vec::new(), Vec::new());
        if order == Order::Random {
            if stride > PAGE || PAGE % stride != 0 || size % PAGE != 0 || slots > MAX_SLOTS {
                return Err(TraceError::Spec(format!(
                    "workload '{}': order=random needs a stride dividing 4 KiB and a size that is a whole number of 4 KiB pages, at most 2^32 slots",
                    a.spec()
                )));
            }
            let mut rng = SplitMix64::new(seed ^ 0x1a7);
            pages = shuffled((size / PAGE) as u32, &mut rng);
            lines = shuffled((PAGE / stride) as u32, &mut rng);
        }
        Ok(LatMemRd {
            spec: a.spec().to_string(),
            base,
            stride,
            slots,
            order,
            pages,
            lines,
            ptr,
            init_next: 0,
            init,
            done: 0,
            total: refs,
        })
    }
}

/// 0..n in a uniformly random order (Fisher–Yates).
fn shuffled(n: u32, rng: &mut SplitMix64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

impl TraceSource for LatMemRd {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let (base, stride, n, ptr) = (self.base, self.stride, self.slots, self.ptr);
        if self.init_next < self.init {
            // The ring's construction: slots 1, 2, …, n-1, then 0 (a store each).
            let k = (self.init - self.init_next).min(max as u64);
            let first = self.init_next;
            batch
                .refs
                .extend((first..first + k).map(|i| MemRef::new(base + (i + 1) % n * stride, AccessKind::Store, ptr)));
            self.init_next += k;
            return Ok(k as usize);
        }
        let (order, pages, lines) = (self.order, &self.pages, &self.lines);
        Ok(emit(&mut self.done, self.total, &mut batch.refs, max, |k| {
            let k = k % n;
            let off = match order {
                Order::Backward => (n - k) % n * stride,
                Order::Forward => k * stride,
                Order::Random => {
                    let per = lines.len() as u64;
                    pages[(k / per) as usize] as u64 * PAGE + lines[(k % per) as usize] as u64 * stride
                }
            };
            MemRef::new(base + off, AccessKind::Load, ptr)
        }))
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.init_next + self.done, self.init + self.total))
    }
    fn warmup_refs(&self) -> u64 {
        self.init
    }
}

#[cfg(test)]
mod tests {
    use crate::workload::{parse, parse_for};
    use crate::TraceSource;

    fn offsets(mut w: Box<dyn TraceSource + Send>, base: u64) -> Vec<u64> {
        let mut b = crate::Batch::default();
        while w.next_batch(&mut b, 3).unwrap() > 0 {}
        b.refs.iter().map(|r| r.addr - base).collect()
    }

    /// size 256, default stride 64: 4 slots. lat_mem_rd 2 starts at addr[0], whose
    /// pointer is &addr[range - stride] = 192, then 128, 64, and back to 0.
    #[test]
    fn default_is_backward_with_stride_64() {
        let got = offsets(parse("lat_mem_rd:size=256,refs=6,init=off").unwrap(), 0x6000_0000_0000);
        assert_eq!(got, [0, 192, 128, 64, 0, 192]);
        let fwd = offsets(
            parse("lat_mem_rd:size=256,refs=5,order=forward,init=off").unwrap(),
            0x6000_0000_0000,
        );
        assert_eq!(fwd, [0, 64, 128, 192, 0]);
    }

    /// On a 32-bit machine STRIDE = 512 / sizeof(char *) = 128, 4-byte loads.
    #[test]
    fn stride_follows_the_pointer_size() {
        let (w, _) = parse_for("lat_mem_rd:size=512,refs=4,base=0x10000000,init=off", 32).unwrap();
        let mut b = crate::Batch::default();
        let mut w = w;
        while w.next_batch(&mut b, 8).unwrap() > 0 {}
        let got: Vec<(u64, u16)> = b.refs.iter().map(|r| (r.addr - 0x1000_0000, r.size)).collect();
        assert_eq!(got, [(0, 4), (384, 4), (256, 4), (128, 4)]);
    }

    /// Random order visits every line of every page once per pass, each page's lines
    /// together (one page change per page, as lat_mem_rd -t).
    #[test]
    fn random_order_visits_each_page_once_per_pass() {
        let got = offsets(
            parse("lat_mem_rd:size=64K,stride=1K,order=random,seed=5,init=off").unwrap(),
            0x6000_0000_0000,
        );
        assert_eq!(got.len(), 64);
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(sorted, (0..64).map(|i| i * 1024).collect::<Vec<_>>());
        let changes = got.windows(2).filter(|w| w[0] / 4096 != w[1] / 4096).count();
        assert_eq!(changes, 15);
        assert_ne!(got, sorted, "not sequential");
    }

    /// The ring is written first (4 slots: stores at 64, 128, 192, then 0), as the
    /// workload's warm-up, then the loads begin at slot 0.
    #[test]
    fn ring_construction_comes_first() {
        let w = parse("lat_mem_rd:size=256,refs=2").unwrap();
        assert_eq!(w.warmup_refs(), 4);
        let mut b = crate::Batch::default();
        let mut w = w;
        while w.next_batch(&mut b, 3).unwrap() > 0 {}
        let got: Vec<(u64, crate::AccessKind)> = b.refs.iter().map(|r| (r.addr - 0x6000_0000_0000, r.kind)).collect();
        use crate::AccessKind::{Load, Store};
        assert_eq!(
            got,
            [
                (64, Store),
                (128, Store),
                (192, Store),
                (0, Store),
                (0, Load),
                (192, Load)
            ]
        );
    }
}
