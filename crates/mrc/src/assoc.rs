//! Set-associative LRU in one pass for every associativity of one set count.
//!
//! LRU within a set is a stack algorithm too (Hill & Smith, "Evaluating associativity in
//! CPU caches", 1989: all-associativity simulation): with the set chosen by the low bits
//! of the page number (as mmulab's TLB does, `vpn & (sets - 1)`), a `sets`-set, `w`-way
//! LRU TLB hits exactly the references whose distance within their set is below `w`. Each
//! set keeps its `depth` most recent keys, most recent first; a reference's position in
//! its set's list is its in-set distance, exact for every distance below `depth`, which
//! is all the curve needs (`depth` = the largest way count asked for). The cost is the
//! position found, at most `depth` per reference.

/// No key.
const NONE: u64 = u64::MAX;

/// The bounded per-set LRU stacks of one set count.
pub struct SetStacks {
    /// Number of sets (a power of two).
    pub sets: usize,
    /// Ways tracked per set.
    pub depth: usize,
    /// `sets * depth` keys, each set most recent first.
    keys: Vec<u64>,
    /// `hist[d]`: references at in-set distance `d` (`hist[depth]`: `depth` or more, or
    /// first references).
    pub hist: Vec<u64>,
}

impl SetStacks {
    /// Empty stacks for `sets` sets (a power of two) of `depth` ways.
    pub fn new(sets: usize, depth: usize) -> SetStacks {
        SetStacks {
            sets,
            depth,
            keys: vec![NONE; sets * depth],
            hist: vec![0; depth + 1],
        }
    }

    /// References `key`, whose set is chosen by `vpn`.
    #[inline]
    pub fn access(&mut self, key: u64, vpn: u64) {
        let set = (vpn as usize) & (self.sets - 1);
        let s = &mut self.keys[set * self.depth..(set + 1) * self.depth];
        match s.iter().position(|&k| k == key) {
            Some(i) => {
                self.hist[i] += 1;
                s[..=i].rotate_right(1);
            }
            None => {
                self.hist[self.depth] += 1;
                s.rotate_right(1);
                s[0] = key;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sets_by_low_bit() {
        // Keys = vpns. Set 0 gets 0, 2, 4, 0; set 1 gets 1, 1.
        // In set 0: 0 new, 2 new, 4 new, 0 at distance 2; set 1: 1 new, 1 at distance 0.
        let mut s = SetStacks::new(2, 4);
        for v in [0u64, 1, 2, 4, 1, 0] {
            s.access(v, v);
        }
        assert_eq!(s.hist, vec![1, 0, 1, 0, 4]);
    }

    #[test]
    fn beyond_depth_is_a_miss() {
        // depth 2: 0, 1, 2 push 0 out of the tracked list, so its reuse (true distance 2)
        // lands in the "depth or more" bucket.
        let mut s = SetStacks::new(1, 2);
        for v in [0u64, 1, 2, 0] {
            s.access(v, v);
        }
        assert_eq!(s.hist, vec![0, 0, 4]);
    }
}
