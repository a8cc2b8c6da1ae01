//! The sliding windows of the DRAM model's placement (a rank's or bank group's recent
//! activates and column commands, a channel's recent bursts): a sorted list of the last
//! [`N`] items that gains an item anywhere and loses its oldest (first) one.
//!
//! A window is a ring of exactly [`N`] slots that is **always full**: it starts filled
//! with a sentinel (time 0, a burst at 0..0), and every record drops the first item as it
//! adds one. So no operation tests for emptiness or fullness, and a slot is found by an
//! add and a mask (`N` is a power of two) instead of a bounds check or a `%` of a
//! non-constant sum. The ring has `2N` slots, the `N` items in those before `end`; the
//! slot before them keeps the item the last [`Ring::push_pop`] or [`Ring::insert_pop`]
//! dropped ([`Ring::dropped`]) until `N` more records overwrite it, so an append writes
//! slot `end` and moves `end` without reading the item it drops (a window's floor, the
//! largest item it dropped, is then read from there when a slow path needs it: rank.rs,
//! bus.rs). The sentinels never bind a placement: the model's own times start
//! at [`super::ORIGIN`] (2^40), and every constraint a recorded item imposes is "that
//! item's time plus a timing" (a u32 number of cycles, or a sum of two), which for a
//! sentinel is below 2^34 < `ORIGIN` <= every candidate time (the proofs per use are in
//! mod.rs, rank.rs and bus.rs). The model with windows that begin empty and grow to
//! `N` (the previous layout, a `Vec`-like array) places every request at the same time
//! shifted by `ORIGIN` (speed only; `tests/it/dram_digest.rs` pins the results).

/// Items in a window: the last 32 activates of a rank or bank group (assumed) and the
/// last 32 bursts of a channel (assumed; DRAMsim3's default transaction queue is 32
/// deep). A power of two, so an index is masked.
pub(super) const N: usize = 32;
/// Slots of a ring, and their mask.
const S: usize = 2 * N;
const M: usize = S - 1;
// A power of two (masked indices); more than one item (`replace_first` keeps the
// newest).
const _: () = assert!(N.is_power_of_two() && N > 1);

/// A full ring of `N` items in sorted order (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct Ring<T> {
    /// The items in slots `end - N..end` (modulo `S`), the last dropped one in the
    /// slot before.
    v: [T; S],
    /// The slot after the newest item (an append's); always below `S`.
    end: usize,
    /// A copy of the newest item (the one most reads want: one load).
    newest: T,
}

impl Ring<u64> {
    /// How many times are at or before `s` (`partition_point(|&a| a <= s)`): a binary
    /// search without branches, halving a span of `N/2`, `N/4`, ... 1 slots from the
    /// first item (it ends at the count among the first `N - 1`: all before `i` are at
    /// or before `s` and the `i`-th, if `i` < `N - 1`, after it), plus one if that count
    /// is `N - 1` and the last time is at or before `s` too (when the count is smaller,
    /// the last is after `s` as the `i`-th is, so the compare adds nothing).
    #[inline(always)]
    pub(super) fn rank_of(&self, s: u64) -> usize {
        let mut i = 0;
        let mut step = N / 2;
        while step > 0 {
            if self.get(i + step - 1) <= s {
                i += step;
            }
            step /= 2;
        }
        i + (self.last() <= s) as usize
    }
}

impl<T: Copy> Ring<T> {
    /// A ring of `N` copies of the sentinel `x` (which is also its [`Ring::dropped`]).
    pub(super) fn filled(x: T) -> Self {
        Ring {
            v: [x; S],
            end: 0,
            newest: x,
        }
    }

    /// Item `j` (0 = oldest; `j` < `N`).
    #[inline(always)]
    pub(super) fn get(&self, j: usize) -> T {
        self.v[(self.end + N + j) & M]
    }

    /// The newest item.
    #[inline(always)]
    pub(super) fn last(&self) -> T {
        self.newest
    }

    /// The item `k` places before the newest (`k` < `N`).
    #[inline(always)]
    pub(super) fn nth_back(&self, k: usize) -> T {
        self.v[(self.end + M - k) & M]
    }

    /// The item the last [`Ring::push_pop`] or [`Ring::insert_pop`] dropped (the
    /// sentinel before the first): the slot before the first item, `end - N - 1`, which
    /// neither those (they write slots `end - N..=end` before moving `end` one on, and
    /// `2N` slots hold the ring) nor [`Ring::replace_first`] (slot `end - N`) overwrite.
    #[inline(always)]
    pub(super) fn dropped(&self) -> T {
        self.v[(self.end + N - 1) & M]
    }

