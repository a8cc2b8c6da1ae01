//! The probe's deterministic random source and the shuffles it needs. The generator is
//! the trace crate's SplitMix64 (one implementation in the project), seeded so that the
//! probe is reproducible from a seed on every target.

use mmulab_trace::workload::SplitMix64;

/// SplitMix64 with the probe's seeding: fast, statistically fine for shuffling.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed ^ 0x9E37_79B9_7F4A_7C15))
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
    /// Fisher–Yates shuffle in place.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// A random visiting order over `0..n` (a shuffle), read as one cycle:
/// following `order[0] -> order[1] -> ... -> order[n-1] -> order[0]` visits every element
/// exactly once per lap. A pointer chase built from it cannot be predicted by a stride
/// prefetcher and never falls into a shorter sub-cycle.
pub fn random_cycle(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_is_a_permutation() {
        let mut r = Rng::new(7);
        let mut o = random_cycle(1000, &mut r);
        o.sort_unstable();
        assert!(o.iter().enumerate().all(|(i, &v)| i == v));
    }

    #[test]
    fn below_stays_in_range_and_varies() {
        let mut r = Rng::new(1);
        let v: Vec<usize> = (0..1000).map(|_| r.below(10)).collect();
        assert!(v.iter().all(|&x| x < 10));
        assert!((0..10).all(|k| v.contains(&k)));
    }
}
