//! A set-associative array of tagged entries: the storage shared by TLB levels and
//! page-walk caches. It knows nothing of page sizes; its users build the key.
//!
//! Contract: `find` updates replacement state on a hit; `insert` fills an invalid way
//! if the set has one (lowest first), else asks the policy for a victim. Keys are u64
//! values other than [`INVALID`]; every entry also carries an address-space id and a
//! 64-bit payload.

use crate::replacement::{Policy, Replacement};

/// The key of an empty way.
pub const INVALID: u64 = u64::MAX;

/// Storage of `sets × ways` entries, structure-of-arrays for fast scans.
#[derive(Clone, Debug)]
pub struct AssocArray {
    sets: usize,
    ways: usize,
    set_mask: Option<u64>,
    keys: Vec<u64>,
    asids: Vec<u16>,
    data: Vec<u64>,
    /// Valid entries per set: a full set skips the scan for a free way.
    valid: Vec<u32>,
    /// Counting filter: resident entries per hash bucket of their key. A lookup whose
    /// bucket counts zero is a certain miss and skips the scan (misses dominate
    /// random-access workloads). Exact: it never turns a hit into a miss.
    filter: Vec<u32>,
    filter_shift: u32,
    /// The filter is kept only for wide sets (>= 32 ways): for narrower sets the scan is
    /// cheaper than the filter's extra cache line.
    filtered: bool,
    repl: Replacement,
}

/// Filter buckets: about four per entry (a random miss then finds an empty bucket
/// about 78% of the time), a power of two, at least 64.
fn filter_len(entries: usize) -> usize {
    (entries * 4).next_power_of_two().clamp(64, 1 << 22)
}

/// What `insert` displaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// The evicted key.
    pub key: u64,
    /// Its address space.
    pub asid: u16,
}

impl AssocArray {
    /// An empty array. `entries` must be a positive multiple of `ways` (checked by config
    /// validation; asserted here).
    pub fn new(entries: usize, ways: usize, policy: Policy, seed: u64) -> AssocArray {
        assert!(ways > 0 && entries > 0 && entries % ways == 0, "invalid geometry");
        let sets = entries / ways;
        AssocArray {
            sets,
            ways,
            set_mask: sets.is_power_of_two().then(|| sets as u64 - 1),
            keys: vec![INVALID; entries],
            asids: vec![0; entries],
            data: vec![0; entries],
            valid: vec![0; sets],
            filtered: ways >= 32,
            filter: vec![0; if ways >= 32 { filter_len(entries) } else { 1 }],
            filter_shift: 64 - filter_len(entries).trailing_zeros(),
            repl: Replacement::new(policy, sets, ways, seed),
        }
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// Number of ways.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The set a number indexes (number modulo sets).
    #[inline]
    pub fn set_of(&self, n: u64) -> usize {
        match self.set_mask {
            Some(m) => (n & m) as usize,
            None => (n % self.sets as u64) as usize,
        }
    }

    /// Looks `key`/`asid` up in `set`; on a hit updates replacement state and returns the
    /// slot (set × ways + way).
    #[inline]
    pub fn find(&mut self, set: usize, key: u64, asid: u16) -> Option<usize> {
        if self.filtered && self.filter[self.bucket(key)] == 0 {
            return None;
        }
        let base = set * self.ways;
        let w = scan(&self.keys[base..base + self.ways], &self.asids[base..base + self.ways], key, asid)?;
        self.repl.touch(set, w);
        Some(base + w)
    }

    /// Looks up without touching replacement state.
    pub fn peek(&self, set: usize, key: u64, asid: u16) -> Option<usize> {
        if self.filtered && self.filter[self.bucket(key)] == 0 {
            return None;
        }
        let base = set * self.ways;
        scan(&self.keys[base..base + self.ways], &self.asids[base..base + self.ways], key, asid).map(|w| base + w)
    }

    /// Inserts an entry into `set`; returns its slot and what it displaced.
    #[inline]
    pub fn insert(&mut self, set: usize, key: u64, asid: u16, data: u64) -> (usize, Option<Evicted>) {
        let base = set * self.ways;
        let way = if (self.valid[set] as usize) < self.ways {
            self.valid[set] += 1;
            self.keys[base..base + self.ways].iter().position(|&k| k == INVALID).expect("a free way")
        } else {
            self.repl.victim(set)
        };
        let slot = base + way;
        let old = self.keys[slot];
        let evicted = (old != INVALID).then(|| Evicted { key: old, asid: self.asids[slot] });
        if self.filtered {
            if old != INVALID {
                let b = self.bucket(old);
                self.filter[b] -= 1;
            }
            let b = self.bucket(key);
            self.filter[b] += 1;
        }
        self.keys[slot] = key;
        self.asids[slot] = asid;
        self.data[slot] = data;
        self.repl.filled(set, way);
        (slot, evicted)
    }

    #[inline]
    fn bucket(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.filter_shift) as usize
    }

