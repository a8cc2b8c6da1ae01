/// FIFO: the victim is the way filled longest ago; hits do not reorder.
#[derive(Clone, Debug)]
pub struct Fifo {
    ways: usize,
    clock: u64,
    stamp: Vec<u64>,
}

impl Fifo {
    /// State for `sets` × `ways`.
    pub fn new(sets: usize, ways: usize) -> Fifo {
        Fifo {
            ways,
            clock: 0,
            stamp: vec![0; sets * ways],
        }
    }
    /// (set, way) was filled now.
    #[inline]
    pub fn filled(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamp[set * self.ways + way] = self.clock;
    }
    /// The oldest-filled way of `set`.
    #[inline]
    pub fn victim(&self, set: usize) -> usize {
        let s = &self.stamp[set * self.ways..(set + 1) * self.ways];
        let mut best = 0;
        for (w, &t) in s.iter().enumerate() {
            if t < s[best] {
                best = w;
            }
        }
        best
    }
}

impl super::ReplacementPolicy for Fifo {
    /// Hits do nothing.
    const REPEAT_TOUCH_IDEMPOTENT: bool = true;

    fn new(sets: usize, ways: usize, _seed: u64) -> Fifo {
        Fifo::new(sets, ways)
    }

    fn filled(&mut self, set: usize, way: usize) {
        Fifo::filled(self, set, way);
    }

    fn victim(&mut self, set: usize) -> usize {
        Fifo::victim(self, set)
    }
}