    /// The first position `j` whose item fails `pred` (the items are partitioned by it:
    /// all that pass come first), as `slice::partition_point`: a binary search (tests).
    #[cfg(test)]
    pub(super) fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0, N);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(&self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Drops the first item (it becomes [`Ring::dropped`]) and appends `x` after the
    /// last.
    #[inline(always)]
    pub(super) fn push_pop(&mut self, x: T) {
        let e = self.end;
        debug_assert!(e < S);
        // SAFETY: `end` is below `S`, the slot count: it starts at 0 and every write
        // (here and in `insert_pop`) masks it with `M`. (Unmasked and unchecked: one
        // instruction less per append than a mask.)
        unsafe { *self.v.get_unchecked_mut(e) = x };
        self.end = (e + 1) & M;
        self.newest = x;
    }

    /// Replaces the first item by `x` (which sorts before the second); returns the old
    /// first item.
    #[inline]
    pub(super) fn replace_first(&mut self, x: T) -> T {
        std::mem::replace(&mut self.v[(self.end + N) & M], x)
    }

    /// Drops the first item (it becomes [`Ring::dropped`]) and puts `x` right before
    /// the item now at position `i` (1 <= `i` <= `N`): the result is items `1..i`, `x`,
    /// items `i..N`. The items from `i` on move one slot up, the last into slot `end`
    /// (a short loop down from `end` to `x`'s slot, that of the first item plus `i`:
    /// new items land at or near the end).
    #[inline]
    pub(super) fn insert_pop(&mut self, i: usize, x: T) {
        debug_assert!((1..=N).contains(&i));
        let e = self.end & M;
        // `x`'s slot; the first item's is `e + N` (modulo `S`).
        let at = (e + N + i) & M;
        let mut k = e;
        while k != at {
            let p = (k + M) & M;
            self.v[k] = self.v[p];
            k = p;
        }
        self.v[at] = x;
        self.end = (e + 1) & M;
        // The newest item is `x` when it went last, else the one that was newest.
        if i == N {
            self.newest = x;
        }
    }

    /// The items, oldest first (tests and debugging).
    #[cfg(test)]
    pub(super) fn to_vec(&self) -> Vec<T> {
        (0..N).map(|j| self.get(j)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_sorted_vec_that_drops_its_first_item() {
        // A ring against a plain sorted Vec of N items doing the same (drop the first,
        // insert at the sorted position), over many laps of the ring; the inserts mostly
        // at the end (push_pop), some in the middle (insert_pop), some before the second
        // item (replace_first).
        let mut r = Ring::filled(0u64);
        let mut v = vec![0u64; N];
        let mut x = 7u64;
        for k in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let s = if k % 3 == 0 {
                k * 4 - (x >> 58).min(k * 4)
            } else {
                k * 4 + (x >> 60)
            };
            let i = v.partition_point(|&a| a <= s);
            assert_eq!(r.partition_point(|&a| a <= s), i);
            assert_eq!(r.rank_of(s), i);
            for d in [0, 1, 3, 64] {
                let (lo, hi) = (s.saturating_sub(d), s + d);
                assert_eq!(r.rank_of(lo), v.partition_point(|&a| a <= lo));
                assert_eq!(r.rank_of(hi), v.partition_point(|&a| a <= hi));
            }
            let dropped = v.remove(0);
            let last_dropped = r.dropped();
            if i == 0 {
                v.insert(0, s);
                assert_eq!(r.replace_first(s), dropped);
                // Not a drop of `push_pop` or `insert_pop`: the same as before.
                assert_eq!(r.dropped(), last_dropped);
            } else {
                v.insert(i - 1, s);
                if i == N {
                    r.push_pop(s)
                } else {
                    r.insert_pop(i, s)
                }
                assert_eq!(r.dropped(), dropped);
            }
            assert_eq!(r.to_vec(), v);
            assert_eq!(r.last(), v[N - 1]);
            assert_eq!(r.get(N - 1), v[N - 1]);
            for k in 0..5 {
                assert_eq!(r.nth_back(k), v[N - 1 - k]);
            }
        }
    }

    #[test]
    fn insert_pop_at_n_is_push_pop() {
        let mut a = Ring::filled(0u32);
        let mut b = Ring::filled(0u32);
        for k in 1..100 {
            a.insert_pop(N, k);
            b.push_pop(k);
            assert_eq!(a.to_vec(), b.to_vec());
            assert_eq!(a.dropped(), b.dropped());
        }
    }
}
