//! One cache array: set-associative, write-back (a dirty bit per line), its victims
//! chosen by a replacement policy of `replacement/` (LRU by default).
//!
//! Written here rather than on [`crate::assoc::AssocArray`] (the TLBs' array): a cache
//! must learn the dirty bit of the line a fill displaces (to write it back), which that
//! array does not return, and its entries carry address-space tags and 16-bit
//! fingerprints a physically tagged cache has no use for. The sets of a data cache are
//! small (4 to 16 ways in every catalog machine), so a linear scan of one set's tags,
//! kept in recency order under LRU ([`Cache`]), is as fast as anything cleverer, and
//! simple enough to check against the plain reference model of
//! `crates/model/tests/it/cache_differential.rs`. How a set is stored (fixed arrays of 2
//! to 16 ways, `u32` or `u64` tags, or a general one; lines in their ways under another
//! policy) is chosen once per level: sets.rs, ways.rs.

use super::sets::{Sets, EMPTY};
use crate::replacement::Policy;

/// Which tag store a level gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// The fastest for its shape and policy (sets.rs).
    Chosen,
    /// LRU on the general store whatever the shape (tests compare every store).
    General,
    /// Lines in their ways whatever the policy, LRU too (ways.rs; tests).
    ByWay,
}

/// Where a line lives in one copy of a level: the set count and how a line number
/// splits into a set index and a tag (the tag store keeps `tag << 1 | dirty`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Geom {
    /// Sets per copy.
    pub(super) sets: u64,
    /// `sets - 1` when `sets` is a power of two (the tag is the line number above the
    /// set bits), else 0 (the tag is the whole line number, the set `line % sets`).
    mask: u64,
    /// log2 of `sets` when a power of two, else 0.
    set_bits: u32,
    pow2: bool,
}

impl Geom {
    fn new(sets: u64) -> Geom {
        let pow2 = sets.is_power_of_two();
        Geom {
            sets,
            mask: if pow2 { sets - 1 } else { 0 },
            set_bits: if pow2 { sets.trailing_zeros() } else { 0 },
            pow2,
        }
    }

    /// The set (within a copy) of line number `line`, and its tag word (dirty clear).
    #[inline(always)]
    pub(super) fn locate(&self, line: u64) -> (usize, u64) {
        if self.pow2 {
            ((line & self.mask) as usize, (line >> self.set_bits) << 1)
        } else {
            ((line % self.sets) as usize, line << 1)
        }
    }

    /// [`Geom::locate`] of a geometry with a power-of-two set count (no test of it).
    #[inline(always)]
    pub(super) fn locate_pow2(&self, line: u64) -> (usize, u64) {
        debug_assert!(self.pow2);
        ((line & self.mask) as usize, (line >> self.set_bits) << 1)
    }

    /// [`Geom::line_of`] of a geometry with a power-of-two set count.
    #[inline(always)]
    pub(super) fn line_of_pow2(&self, word: u64, set: usize) -> u64 {
        debug_assert!(self.pow2);
        (word >> 1) << self.set_bits | set as u64
    }

    /// The line number of tag word `word` found in set `set`.
    #[inline(always)]
    pub(super) fn line_of(&self, word: u64, set: usize) -> u64 {
        if self.pow2 {
            (word >> 1) << self.set_bits | set as u64
        } else {
            word >> 1
        }
    }

    /// The largest tag of a line at or below physical address `pa_max`.
    fn max_tag(&self, pa_max: u64, line_shift: u32) -> u64 {
        (pa_max >> line_shift) >> self.set_bits
    }
}

