/// True LRU as an intrusive circular doubly linked list per set, most recent at the
/// head, with the least recently used way (the head's predecessor) kept beside the head.
/// A hit moves its way to the head in O(1); a fill of a full set evicts the tail and
/// makes it the head, which in a circular list only moves both ends back one way.
/// O(1) matters for large fully associative levels, where a timestamp scan costs one
/// compare per way on every fill.
#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    /// Per slot: previous (more recent) / next (less recent) way in its set's ring.
    links: Vec<Link>,
    /// Per set: (most recently used way, least recently used way).
    ends: Vec<Link>,
}

/// (more recent, less recent) neighbours of a way in its set's ring; for a set's ends,
/// (head, tail).
#[derive(Clone, Copy, Debug)]
struct Link {
    prev: u32,
    next: u32,
}

impl Lru {
    /// State for `sets` × `ways`; initially way `ways - 1` is most and way 0 least
    /// recently used (as if ways 0, 1, … had been touched in that order).
    pub fn new(sets: usize, ways: usize) -> Lru {
        let w = ways as u32;
        let ring = (0..w).map(|i| Link {
            prev: (i + 1) % w,
            next: (i + w - 1) % w,
        });
        let links = (0..sets).flat_map(|_| ring.clone()).collect();
        Lru {
            ways,
            links,
            ends: vec![Link { prev: w - 1, next: 0 }; sets],
        }
    }

    /// The link of (set, way).
    ///
    /// The replacement state is touched on every TLB fill and hit, so the indexing here
    /// is unchecked: `touch` checks `set` and `way` once, and every other way comes from
    /// the rings (always < ways); `debug_assert`s check it in test builds.
    #[inline(always)]
    fn link(&mut self, set: usize, way: u32) -> &mut Link {
        let i = set * self.ways + way as usize;
        debug_assert!(i < self.links.len());
        // SAFETY: i < sets * ways == links.len() (see above).
        unsafe { self.links.get_unchecked_mut(i) }
    }

    #[inline(always)]
    fn ends(&mut self, set: usize) -> &mut Link {
        debug_assert!(set < self.ends.len());
        // SAFETY: set < sets == ends.len() (see `link`).
        unsafe { self.ends.get_unchecked_mut(set) }
    }

    /// Marks (set, way) most recently used. Always inlined: each call site (a hit, a
    /// fill) then has its own branch history for the already-most-recent test.
    #[inline(always)]
    pub fn touch(&mut self, set: usize, way: usize) {
        // The two checks that make the unchecked indexing below sound for any caller:
        // every other index comes from the rings themselves (always < ways).
        assert!(
            way < self.ways && set < self.ends.len(),
            "(set {set}, way {way}) out of range"
        );
        // SAFETY: checked just above.
        unsafe { self.touch_unchecked(set, way) }
    }

    /// [`Lru::touch`] without its range checks, for callers that hold `set < sets` and
    /// `way < ways` by construction (an array's own set index and search result).
    ///
    /// # Safety
    /// `set` < sets and `way` < ways.
    #[inline(always)]
    pub unsafe fn touch_unchecked(&mut self, set: usize, way: usize) {
        debug_assert!(way < self.ways && set < self.ends.len());
        let way = way as u32;
        let Link { prev: head, next: tail } = *self.ends(set);
        if head == way {
            return;
        }
        if tail == way {
            // The least recent way: in a ring, moving both ends back one way makes it
            // the most recent and its predecessor the least recent.
            let new_tail = self.link(set, way).prev;
            *self.ends(set) = Link {
                prev: way,
                next: new_tail,
            };
            return;
        }
        // Unlink `way`, then insert it between the tail and the old head.
        let Link { prev: p, next: n } = *self.link(set, way);
        self.link(set, p).next = n;
        self.link(set, n).prev = p;
        *self.link(set, way) = Link { prev: tail, next: head };
        self.link(set, tail).next = way;
        self.link(set, head).prev = way;
        self.ends(set).prev = way;
    }

    /// The least recently used way of `set`.
    #[inline(always)]
    pub fn victim(&self, set: usize) -> usize {
        self.ends[set].next as usize
    }

    /// Evicts the least recently used way of a full `set` and makes it the most recent
    /// (a fill of it): `victim` and `touch` of the victim in one step. In the ring this
    /// only moves both ends back one way.
    #[inline(always)]
    pub fn replace(&mut self, set: usize) -> usize {
        assert!(set < self.ends.len(), "set {set} out of range");
        // SAFETY: checked just above.
        unsafe { self.replace_unchecked(set) }
    }

    /// [`Lru::replace`] without its range check; the way it returns is always < ways.
    ///
    /// # Safety
    /// `set` < sets.
    #[inline(always)]
    pub unsafe fn replace_unchecked(&mut self, set: usize) -> usize {
        debug_assert!(set < self.ends.len());
        let way = self.ends(set).next;
        let new_tail = self.link(set, way).prev;
        *self.ends(set) = Link {
            prev: way,
            next: new_tail,
        };
        way as usize
    }
}

impl super::ReplacementPolicy for Lru {
    /// Touching the most recent way leaves it most recent.
    const REPEAT_TOUCH_IDEMPOTENT: bool = true;

    fn new(sets: usize, ways: usize, _seed: u64) -> Lru {
        Lru::new(sets, ways)
    }

    fn touch(&mut self, set: usize, way: usize) {
        Lru::touch(self, set, way);
    }

    fn victim(&mut self, set: usize) -> usize {
        Lru::victim(self, set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_follows_touches() {
        let mut l = Lru::new(2, 4);
        for w in [2, 0, 3, 1] {
            l.touch(1, w);
        }
        assert_eq!(l.victim(1), 2);
        l.touch(1, 2);
        assert_eq!(l.victim(1), 0);
        l.touch(1, 1);
        assert_eq!(l.victim(1), 0);
        // Set 0 untouched: way 0 was touched first, so it is least recent.
        assert_eq!(l.victim(0), 0);
    }

    /// The ring against a plain recency list, over every way count up to 9 and long
    /// random touch and replace sequences (the victim after each step must agree).
    #[test]
    fn ring_matches_a_recency_list() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for ways in 1..=9usize {
            let mut l = Lru::new(3, ways);
            // Most recent last; initially 0, 1, …, ways-1 were touched in order.
            let mut order: Vec<Vec<usize>> = vec![(0..ways).collect(); 3];
            for _ in 0..2000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let set = (seed % 3) as usize;
                // Bias towards the current victim: that is the ring's special case; and
                // sometimes replace it (the fill of a full set) instead of touching.
                let way = match seed >> 40 & 3 {
                    0 => l.victim(set),
                    1 => l.replace(set),
                    _ => (seed >> 20) as usize % ways,
                };
                if seed >> 40 & 3 != 1 {
                    l.touch(set, way);
                }
                let o = &mut order[set];
                o.retain(|&w| w != way);
                o.push(way);
                for (s, o) in order.iter().enumerate().take(3) {
                    assert_eq!(l.victim(s), o[0], "ways {ways}, set {s}");
                }
            }
        }
    }
}