    /// The payload of a slot.
    #[inline]
    pub fn data(&self, slot: usize) -> u64 {
        self.data[slot]
    }

    /// Replaces the payload of a slot.
    #[inline]
    pub fn set_data(&mut self, slot: usize, data: u64) {
        self.data[slot] = data;
    }

    /// The key of a slot.
    #[inline]
    pub fn key(&self, slot: usize) -> u64 {
        self.keys[slot]
    }

    /// Invalidates every entry for which `pred(key, asid, data)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(u64, u16, u64) -> bool) -> usize {
        let mut n = 0;
        for s in 0..self.keys.len() {
            if self.keys[s] != INVALID && pred(self.keys[s], self.asids[s], self.data[s]) {
                if self.filtered {
                    let b = self.bucket(self.keys[s]);
                    self.filter[b] -= 1;
                }
                self.keys[s] = INVALID;
                self.valid[s / self.ways] -= 1;
                n += 1;
            }
        }
        n
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        self.valid.iter().map(|&v| v as usize).sum()
    }
}

/// The way holding `key` and `asid`, comparing eight keys at a time (SSE2 on x86-64,
/// which every x86-64 CPU has; plain compares elsewhere) — large fully associative
/// levels scan dozens of ways on every miss.
#[inline]
fn scan(keys: &[u64], asids: &[u16], key: u64, asid: u16) -> Option<usize> {
    let mut chunks = keys.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let mut mask = eq_mask8(c.try_into().expect("chunk of 8"), key);
        while mask != 0 {
            let w = base + mask.trailing_zeros() as usize;
            if asids[w] == asid {
                return Some(w);
            }
            mask &= mask - 1;
        }
        base += 8;
    }
    for (i, &k) in chunks.remainder().iter().enumerate() {
        if k == key && asids[base + i] == asid {
            return Some(base + i);
        }
    }
    None
}

/// Bit i set iff `c[i] == key`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eq_mask8(c: &[u64; 8], key: u64) -> u32 {
    use core::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; the loads read 8 u64 from a
    // reference to exactly 8 u64 (unaligned loads).
    unsafe {
        let k = _mm_set1_epi64x(key as i64);
        let mut m = 0u32;
        for j in 0..4 {
            let v = _mm_loadu_si128(c.as_ptr().add(2 * j) as *const __m128i);
            // 64-bit equality from 32-bit lanes: both halves must match.
            let e = _mm_cmpeq_epi32(v, k);
            let e = _mm_and_si128(e, _mm_shuffle_epi32::<0b10_11_00_01>(e));
            m |= (_mm_movemask_pd(_mm_castsi128_pd(e)) as u32) << (2 * j);
        }
        m
    }
}

/// Bit i set iff `c[i] == key`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn eq_mask8(c: &[u64; 8], key: u64) -> u32 {
    let mut m = 0u32;
    for (i, &k) in c.iter().enumerate() {
        m |= u32::from(k == key) << i;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_mask_finds_every_position() {
        let mut c = [5u64, u64::MAX, 7, 5, 0, 1 << 40, 5, 9];
        assert_eq!(eq_mask8(&c, 5), 0b0100_1001);
        assert_eq!(eq_mask8(&c, u64::MAX), 0b10);
        // Equal low halves but different high halves must not match.
        c[7] = (1 << 32) | 9;
        assert_eq!(eq_mask8(&c, 9), 0);
        assert_eq!(eq_mask8(&c, (1 << 32) | 9), 0x80);
    }
}
