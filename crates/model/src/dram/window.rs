//! The sliding windows of the DRAM model's placement (a rank's or bank group's recent
//! activates and column commands, a channel's recent bursts): a sorted list that gains
//! an item anywhere and loses its oldest (first) one once full.
//!
//! A plain `Vec` with `remove(0)` moved the whole window for every request (a third of
//! the model's instructions on a random stream); here the front advances over a
//! consumed prefix, which is dropped in one move every [`COMPACT`] removals. The items
//! and their order are exactly those of the plain `Vec` (speed only).

/// Removals between two compactions of the consumed prefix.
const COMPACT: usize = 64;

/// A sorted window (see the module documentation).
#[derive(Clone, Debug, Default)]
pub(super) struct Window<T> {
    v: Vec<T>,
    /// Items before this index have left the window.
    head: usize,
}

impl<T: Copy> Window<T> {
    /// The items in the window, oldest (first) to newest.
    #[inline]
    pub(super) fn items(&self) -> &[T] {
        &self.v[self.head..]
    }

    /// Items in the window.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.v.len() - self.head
    }

    /// Inserts `x` at position `i` of [`Window::items`].
    #[inline]
    pub(super) fn insert(&mut self, i: usize, x: T) {
        if self.head + i == self.v.len() {
            self.v.push(x);
        } else {
            self.v.insert(self.head + i, x);
        }
    }

    /// Removes and returns the first item (the window is not empty).
    #[inline]
    pub(super) fn pop_front(&mut self) -> T {
        let x = self.v[self.head];
        self.head += 1;
        if self.head >= COMPACT {
            self.v.drain(..self.head);
            self.head = 0;
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_vec_with_remove_at_the_front() {
        // A window of at most 5 sorted items against a plain Vec doing the same, over
        // enough removals to compact several times.
        let mut w = Window::<u64>::default();
        let mut v: Vec<u64> = Vec::new();
        let mut x = 7u64;
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let s = x >> 54;
            if v.len() == 5 {
                assert_eq!(w.pop_front(), v.remove(0));
            }
            let i = v.partition_point(|&a| a <= s);
            assert_eq!(w.items().partition_point(|&a| a <= s), i);
            v.insert(i, s);
            w.insert(i, s);
            assert_eq!(w.items(), &v[..]);
            assert_eq!(w.len(), v.len());
        }
    }
}
