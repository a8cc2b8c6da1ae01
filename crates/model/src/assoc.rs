//! A set-associative array of tagged entries: the storage shared by TLB levels and
//! page-walk caches. It knows nothing of page sizes; its users build the key.
//!
//! Contract: `find` updates replacement state on a hit; `insert` fills an invalid way
//! if the set has one (lowest first), else asks the policy for a victim. Keys are
//! values below 2^48 ([`MAX_KEY`]; TLB levels never look up keys beyond it); every
//! entry also carries an address-space id and a 64-bit payload.

use crate::replacement::{Lru, Policy, Replacement};

/// The key of an empty way.
pub const INVALID: u64 = u64::MAX;

/// Keys must be at most this: the address-space id shares the entry's tag word (bits
/// 48..63), so one compare checks both.
pub const MAX_KEY: u64 = (1 << 48) - 1;

#[inline(always)]
fn tag(key: u64, asid: u16) -> u64 {
    key | (asid as u64) << 48
}

/// Fingerprints compared per step (one 128-bit vector of bytes).
pub(crate) const LANES: usize = 16;

/// Storage of `sets × ways` entries, structure-of-arrays for fast scans.
///
/// Every slot also has a 16-bit fingerprint of its (key, asid): 0 for an empty way,
/// otherwise 15 hash bits with the low bit set (never 0). A lookup compares the
/// fingerprints of a whole set sixteen at a time and checks the full key only where a
/// fingerprint matches, so a 64-way set costs four vector steps instead of 64 key
/// compares. Fifteen bits keep false matches rare (one way in 32,768): with eight, a random miss in a 64-way level
/// met a false match every other lookup, and the host mispredicted the branch each
/// time. Each set's fingerprints are padded to a multiple of sixteen with empty values
/// that never match and are never chosen as free.
#[derive(Clone, Debug)]
pub struct AssocArray {
    sets: usize,
    ways: usize,
    set_mask: Option<u64>,
    /// Fingerprints per set (`ways` rounded up to a multiple of [`LANES`]).
    fp_stride: usize,
    fps: Vec<u16>,
    /// Per slot: (tag = key | asid << 48, or INVALID; payload), side by side so a hit
    /// or a fill touches one host cache line for both.
    entries: Vec<[u64; 2]>,
    /// Empty ways in the whole array: once it is full (the steady state) a fill skips
    /// the search for a free way.
    empty: usize,
    /// The replacement state of policies other than LRU.
    repl: Replacement,
    /// The LRU state: the policy's state when `repl` is [`Replacement::Lru`]. Every
    /// array has one of its full size (untouched under other policies), so the
    /// LRU-power-of-two path (`FAST` below) reaches it with no dispatch and stays
    /// memory-safe whatever the array's policy.
    lru: Lru,
    /// The set index mask of the `FAST` path: `sets - 1` when `sets` is a power of two
    /// (the only case that path is taken for), else that of the largest power of two
    /// below `sets`, so the index is in range whatever the array.
    fast_mask: u64,
    /// Counts of valid entries by fingerprint bucket, for arrays of many ways.
    filter: MissFilter,
}

/// Structures with at least this many ways keep a miss filter (a set of fewer is one or
/// two vector steps, as cheap as the filter's own test).
const FILTER_MIN_WAYS: usize = 32;

/// Most buckets a miss filter has (8 KiB of counts).
const FILTER_MAX_BUCKETS: usize = 4096;

/// A miss filter of a structure with many ways (a fully associative L1, a large
/// page-walk cache): per bucket of fingerprints, how many valid entries have a
/// fingerprint in it. A lookup whose bucket counts none is a miss without the set scan
/// — most misses, with sixteen buckets per entry. Structures of fewer than
/// [`FILTER_MIN_WAYS`] ways, or of more entries than 16-bit counts can count, have an
/// empty one, which lets every lookup through.
#[derive(Clone, Debug)]
pub(crate) struct MissFilter {
    counts: Box<[u16]>,
    /// `counts.len() - 1` (a power of two less one), or 0 without a filter.
    mask: usize,
}

impl MissFilter {
    /// The filter of a structure of `entries` entries in sets of `ways`.
    pub(crate) fn new(entries: usize, ways: usize) -> MissFilter {
        let buckets = if ways >= FILTER_MIN_WAYS && entries <= u16::MAX as usize {
            (entries * 16).next_power_of_two().min(FILTER_MAX_BUCKETS)
        } else {
            0
        };
        MissFilter {
            counts: vec![0; buckets].into_boxed_slice(),
            mask: buckets.saturating_sub(1),
        }
    }

