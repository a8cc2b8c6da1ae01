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

/// The rows one bank closed recently (see the module doc); part of the bank's record.
/// Entry `k` is `row[k]` (or `NONE`), closed by a precharge at `pre[k]`, its last
/// column command at `last_col[k]`, `joins[k]` joins taken; kept as arrays per field, so
/// that "does any entry hold this row" reads the four rows side by side.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reorder {
    row: [u32; ROWS],
    pre: [u64; ROWS],
    last_col: [u64; ROWS],
    joins: [u32; ROWS],
    /// The entry the next closed row takes.
    next: usize,
}

const _: () = assert!(ROWS.is_power_of_two());

impl Default for Reorder {
    fn default() -> Self {
        Reorder {
            row: [NONE; ROWS],
            pre: [0; ROWS],
            last_col: [0; ROWS],
            joins: [0; ROWS],
            next: 0,
        }
    }
}

impl Reorder {
    /// Whether an entry holds `row` (nearly always not, and then [`Reorder::join`]
    /// finds nothing): four compares without a branch each.
    #[inline(always)]
    pub(super) fn holds(&self, row: u32) -> bool {
        self.row.iter().fold(false, |f, &r| f | (r == row))
    }

    /// The bank closed `row` (last column command at `last_col`) with a precharge at
    /// `pre`, for a request to another row. Takes the first empty entry, else the one
    /// with the earliest precharge: that is the entry filled longest ago, `next` in
    /// turn. Why: the precharges of a bank's entries are in the order the entries were
    /// filled, strictly. The caller's `pre` is at least the bank's earliest column
    /// command (`col_ok`), and `col_ok` lies after every entry's precharge: the closing
    /// request's column command comes tRP + tRCD after it, `col_ok` never decreases
    /// (a refresh or the row policy closing the row leave it), and a join moves
    /// `col_ok`, the joined entry and every entry closed after it by the same slot (so
    /// the order holds too). (Speed only: no search of the four precharges.)
    #[inline(always)]
    pub(super) fn closed(&mut self, row: u32, pre: u64, last_col: u64) {
        let k = self.next;
        debug_assert_eq!(k, {
            let full = self.row[ROWS - 1] != NONE;
            let mut m = 0;
            for i in 1..ROWS {
                if self.pre[i] < self.pre[m] {
                    m = i;
                }
            }
            if full {
                m
            } else {
                self.row.iter().position(|&r| r == NONE).unwrap_or(0)
            }
        });
        debug_assert!(self.row.iter().zip(&self.pre).all(|(&r, &p)| r == NONE || p < pre));
        // SAFETY: `next` is below `ROWS`, the arrays' length: it starts at 0 and is
        // only written here, masked. (Unmasked and unchecked: two instructions less per
        // conflict than a mask.)
        unsafe {
            *self.row.get_unchecked_mut(k) = row;
            *self.pre.get_unchecked_mut(k) = pre;
            *self.last_col.get_unchecked_mut(k) = last_col;
            *self.joins.get_unchecked_mut(k) = 0;
        }
        self.next = (k + 1) & (ROWS - 1);
    }

    /// A request for `row` arriving at `at`: if it joins a closed row (it arrived
    /// before the precharge that closed it), the earliest time of its column command
    /// and the entry's index (for [`Reorder::placed`]); the rows closed at or after that
    /// one move `slot` later (the caller moves the bank's own ready times).
    #[inline]
    pub(super) fn join(&mut self, row: u32, at: u64, slot: u64) -> Option<(u64, usize)> {
        if !self.holds(row) {
            return None;
        }
        // The first closing of `row` after the request arrived.
        let k = (0..ROWS)
            .filter(|&i| self.row[i] == row && at < self.pre[i] && self.joins[i] < JOIN_CAP)
            .min_by_key(|&i| self.pre[i])?;
        let pre = self.pre[k];
        for i in 0..ROWS {
            if self.row[i] != NONE && self.pre[i] > pre {
                self.pre[i] += slot;
                self.last_col[i] += slot;
            }
        }
        self.pre[k] += slot;
        self.joins[k] += 1;
        Some((at.max(self.last_col[k] + 1), k))
    }

    /// The joined request's column command went to `cmd` (after the bus and the group's
    /// spacing): the next join of that row follows it.
    #[inline]
    pub(super) fn placed(&mut self, k: usize, cmd: u64) {
        self.last_col[k] = self.last_col[k].max(cmd);
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
