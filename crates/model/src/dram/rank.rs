//! The per-rank and per-bank-group records of the DRAM model: a rank's recent activates
//! (tRRD, tFAW), the end of its last write data (tWTR), its refresh schedule and its
//! request count; a bank group's recent activates (tRRD_L) and column commands (tCCD_L).
//!
//! The activate and column windows are full rings ([`Ring`]) that start filled with
//! the sentinel time 0. Every candidate time these functions see is at least
//! [`ORIGIN`]: the model's times start there (mod.rs), and [`Acts::check`] and
//! [`Acts::place`] raise a candidate to the floor, which starts at `ORIGIN` and only
//! grows. A sentinel's constraint on a candidate `s` is `0 + spacing > s` or `0 + faw >
//! s` with `spacing` and `faw` timings (below 2^32), false for every `s` >= `ORIGIN`
//! (2^40): a sentinel never binds, so each answer equals the one the window of the real
//! activates alone gives.

use super::refresh::Refresh;
use super::ring::{Ring, N};
use super::{Timing, ORIGIN};

/// The recent activates (or column commands) of a rank or bank group, sorted.
#[derive(Clone, Debug)]
pub(super) struct Acts {
    times: Ring<u64>,
    /// The largest of `ORIGIN` and the times [`Ring::replace_first`] dropped (see
    /// [`Acts::floor`]).
    floor_first: u64,
}

impl Default for Acts {
    fn default() -> Self {
        Acts {
            times: Ring::filled(0),
            floor_first: ORIGIN,
        }
    }
}

impl Acts {
    /// No activate before this: the largest of `ORIGIN` and the times that left the
    /// window. Those that [`Ring::push_pop`] and [`Ring::insert_pop`] dropped never
    /// decrease, so the last of them ([`Ring::dropped`], the sentinel 0 before any) is
    /// their largest: each drops the window's first, smallest, time, and every time in
    /// the window when one drops is at least the one dropped before (it was in the
    /// window then, so not below that smallest one, or it was recorded after, at or
    /// after the floor, which is at least every time dropped before: every recorded
    /// time comes from `check`, `place` or `after_last`, at or after the floor, or
    /// after the last time, which is at least every time that left). The times
    /// `replace_first` dropped are in `floor_first`. (Speed only: an append stores its
    /// time alone, and the floor is read where a slow path needs it.)
    #[inline(always)]
    fn floor(&self) -> u64 {
        self.floor_first.max(self.times.dropped())
    }

    /// `s` if an activate at `s` keeps `spacing` from every recorded one and (with
    /// `faw` > 0) is at least `faw` after the fourth before it; else a later candidate.
    #[inline]
    pub(super) fn check(&self, s: u64, spacing: u64, faw: u64) -> u64 {
        let s = s.max(self.floor());
        let v = &self.times;
        let i = v.rank_of(s);
        if i > 0 && v.get(i - 1) + spacing > s {
            return v.get(i - 1) + spacing;
        }
        if i < N && s + spacing > v.get(i) {
            return v.get(i) + spacing;
        }
        if faw > 0 && i >= 4 && v.get(i - 4) + faw > s {
            return v.get(i - 4) + faw;
        }
        s
    }

    /// For `s` at or after the last recorded time (`s` >= `ORIGIN`): the earliest time
    /// from `s` that [`Acts::check`] leaves where it is, `max(s, last + spacing, fourth
    /// last + faw)`; `None` for `s` before the last time. Why that is the fixpoint: from
    /// a time at or after every recorded one, `check` finds position `N`, so it can only
    /// be held off by the last time (`spacing`) and the fourth last (`faw`), both lower
    /// bounds, and returns the bound it breaks; a time at or after both passes. The
    /// floor (the largest time that left the window) is at most every recorded real
    /// time (the window is sorted and drops its first, smallest, time; every later time
    /// was placed at or after the floor), and while no real time is recorded it is
    /// `ORIGIN` <= `s`: so `s` is past it. With `faw` = 0 (no tFAW) the fourth last
    /// bound is the fourth last time, at most the last, at most `s`: so it needs no
    /// test of `faw`. (Speed only: the common case of a request later than every
    /// activate before it.)
    #[inline(always)]
    pub(super) fn after_last_faw(&self, s: u64, spacing: u64, faw: u64) -> Option<u64> {
        let last = self.times.last();
        if s < last {
            return None;
        }
        Some(s.max(last + spacing).max(self.times.nth_back(3) + faw))
    }

    /// [`Acts::after_last_faw`] without tFAW (`faw` = 0, which bounds nothing, above):
    /// `max(s, last + spacing)`, or `None` for `s` before the last time.
    #[inline(always)]
    pub(super) fn after_last(&self, s: u64, spacing: u64) -> Option<u64> {
        let last = self.times.last();
        if s < last {
            return None;
        }
        Some(s.max(last + spacing))
    }

