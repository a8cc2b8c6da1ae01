//! A channel's data bus: its last [`super::BUS_WINDOW`] bursts, a burst taking the first
//! free slot at or after its data is ready (tRTRS apart from another rank's).
//!
//! The bursts are a full ring ([`Ring`]) that starts filled with the sentinel burst
//! 0..tBURST. Every candidate start is at least [`ORIGIN`] (raised to the floor, which
//! starts there and only grows), so a sentinel, ending tBURST after 0 (tBURST and tRTRS
//! are below 2^32), lies before the skipped prefix of [`Channel::find`] and never holds
//! a burst off nor offers it a gap: each answer equals the one the window of the real
//! bursts alone gives.

use super::ring::{Ring, N};
use super::ORIGIN;

/// A burst on the bus: it starts at `start` and ends `len` (tBURST) later, `len` the
/// same for every burst of the model (so it is not stored).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Burst {
    start: u64,
    rank: u32,
}

#[derive(Clone, Debug)]
pub(super) struct Channel {
    /// The last `N` bursts placed, sorted by start.
    busy: Ring<Burst>,
    /// The largest of `ORIGIN` and the ends of the bursts [`Channel::reserve`] dropped
    /// before every other (see [`Channel::floor`]).
    floor_first: u64,
}

impl Default for Channel {
    fn default() -> Self {
        Channel {
            busy: Ring::filled(Burst::default()),
            floor_first: ORIGIN,
        }
    }
}

impl Channel {
    /// No burst starts before this: the largest of `ORIGIN` and the ends of the bursts
    /// that left the window. Those [`Ring::push_pop`] and [`Ring::insert_pop`] dropped
    /// start no earlier than the one before (each drops the first burst, and every
    /// burst in the window then either was there at the drop before, so starts no
    /// earlier than the burst dropped then, or was placed after it, at or after the
    /// floor (`find`), at least that burst's end, or after the last burst), so the last of them ([`Ring::dropped`], the
    /// sentinel at 0 before any) ends last; the ends of the bursts `reserve` dropped
    /// before every other are in `floor_first`. (Speed only: an append stores its
    /// burst alone, and the floor is read where `find` needs it.)
    #[inline(always)]
    fn floor(&self, len: u64) -> u64 {
        self.floor_first.max(self.busy.dropped().start + len)
    }

    /// The first start at or after `ready` where a burst of `len` by `rank` fits on the
    /// bus (`sw` cycles apart from another rank's bursts), and where to record it.
    #[inline(never)]
    pub(super) fn find(&self, ready: u64, len: u64, rank: u32, sw: u64) -> (u64, usize) {
        let mut s = ready.max(self.floor(len));
        // Bursts that end more than `sw` before `s` can neither hold the new one off nor
        // leave it a gap (they start before `s`): skip them. The bursts do not overlap
        // and are sorted by start, so by end too, and they form a prefix. (Speed only:
        // the scan below from the first burst gives the same answer.)
        // Found from the end: the bursts near `s` are the last few.
        let busy = &self.busy;
        let mut skip = N;
        while skip > 0 && busy.get(skip - 1).start + len + sw >= s {
            skip -= 1;
        }
        for i in skip..N {
            let b = busy.get(i);
            let gap = if b.rank != rank { sw } else { 0 };
            if s + len + gap <= b.start {
                return (s, i);
            }
            s = s.max(b.start + len + gap);
        }
        (s, N)
    }

    /// The start of the latest burst placed (0, the sentinel's, before any): the newest
    /// in the window, which an insert before it or a burst dropped at once (`reserve`)
    /// leave in place and only a later one replaces.
    pub(super) fn last_start(&self) -> u64 {
        self.busy.last().start
    }

    /// Whether the bus is idle from `ready` on, so that `find` answers `(ready, N)`,
    /// given `gap` = `len + sw` (a burst's length and the rank switch): every burst ends
    /// more than `sw` before it, so none holds it off or lies after it (and the floor,
    /// the end of a burst that left the window, is at most the last burst's end, or
    /// `ORIGIN` <= `ready` while no real burst is recorded).
    #[inline(always)]
    pub(super) fn idle_from(&self, ready: u64, gap: u64) -> bool {
        self.busy.last().start + gap < ready
    }

    /// Reserves a slot at `start` where `idle_from` said the bus is idle (after every
    /// burst): an append.
    #[inline(always)]
    pub(super) fn reserve_last(&mut self, start: u64, rank: u32) {
        self.busy.push_pop(Burst { start, rank });
    }

    /// Reserves the slot `find` returned: the burst goes in at its position and the
    /// oldest one leaves (the new one itself when it lies before every other).
    #[inline(never)]
    pub(super) fn reserve(&mut self, (start, at): (u64, usize), len: u64, rank: u32) {
        let b = Burst { start, rank };
        if at == N {
            self.busy.push_pop(b);
        } else if at == 0 {
            // Before every burst in the window: it leaves at once.
            self.floor_first = self.floor_first.max(start + len);
        } else {
            self.busy.insert_pop(at, b);
        }
    }
}
