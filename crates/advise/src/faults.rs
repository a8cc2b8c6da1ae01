//! THP's other effect: fewer page faults. A program that touches fresh memory takes one
//! fault per 4 KiB page under base pages and one per 2 MiB page under THP; zeroing the
//! memory costs the same either way, but each fault's entry, page-table update and exit
//! is paid 512 times less often (Linux `do_anonymous_page` per 4 KiB page against
//! `do_huge_pmd_anonymous_page` per 2 MiB one, mm/memory.c and mm/huge_memory.c). The
//! translation model (model.rs) has no such term, so a program that faults in its
//! memory and then runs briefly (a hash join, a sort) would gain more than it predicts.
//!
//! Measured here, not fitted: the CPU time (user + system) of touching 64 MiB of fresh
//! anonymous memory, one write per 4 KiB page, under 4 KiB pages and under THP
//! (`MADV_HUGEPAGE`, 2 MiB aligned), the minimum over a few interleaved repeats, divided by
//! the faults each took (16,384 and 32). The simulated runs count the faults a program
//! takes under each policy (`Counters::faults`, and the 2 MiB pages mapped), which these
//! costs turn into time.

use serde::{Deserialize, Serialize};

use mmulab_probe::error::{ProbeError, Result};
use mmulab_probe::os::mem::{PageKind, Region};

/// Bytes touched per measurement.
const BYTES: usize = 64 << 20;

/// The measured cost of one fault of each size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultCosts {
    /// CPU ns per 4 KiB fault, zeroing included.
    pub ns_per_4k: f64,
    /// CPU ns per 2 MiB fault, zeroing included.
    pub ns_per_2m: f64,
    /// Whether the THP touch really got 2 MiB pages (else `ns_per_2m` is meaningless and
    /// 0, and no fault saving is predicted).
    pub thp_verified: bool,
    /// The 99th percentile of one 4 KiB fault's wall time, ns (each first write timed;
    /// null in a machine file probed before it was measured).
    #[serde(default)]
    pub p99_ns_4k: Option<f64>,
    /// The same for a 2 MiB fault (over only 32 faults a repeat: near the slowest).
    #[serde(default)]
    pub p99_ns_2m: Option<f64>,
}