    /// The bucket of a fingerprint (its fifteen hash bits, masked).
    #[inline(always)]
    fn bucket(&self, fp: u16) -> usize {
        (fp >> 1) as usize & self.mask
    }

    /// False only if no valid entry has fingerprint `fp` (always true without a filter).
    #[inline(always)]
    pub(crate) fn may_hold(&self, fp: u16) -> bool {
        // SAFETY: bucket <= mask == counts.len() - 1 (with a filter).
        self.mask == 0 || unsafe { *self.counts.get_unchecked(self.bucket(fp)) } != 0
    }

    /// Counts a valid entry of fingerprint `fp` (`add`) or takes it out.
    #[inline(always)]
    pub(crate) fn count(&mut self, fp: u16, add: bool) {
        if self.mask != 0 {
            let b = self.bucket(fp);
            debug_assert!(b < self.counts.len());
            // SAFETY: b <= mask == counts.len() - 1.
            let c = unsafe { self.counts.get_unchecked_mut(b) };
            if add {
                *c += 1;
            } else {
                *c -= 1;
            }
        }
    }

    /// The counts a filter over these fingerprints (0 = empty way) must hold, and the
    /// ones it holds: equal if it is exact.
    #[cfg(test)]
    pub(crate) fn check(&self, fps: impl Iterator<Item = u16>) -> (Vec<u16>, Vec<u16>) {
        let mut c = vec![0; self.counts.len()];
        for fp in fps.filter(|&fp| fp != 0) {
            if self.mask != 0 {
                c[self.bucket(fp)] += 1;
            }
        }
        (c, self.counts.to_vec())
    }

    /// True if the structure has a filter.
    #[cfg(test)]
    pub(crate) fn enabled(&self) -> bool {
        self.mask != 0
    }
}

/// A key and address space prepared for insertion: the tag word and the fingerprint,
/// computed once when the same entry goes into several arrays.
#[derive(Clone, Copy, Debug)]
pub struct Prepared {
    tag: u64,
    fp: u16,
}

impl Prepared {
    /// Prepares `key` (at most [`MAX_KEY`], asserted) of `asid`.
    #[inline(always)]
    pub fn new(key: u64, asid: u16) -> Prepared {
        assert!(key <= MAX_KEY, "key {key:#x} beyond MAX_KEY");
        Prepared {
            tag: tag(key, asid),
            fp: fingerprint(key, asid),
        }
    }

    /// [`Prepared::new`] of a key the caller knows is at most [`MAX_KEY`] (checked in
    /// debug builds): a TLB lookup of an address below 2^56. A larger key would only
    /// alias address-space bits, never index out of range.
    #[inline(always)]
    pub fn new_below_max(key: u64, asid: u16) -> Prepared {
        debug_assert!(key <= MAX_KEY, "key {key:#x} beyond MAX_KEY");
        Prepared {
            tag: tag(key, asid),
            fp: fingerprint(key, asid),
        }
    }
}

/// What `insert` displaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// The evicted key.
    pub key: u64,
    /// Its address space.
    pub asid: u16,
}

/// The fingerprint of a valid entry: never 0 (the empty way). Fifteen hash bits and
/// the low bit set: one instruction to make it non-zero instead of a compare and a
/// conditional move, for one false match per 32,768 ways instead of 65,535.
#[inline(always)]
fn fingerprint(key: u64, asid: u16) -> u16 {
    let h = (key ^ ((asid as u64) << 49)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 48) as u16 | 1
}