/// Builds the tag store and geometry of `copies` copies of a level of `size` bytes,
/// `ways` ways and `line`-byte lines that serves physical addresses up to `pa_max`
/// under `policy` (`seed` for a random one): under LRU `u32` tag words when every tag
/// fits in 30 bits and the sets are a power of two; the store `layout` asks for.
/// Asserts the geometry (config validation checks it first, naming the key).
pub(super) fn build(
    (size, ways, line): (u64, usize, u32),
    copies: usize,
    pa_max: u64,
    (policy, seed): (Policy, u64),
    layout: Layout,
) -> (Sets, Geom) {
    assert!(
        line.is_power_of_two() && line >= 2 && ways > 0,
        "invalid cache geometry"
    );
    let per_set = ways as u64 * line as u64;
    assert!(
        size > 0 && size % per_set == 0,
        "cache size not a multiple of ways × line"
    );
    let geom = Geom::new(size / per_set);
    let narrow = geom.pow2 && geom.max_tag(pa_max, line.trailing_zeros()) < 1 << 30;
    let n = geom.sets as usize * copies.max(1);
    let sets = match layout {
        Layout::ByWay => Sets::by_way(n, ways, policy, seed),
        l => Sets::new(n, ways, narrow, l == Layout::General, policy, seed),
    };
    (sets, geom)
}

/// A set-associative array of cache lines (see the module documentation).
///
/// Under LRU each set keeps its lines in recency order, most recently used first, and its empty
/// ways last: a hit moves its line to the front (the lines before it shift down one),
/// a fill shifts the whole set down one and puts the new line first, so the line that
/// falls off the end is the least recently used one (or an empty way). That is exactly
/// LRU with "an empty way first" (the position of a line in its set is not observable:
/// only which lines a set holds, their order of use and their dirty bits are), with no
/// per-line stamp to keep or search: a miss and its fill read and write one set's tags,
/// nothing else (`crates/model/tests/it/cache_differential.rs` checks it against a plain
/// list model, array operations and the hierarchy alike, every tag store of sets.rs).
/// Under another policy lines stay in their ways and the policy chooses the victim
/// among them once the set is full (ways.rs; `crates/model/tests/it/cache_policies.rs`).
#[derive(Clone, Debug)]
pub struct Cache {
    ways: usize,
    line_shift: u32,
    geom: Geom,
    sets: Sets,
}

/// What a fill displaced: a valid line, with its dirty bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    /// The line's physical byte address (line-aligned).
    pub pa: u64,
    /// True if it was written since it was filled (it must be written back).
    pub dirty: bool,
}

impl Cache {
    /// An empty cache of `size` bytes, `ways` ways and `line`-byte lines, for any
    /// physical address. `line` must be a power of two of at least 2 and `size` a
    /// positive multiple of `ways × line` (config validation checks, naming the key;
    /// asserted here).
    pub fn new(size: u64, ways: usize, line: u32) -> Cache {
        Cache::with_limit(size, ways, line, u64::MAX)
    }

    /// [`Cache::new`] for physical addresses up to `pa_max` only (narrower tags when
    /// they fit; an address above it is a caller's bug).
    pub fn with_limit(size: u64, ways: usize, line: u32, pa_max: u64) -> Cache {
        Cache::built(size, ways, line, pa_max, (Policy::Lru, 0), Layout::Chosen)
    }

    /// [`Cache::new`] under replacement policy `policy` (`seed` for a random one).
    pub fn with_policy(size: u64, ways: usize, line: u32, policy: Policy, seed: u64) -> Cache {
        Cache::built(size, ways, line, u64::MAX, (policy, seed), Layout::Chosen)
    }

    /// [`Cache::new`] on the general tag store whatever the shape (for the
    /// differential test, which compares every store).
    #[doc(hidden)]
    pub fn general(size: u64, ways: usize, line: u32) -> Cache {
        Cache::built(size, ways, line, u64::MAX, (Policy::Lru, 0), Layout::General)
    }

    /// [`Cache::with_policy`] on the store that keeps lines in their ways (ways.rs)
    /// whatever the policy, LRU too (for the differential tests).
    #[doc(hidden)]
    pub fn by_way(size: u64, ways: usize, line: u32, policy: Policy, seed: u64) -> Cache {
        Cache::built(size, ways, line, u64::MAX, (policy, seed), Layout::ByWay)
    }