/// CPU time of this process, seconds.
fn cpu_self() -> f64 {
    // SAFETY: an all-zero rusage is valid for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Seconds of CPU to touch a fresh region of `kind` (one write per page of the kind, in
/// address order, each write's wall time pushed to `lat` in ns), and whether it got that
/// kind. The clock reads add about 2 % to a 4 KiB fault's time (assumed from ~25 ns a
/// read against ~1 µs a fault).
fn touch_once(kind: PageKind, lat: &mut Vec<f64>) -> Result<(f64, bool)> {
    let r = Region::new(BYTES, kind)?;
    let step = if kind == PageKind::Thp { 2 << 20 } else { 4096 };
    let p = r.as_ptr();
    let t0 = cpu_self();
    for off in (0..r.len()).step_by(step) {
        let w = std::time::Instant::now();
        // SAFETY: off < r.len(), inside the region.
        unsafe { std::ptr::write_volatile(p.add(off + 8), 1u8) };
        lat.push(w.elapsed().as_nanos() as f64);
    }
    let t = cpu_self() - t0;
    // The rest of each huge page, as Region::touch writes it (no faults when huge).
    if kind == PageKind::Thp {
        for off in (0..r.len()).step_by(4096) {
            // SAFETY: as above.
            unsafe { std::ptr::write_volatile(p.add(off + 8), 1u8) };
        }
    }
    Ok((t, r.verify()?.ok))
}

/// The `q` quantile (0..1) of `v` (nearest rank), or `None` when empty.
pub fn quantile(v: &mut [f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Measures the fault costs (`repeats` interleaved pairs, the minimum kept).
pub fn measure(repeats: usize) -> Result<FaultCosts> {
    let (mut t4, mut t2, mut ok) = (f64::INFINITY, f64::INFINITY, true);
    let (mut l4, mut l2) = (Vec::new(), Vec::new());
    for r in 0..repeats.max(1) {
        for k in 0..2 {
            if (k + r) % 2 == 0 {
                t4 = t4.min(touch_once(PageKind::Base, &mut l4)?.0);
            } else {
                let (t, v) = touch_once(PageKind::Thp, &mut l2)?;
                t2 = t2.min(t);
                ok &= v;
            }
        }
    }
    if !t4.is_finite() || t4 <= 0.0 {
        return Err(ProbeError::Invalid(
            "touching 64 MiB took no measurable CPU time; the fault costs are unknown".into(),
        ));
    }
    Ok(FaultCosts {
        ns_per_4k: t4 * 1e9 / (BYTES / 4096) as f64,
        ns_per_2m: if ok { t2 * 1e9 / (BYTES >> 21) as f64 } else { 0.0 },
        thp_verified: ok,
        p99_ns_4k: quantile(&mut l4, 0.99),
        p99_ns_2m: if ok { quantile(&mut l2, 0.99) } else { None },
    })
}

impl FaultCosts {
    /// Seconds of faulting saved by huge pages: `faults_4k` under base pages against
    /// `faults_huge` (of which `huge_pages` were 2 MiB) under THP; 0 when THP was not
    /// verified in the measurement.
    pub fn saved_s(&self, faults_4k: u64, faults_huge: u64, huge_pages: u64) -> f64 {
        if !self.thp_verified {
            return 0.0;
        }
        self.time_s(faults_4k, 0) - self.time_s(faults_huge, huge_pages)
    }

    /// Seconds of faulting of a run that took `faults`, of which `huge_pages` were 2 MiB
    /// (the rest 4 KiB); the 2 MiB ones at 0 when THP was not verified in the measurement.
    pub fn time_s(&self, faults: u64, huge_pages: u64) -> f64 {
        let small = faults.saturating_sub(huge_pages) as f64;
        let huge = if self.thp_verified { huge_pages as f64 } else { 0.0 };
        (small * self.ns_per_4k + huge * self.ns_per_2m) * 1e-9
    }
}

/// Fault counts (`faults_4k`, `faults_huge`, `huge_pages`, as [`FaultCosts::saved_s`]
/// takes them) from the native runs' peak memory, for a recording that saw only part of
/// the run (sampled windows or a prefix see few of its first touches): the 4 KiB run
/// faults its peak `Anonymous` in 4 KiB pages; the THP run its peak `AnonHugePages` in
/// 2 MiB pages and the rest of its `Anonymous` in 4 KiB pages. A lower bound: memory freed
/// and touched again faults again, and is not in a peak.
pub fn from_native(anon_4k: u64, anon_thp: u64, anon_huge_thp: u64) -> (u64, u64, u64) {
    let huge = anon_huge_thp >> 21;
    let small = anon_thp.saturating_sub(huge << 21) >> 12;
    (anon_4k >> 12, huge + small, huge)
}

/// Fault counts (as [`from_native`] gives them) from the native runs' minor faults: the
/// 4 KiB run's `minflt_4k`, all of 4 KiB; the THP run's `minflt_thp`, of which 2 MiB the
/// more of (`minflt_4k` − `minflt_thp`) / 511 (each 2 MiB fault standing for 512 small
/// ones over the same memory; the file-backed minor faults, the same in both runs,
/// cancel) and the THP run's peak `AnonHugePages` `anon_huge_thp` in 2 MiB pages (a huge
/// page over memory touched sparsely stands for fewer small faults: two_regions.c's cold
/// array took 256 small faults at 4 KiB and 256 huge ones under THP). At most
/// `minflt_thp`.
pub fn from_minflt(minflt_4k: u64, minflt_thp: u64, anon_huge_thp: u64) -> (u64, u64, u64) {
    let huge = (minflt_4k.saturating_sub(minflt_thp) / 511).max(anon_huge_thp >> 21);
    (minflt_4k, minflt_thp, huge.min(minflt_thp))
}

/// The fault counts a prediction prices and where they came from: `counted` (the native
/// runs' minor faults, [`from_minflt`], medians of each way), which see memory freed
/// and touched again (an allocation loop) that neither a recording nor a peak does;
/// where none were counted, for a recording of part of the run (not `whole`), which
/// sees few of its first touches, `native` ([`from_native`], the runs' peak memory) when
/// that is more than the `simulated` counts; else those.
pub fn choose(
    runs: &[crate::child::Run],
    thp: crate::child::Way,
    whole: bool,
    simulated: (u64, u64, u64),
) -> ((u64, u64, u64), &'static str) {
    let med = |w: crate::child::Way, f: fn(&crate::child::Run) -> u64| {
        let mut v: Vec<u64> = runs.iter().filter(|x| x.way == w).map(f).collect();
        v.sort_unstable();
        match v.len() {
            0 => 0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2,
        }
    };
    let base = crate::child::Way::Base4k;
    let counted = from_minflt(
        med(base, |x| x.minflt),
        med(thp, |x| x.minflt),
        med(thp, |x| x.anon_huge_max),
    );
    let native = from_native(
        med(base, |x| x.anon_max),
        med(thp, |x| x.anon_max),
        med(thp, |x| x.anon_huge_max),
    );
    if counted.0 > 0 {
        (counted, "counted")
    } else if !whole && native.0 > simulated.0 {
        (native, "native")
    } else {
        (simulated, "simulated")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_is_the_nearest_rank() {
        // 1..=100: the 99th percentile is 99, the median 50; one value is every quantile.
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.99), Some(99.0));
        assert_eq!(quantile(&mut v, 0.5), Some(50.0));
        assert_eq!(quantile(&mut [7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&mut [], 0.99), None);
    }

    #[test]
    fn counted_faults_come_first_then_peaks_for_part_of_a_run_then_the_simulation() {
        use crate::child::{Run, Way};
        let run = |way, minflt, anon_max, anon_huge_max| Run {
            way,
            cpu_s: 1.0,
            user_s: 1.0,
            sys_s: 0.0,
            wall_s: 1.0,
            anon_huge_max,
            anon_max,
            rss_max: anon_max,
            samples: 1,
            minflt,
            huge_mappings: Vec::new(),
        };
        let thp = Way::GlibcHugetlbTunable;
        // 64 MiB: 16,384 small faults, 32 huge under THP (peak 64 MiB huge).
        let counted = [run(Way::Base4k, 16_384, 64 << 20, 0), run(thp, 32, 64 << 20, 64 << 20)];
        assert_eq!(choose(&counted, thp, true, (10, 10, 0)), ((16_384, 32, 32), "counted"));
        // No minor faults counted: a sampled recording that saw 10 takes the peaks.
        let none: Vec<Run> = counted.iter().map(|r| Run { minflt: 0, ..r.clone() }).collect();
        assert_eq!(choose(&none, thp, false, (10, 10, 0)), ((16_384, 32, 32), "native"));
        // A whole recording keeps its own counts.
        assert_eq!(choose(&none, thp, true, (10, 10, 0)), ((10, 10, 0), "simulated"));
    }

    #[test]
    fn minor_faults_give_the_huge_ones() {
        // 40 rounds of 48 MiB: 491,520 small faults, plus 1,000 file faults in both runs;
        // under THP 40 × 24 = 960 huge ones: 1,960 faults.
        // The peak AnonHugePages (48 MiB, 24 pages) is less: the count stands.
        assert_eq!(from_minflt(492_520, 1_960, 48 << 20), (492_520, 1_960, 960));
        // THP took as many: none huge.
        assert_eq!(from_minflt(1_000, 1_200, 0), (1_000, 1_200, 0));
        // A sparse 512 MiB array, one byte per 2 MiB, beside a dense 64 MiB one: 16,384 +
        // 256 + 1,000 small faults at 4 KiB; 32 + 256 huge + 1,000 under THP. The count
        // gives (17,640 − 1,288) / 511 = 32; the peak, 576 MiB huge, 288.
        assert_eq!(from_minflt(17_640, 1_288, 576 << 20), (17_640, 1_288, 288));
    }

    #[test]
    fn native_peaks_give_fault_counts() {
        // 4 GiB at 4 KiB: 1,048,576 faults; under THP 4 GiB of which 4,000 MiB is in
        // 2,000 huge pages, the other 96 MiB in 24,576 small pages.
        let (f4, fh, h) = from_native(4 << 30, 4 << 30, 4000 << 20);
        assert_eq!((f4, fh, h), (1_048_576, 2_000 + 24_576, 2_000));
    }

    #[test]
    fn the_saving_counts_each_fault_at_its_size() {
        let c = FaultCosts {
            ns_per_4k: 1000.0,
            ns_per_2m: 100_000.0,
            thp_verified: true,
            p99_ns_4k: None,
            p99_ns_2m: None,
        };
        // 1,024 faults of 4 KiB (4 MiB) against two 2 MiB faults and 10 small ones:
        // 1,024 µs − 10 µs − 200 µs = 814 µs.
        assert!((c.saved_s(1024, 12, 2) - 814e-6).abs() < 1e-12);
        let unverified = FaultCosts {
            thp_verified: false,
            ..c
        };
        assert_eq!(unverified.saved_s(1024, 12, 2), 0.0);
        // Each way's time: 1,024 µs; 10 µs + 200 µs.
        assert!((c.time_s(1024, 0) - 1024e-6).abs() < 1e-12);
        assert!((c.time_s(12, 2) - 210e-6).abs() < 1e-12);
    }

    #[test]
    fn measured_costs_are_positive_and_a_2m_fault_costs_more_than_a_4k_one() {
        let c = measure(1).unwrap();
        assert!(c.ns_per_4k > 0.0, "{c:?}");
        // 16,384 faults timed one by one: a p99 that is a real fault's time.
        assert!(c.p99_ns_4k.is_some_and(|p| p > 0.0), "{c:?}");
        // A 2 MiB fault zeroes 512× the memory of a 4 KiB one.
        if c.thp_verified {
            assert!(c.ns_per_2m > c.ns_per_4k, "{c:?}");
        }
    }
}
