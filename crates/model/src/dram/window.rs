//! The sliding windows of the DRAM model's placement (a rank's or bank group's recent
//! activates and column commands, a channel's recent bursts): a sorted list that gains
//! an item anywhere and loses its oldest (first) one once full.
//!
//! A plain `Vec` with `remove(0)` moved the whole window for every request (a third of
//! the model's instructions on a random stream). Here the items live in a fixed array
//! of [`CAP`] slots (no heap, no length or capacity checks of a `Vec`): the front
//! advances over a consumed prefix, which is moved back to the start only when an insert
//! reaches the end of the array (once per about `CAP - len` removals), and an insert
//! shifts the items after its position one slot up in a plain loop — a new item usually
//! lands at or near the end (times mostly grow), so that loop is short, where
//! `Vec::insert` called `memmove` every time (about 70 instructions per record,
//! callgrind). The items and their order are exactly those of the plain `Vec` (speed
//! only; the test below checks it).

/// Slots of a window's array: room for the largest window (33 bursts: a channel inserts
/// before it drops its oldest) and about as many consumed items before a compaction.
pub(super) const CAP: usize = 64;

/// A sorted window (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct Window<T> {
    v: [T; CAP],
    /// The items are `v[head..head + len]`.
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Default for Window<T> {
    fn default() -> Self {
        Window {
            v: [T::default(); CAP],
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Window<T> {
    /// The items in the window, oldest (first) to newest.
    #[inline]
    pub(super) fn items(&self) -> &[T] {
        &self.v[self.head..self.head + self.len]
    }

    /// Items in the window.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Makes room for one more item after the last (moving the items to the start of
    /// the array if they reach its end) and returns the slice of the items plus that
    /// free slot. The window never holds more than 33 items (its users drop the oldest
    /// beyond that; asserted in mod.rs), so the move always frees room.
    #[inline]
    fn grow(&mut self) -> &mut [T] {
        if self.head + self.len == CAP {
            self.compact();
        }
        self.len += 1;
        &mut self.v[self.head..self.head + self.len]
    }

    /// Inserts `x` at position `i` of [`Window::items`] (`i <= len`).
    #[inline]
    pub(super) fn insert(&mut self, i: usize, x: T) {
        let s = self.grow();
        let last = s.len() - 1;
        // Shift `s[i..last]` up one slot, from the end; a plain loop (items are
        // usually inserted at or near the end).
        let mut j = last;
        while j > i {
            s[j] = s[j - 1];
            j -= 1;
        }
        s[i] = x;
    }

    /// The last (newest) item, if any.
    #[inline(always)]
    pub(super) fn last(&self) -> Option<T> {
        if self.len == 0 {
            None
        } else {
            Some(self.v[(self.head + self.len - 1) % CAP])
        }
    }

    /// The item `k` places before the last (`k` < `len`): `items()[len - 1 - k]`.
    #[inline(always)]
    pub(super) fn nth_back(&self, k: usize) -> T {
        debug_assert!(k < self.len);
        self.v[(self.head + self.len - 1 - k) % CAP]
    }

    /// Appends `x` after the last item (the caller knows it sorts there): `insert(len,
    /// x)` without the shifting loop. The index is taken modulo [`CAP`] only to spare
    /// a bounds check: after `grow` it is below `CAP` anyway.
    #[inline(always)]
    pub(super) fn push(&mut self, x: T) {
        if self.head + self.len == CAP {
            self.compact();
        }
        self.v[(self.head + self.len) % CAP] = x;
        self.len += 1;
    }

    /// Moves the items to the start of the array (rare: once per about `CAP - len`
    /// removals).
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        self.v.copy_within(self.head..CAP, 0);
        self.head = 0;
    }

    /// Removes and returns the first item (the window is not empty).
    #[inline]
    pub(super) fn pop_front(&mut self) -> T {
        debug_assert!(self.len > 0);
        let x = self.v[self.head % CAP];
        self.head += 1;
        self.len -= 1;
        x
    }
}

impl Window<u64> {
    /// Inserts `x` after every item not greater than it (the position
    /// `items().partition_point(|&a| a <= x)`), found by moving the greater items up
    /// one slot from the end: one step when `x` is the latest time, as it usually is
    /// (then an append: [`Window::push`]).
    #[inline(always)]
    pub(super) fn insert_sorted(&mut self, x: u64) {
        match self.last() {
            Some(l) if l > x => self.insert_sorted_shift(x),
            _ => self.push(x),
        }
    }

    /// [`Window::insert_sorted`] of a time before the last one.
    #[inline(never)]
    fn insert_sorted_shift(&mut self, x: u64) {
        let s = self.grow();
        let mut j = s.len() - 1;
        while j > 0 && s[j - 1] > x {
            s[j] = s[j - 1];
            j -= 1;
        }
        s[j] = x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_vec_with_remove_at_the_front() {
        // A window of at most 5 (and one of at most 33) sorted items against a plain Vec
        // doing the same, over enough removals to move the items back many times; half
        // the inserts by position, half by `insert_sorted`, some appends by `push`.
        for max in [5usize, 33] {
            let mut w = Window::<u64>::default();
            let mut v: Vec<u64> = Vec::new();
            let mut x = 7u64;
            for k in 0..5000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Mostly growing times with some out of order, as the model's, and
                // every third one anywhere (down to the front).
                let s = if k % 3 == 0 { x >> 50 } else { k as u64 * 4 + (x >> 58) };
                if v.len() == max {
                    assert_eq!(w.pop_front(), v.remove(0));
                }
                let i = v.partition_point(|&a| a <= s);
                assert_eq!(w.items().partition_point(|&a| a <= s), i);
                v.insert(i, s);
                if k % 4 == 1 && i == w.len() {
                    w.push(s);
                } else if k % 2 == 0 {
                    w.insert(i, s);
                } else {
                    w.insert_sorted(s);
                }
                assert_eq!(w.items(), &v[..]);
                assert_eq!(w.len(), v.len());
                assert_eq!(w.last(), v.last().copied());
                for k in 0..v.len().min(5) {
                    assert_eq!(w.nth_back(k), v[v.len() - 1 - k]);
                }
            }
        }
    }
}
