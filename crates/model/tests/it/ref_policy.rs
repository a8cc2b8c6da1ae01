//! Plain reference models of the replacement policies (`mmulab_model::replacement`), one
//! for every structure that takes a policy: the TLB's reference (differential.rs) and
//! the data caches' (cache_differential.rs, cache_policies.rs). Each is the policy in its
//! most obvious form: LRU and FIFO an ordered list of ways, PLRU an explicit tree of
//! bools, random the seeded stream. Adding a policy: its arm in `touched` and `victim`
//! (the match is exhaustive, so a policy without one does not compile).

use mmulab_base::SplitMix64;
use mmulab_model::replacement::Policy;

/// Every policy of the table (`Policy::NAMES`), in its order: the differential tests
/// draw from it, so a policy added to the table is tested with no change there.
pub fn every_policy() -> Vec<Policy> {
    Policy::NAMES
        .iter()
        .map(|n| serde_json::from_str(&format!("\"{n}\"")).expect("a policy name"))
        .collect()
}

/// One policy's bookkeeping for `sets` × `ways`.
pub struct RefPolicy {
    policy: Policy,
    ways: usize,
    /// LRU: ways of each set, most recent first. FIFO: ways in fill order, newest first.
    order: Vec<Vec<usize>>,
    /// PLRU: one bool per tree node, heap order (true = evict right next).
    tree: Vec<Vec<bool>>,
    rng: SplitMix64,
}

impl RefPolicy {
    pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> RefPolicy {
        let leaves = ways.next_power_of_two();
        RefPolicy {
            policy,
            ways,
            order: vec![Vec::new(); sets],
            tree: vec![vec![false; leaves.max(2) - 1]; sets],
            rng: SplitMix64::new(seed),
        }
    }

    /// A hit on (set, way), or with `filled` its fill.
    pub fn touched(&mut self, set: usize, way: usize, filled: bool) {
        match self.policy {
            Policy::Lru => {
                self.order[set].retain(|&w| w != way);
                self.order[set].insert(0, way);
            }
            Policy::Fifo => {
                if filled {
                    self.order[set].retain(|&w| w != way);
                    self.order[set].insert(0, way);
                }
            }
            Policy::Plru => {
                // Walk from the root to leaf `way`, pointing each node away from it.
                let (mut node, mut lo, mut span) = (0, 0, self.ways.next_power_of_two());
                while span > 1 {
                    let half = span / 2;
                    let right = way >= lo + half;
                    self.tree[set][node] = !right;
                    node = 2 * node + 1 + right as usize;
                    lo += if right { half } else { 0 };
                    span = half;
                }
            }
            Policy::Random => {}
        }
    }

    /// The way (set, way) left empty (an invalidation).
    pub fn forget(&mut self, set: usize, way: usize) {
        self.order[set].retain(|&w| w != way);
    }

    /// The way to evict from a full `set`.
    pub fn victim(&mut self, set: usize) -> usize {
        match self.policy {
            Policy::Lru | Policy::Fifo => *self.order[set].last().unwrap(),
            Policy::Random => self.rng.below(self.ways as u64) as usize,
            Policy::Plru => {
                let (mut node, mut lo, mut span) = (0, 0, self.ways.next_power_of_two());
                while span > 1 {
                    let half = span / 2;
                    let right = self.tree[set][node] && lo + half < self.ways;
                    node = 2 * node + 1 + right as usize;
                    lo += if right { half } else { 0 };
                    span = half;
                }
                lo
            }
        }
    }
}
