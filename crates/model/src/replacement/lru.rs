/// True LRU as an intrusive doubly linked list per set (most recent at the head): a hit
/// or fill moves the way to the head in O(1); the victim is the tail. O(1) matters for
/// large fully associative levels, where a timestamp scan costs one compare per way on
/// every fill.
#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    /// Per slot: previous / next way in its set's list (`NIL` at the ends).
    links: Vec<Link>,
    /// Per set: most and least recently used way.
    ends: Vec<Link>,
}

/// (previous, next) of a slot; (head, tail) of a set.
#[derive(Clone, Copy, Debug)]
struct Link {
    a: u32,
    b: u32,
}

const NIL: u32 = u32::MAX;

impl Lru {
    /// State for `sets` × `ways`; initially way 0 is least recently used.
    pub fn new(sets: usize, ways: usize) -> Lru {
        let mut l = Lru { ways, links: vec![Link { a: NIL, b: NIL }; sets * ways], ends: vec![Link { a: NIL, b: NIL }; sets] };
        for s in 0..sets {
            for w in 0..ways {
                l.push_front(s, w as u32);
            }
        }
        l
    }

    /// The link of (set, way).
    ///
    /// The replacement state is touched on every TLB fill and hit, so the indexing here
    /// is unchecked: `touch` checks `set` and `way` once, `new` passes valid ones, and
    /// every other way comes from the lists (always < ways); `debug_assert`s check it
    /// in test builds.
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

    #[inline(always)]
    fn push_front(&mut self, set: usize, way: u32) {
        let old = self.ends(set).a;
        *self.link(set, way) = Link { a: NIL, b: old };
        if old != NIL {
            self.link(set, old).a = way;
        } else {
            self.ends(set).b = way;
        }
        self.ends(set).a = way;
    }

    /// Marks (set, way) most recently used. Always inlined: each call site (a hit, a
    /// fill) then has its own branch history for the already-most-recent test.
    #[inline(always)]
    pub fn touch(&mut self, set: usize, way: usize) {
        // The two checks that make the unchecked indexing below sound for any caller:
        // every other index comes from the lists themselves (always < ways).
        assert!(way < self.ways && set < self.ends.len(), "(set {set}, way {way}) out of range");
        let way = way as u32;
        if self.ends(set).a == way {
            return;
        }
        let Link { a: p, b: n } = *self.link(set, way);
        // Not the head, so p != NIL.
        self.link(set, p).b = n;
        if n != NIL {
            self.link(set, n).a = p;
        } else {
            self.ends(set).b = p;
        }
        self.push_front(set, way);
    }

    /// The least recently used way of `set`.
    #[inline]
    pub fn victim(&self, set: usize) -> usize {
        self.ends[set].b as usize
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
        // Set 0 untouched: way 0 was pushed first, so it is least recent.
        assert_eq!(l.victim(0), 0);
    }
}
