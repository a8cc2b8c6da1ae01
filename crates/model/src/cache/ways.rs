//! The tag store of a cache level whose replacement policy is not LRU: lines stay in
//! the way they were filled into, and a [`ReplacementPolicy`] of `replacement/` (the
//! same state, the same files, that TLB levels and page-walk caches use) chooses each
//! victim. LRU levels keep sets.rs's stores, where a set's order is its recency (the
//! policy's own fast path: see `cache/mod.rs`); this store with LRU is their reference
//! twin (`crates/model/tests/it/cache_policies.rs` checks that the two agree).
//!
//! The policy hears what the contract of `replacement/mod.rs` asks: every hit
//! (`touch`), every fill (`filled`), and a victim request only when every way of the
//! set is valid (a data cache never invalidates a line, so a set fills its ways in
//! order, lowest first, and its count of filled ways is its lowest empty way). A
//! write-back that finds its line present only marks it dirty: no event for the policy
//! (as in the LRU stores, where it does not make the line most recent). Words are
//! `u64`, `tag << 1 | dirty`, an empty way [`EMPTY`], as in sets.rs.
//!
//! The first level's short path (`Mru` in `cache/mod.rs`) marks "the first way" of a
//! set: here, the way the set's last lookup hit or fill took (kept per set), and it is
//! a hit there, so the policy hears it (`touch`) as any hit: the data caches do not
//! rely on `ReplacementPolicy::REPEAT_TOUCH_IDEMPOTENT` (a policy where a hit on the
//! line just filled changes the state, as SRRIP's, stays exact here).

use super::sets::EMPTY;
use crate::replacement::{Lru, Policy, Replacement, ReplacementPolicy};

/// The policy's state: [`Replacement`] for every policy of the table, and for LRU (whose
/// state [`Replacement`] leaves to the array that holds it) an [`Lru`] of its own.
#[derive(Clone, Debug)]
enum State {
    Lru(Lru),
    Table(Replacement),
}

impl State {
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        match self {
            State::Lru(l) => ReplacementPolicy::touch(l, set, way),
            State::Table(r) => r.touch(set, way),
        }
    }

    #[inline]
    fn filled(&mut self, set: usize, way: usize) {
        match self {
            State::Lru(l) => ReplacementPolicy::filled(l, set, way),
            State::Table(r) => r.filled(set, way),
        }
    }

    #[inline]
    fn victim(&mut self, set: usize) -> usize {
        match self {
            State::Lru(l) => ReplacementPolicy::victim(l, set),
            State::Table(r) => r.victim(set),
        }
    }
}

/// Sets of any number of ways whose lines stay in their ways, a replacement policy
/// choosing victims (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct ByWay {
    ways: usize,
    /// Per slot (set × ways + way): the tag word, or [`EMPTY`].
    tags: Vec<u64>,
    /// Per set: (ways filled so far, the way its last lookup hit or fill took).
    marks: Vec<(u32, u32)>,
    policy: State,
}

impl ByWay {
    /// `n` empty sets of `ways` ways under `policy` (`seed` for a random one).
    pub(super) fn new(n: usize, ways: usize, policy: Policy, seed: u64) -> ByWay {
        ByWay {
            ways,
            tags: vec![EMPTY; n * ways],
            marks: vec![(0, 0); n],
            policy: match policy {
                Policy::Lru => State::Lru(Lru::new(n, ways)),
                p => State::Table(Replacement::new(p, n, ways, seed)),
            },
        }
    }

    fn find(&self, s: usize, key: u64) -> Option<usize> {
        self.tags[s * self.ways..(s + 1) * self.ways]
            .iter()
            .position(|&t| t | 1 == key | 1)
    }

    pub(super) fn lookup(&mut self, s: usize, key: u64, write: bool) -> bool {
        match self.find(s, key) {
            Some(w) => {
                self.tags[s * self.ways + w] |= write as u64;
                self.policy.touch(s, w);
                self.marks[s].1 = w as u32;
                true
            }
            None => false,
        }
    }

    pub(super) fn contains(&self, s: usize, key: u64) -> bool {
        self.find(s, key).is_some()
    }

    /// A hit on the line the last lookup or fill of set `s` took, dirty if `write`
    /// (see the module documentation).
    pub(super) fn mark_first(&mut self, s: usize, write: bool) {
        let w = self.marks[s].1 as usize;
        self.tags[s * self.ways + w] |= write as u64;
        self.policy.touch(s, w);
    }

    /// Fills `key`'s line (absent) into set `s`: its lowest empty way, else the
    /// policy's victim. Returns the word displaced ([`EMPTY`] for an empty way).
    pub(super) fn fill(&mut self, s: usize, key: u64, dirty: bool) -> u64 {
        let (filled, _) = self.marks[s];
        let w = if (filled as usize) < self.ways {
            self.marks[s].0 += 1;
            filled as usize
        } else {
            let w = self.policy.victim(s);
            assert!(w < self.ways, "victim way {w} out of range");
            w
        };
        self.policy.filled(s, w);
        self.marks[s].1 = w as u32;
        std::mem::replace(&mut self.tags[s * self.ways + w], key | dirty as u64)
    }

    pub(super) fn write_back(&mut self, s: usize, key: u64) -> Option<u64> {
        if let Some(w) = self.find(s, key) {
            self.tags[s * self.ways + w] |= 1;
            return None;
        }
        Some(self.fill(s, key, true))
    }
}
