use mmulab_base::SplitMix64;

/// Random replacement from a seeded SplitMix64 stream: same seed, same victims.
#[derive(Clone, Debug)]
pub struct Random {
    ways: u64,
    rng: SplitMix64,
}

impl Random {
    /// State for arrays of `ways` ways.
    pub fn new(ways: usize, seed: u64) -> Random {
        Random {
            ways: ways as u64,
            rng: SplitMix64::new(seed),
        }
    }
    /// A uniformly chosen way.
    #[inline]
    pub fn victim(&mut self) -> usize {
        self.rng.below(self.ways) as usize
    }
}

impl super::ReplacementPolicy for Random {
    /// Hits and fills do nothing.
    const REPEAT_TOUCH_IDEMPOTENT: bool = true;

    fn new(_sets: usize, ways: usize, seed: u64) -> Random {
        Random::new(ways, seed)
    }

    fn victim(&mut self, _set: usize) -> usize {
        Random::victim(self)
    }
}
