/// Tree pseudo-LRU. Each set has a binary tree over `leaves` = the next power of two ≥
/// ways; each of its `leaves - 1` nodes holds one bit that points toward the side to
/// evict next (0 = left, 1 = right). An access sets every node on its path to point
/// away from it. When ways is not a power of two, the victim search never enters a
/// subtree holding no real way.
#[derive(Clone, Debug)]
pub struct Plru {
    ways: usize,
    leaves: usize,
    bits: Vec<u8>,
}

impl Plru {
    /// State for `sets` × `ways`.
    pub fn new(sets: usize, ways: usize) -> Plru {
        let leaves = ways.next_power_of_two();
        Plru {
            ways,
            leaves,
            bits: vec![0; sets * (leaves - 1).max(1)],
        }
    }

    #[inline]
    fn base(&self, set: usize) -> usize {
        set * (self.leaves - 1).max(1)
    }

    /// Marks (set, way) as just used.
    #[inline]
    pub fn touch(&mut self, set: usize, way: usize) {
        let base = self.base(set);
        // Nodes in heap order: node 0 is the root, children of n are 2n+1, 2n+2.
        let (mut node, mut lo, mut span) = (0usize, 0usize, self.leaves);
        while span > 1 {
            let half = span / 2;
            let right = way >= lo + half;
            // Point away from the accessed side.
            self.bits[base + node] = u8::from(!right);
            node = 2 * node + 1 + usize::from(right);
            if right {
                lo += half;
            }
            span = half;
        }
    }

    /// The way the tree points at in `set`.
    #[inline]
    pub fn victim(&self, set: usize) -> usize {
        let base = self.base(set);
        let (mut node, mut lo, mut span) = (0usize, 0usize, self.leaves);
        while span > 1 {
            let half = span / 2;
            // The right subtree holds ways lo+half .. lo+span; it may hold none.
            let right = self.bits[base + node] == 1 && lo + half < self.ways;
            node = 2 * node + 1 + usize::from(right);
            if right {
                lo += half;
            }
            span = half;
        }
        lo
    }
}

impl super::ReplacementPolicy for Plru {
    /// A touch sets the bits on its path to point away from it: a second touch of the
    /// same way writes the same bits.
    const REPEAT_TOUCH_IDEMPOTENT: bool = true;

    fn new(sets: usize, ways: usize, _seed: u64) -> Plru {
        Plru::new(sets, ways)
    }

    fn touch(&mut self, set: usize, way: usize) {
        Plru::touch(self, set, way);
    }

    fn victim(&mut self, set: usize) -> usize {
        Plru::victim(self, set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_way_classic_order() {
        let mut p = Plru::new(1, 4);
        for w in 0..4 {
            p.touch(0, w);
        }
        // After touching 0,1,2,3 in order the tree points at way 0.
        assert_eq!(p.victim(0), 0);
        p.touch(0, 0);
        assert_eq!(p.victim(0), 2);
    }

    #[test]
    fn odd_ways_never_point_past_the_end() {
        for ways in [1, 3, 5, 6, 7, 12] {
            let mut p = Plru::new(2, ways);
            for i in 0..200usize {
                let v = p.victim(1);
                assert!(v < ways, "ways {ways}: victim {v}");
                p.touch(1, (i * 7 + v) % ways);
            }
        }
    }
}