    /// The time the loop of [`Acts::check`] and [`Refresh::free`] from `s` ends at
    /// (`check`, then `free`, until neither moves it), in one pass that walks the window
    /// from the time's position instead of searching it again every round. The same
    /// time: each step moves only past times that break the constraint it checks (a
    /// time less than `spacing` after an earlier activate or before a later one, one
    /// whose fourth-before activate is at least `v[i-4]`, one inside a refresh), so both
    /// find the earliest time from `s` (and the floor) that breaks none. Returns it and
    /// its position in the window (`partition_point(|&a| a <= time)`).
    #[inline(always)]
    fn place(&self, s: u64, spacing: u64, faw: u64, rf: &mut Refresh, t: &Timing) -> (u64, usize) {
        let v = &self.times;
        let mut s = s.max(self.floor());
        // The position, found from the end: an out-of-order activate lands a few
        // places before the last (GUPS on the Pi 5: the insert after it moves ~2.3
        // times), where a scan from the end is shorter than the search.
        let mut i = N;
        while i > 0 && v.get(i - 1) > s {
            i -= 1;
        }
        loop {
            // `spacing` after the activate before; then past every later one closer
            // than `spacing` (the activates are sorted, so after the walk `v[i]` is the
            // first later than `s`, and `v[i - 1]` at least `spacing` before it).
            if i > 0 {
                s = s.max(v.get(i - 1) + spacing);
            }
            while i < N && s + spacing > v.get(i) {
                s = s.max(v.get(i) + spacing);
                i += 1;
            }
            if faw > 0 && i >= 4 && v.get(i - 4) + faw > s {
                s = v.get(i - 4) + faw;
                continue;
            }
            let f = rf.free(s, t);
            if f == s {
                return (s, i);
            }
            s = f;
        }
    }

    /// [`Acts::place_record`] for `s` (>= `ORIGIN`) before the last recorded time, the
    /// out-of-order activate: the first round of [`Acts::place`]'s loop, without its
    /// calls, and the record; when tFAW holds the time found or it may lie in a refresh
    /// (outside the refresh period last looked up, after its refresh: not
    /// [`Refresh::is_free`]), or `s` lies before the second recorded time,
    /// `place_record` from `s`, which finds the same time (this changes nothing it
    /// reads). The same position as `place`'s search from the end, which passes
    /// position `N` (the last time lies after `s`), and the same start: `place` raises
    /// `s` to the floor, and `s` at or after the second time is at or after it (checked
    /// in the test profile). Why: every time from position 1 on is at least the floor,
    /// or the floor is `ORIGIN` (<= `s`). At first the floor is `ORIGIN`. A drop by
    /// [`Ring::push_pop`] or [`Ring::insert_pop`] takes the smallest time, so the
    /// times left are at least it; one by [`Ring::replace_first`] leaves the times from
    /// position 1 on, which were at least the time it drops; and a recorded time goes
    /// to position 0 only by `replace_first`, else after a time it is not below (the
    /// one `insert_pop` at position `i` >= 1 drops, or the last for `push_pop`), while
    /// every recorded time is at or after the floor of its moment. (A sentinel at
    /// position 1 or later means no real time has left: the floor is `ORIGIN`.)
    /// (Speed only: without `place_record`'s saved registers and the floor's loads,
    /// in the short call [`Rank::act_late`]; GUPS on the Pi 5: nearly every
    /// out-of-order activate.)
    #[inline(always)]
    pub(super) fn place_record_late(&mut self, s: u64, spacing: u64, faw: u64, rf: &mut Refresh, t: &Timing) -> u64 {
        let v = &self.times;
        debug_assert!(s < v.last());
        let mut i = N - 1;
        while v.get(i - 1) > s {
            i -= 1;
            if i == 1 {
                return self.place_record(s, spacing, faw, rf, t);
            }
        }
        debug_assert!(s >= self.floor());
        let mut a = s.max(v.get(i - 1) + spacing);
        while i < N && a + spacing > v.get(i) {
            a = a.max(v.get(i) + spacing);
            i += 1;
        }
        if (faw > 0 && i >= 4 && v.get(i - 4) + faw > a) || !rf.is_free(a) {
            return self.place_record(s, spacing, faw, rf, t);
        }
        self.record_at(a, i);
        a
    }

    /// [`Acts::place`], then [`Acts::record_at`] of the time it found, which it returns
    /// (one call for the out-of-order activate: its values stay in registers).
    #[inline(never)]
    pub(super) fn place_record(&mut self, s: u64, spacing: u64, faw: u64, rf: &mut Refresh, t: &Timing) -> u64 {
        let (act, i) = self.place(s, spacing, faw, rf, t);
        self.record_at(act, i);
        act
    }

