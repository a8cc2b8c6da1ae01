//! Exact LRU stack distances in O(log n) per reference.
//!
//! The stack distance of a reference is the number of distinct keys referenced since the
//! previous reference to the same key (0 for an immediate repeat); a fully associative
//! LRU cache of `c` entries hits exactly the references whose distance is below `c`
//! (Mattson et al., 1970: LRU is a stack algorithm, so one pass gives every size).
//!
//! Written here rather than taken from a library: it is the product (the curve's
//! exactness and speed are this file). Each key's last access time is kept in a hash
//! map; a Fenwick (binary indexed) tree over access times holds a 1 at the latest access
//! of every live key, so the distance is the count of ones after the key's previous time:
//! one prefix sum and two point updates, each O(log W) for a window of W times. When the
//! window fills, the live times are renumbered 0..live in order (compaction) and the
//! window is sized to twice the live keys, so the amortised cost stays O(log n).
//!
//! A curve up to N entries needs only distances below N: [`StackDistance::with_limit`]
//! keeps the N most recent keys and forgets older ones (a reference to a forgotten key
//! is "N or more", a miss at every size up to N), so time and memory depend on N, not on
//! the trace's footprint.

use foldhash::fast::FixedState;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// No key (an empty time slot, or no most recent key yet).
const NONE: u64 = u64::MAX;
/// The smallest window of access times.
const MIN_WINDOW: usize = 1 << 12;

/// Stack distances of a stream of keys (any `u64` but `u64::MAX`).
pub struct StackDistance {
    /// Key -> time of its latest access.
    last: HashMap<u64, u32, FixedState>,
    /// Fenwick tree over times (1-based: `tree[t + 1]` covers time `t`).
    tree: Vec<u32>,
    /// The key whose latest access is at each time, or `NONE`.
    slot_key: Vec<u64>,
    /// The next time.
    now: u32,
    /// Keys seen so far (each has exactly one 1 in the tree).
    live: u32,
    /// The most recent key: a repeat has distance 0 and changes nothing.
    mru: u64,
    /// Keys kept at most (the oldest is forgotten beyond).
    limit: u32,
    /// No live time is below this (where the search for the oldest key starts).
    oldest: u32,
}

impl Default for StackDistance {
    fn default() -> Self {
        StackDistance::new()
    }
}

impl StackDistance {
    /// An empty stack that keeps every key (exact distances of any size).
    pub fn new() -> StackDistance {
        StackDistance::with_limit(u32::MAX as usize)
    }

    /// An empty stack that reports distances below `limit` exactly and every larger one,
    /// like a first reference, as `None`.
    pub fn with_limit(limit: usize) -> StackDistance {
        StackDistance {
            limit: limit.clamp(1, u32::MAX as usize) as u32,
            oldest: 0,
            last: HashMap::with_hasher(FixedState::default()),
            tree: vec![0; MIN_WINDOW + 1],
            slot_key: vec![NONE; MIN_WINDOW],
            now: 0,
            live: 0,
            mru: NONE,
        }
    }

    /// Keys kept (distinct keys seen, when there is no limit).
    pub fn distinct(&self) -> u64 {
        self.live as u64
    }

    /// References `key`; returns its stack distance, or `None` on its first reference
    /// (a cold miss at every size) or when the distance is the limit or more.
    #[inline]
    pub fn access(&mut self, key: u64) -> Option<u64> {
        debug_assert_ne!(key, NONE);
        if key == self.mru {
            return Some(0);
        }
        self.mru = key;
        if self.now as usize == self.slot_key.len() {
            self.compact();
        }
        let t = self.now;
        self.now += 1;
        let d = match self.last.entry(key) {
            Entry::Occupied(mut e) => {
                let p = *e.get();
                e.insert(t);
                // Ones after p: the distinct keys referenced since (p's own one included
                // in the prefix).
                let d = self.live - prefix(&self.tree, p);
                add(&mut self.tree, p, u32::MAX); // -1
                self.slot_key[p as usize] = NONE;
                Some(d as u64)
            }
            Entry::Vacant(e) => {
                e.insert(t);
                self.live += 1;
                None
            }
        };
        add(&mut self.tree, t, 1);
        self.slot_key[t as usize] = key;
        if self.live > self.limit {
            self.forget_oldest();
        }
        d
    }

    /// Forgets the least recently referenced key.
    fn forget_oldest(&mut self) {
        let mut o = self.oldest as usize;
        while self.slot_key[o] == NONE {
            o += 1;
        }
        let k = self.slot_key[o];
        self.last.remove(&k);
        add(&mut self.tree, o as u32, u32::MAX);
        self.slot_key[o] = NONE;
        self.live -= 1;
        self.oldest = o as u32 + 1;
    }