impl AssocArray {
    /// An empty array. `entries` must be a positive multiple of `ways` (checked by config
    /// validation; asserted here).
    pub fn new(entries: usize, ways: usize, policy: Policy, seed: u64) -> AssocArray {
        assert!(ways > 0 && entries > 0 && entries % ways == 0, "invalid geometry");
        let sets = entries / ways;
        let fp_stride = ways.div_ceil(LANES) * LANES;
        // (Counts are 16-bit: an array of more entries than one can count has none.)
        AssocArray {
            sets,
            ways,
            set_mask: sets.is_power_of_two().then(|| sets as u64 - 1),
            fp_stride,
            fps: vec![0; sets * fp_stride],
            entries: vec![[INVALID, 0]; entries],
            empty: entries,
            repl: Replacement::new(policy, sets, ways, seed),
            lru: Lru::new(sets, ways),
            fast_mask: (1u64 << sets.ilog2()) - 1,
            filter: MissFilter::new(entries, ways),
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
    #[inline(always)]
    pub fn set_of(&self, n: u64) -> usize {
        match self.set_mask {
            Some(m) => (n & m) as usize,
            None => (n % self.sets as u64) as usize,
        }
    }

    /// True if the policy is LRU and the number of sets a power of two: the shape the
    /// `FAST` variants of the lookup and the fill (`find_prepared`, `insert_by`, private
    /// to the model: reached through [`crate::tlb::Hierarchy::lru_pow2`]) are specialised
    /// for.
    pub fn is_lru_pow2(&self) -> bool {
        self.repl.is_lru() && self.set_mask.is_some()
    }

    /// [`AssocArray::set_of`], or with `FAST` (the caller knows [`Self::is_lru_pow2`])
    /// one mask and no test of the array's shape. `FAST` on another array is memory-safe
    /// (the index stays below `sets`) but indexes the wrong set.
    #[inline(always)]
    fn set_of_g<const FAST: bool>(&self, n: u64) -> usize {
        if FAST {
            debug_assert!(
                self.is_lru_pow2(),
                "the FAST path on an array that is not LRU with 2^k sets"
            );
            (n & self.fast_mask) as usize
        } else {
            self.set_of(n)
        }
    }

    /// Records a hit on (set, way), or with `fill` its fill, in the policy's state
    /// (checked; LRU treats both alike).
    #[inline(always)]
    fn record(&mut self, set: usize, way: usize, fill: bool) {
        if self.repl.is_lru() {
            self.lru.touch(set, way);
        } else if fill {
            self.repl.filled(set, way);
        } else {
            self.repl.touch(set, way);
        }
    }

    /// The way a fill of the full `set` takes (the policy's victim), recorded as filled;
    /// `FAST`: LRU with no dispatch (see [`AssocArray::set_of_g`]). Always below `ways`
    /// (LRU's ring holds no other way; the other policies' is checked).
    ///
    /// # Safety
    /// `set` < sets.
    #[inline(always)]
    unsafe fn replace_in_range<const FAST: bool>(&mut self, set: usize) -> usize {
        if FAST || self.repl.is_lru() {
            // SAFETY: the caller's contract; `lru` is sized for every array.
            unsafe { self.lru.replace_unchecked(set) }
        } else {
            let way = self.repl.replace(set);
            assert!(way < self.ways, "victim way {way} out of range");
            way
        }
    }

    /// The way of `set` holding `key`/`asid`, if any.
    ///
    /// The hottest loop of the simulator (every TLB and walk-cache lookup), so the set's
    /// fingerprints and entries are read unchecked after one check of `set`.
    #[inline(always)]
    fn search(&self, set: usize, key: u64, asid: u16) -> Option<usize> {
        assert!(
            key <= MAX_KEY && set < self.sets,
            "key {key:#x} beyond MAX_KEY or set {set} out of range"
        );
        // SAFETY: checked just above.
        unsafe { self.search_tag(set, tag(key, asid), fingerprint(key, asid)) }
    }

    /// The way of `set` holding tag `t` (fingerprint `fp`), if any.
    ///
    /// # Safety
    /// `set` < sets.
    #[inline(always)]
    unsafe fn search_tag(&self, set: usize, t: u64, fp: u16) -> Option<usize> {
        debug_assert!(set < self.sets);
        // SAFETY: set < sets, so the set's fp_stride fingerprints (fps.len() ==
        // sets * fp_stride) and its ways entries (entries.len() == sets * ways) exist;
        // a matching lane is < ways because padding lanes are 0 and fp never is.
        unsafe {
            if !self.filter.may_hold(fp) {
                return None;
            }
            let fps = self.fps.as_ptr().add(set * self.fp_stride);
            let entries = self.entries.as_ptr().add(set * self.ways);
            let mut c = 0;
            while c < self.fp_stride {
                let mut mask = eq_mask16(&*(fps.add(c) as *const [u16; LANES]), fp);
                while mask != 0 {
                    let w = c + mask.trailing_zeros() as usize;
                    debug_assert!(w < self.ways);
                    if (*entries.add(w))[0] == t {
                        return Some(w);
                    }
                    mask &= mask - 1;
                }
                c += LANES;
            }
        }
        None
    }

    /// Looks `key`/`asid` up in `set`; on a hit updates replacement state and returns the
    /// slot (set × ways + way).
    #[inline(always)]
    pub fn find(&mut self, set: usize, key: u64, asid: u16) -> Option<usize> {
        let w = self.search(set, key, asid)?;
        self.record(set, w, false);
        Some(set * self.ways + w)
    }

    /// [`AssocArray::find`] of a prepared key in the set `n` indexes (`set_of(n)`): the
    /// TLB levels' lookup, with no range check (`set_of` is always in range). `FAST`:
    /// see `AssocArray::set_of_g`.
    #[inline(always)]
    pub(crate) fn find_prepared<const FAST: bool>(&mut self, n: u64, p: &Prepared) -> Option<usize> {
        let set = self.set_of_g::<FAST>(n);
        // SAFETY: set_of_g is below sets (a mask of at most sets - 1, or a remainder by
        // sets); search_tag returns a way below ways; `lru` is sized for every array.
        unsafe {
            let w = self.search_tag(set, p.tag, p.fp)?;
            if FAST || self.repl.is_lru() {
                self.lru.touch_unchecked(set, w);
            } else {
                self.repl.touch(set, w);
            }
            Some(set * self.ways + w)
        }
    }

    /// Looks up without touching replacement state.
    pub fn peek(&self, set: usize, key: u64, asid: u16) -> Option<usize> {
        self.search(set, key, asid).map(|w| set * self.ways + w)
    }

    /// Inserts an entry into `set`; returns its slot and what it displaced.
    #[inline(always)]
    pub fn insert(&mut self, set: usize, key: u64, asid: u16, data: u64) -> (usize, Option<Evicted>) {
        let (slot, old) = self.insert_prepared(set, &Prepared::new(key, asid), data);
        (
            slot,
            (old != INVALID).then_some(Evicted {
                key: old & MAX_KEY,
                asid: (old >> 48) as u16,
            }),
        )
    }

    /// [`AssocArray::insert`] of a prepared key (computed once for several arrays);
    /// returns the slot and the displaced entry's tag word (`INVALID` if the way was
    /// empty; else key | asid << 48).
    #[inline(always)]
    pub fn insert_prepared(&mut self, set: usize, p: &Prepared, data: u64) -> (usize, u64) {
        assert!(set < self.sets, "set {set} out of range");
        // SAFETY: checked just above.
        unsafe { self.insert_in_set::<false>(set, p, data) }
    }

    /// [`AssocArray::insert_prepared`] into the set `n` indexes (`set_of(n)`), with no
    /// range check of the set (`set_of` is always in range). `FAST`: see
    /// `AssocArray::set_of_g`.
    #[inline(always)]
    pub(crate) fn insert_by<const FAST: bool>(&mut self, n: u64, p: &Prepared, data: u64) -> (usize, u64) {
        let set = self.set_of_g::<FAST>(n);
        // SAFETY: set_of_g is below sets.
        unsafe { self.insert_in_set::<FAST>(set, p, data) }
    }

    /// True if every way holds an entry (the steady state): a fill then displaces one.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.empty == 0
    }

    /// [`AssocArray::insert_by`] into a full array ([`AssocArray::is_full`], asserted),
    /// for a caller that needs no word of the displaced entry (it is valid, as every way
    /// is): the fill then only writes the victim's entry and never reads it — in a large
    /// level that read is a host cache miss on most fills (cachegrind: one per GUPS
    /// update in the L2 TLB). Returns the slot.
    #[inline(always)]
    pub(crate) fn replace_full_by<const FAST: bool>(&mut self, n: u64, p: &Prepared, data: u64) -> usize {
        assert!(self.empty == 0, "replace_full_by on an array with empty ways");
        let set = self.set_of_g::<FAST>(n);
        // SAFETY: set_of_g is below sets, and `replace_in_range` returns a way below ways.
        unsafe {
            let way = self.replace_in_range::<FAST>(set);
            self.store::<true>(set, way, p, data)
        }
    }

    /// # Safety
    /// `set` < sets.
    #[inline(always)]
    unsafe fn insert_in_set<const FAST: bool>(&mut self, set: usize, p: &Prepared, data: u64) -> (usize, u64) {
        debug_assert!(set < self.sets);
        // A full array (the steady state) asks the policy for victim and fill at once.
        // SAFETY: set < sets (the caller's contract).
        let way = if self.empty > 0 {
            self.free_or_victim(set)
        } else {
            unsafe { self.replace_in_range::<FAST>(set) }
        };
        // (`free_or_victim` and `replace_in_range` return ways below `ways`.)
        debug_assert!(way < self.ways, "victim way {way} out of range");
        // SAFETY: set < sets and way < ways (both checked above), so the slot is below
        // sets * ways == entries.len().
        let old = unsafe { self.entries.get_unchecked(set * self.ways + way)[0] };
        // SAFETY: as just above.
        (unsafe { self.store::<false>(set, way, p, data) }, old)
    }

    /// Writes `p` and `data` into (set, way) with its fingerprint, and moves the miss
    /// filter's count from the way's old fingerprint (none for an empty way, whose
    /// fingerprint is 0) to the new one; returns the slot. `VALID`: the caller knows the
    /// way holds an entry (checked in debug builds), so its count goes untested.
    ///
    /// # Safety
    /// `set` < sets and `way` < ways.
    #[inline(always)]
    unsafe fn store<const VALID: bool>(&mut self, set: usize, way: usize, p: &Prepared, data: u64) -> usize {
        debug_assert!(set < self.sets && way < self.ways);
        let slot = set * self.ways + way;
        // SAFETY: the caller's contract: slot < sets * ways == entries.len() and
        // set * fp_stride + way < fps.len().
        let old_fp = unsafe {
            *self.entries.get_unchecked_mut(slot) = [p.tag, data];
            std::mem::replace(self.fps.get_unchecked_mut(set * self.fp_stride + way), p.fp)
        };
        debug_assert!(!VALID || old_fp != 0, "a way claimed valid is empty");
        if VALID || old_fp != 0 {
            self.filter.count(old_fp, false);
        }
        self.filter.count(p.fp, true);
        slot
    }

    /// The way a fill of `set` takes while the array still has empty ways: the lowest
    /// empty way of the set, else the policy's victim; the policy records the fill.
    /// Out of line: once the array is full (the steady state) it is never called.
    #[inline(never)]
    fn free_or_victim(&mut self, set: usize) -> usize {
        match self.free_way(set) {
            Some(w) => {
                self.empty -= 1;
                self.record(set, w, true);
                w
            }
            // SAFETY: set < sets (every caller's contract).
            None => unsafe { self.replace_in_range::<false>(set) },
        }
    }

    /// The lowest empty way of `set` (fingerprint 0; padding lanes excluded).
    #[inline(always)]
    fn free_way(&self, set: usize) -> Option<usize> {
        let fps = &self.fps[set * self.fp_stride..(set + 1) * self.fp_stride];
        let mut c = 0;
        while c < fps.len() {
            let chunk: &[u16; LANES] = fps[c..c + LANES].try_into().expect("a chunk of 16");
            let mask = eq_mask16(chunk, 0);
            if mask != 0 {
                let w = c + mask.trailing_zeros() as usize;
                return (w < self.ways).then_some(w);
            }
            c += LANES;
        }
        None
    }

    /// The payload of a slot.
    #[inline(always)]
    pub fn data(&self, slot: usize) -> u64 {
        self.entries[slot][1]
    }

    /// [`AssocArray::data`] without the range check.
    ///
    /// # Safety
    /// `slot` < sets × ways (a slot `find` or `insert` returned).
    #[inline(always)]
    pub unsafe fn data_unchecked(&self, slot: usize) -> u64 {
        debug_assert!(slot < self.entries.len());
        // SAFETY: the caller's contract.
        unsafe { self.entries.get_unchecked(slot)[1] }
    }

    /// Replaces the payload of a slot.
    #[inline]
    pub fn set_data(&mut self, slot: usize, data: u64) {
        self.entries[slot][1] = data;
    }

    /// The key of a slot.
    #[inline(always)]
    pub fn key(&self, slot: usize) -> u64 {
        let t = self.entries[slot][0];
        if t == INVALID {
            INVALID
        } else {
            t & MAX_KEY
        }
    }

    /// Invalidates the entry in `slot` (a slot `find` or `peek` returned).
    pub fn invalidate_slot(&mut self, slot: usize) {
        if self.entries[slot][0] != INVALID {
            let (set, way) = (slot / self.ways, slot % self.ways);
            let fp = std::mem::take(&mut self.fps[set * self.fp_stride + way]);
            self.filter.count(fp, false);
            self.entries[slot][0] = INVALID;
            self.empty += 1;
        }
    }

    /// Invalidates every entry for which `pred(key, asid, data)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(u64, u16, u64) -> bool) -> usize {
        let mut n = 0;
        for s in 0..self.entries.len() {
            let [t, d] = self.entries[s];
            if t != INVALID && pred(t & MAX_KEY, (t >> 48) as u16, d) {
                let (set, way) = (s / self.ways, s % self.ways);
                let fp = std::mem::take(&mut self.fps[set * self.fp_stride + way]);
                self.filter.count(fp, false);
                self.entries[s][0] = INVALID;
                self.empty += 1;
                n += 1;
            }
        }
        n
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        self.entries.iter().filter(|e| e[0] != INVALID).count()
    }
}

