//! Row-hit-first reordering within a bank (FR-FCFS), approximated without a queue
//! (docs/memory.md, "DRAM").
//!
//! A controller that schedules first-ready, first-come-first-served serves a request
//! that hits the open row before an older one that would close it. The model places each
//! request once, in the order it reaches it, so it cannot hold a conflicting request back
//! until the hits queued behind it have arrived. Instead, each bank remembers the last
//! [`ROWS`] rows that a conflict closed, with the time the closing precharge was placed:
//!
//! * A later request for such a row that **arrived before that precharge** was waiting in
//!   the controller's queue while the row was still open, and FR-FCFS would have served
//!   it before closing the row. It *joins* the row: it is counted as a row hit, its column
//!   command goes right after the row's last one (and not before its arrival), and
//!   everything the bank did after that row (the precharge, the next row's activate and
//!   column commands, the rows closed since) moves later by one column slot (the larger
//!   of tCCD_L and tBURST): the delay the extra hit puts in front of them.
//! * A closed row takes at most [`JOIN_CAP`] joins (the queue's depth bounds how many
//!   hits can be waiting for it).
//! * Only rows closed by a conflict are remembered: a refresh or the row policy
//!   (closed, capped) closes rows whatever is queued.
//!
//! What it does not redo: requests already placed keep the latency they were given (a
//! request that FR-FCFS delays behind the joined hits is not re-timed; the bank's ready
//! times, and so every later request, are), and the rank's activate window and the
//! data bus are not shifted. Cheap: a scan of [`ROWS`] entries per request that misses
//! the open row.

/// Rows closed by a conflict that each bank remembers (assumed; a controller's queue
/// of 32 requests rarely holds requests for more distinct rows of one bank).
pub const ROWS: usize = 4;

/// Joins a closed row takes at most (assumed: 32, the transaction queue of
/// [`super::BUS_WINDOW`], also the 32 bursts of a 2 KiB row).
pub const JOIN_CAP: u32 = 32;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Closed {
    /// The row, or `NONE`.
    row: u32,
    /// When the precharge that closed it was placed.
    pre: u64,
    /// Its last column command.
    last_col: u64,
    /// Joins taken.
    joins: u32,
}

const EMPTY: Closed = Closed {
    row: NONE,
    pre: 0,
    last_col: 0,
    joins: 0,
};

/// The rows one bank closed recently (see the module doc); part of the bank's record.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reorder {
    e: [Closed; ROWS],
}

impl Default for Reorder {
    fn default() -> Self {
        Reorder { e: [EMPTY; ROWS] }
    }
}

impl Reorder {
    /// The bank closed `row` (last column command at `last_col`) with a precharge at
    /// `pre`, for a request to another row. Replaces the entry closed earliest.
    #[inline]
    pub(super) fn closed(&mut self, row: u32, pre: u64, last_col: u64) {
        let e = &mut self.e;
        // The first empty entry, else the first with the earliest precharge (entries
        // fill in order and never empty again, so all are full when the last is).
        let k = if e[ROWS - 1].row != NONE {
            let mut k = 0;
            for i in 1..ROWS {
                if e[i].pre < e[k].pre {
                    k = i;
                }
            }
            k
        } else {
            e.iter().position(|c| c.row == NONE).unwrap_or(0)
        };
        e[k] = Closed {
            row,
            pre,
            last_col,
            joins: 0,
        };
    }

    /// A request for `row` arriving at `at`: if it joins a closed row (it arrived
    /// before the precharge that closed it), the earliest time of its column command
    /// and the entry's index (for [`Reorder::placed`]); the rows closed at or after that
    /// one move `slot` later (the caller moves the bank's own ready times).
    #[inline(always)]
    pub(super) fn join(&mut self, row: u32, at: u64, slot: u64) -> Option<(u64, usize)> {
        // Nearly always no entry holds `row`: say so after four compares without a
        // branch each (speed only; the search below finds nothing then either).
        if !self.e.iter().fold(false, |f, c| f | (c.row == row)) {
            return None;
        }
        self.join_search(row, at, slot)
    }

    /// [`Reorder::join`] when an entry holds `row`.
    #[cold]
    #[inline(never)]
    fn join_search(&mut self, row: u32, at: u64, slot: u64) -> Option<(u64, usize)> {
        let e = &mut self.e;
        // The first closing of `row` after the request arrived.
        let k = e
            .iter()
            .enumerate()
            .filter(|(_, c)| c.row == row && at < c.pre && c.joins < JOIN_CAP)
            .min_by_key(|(_, c)| c.pre)?
            .0;
        let pre = e[k].pre;
        for c in e.iter_mut() {
            if c.row != NONE && c.pre > pre {
                c.pre += slot;
                c.last_col += slot;
            }
        }
        e[k].pre += slot;
        e[k].joins += 1;
        Some((at.max(e[k].last_col + 1), k))
    }

    /// The joined request's column command went to `cmd` (after the bus and the group's
    /// spacing): the next join of that row follows it.
    #[inline]
    pub(super) fn placed(&mut self, k: usize, cmd: u64) {
        let c = &mut self.e[k];
        c.last_col = c.last_col.max(cmd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_only_before_the_precharge_and_up_to_the_cap() {
        let mut r = Reorder::default();
        // Row 5 closed by a precharge at 100, its last column command at 40.
        r.closed(5, 100, 40);
        // Arrived after the precharge: was not queued; no join.
        assert_eq!(r.join(5, 100, 8), None);
        // Another row: no join.
        assert_eq!(r.join(6, 10, 8), None);
        // Arrived at 10 < 100: joins right after the last column command (41), and the
        // precharge moves to 108.
        assert_eq!(r.join(5, 10, 8), Some((41, 0)));
        r.placed(0, 41);
        // Arrived at 105: before the moved precharge (108), so it joins too.
        assert_eq!(r.join(5, 105, 8), Some((105, 0)));
        for _ in 2..JOIN_CAP {
            assert!(r.join(5, 0, 8).is_some());
        }
        assert_eq!(r.join(5, 0, 8), None, "the cap");
    }

    #[test]
    fn remembers_the_last_rows_and_shifts_the_later_ones() {
        let mut r = [Reorder::default(); 2];
        for (i, row) in (0..ROWS as u32 + 1).enumerate() {
            r[1].closed(row, 100 * (i as u64 + 1), 0);
        }
        // Row 0 (closed first) was replaced by the fifth.
        assert_eq!(r[1].join(0, 0, 8), None);
        // Row 1 (precharge at 200) joins; rows closed after it move 8 later, so row 4
        // (precharge at 500 -> 508) now takes a request arriving at 505.
        assert!(r[1].join(1, 0, 8).is_some());
        assert!(r[1].join(4, 505, 8).is_some());
        // Bank 0 has nothing.
        assert_eq!(r[0].join(1, 0, 8), None);
    }
}
