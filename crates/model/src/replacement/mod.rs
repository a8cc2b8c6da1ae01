//! Replacement policies of set-associative arrays: TLB levels and stage-2 TLBs
//! ([`crate::assoc::AssocArray`]) and data-cache levels (`crate::cache`, ways.rs); one
//! policy file serves them all, chosen per level by the config's `replacement` key
//! (`[[tlb]]`, `[vm].s2tlb`, `[caches.l1d]` / `l2` / `l3`). (The page-walk caches,
//! walk/pwc.rs, are LRU only, with no key.)
//!
//! Contract ([`ReplacementPolicy`]): the array tells the policy about every hit (`touch`)
//! and every fill (`filled`) with the set and way, and asks for a victim only when every
//! way of the set is valid (invalid ways are always filled first, lowest way first). A
//! policy's state is private to it; identical event sequences give identical victims
//! (random is seeded). A repeated touch of the way touched or filled last in its set
//! must change nothing (`REPEAT_TOUCH_IDEMPOTENT`): the TLB arrays' most-recent-entry
//! shortcut skips such touches, a compile-time check refuses a policy that does not
//! declare it, and a unit test below checks the claim of every policy of the table.
//! (The data caches hear every hit, repeated or not: cache/ways.rs.) A data cache does
//! not tell the policy of a write-back into a line it holds (it only marks it dirty).
//!
//! LRU, the default, has a fast path of its own in each structure, outside the dispatch
//! below: [`crate::assoc::AssocArray`] keeps an [`Lru`] beside [`Replacement`]; a data
//! cache keeps each set in recency order (cache/sets.rs; why: `cache/mod.rs`). Both
//! are tested to be this LRU (tests/it/differential.rs, tests/it/cache_differential.rs).
//!
//! Adding a policy (say SRRIP) — the same steps give it to TLBs and data caches:
//! 1. a file here, `srrip.rs`, with a struct implementing [`ReplacementPolicy`] (its
//!    `mod` and `pub use` lines at the top of this file);
//! 2. a row in the `policies!` table below (`Srrip = "srrip";`), which generates the
//!    config enum [`Policy`], its names, and the state enum [`Replacement`] with its
//!    dispatch. Nothing else in the model changes: the TLB array and the data caches'
//!    `ByWay` store (cache/ways.rs) take every policy of the table;
//! 3. its arms in the tests' plain reference, `tests/it/ref_policy.rs` (`touched` and
//!    `victim` match on [`Policy`] exhaustively, so the tests do not compile without
//!    them); the TLB and data-cache differential tests then run it;
//! 4. its name in docs/config.md (`[[tlb]]`'s `replacement`; the other keys refer to it).
//!
//! Checked by adding a 2-bit SRRIP (Jaleel et al., 2010) this way (not committed): the
//! data caches took it with no other change and agreed with the reference in every
//! differential test. But SRRIP is not `REPEAT_TOUCH_IDEMPOTENT` (a fill predicts 2, a
//! hit 0, so a hit on the line just filled changes its state): declared idempotent,
//! the unit test below fails on it (the TLB differential test did not catch it);
//! declared honestly, the compile-time check refuses it. So SRRIP for TLBs also needs
//! the TLB arrays' shortcut to touch a policy that is not idempotent: not done.

mod fifo;
mod lru;
mod plru;
mod random;

pub use fifo::Fifo;
pub use lru::Lru;
pub use plru::Plru;
pub use random::Random;

use serde::{Deserialize, Serialize};

/// A replacement policy's state for one array of `sets` × `ways`.
pub trait ReplacementPolicy {
    /// A repeated touch of the way touched or filled last in its set changes nothing.
    /// The arrays' most-recent-entry fast path relies on it (it skips such touches).
    const REPEAT_TOUCH_IDEMPOTENT: bool;
    /// State for `sets` × `ways` (`seed` for a policy that draws random numbers).
    fn new(sets: usize, ways: usize, seed: u64) -> Self;
    /// A hit on (set, way). Default: hits do not change the state.
    fn touch(&mut self, _set: usize, _way: usize) {}
    /// (set, way) was just filled. Default: as a hit.
    fn filled(&mut self, set: usize, way: usize) {
        self.touch(set, way);
    }
    /// The way to evict from a full `set`.
    fn victim(&mut self, set: usize) -> usize;
}