/// Bit i set iff `c[i] == fp` (SSE2 on x86-64, which every x86-64 CPU has: LLVM does
/// not vectorise the plain loop; plain compares elsewhere). Shared with the page-walk
/// caches.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn eq_mask16(c: &[u16; LANES], fp: u16) -> u32 {
    use core::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; the two unaligned loads read exactly
    // the 32 bytes `c` refers to.
    unsafe {
        let k = _mm_set1_epi16(fp as i16);
        let a = _mm_cmpeq_epi16(_mm_loadu_si128(c.as_ptr() as *const __m128i), k);
        let b = _mm_cmpeq_epi16(_mm_loadu_si128(c.as_ptr().add(8) as *const __m128i), k);
        // Lanes are 0 or -1; the signed pack keeps them, one byte per way.
        _mm_movemask_epi8(_mm_packs_epi16(a, b)) as u32
    }
}

/// Bit i set iff `c[i] == fp`.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn eq_mask16(c: &[u16; LANES], fp: u16) -> u32 {
    let mut m = 0u32;
    for (i, &k) in c.iter().enumerate() {
        m |= u32::from(k == fp) << i;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq_mask_finds_every_position() {
        let mut c = [0u16; 16];
        for i in [0, 3, 6, 8, 15] {
            c[i] = 0x8585;
        }
        c[7] = 0x8586;
        c[9] = 0x0585;
        assert_eq!(eq_mask16(&c, 0x8585), 1 | 1 << 3 | 1 << 6 | 1 << 8 | 1 << 15);
        assert_eq!(eq_mask16(&c, 0x8586), 1 << 7);
        assert_eq!(eq_mask16(&c, 0x0585), 1 << 9);
        assert_eq!(
            eq_mask16(&c, 0),
            !(1u32 << 0 | 1 << 3 | 1 << 6 | 1 << 8 | 1 << 15 | 1 << 7 | 1 << 9) & 0xffff
        );
    }

    #[test]
    fn fingerprints_are_never_the_empty_byte() {
        for k in 0..10_000u64 {
            assert_ne!(fingerprint(k.wrapping_mul(0x1234_5678_9abc), (k % 7) as u16), 0);
        }
    }

    #[test]
    fn colliding_fingerprints_still_compare_full_keys() {
        // Find two keys with one fingerprint; both must be found as themselves.
        let fp = fingerprint(1, 0);
        let other = (2..).find(|&k| fingerprint(k, 0) == fp).unwrap();
        let mut a = AssocArray::new(20, 20, Policy::Lru, 0);
        a.insert(0, 1, 0, 10);
        assert_eq!(a.peek(0, other, 0), None);
        a.insert(0, other, 0, 20);
        assert_eq!(a.find(0, 1, 0).map(|s| a.data(s)), Some(10));
        assert_eq!(a.find(0, other, 0).map(|s| a.data(s)), Some(20));
        assert_eq!(a.find(0, 1, 1), None);
        // 20 ways: the second chunk of fingerprints is padded; fill every way.
        for k in 100..118 {
            a.insert(0, k, 0, k);
        }
        assert_eq!(a.occupancy(), 20);
        assert_eq!(a.find(0, 117, 0).map(|s| a.data(s)), Some(117));
        assert_eq!(a.invalidate_where(|k, _, _| k == 117), 1);
        assert_eq!(a.find(0, 117, 0), None);
        let (_, ev) = a.insert(0, 200, 0, 200);
        assert_eq!(ev, None, "the freed way is reused before any eviction");
    }

    #[test]
    fn replacing_in_a_full_array_matches_the_general_insert() {
        // Two arrays fed the same keys: once full, one fills through `insert_by`, the
        // other through `replace_full_by`; slots, lookups and miss-filter counts agree
        // (LRU and another policy; power-of-two and other set counts; with a filter).
        for (entries, ways, policy) in [
            (64, 64, Policy::Lru),
            (2048, 16, Policy::Lru),
            (48, 4, Policy::Lru),
            (96, 32, Policy::Fifo),
            (24, 3, Policy::Plru),
        ] {
            let mut a = AssocArray::new(entries, ways, policy, 7);
            let mut b = a.clone();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut replaced = 0;
            for step in 0..30_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let key = x % (3 * entries as u64);
                let p = Prepared::new(key, 0);
                let (ha, hb) = (a.find_prepared::<false>(key, &p), b.find_prepared::<false>(key, &p));
                assert_eq!(ha, hb, "step {step}");
                if ha.is_some() {
                    continue;
                }
                let (sa, _) = a.insert_by::<false>(key, &p, key);
                let sb = if b.is_full() {
                    replaced += 1;
                    b.replace_full_by::<false>(key, &p, key)
                } else {
                    b.insert_by::<false>(key, &p, key).0
                };
                assert_eq!(sa, sb, "step {step}");
                assert_eq!(b.data(sb), key);
            }
            assert!(replaced > 10_000, "the full path ran {replaced} times");
            let (want, have) = recount(&b);
            assert_eq!(have, want);
            assert_eq!(a.entries, b.entries);
        }
    }

    /// The miss filter's counts recomputed from the fingerprints, and its own.
    fn recount(a: &AssocArray) -> (Vec<u16>, Vec<u16>) {
        a.filter.check(
            (0..a.sets)
                .flat_map(|set| (0..a.ways).map(move |w| (set, w)))
                .map(|(set, w)| a.fps[set * a.fp_stride + w]),
        )
    }

    #[test]
    fn the_miss_filter_counts_exactly_the_valid_entries_and_never_hides_one() {
        // Arrays wide enough for a filter (fully associative, several sets, a width that
        // is not a multiple of 16), random fills, lookups and invalidations, against a
        // plain list of what each set holds.
        for (entries, ways) in [(64, 64), (40, 40), (96, 32), (600, 300)] {
            let mut a = AssocArray::new(entries, ways, Policy::Lru, 1);
            assert!(a.filter.enabled());
            let sets = entries / ways;
            let mut model: Vec<Vec<(u64, u16)>> = vec![Vec::new(); sets];
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for step in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Keys from a range about twice the capacity: hits and misses both.
                let key = x % (2 * entries as u64);
                let asid = (x >> 40) as u16 % 2;
                let set = a.set_of(key);
                match x >> 60 {
                    0 => {
                        let n = a.invalidate_where(|k, s, _| k % 7 == key % 7 && s == asid);
                        let before: usize = model.iter().map(Vec::len).sum();
                        for m in &mut model {
                            m.retain(|&(k, s)| !(k % 7 == key % 7 && s == asid));
                        }
                        assert_eq!(before - model.iter().map(Vec::len).sum::<usize>(), n);
                    }
                    1 => {
                        if let Some(slot) = a.peek(set, key, asid) {
                            a.invalidate_slot(slot);
                            model[set].retain(|&e| e != (key, asid));
                        }
                    }
                    _ => {
                        let held = model[set].contains(&(key, asid));
                        assert_eq!(
                            a.find(set, key, asid).is_some(),
                            held,
                            "step {step}: key {key} asid {asid}"
                        );
                        if !held {
                            if let (_, Some(ev)) = a.insert(set, key, asid, key) {
                                model[set].retain(|&e| e != (ev.key, ev.asid));
                            }
                            model[set].push((key, asid));
                        }
                    }
                }
                if step % 97 == 0 {
                    let (want, have) = recount(&a);
                    assert_eq!(have, want, "step {step}");
                }
            }
            let (want, have) = recount(&a);
            assert_eq!(have, want);
            assert_eq!(a.occupancy(), model.iter().map(Vec::len).sum::<usize>());
        }
        // Narrow arrays have none.
        assert!(!AssocArray::new(2048, 16, Policy::Lru, 0).filter.enabled());
    }
}
