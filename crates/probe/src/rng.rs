//! A small deterministic random source (SplitMix64) and the shuffles the probe needs.
//! No external crate: the probe must be reproducible from a seed on every target.

/// SplitMix64: fast, statistically fine for shuffling, reproducible.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
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