/// One table defines the policies: the config enum [`Policy`] (with its names) and the
/// state enum [`Replacement`]. LRU, the default and by far the most used, keeps its
/// state in an [`Lru`] the array holds beside [`Replacement`]
/// ([`crate::assoc::AssocArray`]), so its hot path reaches it with no dispatch; the
/// other policies are called out of line so they do not crowd that path's registers.
macro_rules! policies {
    (in_array: $(#[doc = $ldoc:literal])* $lru:ident = $lname:literal;
     $($(#[doc = $doc:literal])* $variant:ident = $name:literal;)*) => {
        /// The replacement policy a config names.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum Policy {
            $(#[doc = $ldoc])* $lru,
            $($(#[doc = $doc])* $variant,)*
        }

        impl Policy {
            /// Names as configs spell them.
            pub const NAMES: &'static [&'static str] = &[$lname, $($name,)*];
        }

        /// Replacement state of one array, for every policy but LRU (see the table).
        #[derive(Clone, Debug)]
        pub enum Replacement {
            /// LRU: the state is the array's [`Lru`].
            $lru,
            $(#[doc = concat!("See [`", stringify!($variant), "`].")] $variant($variant),)*
        }

        /// `$m!(args; every policy's type)`: for code that must cover every policy.
        #[cfg(test)]
        macro_rules! every_policy {
            ($m:ident, $a:expr, $b:expr) => { $m!($a, $b; $lru $(, $variant)*) };
        }

        const _: () = assert!(<$lru as ReplacementPolicy>::REPEAT_TOUCH_IDEMPOTENT);
        $(const _: () = assert!(<$variant as ReplacementPolicy>::REPEAT_TOUCH_IDEMPOTENT);)*

        impl Replacement {
            /// State for `sets` × `ways` under `policy` (nothing for LRU, see above).
            pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> Replacement {
                match policy {
                    Policy::$lru => Replacement::$lru,
                    $(Policy::$variant => Replacement::$variant(<$variant as ReplacementPolicy>::new(sets, ways, seed)),)*
                }
            }

            /// A hit on (set, way) (nothing for LRU, whose state is elsewhere).
            #[inline(never)]
            pub fn touch(&mut self, set: usize, way: usize) {
                match self {
                    Replacement::$lru => {}
                    $(Replacement::$variant(p) => ReplacementPolicy::touch(p, set, way),)*
                }
            }

            /// (set, way) was just filled (nothing for LRU).
            #[inline(never)]
            pub fn filled(&mut self, set: usize, way: usize) {
                match self {
                    Replacement::$lru => {}
                    $(Replacement::$variant(p) => ReplacementPolicy::filled(p, set, way),)*
                }
            }

            /// The way to evict from a full set. Not for LRU (its array asks its own
            /// state): panics.
            pub fn victim(&mut self, set: usize) -> usize {
                match self {
                    Replacement::$lru => unreachable!("LRU state lives in the array"),
                    $(Replacement::$variant(p) => ReplacementPolicy::victim(p, set),)*
                }
            }
        }
    };
}

policies! {
    in_array:
    /// Least recently used.
    Lru = "lru";
    /// Tree pseudo-LRU (any number of ways: the tree spans the next power of two and
    /// never points at a way that does not exist).
    Plru = "plru";
    /// First in, first out: hits do not change the order.
    Fifo = "fifo";
    /// Uniformly random victim from a seeded generator.
    Random = "random";
}

impl Replacement {
    /// True for LRU, whose state the array keeps.
    #[inline(always)]
    pub fn is_lru(&self) -> bool {
        matches!(self, Replacement::Lru)
    }

    /// Chooses the way to evict from a full set and records its fill: `victim`, then
    /// `filled` of that way. Not for LRU (its array asks its own state): panics.
    #[inline(never)]
    pub fn replace(&mut self, set: usize) -> usize {
        let way = self.victim(set);
        self.filled(set, way);
        way
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs random touches and fills on two copies of one policy's state; the second
    /// copy touches the way used last once more after every event. With
    /// `REPEAT_TOUCH_IDEMPOTENT` the victims of every set must stay equal.
    fn check_repeat_touch<P: ReplacementPolicy + Clone>(sets: usize, ways: usize) {
        let mut a = P::new(sets, ways, 7);
        let mut b = a.clone();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (set, way) = ((x >> 8) as usize % sets, (x >> 24) as usize % ways);
            if x & 1 == 0 {
                a.touch(set, way);
                b.touch(set, way);
            } else {
                a.filled(set, way);
                b.filled(set, way);
            }
            b.touch(set, way);
            for s in 0..sets {
                assert_eq!(a.victim(s), b.victim(s), "{} sets x {ways} ways", sets);
            }
        }
    }

    /// [`check_repeat_touch`] of every policy of the table (one line per policy,
    /// written by the table's macro: a new policy is checked with no change here).
    macro_rules! check_every_policy {
        ($sets:expr, $ways:expr; $($p:ident),*) => {
            $(check_repeat_touch::<$p>($sets, $ways);)*
        };
    }

    #[test]
    fn a_repeated_touch_changes_no_policys_victims() {
        for (sets, ways) in [(1, 1), (1, 4), (4, 6), (2, 16), (1, 48)] {
            every_policy!(check_every_policy, sets, ways);
        }
    }

    #[test]
    fn every_policy_has_a_config_name() {
        for (i, name) in Policy::NAMES.iter().enumerate() {
            let p: Policy = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(Policy::NAMES[i], *name);
            assert_eq!(
                matches!(Replacement::new(p, 2, 2, 0), Replacement::Lru),
                p == Policy::Lru
            );
        }
    }
}
