/// True LRU as an intrusive doubly linked list per set (most recent at the head): a hit
/// or fill moves the way to the head in O(1); the victim is the tail. O(1) matters for
/// large fully associative levels, where a timestamp scan costs one compare per way on
/// every fill.
#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    /// Per slot: previous / next way in its set's list (`NIL` at the ends).
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Per set: most and least recently used way.
    head: Vec<u32>,
    tail: Vec<u32>,
}

const NIL: u32 = u32::MAX;

impl Lru {
    /// State for `sets` × `ways`; initially way 0 is least recently used.
    pub fn new(sets: usize, ways: usize) -> Lru {
        let mut l = Lru {
            ways,
            prev: vec![NIL; sets * ways],
            next: vec![NIL; sets * ways],
            head: vec![NIL; sets],
            tail: vec![NIL; sets],
        };
        for s in 0..sets {
            for w in 0..ways {
                l.push_front(s, w as u32);
            }
        }
        l
    }

    #[inline]
    fn push_front(&mut self, set: usize, way: u32) {
        let base = set * self.ways;
        let old = self.head[set];
        self.prev[base + way as usize] = NIL;
        self.next[base + way as usize] = old;
        if old != NIL {
            self.prev[base + old as usize] = way;
        } else {
            self.tail[set] = way;
        }
        self.head[set] = way;
    }

    /// Marks (set, way) most recently used.
    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        if self.head[set] == way as u32 {
            return;
        }
        let base = set * self.ways;
        let (p, n) = (self.prev[base + way], self.next[base + way]);
        // Not the head, so p != NIL.
        self.next[base + p as usize] = n;
        if n != NIL {
            self.prev[base + n as usize] = p;
        } else {
            self.tail[set] = p;
        }
        self.push_front(set, way as u32);
    }

    /// The least recently used way of `set`.
    #[inline]
    pub fn victim(&self, set: usize) -> usize {
        self.tail[set] as usize
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