    fn built(size: u64, ways: usize, line: u32, pa_max: u64, policy: (Policy, u64), layout: Layout) -> Cache {
        let (sets, geom) = build((size, ways, line), 1, pa_max, policy, layout);
        Cache {
            ways,
            line_shift: line.trailing_zeros(),
            geom,
            sets,
        }
    }

    /// The tag store chosen (`u32x4`, `u64x16`, `any`, …; sets.rs).
    #[doc(hidden)]
    pub fn kind(&self) -> &'static str {
        self.sets.kind()
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.geom.sets as usize
    }

    /// Number of ways.
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// log2 of the line size.
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    /// Looks `pa` up. On a hit: the line becomes most recently used (the policy hears of
    /// the hit), a `write` marks it dirty, and true is returned. A miss changes nothing (the caller fills).
    pub fn lookup(&mut self, pa: u64, write: bool) -> bool {
        let (s, key) = self.geom.locate(pa >> self.line_shift);
        self.sets.lookup(s, key, write)
    }

    /// True if the line of `pa` is present (no replacement state changes).
    pub fn contains(&self, pa: u64) -> bool {
        let (s, key) = self.geom.locate(pa >> self.line_shift);
        self.sets.contains(s, key)
    }

    /// Brings the line of `pa` in as the most recently used (dirty if `dirty`): into an
    /// empty way of its set, else in place of the policy's victim (LRU: the least
    /// recently used line), which is returned. The line must not be present ([`Cache::lookup`] missed).
    pub fn fill(&mut self, pa: u64, dirty: bool) -> Option<Victim> {
        let (s, key) = self.geom.locate(pa >> self.line_shift);
        debug_assert!(!self.sets.contains(s, key), "fill of a present line");
        let old = self.sets.fill(s, key, dirty);
        self.victim(old, s)
    }

    /// Writes a line back into this cache (a dirty line evicted from the level above):
    /// if present it is marked dirty without becoming most recently used (no event for
    /// the policy); otherwise it
    /// is filled dirty (write-allocate), and what that displaced is returned.
    pub fn write_back(&mut self, pa: u64) -> Option<Victim> {
        let (s, key) = self.geom.locate(pa >> self.line_shift);
        let old = self.sets.write_back(s, key)?;
        self.victim(old, s)
    }

    fn victim(&self, old: u64, s: usize) -> Option<Victim> {
        (old != EMPTY).then(|| Victim {
            pa: self.geom.line_of(old, s) << self.line_shift,
            dirty: old & 1 != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_way_set_evicts_the_least_recently_used_and_reports_its_dirty_bit() {
        // 2 sets × 2 ways × 64 B = 256 B. Lines 0x000, 0x080, 0x100 all map to set 0.
        let mut c = Cache::new(256, 2, 64);
        assert_eq!(c.sets(), 2);
        assert!(!c.lookup(0x000, true));
        assert_eq!(c.fill(0x000, true), None);
        assert!(!c.lookup(0x080, false));
        assert_eq!(c.fill(0x080, false), None);
        // Touch 0x000: 0x080 is now the LRU of set 0.
        assert!(c.lookup(0x010, false));
        assert!(!c.lookup(0x100, false));
        assert_eq!(
            c.fill(0x100, false),
            Some(Victim {
                pa: 0x080,
                dirty: false
            })
        );
        // 0x000 (dirty from the first write) is now the LRU.
        assert!(!c.lookup(0x180, false));
        assert_eq!(c.fill(0x180, false), Some(Victim { pa: 0x000, dirty: true }));
        // Set 1 was never touched.
        assert!(!c.contains(0x040));
    }

    #[test]
    fn write_back_marks_a_present_line_dirty_and_allocates_an_absent_one() {
        let mut c = Cache::new(128, 1, 64);
        c.fill(0x0, false);
        assert_eq!(c.write_back(0x0), None);
        // 0x80 maps to set 0 too: allocating it displaces 0x0, now dirty.
        assert_eq!(c.write_back(0x80), Some(Victim { pa: 0x0, dirty: true }));
        assert!(c.contains(0x80));
    }
}
