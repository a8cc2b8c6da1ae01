//! One cache array: set-associative, LRU, write-back (a dirty bit per line).
//!
//! Written here rather than on [`crate::assoc::AssocArray`] (the TLBs' array): a cache
//! must learn the dirty bit of the line a fill displaces (to write it back), which that
//! array does not return, and its entries carry address-space tags and 16-bit
//! fingerprints a physically tagged cache has no use for. The sets of a data cache are
//! small (4 to 16 ways in every catalog machine), so a linear scan of one set's tags,
//! kept in recency order ([`Cache`]), is as fast as anything cleverer, and simple enough
//! to check against the plain reference model of `crates/model/tests/cache_differential.rs`.

/// The tag word of an empty way.
const EMPTY: u64 = u64::MAX;

/// A set-associative array of cache lines (see the module documentation).
///
/// Each set keeps its lines in recency order, most recently used first, and its empty
/// ways last: a hit moves its line to the front (the lines before it shift down one),
/// a fill shifts the whole set down one and puts the new line first, so the line that
/// falls off the end is the least recently used one (or an empty way). That is exactly
/// LRU with "an empty way first" (the position of a line in its set is not observable:
/// only which lines a set holds, their order of use and their dirty bits are), with no
/// per-line stamp to keep or search: a miss and its fill read and write one set's tags,
/// nothing else (`crates/model/tests/cache_differential.rs` checks it against a plain
/// list model, array operations and the hierarchy alike).
#[derive(Clone, Debug)]
pub struct Cache {
    sets: usize,
    ways: usize,
    line_shift: u32,
    /// `sets - 1` when `sets` is a power of two.
    set_mask: Option<u64>,
    /// Per set, `ways` tag words in recency order (most recent first, empty ways last):
    /// line number << 1 | dirty, or [`EMPTY`].
    tags: Vec<u64>,
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
    /// An empty cache of `size` bytes, `ways` ways and `line`-byte lines. `line` must be
    /// a power of two and `size` a positive multiple of `ways × line` (config validation
    /// checks, naming the key; asserted here).
    pub fn new(size: u64, ways: usize, line: u32) -> Cache {
        assert!(line.is_power_of_two() && ways > 0, "invalid cache geometry");
        let per_set = ways as u64 * line as u64;
        assert!(
            size > 0 && size % per_set == 0,
            "cache size not a multiple of ways × line"
        );
        let sets = (size / per_set) as usize;
        Cache {
            sets,
            ways,
            line_shift: line.trailing_zeros(),
            set_mask: sets.is_power_of_two().then(|| sets as u64 - 1),
            tags: vec![EMPTY; sets * ways],
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

    /// log2 of the line size.
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    /// The line number of `pa` and the first way of its set.
    #[inline(always)]
    fn locate(&self, pa: u64) -> (u64, usize) {
        let line = pa >> self.line_shift;
        let set = match self.set_mask {
            Some(m) => (line & m) as usize,
            None => (line % self.sets as u64) as usize,
        };
        (line, set * self.ways)
    }

    /// The position of `line` in the set of `ways` tags, if present.
    #[inline(always)]
    fn find(set: &[u64], line: u64) -> Option<usize> {
        // A tag matches when it equals `line << 1` but for the dirty bit. An empty way
        // matches only a line number of all ones (1-byte lines at the top of the address
        // space); empty ways come last, so a first match that is empty means absent.
        let key = line << 1;
        match set.iter().position(|&t| (t ^ key) < 2) {
            Some(w) if set[w] != EMPTY => Some(w),
            _ => None,
        }
    }

    /// Looks `pa` up. On a hit: the line becomes most recently used, a `write` marks it
    /// dirty, and true is returned. A miss changes nothing (the caller fills).
    #[inline(always)]
    pub fn lookup(&mut self, pa: u64, write: bool) -> bool {
        let (line, base) = self.locate(pa);
        let set = &mut self.tags[base..base + self.ways];
        match Self::find(set, line) {
            Some(w) => {
                let t = set[w] | write as u64;
                set.copy_within(0..w, 1);
                set[0] = t;
                true
            }
            None => false,
        }
    }

    /// True if the line of `pa` is present (no replacement state changes).
    pub fn contains(&self, pa: u64) -> bool {
        let (line, base) = self.locate(pa);
        Self::find(&self.tags[base..base + self.ways], line).is_some()
    }

    /// Brings the line of `pa` in as the most recently used (dirty if `dirty`): into an
    /// empty way of its set, else in place of the least recently used line, which is
    /// returned. The line must not be present ([`Cache::lookup`] missed).
    #[inline]
    pub fn fill(&mut self, pa: u64, dirty: bool) -> Option<Victim> {
        let (line, base) = self.locate(pa);
        let ways = self.ways;
        let set = &mut self.tags[base..base + ways];
        debug_assert!(Self::find(set, line).is_none(), "fill of a present line");
        // The last way holds the least recently used line, or is empty (empty ways are
        // last): it falls off as the set shifts down one.
        let old = set[ways - 1];
        set.copy_within(0..ways - 1, 1);
        set[0] = line << 1 | dirty as u64;
        (old != EMPTY).then(|| Victim {
            pa: (old >> 1) << self.line_shift,
            dirty: old & 1 != 0,
        })
    }

    /// Writes a line back into this cache (a dirty line evicted from the level above):
    /// if present it is marked dirty without becoming most recently used; otherwise it
    /// is filled dirty (write-allocate), and what that displaced is returned.
    pub fn write_back(&mut self, pa: u64) -> Option<Victim> {
        let (line, base) = self.locate(pa);
        let set = &mut self.tags[base..base + self.ways];
        if let Some(w) = Self::find(set, line) {
            set[w] |= 1;
            return None;
        }
        self.fill(pa, true)
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
