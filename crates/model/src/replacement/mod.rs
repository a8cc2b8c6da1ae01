//! Replacement policies of set-associative arrays (TLBs, page-walk caches).
//!
//! Contract: the array tells the policy about every hit (`touch`) and every fill
//! (`filled`) with the set and way, and asks for a victim only when every way of the set
//! is valid (invalid ways are always filled first, lowest way first). A policy's state is
//! private to it; identical event sequences give identical victims (random is seeded).
//!
//! Adding a policy: a file here with a struct offering `new(sets, ways, seed)`, `touch`,
//! `filled` and `victim`; a variant in [`Policy`] and [`Replacement`]; a reference model
//! in `tests/differential.rs`.

mod fifo;
mod lru;
mod plru;
mod random;

pub use fifo::Fifo;
pub use lru::Lru;
pub use plru::Plru;
pub use random::Random;

use serde::{Deserialize, Serialize};

/// The replacement policy a config names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Least recently used.
    Lru,
    /// Tree pseudo-LRU (any number of ways: the tree spans the next power of two and
    /// never points at a way that does not exist).
    Plru,
    /// First in, first out: hits do not change the order.
    Fifo,
    /// Uniformly random victim from a seeded generator.
    Random,
}

impl Policy {
    /// Names as configs spell them.
    pub const NAMES: [&'static str; 4] = ["lru", "plru", "fifo", "random"];
}

/// Replacement state of one array (closed enum: static dispatch on the hot path).
#[derive(Clone, Debug)]
pub enum Replacement {
    /// See [`Lru`].
    Lru(Lru),
    /// See [`Plru`].
    Plru(Plru),
    /// See [`Fifo`].
    Fifo(Fifo),
    /// See [`Random`].
    Random(Random),
}

impl Replacement {
    /// State for `sets` × `ways` under `policy`.
    pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> Replacement {
        match policy {
            Policy::Lru => Replacement::Lru(Lru::new(sets, ways)),
            Policy::Plru => Replacement::Plru(Plru::new(sets, ways)),
            Policy::Fifo => Replacement::Fifo(Fifo::new(sets, ways)),
            Policy::Random => Replacement::Random(Random::new(ways, seed)),
        }
    }

    /// A hit on (set, way). LRU, the default and by far the most used, is tested
    /// first with one compare and inlined; the other policies are called out of line so
    /// they do not crowd the hot path's registers.
    #[inline(always)]
    pub fn touch(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.touch(set, way),
            _ => self.touch_other(set, way),
        }
    }

    /// [`Replacement::touch`] for callers that hold `set < sets` and `way < ways` by
    /// construction: LRU skips its range checks; the other policies keep theirs.
    ///
    /// # Safety
    /// `set` < sets and `way` < ways.
    #[inline(always)]
    pub unsafe fn touch_in_range(&mut self, set: usize, way: usize) {
        match self {
            // SAFETY: the caller's contract.
            Replacement::Lru(p) => unsafe { p.touch_unchecked(set, way) },
            _ => self.touch_other(set, way),
        }
    }

    #[inline(never)]
    fn touch_other(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Plru(p) => p.touch(set, way),
            Replacement::Lru(p) => p.touch(set, way),
            Replacement::Fifo(_) | Replacement::Random(_) => {}
        }
    }

    /// (set, way) was just filled.
    #[inline(always)]
    pub fn filled(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Lru(p) => p.touch(set, way),
            _ => self.filled_other(set, way),
        }
    }

    #[inline(never)]
    fn filled_other(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Plru(p) => p.touch(set, way),
            Replacement::Fifo(p) => p.filled(set, way),
            Replacement::Lru(p) => p.touch(set, way),
            Replacement::Random(_) => {}
        }
    }

    /// Chooses the way to evict from a full set and records its fill: `victim`, then
    /// `filled` of that way, in one step (LRU's is O(1) and inlined).
    #[inline(always)]
    pub fn replace(&mut self, set: usize) -> usize {
        match self {
            Replacement::Lru(p) => p.replace(set),
            _ => self.replace_other(set),
        }
    }

    /// [`Replacement::replace`] for callers that hold `set < sets`; the way it returns
    /// is always < ways (LRU's ring holds no other; the other policies assert it).
    ///
    /// # Safety
    /// `set` < sets.
    #[inline(always)]
    pub unsafe fn replace_in_range(&mut self, set: usize) -> usize {
        match self {
            // SAFETY: the caller's contract.
            Replacement::Lru(p) => unsafe { p.replace_unchecked(set) },
            _ => self.replace_other(set),
        }
    }

    #[inline(never)]
    fn replace_other(&mut self, set: usize) -> usize {
        let way = self.victim_other(set);
        self.filled_other(set, way);
        way
    }

    /// The way to evict from a full set.
    #[inline(always)]
    pub fn victim(&mut self, set: usize) -> usize {
        match self {
            Replacement::Lru(p) => p.victim(set),
            _ => self.victim_other(set),
        }
    }

    #[inline(never)]
    fn victim_other(&mut self, set: usize) -> usize {
        match self {
            Replacement::Lru(p) => p.victim(set),
            Replacement::Plru(p) => p.victim(set),
            Replacement::Fifo(p) => p.victim(set),
            Replacement::Random(p) => p.victim(),
        }
    }
}
