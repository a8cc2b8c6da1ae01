//! The real machine as a probe [`Target`] (Linux only).
//!
//! Each mapping is a fresh anonymous region (4 KiB with MADV_NOHUGEPAGE, THP with
//! MADV_HUGEPAGE on 2 MiB-aligned memory, or hugetlbfs), every page written in random
//! order before use, its backing verified in smaps. A measurement links one cache line per
//! slot into a random cycle and times a dependent chase over it, next to a dense baseline
//! chase over the same number of lines (packed into few pages, THP-backed when possible)
//! so the difference is the translation cost.

use std::time::Instant;

use super::{Backing, Measurement, Stride, Target, TargetInfo, TimeUnit, VerifiedBacking};
use crate::error::{ProbeError, Result};
use crate::os::mem::{PageKind, Region};
use crate::os::perf::TlbCounters;
use crate::os::sysfs;
use crate::rng::Rng;

/// Timed passes per measurement; the minimum is kept (it filters preemption).
const PASSES: usize = 3;

/// This machine.
pub struct NativeTarget {
    region: Option<(Region, Stride, usize)>,
    baseline: Option<Region>,
    counters: Option<TlbCounters>,
    counters_note: Option<String>,
}

impl NativeTarget {
    /// Set up, opening TLB counters if the machine offers them (`use_counters`).
    pub fn new(use_counters: bool) -> Self {
        let (counters, counters_note) = if use_counters {
            match TlbCounters::open() {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e)),
            }
        } else {
            (None, Some("counters not requested (--no-counters)".into()))
        };
        NativeTarget {
            region: None,
            baseline: None,
            counters,
            counters_note,
        }
    }

    fn baseline_for(&mut self, lines: usize) -> Result<&mut Region> {
        let need = (lines * 64).next_multiple_of(2 << 20);
        // Not `is_none_or` (Rust 1.82): the workspace's rust-version is 1.80.
        if !matches!(&self.baseline, Some(r) if r.len() >= need) {
            self.baseline = None;
            let kind = if sysfs::thp_usable().is_ok() {
                PageKind::Thp
            } else {
                PageKind::Base
            };
            let (r, _) = Region::prepared(need, kind, 99)?;
            self.baseline = Some(r);
        }
        Ok(self.baseline.as_mut().expect("baseline just set"))
    }
}

/// Link `addrs` (byte addresses of cache lines) into one cycle in the given order and
/// return the first.
///
/// SAFETY (caller): every address is 8-byte aligned and writable.
unsafe fn link(addrs: &[usize]) -> *const usize {
    for k in 0..addrs.len() {
        let next = addrs[(k + 1) % addrs.len()];
        // SAFETY: guaranteed by the caller.
        unsafe { std::ptr::write_volatile(addrs[k] as *mut usize, next) };
    }
    addrs[0] as *const usize
}

/// Follow the chain `steps` times (rounded up to 8); return where it ended and the time.
#[inline(never)]
fn chase(mut p: *const usize, steps: usize) -> (*const usize, f64) {
    let t = Instant::now();
    for _ in 0..steps.div_ceil(8) {
        // SAFETY: p always points into a linked cycle built by `link`.
        unsafe {
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
            p = std::ptr::read_volatile(p) as *const usize;
        }
    }
    let ns = t.elapsed().as_nanos() as f64;
    (std::hint::black_box(p), ns / (steps.div_ceil(8) * 8) as f64)
}

impl Target for NativeTarget {
    fn info(&self) -> TargetInfo {
        let arch = std::env::consts::ARCH.to_string();
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("CPU part"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| "unknown CPU".into());
        TargetInfo {
            name: format!("native: {model} ({arch})"),
            arch,
            unit: TimeUnit::Ns,
            counters: self.counters.as_ref().map(|c| c.names()).unwrap_or_default(),
            counters_note: self.counters_note.clone(),
        }
    }

