//! Memory-level parallelism of one core with data caches (`caches.mlp`; docs/memory.md,
//! "Data caches"): how much of a data reference's memory latency the core waits for.
//!
//! The core has `mlp` miss slots (the fill buffers of its L1D; assumed, per machine). A
//! data reference that misses every cache level takes a slot from the moment its
//! request leaves for memory until its data returns; the core goes on after the first
//! level's lookup, as after a hit, unless every slot is taken, in which case it first
//! waits for the oldest to free (the request leaves after that wait). With `mlp = 1` the
//! core waits for each miss before the next one leaves, but references that hit still
//! overlap a miss in flight. Walk descriptor reads never overlap (each read needs the
//! one before it, and the reference needs the walk): they cost their full latency. The
//! core's end is the later of its clock and its last miss's return.
//!
//! Written here: a few lines of arithmetic on the core's clock, the model itself.

/// A core's miss slots (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct Mlp {
    /// When each slot frees (core cycles), in the order they were taken.
    slots: Vec<u64>,
    /// The slot the next miss takes (the oldest).
    next: usize,
    /// Cycles of data latency the core did not wait for (subtracted from the sum of
    /// latencies that makes its clock); negative when it waited for slots.
    hidden: i64,
    /// The first level's lookup latency: what the core waits for a miss in flight.
    l1: u64,
}

impl Mlp {
    /// `n` slots (at least 1) behind a first level of `l1` cycles.
    pub(crate) fn new(n: u32, l1: u32) -> Mlp {
        Mlp {
            slots: vec![0; n.max(1) as usize],
            next: 0,
            hidden: 0,
            l1: l1 as u64,
        }
    }

    /// Cycles a miss leaving at `t` waits for a free slot.
    #[inline]
    pub(crate) fn wait(&self, t: u64) -> u64 {
        // `next` is always a slot's index (`new` makes one at least; `miss` wraps it).
        self.slots.get(self.next).map_or(0, |&s| s.saturating_sub(t))
    }

    /// A data reference that reached memory: issued at `t` (the core's clock before
    /// it), it waited `wait` for a slot and took `lat` cycles in all (lookups and
    /// memory). The slot is busy until `t + wait + lat`; the core advances by `wait` and
    /// the first level's lookup instead of `lat`.
    #[inline]
    pub(crate) fn miss(&mut self, t: u64, wait: u64, lat: u64) {
        self.slots[self.next] = t + wait + lat;
        // A compare rather than `%`: a division on every miss to memory.
        self.next += 1;
        if self.next == self.slots.len() {
            self.next = 0;
        }
        self.hidden += lat as i64 - (wait + self.l1.min(lat)) as i64;
    }

    /// `sum` (the core's latencies summed) less what overlapped.
    #[inline]
    pub(crate) fn clock(&self, sum: u64) -> u64 {
        (sum as i64 - self.hidden).max(0) as u64
    }

    /// When the core is done: its clock `now`, or the return of its last miss.
    pub(crate) fn end(&self, now: u64) -> u64 {
        self.slots.iter().copied().fold(now, u64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three misses of 100 cycles, one after another in program order (the core
    /// advances 4 cycles, the L1D lookup, per miss): (the core's clock, the last return).
    fn three_misses(slots: u32) -> (u64, u64) {
        let mut m = Mlp::new(slots, 4);
        let mut sum = 0;
        for _ in 0..3 {
            let t = m.clock(sum);
            let w = m.wait(t);
            m.miss(t, w, 100);
            sum += 100;
        }
        (m.clock(sum), m.end(m.clock(sum)))
    }

    #[test]
    fn misses_overlap_up_to_the_slots() {
        // Two slots: misses issued at 0, 4 and 8; the first two overlap; the third waits
        // for the first's return at 100 (92 cycles) and returns at 200. Clock: 4 + 4 +
        // (92 + 4) = 104, not the 300 of waiting for each.
        assert_eq!(three_misses(2), (104, 200));
        // One slot: each miss waits for the one before: the clock ends at 200 + 4 and
        // the last returns at 300.
        assert_eq!(three_misses(1), (204, 300));
    }
}
