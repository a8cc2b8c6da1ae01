//! A rank's refresh schedule (docs/memory.md, "DRAM"): rank `r` of `n` is busy for tRFC
//! from `(r + 1) * tREFI / n + k * tREFI` (DRAMsim3's rank-level staggered refresh).
//!
//! The period last looked up is kept with its start, the end of its refresh and its own
//! end, so that a time in it (as nearly every request's is: requests arrive close in
//! time) is answered by two compares instead of a division (speed only: the same answers
//! as the arithmetic; `tests/it/dram_digest.rs` runs every profile with refresh on).

use super::config::Timing;

#[derive(Clone, Debug, Default)]
pub(super) struct Refresh {
    /// Start of the rank's first refresh (ranks take turns).
    pub(super) ref_off: u64,
    /// The period last looked up ([`Refresh::period`]): its index and start, the end of
    /// its refresh (`per_start + tRFC`) and its end (`per_start + tREFI`), both
    /// saturating; without refresh `ref_off`, 0 and `u64::MAX`, so that every time from
    /// `ref_off` on lies in it, after its refresh.
    per_k: u64,
    /// Refreshes started by the end of that period (`per_k + 1`); 0 without refresh.
    per_n: u64,
    per_start: u64,
    ref_end: u64,
    per_next: u64,
}

impl Refresh {
    /// The schedule of a rank whose first refresh starts at `ref_off`.
    pub(super) fn new(ref_off: u64, t: &Timing) -> Refresh {
        let mut r = Refresh {
            ref_off,
            per_k: 0,
            per_n: 0,
            per_start: ref_off,
            ref_end: 0,
            per_next: u64::MAX,
        };
        if t.trefi > 0 {
            r.set_period(0, t);
        }
        r
    }

    /// For `at` ≥ `ref_off` and `trefi` > 0: the index `k` of the refresh period that
    /// holds `at`, and its start `ref_off + k * trefi`.
    #[inline]
    fn period(&mut self, at: u64, t: &Timing) -> (u64, u64) {
        if at >= self.per_start && at - self.per_start < t.trefi {
            return (self.per_k, self.per_start);
        }
        let k = (at - self.ref_off) / t.trefi;
        self.set_period(k, t);
        (k, self.per_start)
    }

    /// Makes period `k` the one last looked up.
    fn set_period(&mut self, k: u64, t: &Timing) {
        self.per_k = k;
        self.per_n = k + 1;
        self.per_start = self.ref_off + k * t.trefi;
        self.ref_end = self.per_start.saturating_add(t.trfc);
        self.per_next = self.per_start.saturating_add(t.trefi);
    }

    /// Refreshes of the rank started by `at`: 0 before `ref_off` (and always without
    /// refresh), else the index of the period holding `at` plus one. Two compares when
    /// `at` lies in the period last looked up (and without refresh for every `at` from
    /// `ref_off` on: then the period spans all those times and counts 0).
    #[inline(always)]
    pub(super) fn refreshes_by(&mut self, at: u64, t: &Timing) -> u64 {
        if at >= self.per_start && at < self.per_next {
            self.per_n
        } else {
            self.refreshes_by_slow(at, t)
        }
    }

    /// [`Refresh::refreshes_by`] by the period's arithmetic.
    #[cold]
    #[inline(never)]
    fn refreshes_by_slow(&mut self, at: u64, t: &Timing) -> u64 {
        if t.trefi == 0 || at < self.ref_off {
            0
        } else {
            self.period(at, t).0 + 1
        }
    }

    /// Whether [`Refresh::free`] answers `at` by its two compares (so `at` lies outside
    /// every refresh): a test without the call of the slow path.
    #[inline(always)]
    pub(super) fn is_free(&self, at: u64) -> bool {
        at >= self.ref_end && at < self.per_next
    }

    /// `at`, or the end of the refresh that covers it. Two compares when `at` lies in
    /// the period last looked up, after its refresh (and always without refresh: the
    /// period then spans every time).
    #[inline(always)]
    pub(super) fn free(&mut self, at: u64, t: &Timing) -> u64 {
        if self.is_free(at) {
            return at;
        }
        self.free_slow(at, t)
    }

    /// [`Refresh::free`] by the period's arithmetic.
    #[inline(never)]
    fn free_slow(&mut self, at: u64, t: &Timing) -> u64 {
        if t.trefi == 0 || at < self.ref_off {
            return at;
        }
        let start = self.period(at, t).1;
        if at < start + t.trfc {
            start + t.trfc
        } else {
            at
        }
    }
}