    /// Records an activate at `s` (anywhere in time order), dropping the oldest.
    #[inline]
    pub(super) fn record(&mut self, s: u64) {
        if self.times.last() <= s {
            self.record_last(s);
        } else {
            let i = self.times.rank_of(s);
            self.record_at(s, i);
        }
    }

    /// [`Acts::record`] of time `s` at position `i` of the window (as [`Acts::place`]
    /// gives): the oldest time leaves, and `s` goes after the times not greater than it.
    #[inline(always)]
    pub(super) fn record_at(&mut self, s: u64, i: usize) {
        debug_assert_eq!(self.times.rank_of(s), i);
        if i == N {
            self.times.push_pop(s);
        } else if i == 0 {
            // Before every recorded time: it takes the place of the oldest.
            let old = self.times.replace_first(s);
            self.floor_first = self.floor_first.max(old);
        } else {
            self.times.insert_pop(i, s);
        }
    }

    /// [`Acts::record`] of a time at or after every recorded one (as
    /// [`Acts::after_last`] gives): an append.
    #[inline(always)]
    pub(super) fn record_last(&mut self, s: u64) {
        debug_assert!(self.times.last() <= s);
        self.times.push_pop(s);
    }
}

/// A bank group's record.
#[derive(Clone, Debug, Default)]
pub(super) struct Group {
    /// Its activates (tRRD_L).
    pub(super) acts: Acts,
    /// Its column commands (tCCD_L).
    pub(super) cols: Acts,
}

/// A rank's record.
#[derive(Clone, Debug)]
pub(super) struct Rank {
    /// Its activates (tRRD, tFAW).
    pub(super) acts: Acts,
    /// End of the last write data (tWTR); 0 (long before `ORIGIN`) at first.
    pub(super) wr_end: u64,
    /// Its last [`WRITES`] writes placed: column command and end of data.
    writes: [(u64, u64); WRITES],
    /// Where the next write is recorded in `writes` (modulo [`WRITES`]).
    wi: usize,
    /// Its refresh schedule.
    pub(super) rf: Refresh,
}

/// Writes a rank remembers for the write-to-read turnaround of a read placed between
/// them: a drain's worth (the default write buffer, 32).
pub(super) const WRITES: usize = 32;

impl Rank {
    /// A rank whose first refresh starts at model time `ref_off`.
    pub(super) fn new(ref_off: u64, t: &Timing) -> Rank {
        Rank {
            acts: Acts::default(),
            // Before any write: the sentinel time 0, which tWTR after never binds (a
            // read at the start would otherwise wait tWTR after a write never made).
            wr_end: 0,
            writes: [(0, 0); WRITES],
            wi: 0,
            rf: Refresh::new(ref_off, t),
        }
    }

    /// Records a write placed with its column command at `cmd` and its data ending at
    /// `end`.
    #[inline(always)]
    pub(super) fn record_write(&mut self, cmd: u64, end: u64) {
        self.writes[self.wi % WRITES] = (cmd, end);
        self.wi = self.wi.wrapping_add(1);
        if end > self.wr_end {
            self.wr_end = end;
        }
    }

    /// The first time from `c` at which a read's column command keeps the turnarounds
    /// with every write remembered: tWTR after the end of a write's data, unless the
    /// read goes before the write, at least `rtw` before its column command (read data
    /// done and the bus turned before the write data starts).
    #[cold]
    #[inline(never)]
    pub(super) fn read_between_writes(&self, mut c: u64, rtw: u64, twtr: u64) -> u64 {
        // Each write forbids the column times (w - rtw, e + twtr). Every interval that
        // holds `c` also holds everything from `c` to its end, so moving to the furthest
        // of those ends skips no allowed time: repeated, it gives the first allowed time
        // from `c`. (Each pass is a branch-free maximum over the array.)
        loop {
            let mut next = c;
            for &(w, e) in &self.writes {
                let end = e + twtr;
                let holds = c + rtw > w && c < end;
                next = next.max(if holds { end } else { 0 });
            }
            if next == c {
                return c;
            }
            c = next;
        }
    }

    /// [`Acts::place_record_late`] of an activate from `s` in the rank's window, with
    /// tRRD and tFAW and its refresh schedule. (Speed only: a call with three arguments,
    /// fewer moves at the caller.)
    #[inline(never)]
    pub(super) fn act_late(&mut self, s: u64, t: &Timing) -> u64 {
        self.acts.place_record_late(s, t.trrd, t.tfaw, &mut self.rf, t)
    }
}
