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

/// Replacement state of one array, for every policy but LRU. LRU, the default and by
/// far the most used, keeps its state in an [`Lru`] the array holds beside this enum
/// ([`crate::assoc::AssocArray`]), so its hot path reaches it with no dispatch; the other
/// policies are called out of line so they do not crowd that path's registers.
#[derive(Clone, Debug)]
pub enum Replacement {
    /// LRU: the state is the array's [`Lru`].
    Lru,
    /// See [`Plru`].
    Plru(Plru),
    /// See [`Fifo`].
    Fifo(Fifo),
    /// See [`Random`].
    Random(Random),
}

impl Replacement {
    /// State for `sets` × `ways` under `policy` (nothing for LRU, see above).
    pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> Replacement {
        match policy {
            Policy::Lru => Replacement::Lru,
            Policy::Plru => Replacement::Plru(Plru::new(sets, ways)),
            Policy::Fifo => Replacement::Fifo(Fifo::new(sets, ways)),
            Policy::Random => Replacement::Random(Random::new(ways, seed)),
        }
    }

    /// True for LRU, whose state the array keeps.
    #[inline(always)]
    pub fn is_lru(&self) -> bool {
        matches!(self, Replacement::Lru)
    }

    /// A hit on (set, way) (nothing for LRU, whose state is elsewhere).
    #[inline(never)]
    pub fn touch(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Plru(p) => p.touch(set, way),
            Replacement::Lru | Replacement::Fifo(_) | Replacement::Random(_) => {}
        }
    }

    /// (set, way) was just filled (nothing for LRU).
    #[inline(never)]
    pub fn filled(&mut self, set: usize, way: usize) {
        match self {
            Replacement::Plru(p) => p.touch(set, way),
            Replacement::Fifo(p) => p.filled(set, way),
            Replacement::Lru | Replacement::Random(_) => {}
        }
    }

    /// Chooses the way to evict from a full set and records its fill: `victim`, then
    /// `filled` of that way. Not for LRU (its array asks its own state): panics.
    #[inline(never)]
    pub fn replace(&mut self, set: usize) -> usize {
        let way = self.victim(set);
        self.filled(set, way);
        way
    }

    /// The way to evict from a full set. Not for LRU: panics.
    pub fn victim(&mut self, set: usize) -> usize {
        match self {
            Replacement::Lru => unreachable!("LRU state lives in the array"),
            Replacement::Plru(p) => p.victim(set),
            Replacement::Fifo(p) => p.victim(set),
            Replacement::Random(p) => p.victim(),
        }
    }
}