    /// Renumbers the live times 0..live in order and resizes the window to twice the
    /// live keys (at least `MIN_WINDOW`).
    fn compact(&mut self) {
        let live = self.live as usize;
        let window = (2 * live).max(MIN_WINDOW);
        assert!(window < u32::MAX as usize, "more than 2^31 distinct keys");
        let mut keys = vec![NONE; window];
        let mut j = 0usize;
        for &k in &self.slot_key[..self.now as usize] {
            if k != NONE {
                keys[j] = k;
                *self.last.get_mut(&k).expect("a live key has a time") = j as u32;
                j += 1;
            }
        }
        debug_assert_eq!(j, live);
        // Linear Fenwick build: ones at 0..live.
        let mut tree = vec![0u32; window + 1];
        for v in &mut tree[1..=live] {
            *v = 1;
        }
        for i in 1..=window {
            let up = i + (i & i.wrapping_neg());
            if up <= window {
                tree[up] += tree[i];
            }
        }
        self.tree = tree;
        self.slot_key = keys;
        self.now = live as u32;
        self.oldest = 0;
    }
}

/// Sum of the tree over times `0..=t`.
#[inline]
fn prefix(tree: &[u32], t: u32) -> u32 {
    let mut i = t as usize + 1;
    let mut s = 0u32;
    while i > 0 {
        // SAFETY-free: i <= window < tree.len().
        s = s.wrapping_add(tree[i]);
        i &= i - 1;
    }
    s
}

/// Adds `v` (wrapping: `u32::MAX` is -1) at time `t`.
#[inline]
fn add(tree: &mut [u32], t: u32, v: u32) {
    let n = tree.len();
    let mut i = t as usize + 1;
    while i < n {
        tree[i] = tree[i].wrapping_add(v);
        i += i & i.wrapping_neg();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain O(n) definition: distinct keys since the previous reference.
    fn naive(keys: &[u64]) -> Vec<Option<u64>> {
        let mut stack: Vec<u64> = Vec::new(); // most recent first
        keys.iter()
            .map(|&k| {
                let pos = stack.iter().position(|&x| x == k);
                if let Some(p) = pos {
                    stack.remove(p);
                }
                stack.insert(0, k);
                pos.map(|p| p as u64)
            })
            .collect()
    }

    #[test]
    fn hand_example() {
        // a b c a a b d c: a cold, b cold, c cold, a sees {b,c} -> 2, a repeat -> 0,
        // b sees {c,a} -> 2, d cold, c sees {a,b,d} -> 3.
        let keys = [1, 2, 3, 1, 1, 2, 4, 3];
        let mut s = StackDistance::new();
        let got: Vec<_> = keys.iter().map(|&k| s.access(k)).collect();
        assert_eq!(got, vec![None, None, None, Some(2), Some(0), Some(2), None, Some(3)]);
        assert_eq!(s.distinct(), 4);
    }

    #[test]
    fn limit_forgets_the_oldest() {
        // Limit 2 over a b c a b b d a: distances below 2 are exact, the rest None.
        // a -, b -, c - (a forgotten), a - (3 keys ago: b forgotten), b - (c forgotten),
        // b 0, d -, a: {b, d} since -> 2, not below 2 -> None.
        let mut s = StackDistance::with_limit(2);
        let got: Vec<_> = [1, 2, 3, 1, 2, 2, 4, 1].iter().map(|&k| s.access(k)).collect();
        assert_eq!(got, vec![None, None, None, None, None, Some(0), None, None]);
        // And against the plain definition on a long random stream, limit 100.
        let mut x = 99u64;
        let keys: Vec<u64> = (0..50_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 500
            })
            .collect();
        let mut s = StackDistance::with_limit(100);
        let got: Vec<_> = keys.iter().map(|&k| s.access(k)).collect();
        let want: Vec<_> = naive(&keys).into_iter().map(|d| d.filter(|&d| d < 100)).collect();
        assert_eq!(got, want);
        assert!(s.distinct() <= 100);
    }

    #[test]
    fn matches_naive_across_compactions() {
        // 60 000 references over up to 3 000 keys: the window (4 096 times) compacts many
        // times, and grows once more than 2 048 keys are live.
        let mut x = 0x1234_5678u64;
        let mut keys = Vec::new();
        for i in 0..60_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let span = if i < 30_000 { 300 } else { 3_000 };
            keys.push(x % span);
        }
        let mut s = StackDistance::new();
        let got: Vec<_> = keys.iter().map(|&k| s.access(k)).collect();
        assert_eq!(got, naive(&keys));
    }
}