    fn check(&self, backing: Backing) -> std::result::Result<(), String> {
        match backing {
            Backing::Base => Ok(()),
            Backing::Thp => sysfs::thp_usable(),
            Backing::Hugetlb => sysfs::hugetlb_usable(1),
        }
    }

    fn map(&mut self, backing: Backing, stride: Stride, slots: usize, seed: u64) -> Result<VerifiedBacking> {
        if slots == 0 {
            return Err(ProbeError::Invalid("mapping of 0 slots".into()));
        }
        self.region = None; // unmap first: the new mapping gets fresh pages
        let kind = match backing {
            Backing::Base => PageKind::Base,
            Backing::Thp => PageKind::Thp,
            Backing::Hugetlb => PageKind::Hugetlb,
        };
        let len = stride.slot_offset(slots - 1) + 64;
        let (r, b) = Region::prepared(len, kind, seed)?;
        self.region = Some((r, stride, slots));
        Ok(VerifiedBacking {
            requested: backing,
            kernel_page_bytes: b.kernel_page_bytes,
            huge_fraction: if backing == Backing::Base {
                1.0 - b.fraction
            } else {
                b.fraction
            },
            ok: b.ok,
            how: b.how,
        })
    }

    fn measure(&mut self, slots: usize, steps: usize, seed: u64) -> Result<Measurement> {
        let (base, stride, mapped) = match &self.region {
            Some((r, s, n)) => (r.as_ptr() as usize, *s, *n),
            None => return Err(ProbeError::Invalid("measure before map".into())),
        };
        if slots == 0 || slots > mapped {
            return Err(ProbeError::Invalid(format!(
                "measure {slots} slots of a {mapped}-slot mapping"
            )));
        }
        let mut rng = Rng::new(seed);
        let mut order: Vec<usize> = (0..slots).collect();
        rng.shuffle(&mut order);
        let addrs: Vec<usize> = order.iter().map(|&i| base + stride.slot_offset(i)).collect();
        // SAFETY: slot offsets are inside the mapped region and 64-byte aligned.
        let start = unsafe { link(&addrs) };

        // Dense baseline: same number of lines, pages visited in random order, the 64 lines
        // of each page in random order, so translation costs at most one miss per 64 lines.
        let bl = self.baseline_for(slots)?;
        let bbase = bl.as_ptr() as usize;
        let pages = slots.div_ceil(64);
        let mut porder: Vec<usize> = (0..pages).collect();
        rng.shuffle(&mut porder);
        let mut baddrs = Vec::with_capacity(slots);
        for p in porder {
            let n = (slots - p * 64).min(64);
            let mut lines: Vec<usize> = (0..n).collect();
            rng.shuffle(&mut lines);
            baddrs.extend(lines.into_iter().map(|l| bbase + p * 4096 + l * 64));
        }
        // SAFETY: inside the baseline region (sized for `slots` lines), 64-byte aligned.
        let bstart = unsafe { link(&baddrs) };

        let warm = (slots * 2).max(4096);
        let (mut p, _) = chase(start, warm);
        let (mut q, _) = chase(bstart, warm);
        let (mut best, mut best_b) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..PASSES {
            let (np, t) = chase(p, steps);
            p = np;
            best = best.min(t);
            let (nq, tb) = chase(q, steps);
            q = nq;
            best_b = best_b.min(tb);
        }
        let mut counters = Vec::new();
        if let Some(c) = &self.counters {
            c.start();
            let (_, _) = chase(p, steps);
            let n = (steps.div_ceil(8) * 8) as f64;
            counters = c.stop().into_iter().map(|v| v as f64 / n).collect();
        }
        Ok(Measurement {
            chase: best,
            baseline: best_b,
            counters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_positive_times() {
        let mut t = NativeTarget::new(false);
        let vb = t.map(Backing::Base, Stride::Page4K, 64, 1).unwrap();
        assert!(vb.ok, "{vb:?}");
        let m = t.measure(64, 20_000, 2).unwrap();
        assert!(m.chase > 0.0 && m.baseline > 0.0);
        assert!(t.measure(65, 1000, 2).is_err());
    }
}
