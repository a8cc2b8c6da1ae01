//! SplitMix64, the project's one seeded generator.

/// SplitMix64: a tiny seeded generator. Written here rather than taken from a crate
/// because mmulab promises the same numbers for the same seed across releases, which a
/// library whose stream may change between versions does not promise.
///
/// Every random choice in mmulab (workloads, memory ageing, GPU fragmentation, random
/// replacement, the probe's shuffles) draws from this one stream; a user that wants its
/// own sequence seeds it differently (e.g. `seed ^ CONSTANT`), never copies it.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A value uniformly distributed in `0..n`, by Lemire's multiply-shift (0 when `n`
    /// is 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// A value uniformly distributed in `[0, 1)`: the top 53 bits of the next draw.
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_deterministic_and_bounded() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
    }

    /// The stream is a promise across releases: these are SplitMix64's published first
    /// outputs for seed 0 (the reference implementation's test vector).
    #[test]
    fn stream_is_pinned() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn unit_f64_is_in_range() {
        let mut r = SplitMix64::new(3);
        for _ in 0..1000 {
            let x = r.unit_f64();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
