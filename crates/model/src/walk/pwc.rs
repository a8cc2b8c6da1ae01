//! Page-walk caches (paging-structure caches): per upper level, a small cache of
//! descriptors that point to next-level tables, keyed by the virtual-address prefix
//! the descriptor covers. A hit at level L lets the walk start at level L+1 with the
//! cached table, skipping the reads of levels 0..=L. The deepest hit wins.
//!
//! Each cache is fully associative with exact LRU replacement; `entries = 0` disables a
//! level. The caches sit on every walk, so they have their own compact storage rather
//! than the general set-associative [`crate::assoc::AssocArray`]: only the enabled
//! levels are kept, deepest first (the lookup order); a lookup first compares the most
//! recent entry's tag (one upper-level entry covers a whole region, so repeats are the
//! rule), then asks a miss filter (caches of 32 ways or more), then a hashed way hint,
//! and only then compares 16-bit fingerprints sixteen at a time, checking the full tag
//! where one matches; LRU is an intrusive list, so a hit or a fill is O(1). The
//! behaviour is exactly that of an `AssocArray` with one set and
//! [`crate::replacement::Policy::Lru`] (an empty way, lowest first, is filled before
//! any entry is evicted; hits and fills make an entry most recent): the test at the end
//! of this file checks it against that reference.

use crate::addr::Asid;
use crate::assoc::{eq_mask16, MissFilter, LANES};
use crate::pt::Format;
use serde::Serialize;

/// Counts of the page-walk caches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PwcStats {
    /// Lookups (one per walk when any cache is configured).
    pub lookups: u64,
    /// Hits by the level of the cached descriptor (index 0 = root level).
    pub hits: Vec<u64>,
}

impl PwcStats {
    /// Walks that found nothing cached (lookups less hits).
    pub fn misses(&self) -> u64 {
        self.lookups - self.hits.iter().sum::<u64>()
    }
}

/// The tag of an empty way.
const INVALID: u64 = u64::MAX;
/// Keys (`va >> shift`) must fit below the address-space id, which shares the tag word.
const MAX_KEY: u64 = (1 << 48) - 1;
/// Fingerprints compared per step.
/// The end of an LRU list.
const NIL: u32 = u32::MAX;
/// `by_level` entry of a level without a cache.
const NO_CACHE: u8 = u8::MAX;
/// Slots of a cache's way hints (four or more per way up to 64 ways; larger caches
/// only fall back to the full search more often).
const HINT_SLOTS: usize = 256;
/// Most levels any format has.
const MAX_LEVELS: usize = 8;

#[inline(always)]
fn tag(key: u64, asid: Asid) -> u64 {
    key | (asid as u64) << 48
}

/// The fingerprint of a valid tag: never 0 (the empty way and the padding): fifteen
/// hash bits and the low bit set (as [`crate::assoc`]'s).
#[inline(always)]
fn fingerprint(tag: u64) -> u16 {
    (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48) as u16 | 1
}

/// One level's cache: `ways` entries, fully associative, LRU.
#[derive(Clone, Debug)]
struct LevelCache {
    /// Level of the descriptors it holds.
    level: usize,
    /// Address shift of that level: the key of `va` is `va >> shift`.
    shift: u32,
    /// Per way: fingerprint of the tag (0 when empty), padded with zeros to a multiple
    /// of [`LANES`].
    fps: Box<[u16]>,
    /// Per way: tag (key | asid << 48, or [`INVALID`]) and the cached table address.
    entries: Box<[[u64; 2]]>,
    /// Where a tag was last put or found: way by a hash of the tag, [`NIL`] if none
    /// (a fixed number of slots, so the slot needs no bounds check). A hint is only a
    /// place to look first: a lookup uses it only if that way holds the tag (empty
    /// ways hold [`INVALID`], never a tag), and otherwise searches every way.
    hints: Box<[u32; HINT_SLOTS]>,
    /// Per way: (more recent, less recent) neighbour in the LRU list ([`NIL`] at ends).
    links: Box<[[u32; 2]]>,
    /// Most and least recently used way.
    head: u32,
    tail: u32,
    /// Empty ways: while there are any, a fill takes the lowest instead of evicting.
    empty: usize,
    /// The most recent entry's tag and table ([`INVALID`] when unknown): a lookup of
    /// it needs no hint, no scan and no LRU update — the walk's first dependent loads,
    /// shortened for the common repeat (one upper-level entry covers a whole region).
    head_tag: u64,
    head_table: u64,
    /// Counts of valid entries by fingerprint bucket (large caches only): most misses
    /// skip the hint and the scan.
    filter: MissFilter,
}

impl LevelCache {
    fn new(level: usize, shift: u32, ways: usize) -> LevelCache {
        assert!(ways > 0 && ways < NIL as usize, "invalid page-walk-cache size {ways}");
        let mut c = LevelCache {
            level,
            shift,
            fps: vec![0; ways.div_ceil(LANES) * LANES].into_boxed_slice(),
            entries: vec![[INVALID, 0]; ways].into_boxed_slice(),
            hints: Box::new([NIL; HINT_SLOTS]),
            links: vec![[NIL, NIL]; ways].into_boxed_slice(),
            head: NIL,
            tail: NIL,
            empty: ways,
            head_tag: INVALID,
            head_table: 0,
            filter: MissFilter::new(ways, ways),
        };
        // Any initial order will do: a victim is chosen only once every way has been
        // filled, and each fill made its way most recent.
        for w in 0..ways as u32 {
            c.links[w as usize] = [NIL, c.head];
            if c.head != NIL {
                c.links[c.head as usize][0] = w;
            } else {
                c.tail = w;
            }
            c.head = w;
        }
        c
    }

    /// The link of way `w`.
    ///
    /// The LRU list is updated on every page-walk-cache hit, so its indexing is
    /// unchecked: `touch` asserts that its way is in range, and every other index comes
    /// from `head`, `tail` or the links themselves, which only ever hold ways in range (or
    /// [`NIL`], never used as an index); `debug_assert`s check it in test builds.
    #[inline(always)]
    fn link(&mut self, w: u32) -> &mut [u32; 2] {
        debug_assert!((w as usize) < self.links.len());
        // SAFETY: w < links.len() (see above).
        unsafe { self.links.get_unchecked_mut(w as usize) }
    }

    /// Makes way `w` the most recently used.
    #[inline(always)]
    fn touch(&mut self, w: usize) {
        // The check that makes the unchecked indexing below sound for any caller.
        assert!(w < self.links.len());
        let w = w as u32;
        let head = self.head;
        if head == w {
            return;
        }
        let [more, less] = *self.link(w);
        // Not the head, so it has a more recent neighbour, and the head is another way.
        self.link(more)[1] = less;
        if less != NIL {
            self.link(less)[0] = more;
        } else {
            self.tail = more;
        }
        *self.link(w) = [NIL, head];
        self.link(head)[0] = w;
        self.head = w;
    }

    /// The `hints` slot of a tag.
    #[inline(always)]
    fn hint_slot(&self, tag: u64) -> usize {
        (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize % HINT_SLOTS
    }

    /// The table cached under `tag`, made most recent.
    #[inline(always)]
    fn find(&mut self, tag: u64) -> Option<u64> {
        if tag == self.head_tag {
            return Some(self.head_table);
        }
        if !self.filter.may_hold(fingerprint(tag)) {
            return None;
        }
        // The hint names the way that last held a tag of this slot: if it holds `tag`
        // now, that is the one way that does (tags are unique in a cache).
        let slot = self.hint_slot(tag);
        let hint = self.hints[slot] as usize;
        if let Some(&[t, table]) = self.entries.get(hint) {
            if t == tag {
                self.touch(hint);
                (self.head_tag, self.head_table) = (tag, table);
                return Some(table);
            }
        }
        let fp = fingerprint(tag);
        for (c, chunk) in self.fps.chunks_exact(LANES).enumerate() {
            let chunk: &[u16; LANES] = chunk.try_into().expect("a chunk of 16");
            let mut mask = eq_mask16(chunk, fp);
            while mask != 0 {
                // Padding lanes are 0, never a fingerprint, so the way exists.
                let w = c * LANES + mask.trailing_zeros() as usize;
                let [t, table] = self.entries[w];
                if t == tag {
                    self.hints[slot] = w as u32;
                    self.touch(w);
                    (self.head_tag, self.head_table) = (tag, table);
                    return Some(table);
                }
                mask &= mask - 1;
            }
        }
        None
    }

    /// Caches `table` under `tag`: in the lowest empty way, else over the LRU entry.
    #[inline(always)]
    fn insert(&mut self, tag: u64, table: u64) {
        if self.empty > 0 {
            self.empty -= 1;
            let w = self
                .entries
                .iter()
                .position(|e| e[0] == INVALID)
                .expect("an empty way is counted");
            self.put(w, tag, table);
            self.touch(w);
            (self.head_tag, self.head_table) = (tag, table);
            return;
        }
        // Full (the steady state): the least recent way becomes the most recent.
        let w = self.tail as usize;
        debug_assert!(w < self.entries.len());
        // SAFETY: the tail is a way (< ways), as every link is (see `link`).
        let old_fp = unsafe {
            let f = self.fps.get_unchecked_mut(w);
            let old = *f;
            *f = fingerprint(tag);
            *self.entries.get_unchecked_mut(w) = [tag, table];
            old
        };
        // A full cache: the tail held an entry.
        self.filter.count(old_fp, false);
        self.filter.count(fingerprint(tag), true);
        let slot = self.hint_slot(tag);
        self.hints[slot] = w as u32;
        self.tail_to_head();
        (self.head_tag, self.head_table) = (tag, table);
    }

    /// Writes `tag` and `table` into way `w` (checked) and its hint.
    #[inline(always)]
    fn put(&mut self, w: usize, tag: u64, table: u64) {
        debug_assert!(self.fps[w] == 0, "put into an empty way");
        self.fps[w] = fingerprint(tag);
        self.filter.count(fingerprint(tag), true);
        self.entries[w] = [tag, table];
        let slot = self.hint_slot(tag);
        self.hints[slot] = w as u32;
    }

    /// Makes the least recently used way the most recent ([`LevelCache::touch`] of the
    /// tail, without its tests).
    #[inline(always)]
    fn tail_to_head(&mut self) {
        let (w, head) = (self.tail, self.head);
        if w == head {
            return; // one way
        }
        let more = self.link(w)[0];
        self.link(more)[1] = NIL;
        self.tail = more;
        *self.link(w) = [NIL, head];
        self.link(head)[0] = w;
        self.head = w;
    }

    /// Empties every way whose (key, asid) satisfies `pred` (LRU order untouched).
    fn invalidate_where(&mut self, mut pred: impl FnMut(u64, Asid) -> bool) {
        self.head_tag = INVALID;
        for w in 0..self.entries.len() {
            let t = self.entries[w][0];
            if t != INVALID && pred(t & MAX_KEY, (t >> 48) as Asid) {
                self.entries[w][0] = INVALID;
                let fp = std::mem::take(&mut self.fps[w]);
                self.filter.count(fp, false);
                self.empty += 1;
            }
        }
    }
}

/// The page-walk caches of one core.
#[derive(Clone, Debug)]
pub struct Pwc {
    /// The caches of the enabled levels, deepest level first (the lookup order).
    caches: Box<[LevelCache]>,
    /// Per level: index of its cache in `caches`, or [`NO_CACHE`].
    by_level: [u8; MAX_LEVELS],
    /// Lookups, and hits by level (a fixed array: counted on every walk with no range
    /// check); [`Pwc::stats`] reports them.
    lookups: u64,
    hits: [u64; MAX_LEVELS],
    /// Upper levels of the format (the length of [`PwcStats::hits`]).
    upper: usize,
}

impl Pwc {
    /// Caches with `entries[L]` entries for the descriptors of level L (levels beyond the
    /// list, and the last level, have none).
    pub fn new(fmt: Format, entries: &[usize]) -> Pwc {
        let levels = fmt.levels();
        let upper = levels.len().saturating_sub(1);
        assert!(levels.len() <= MAX_LEVELS);
        let mut by_level = [NO_CACHE; MAX_LEVELS];
        let mut caches = Vec::new();
        for l in (0..upper).rev() {
            if let Some(&e) = entries.get(l).filter(|&&e| e > 0) {
                // Keys (`va >> shift`) are then below 2^47 for any `va`: below MAX_KEY,
                // so no tag is INVALID and the asid bits stay clear (every format's
                // upper levels have shifts of 20 or more).
                assert!(
                    levels[l].shift >= 17,
                    "page-walk cache of a level with shift {}",
                    levels[l].shift
                );
                by_level[l] = caches.len() as u8;
                caches.push(LevelCache::new(l, levels[l].shift, e));
            }
        }
        Pwc {
            caches: caches.into_boxed_slice(),
            by_level,
            lookups: 0,
            hits: [0; MAX_LEVELS],
            upper,
        }
    }

    /// The counters: lookups, and hits by the level of the cached descriptor.
    pub fn stats(&self) -> PwcStats {
        PwcStats {
            lookups: self.lookups,
            hits: self.hits[..self.upper].to_vec(),
        }
    }

    /// Lookups so far ([`Pwc::stats`] without the copy of the hits).
    #[inline]
    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    /// True if any level has a cache.
    #[inline]
    pub fn enabled(&self) -> bool {
        !self.caches.is_empty()
    }

    /// The deepest cached table for `va`: (level to start the walk at, table address).
    #[inline(always)]
    pub fn lookup(&mut self, va: u64, asid: Asid) -> Option<(usize, u64)> {
        if self.caches.is_empty() {
            return None;
        }
        self.lookups += 1;
        for c in self.caches.iter_mut() {
            if let Some(table) = c.find(tag(va >> c.shift, asid)) {
                // c.level < upper <= MAX_LEVELS (asserted in `new`): the mask only spares
                // the range check.
                self.hits[c.level & (MAX_LEVELS - 1)] += 1;
                return Some((c.level + 1, table));
            }
        }
        None
    }

    /// Caches the level-`level` descriptor covering `va`, which points to `table`.
    /// Always inlined into the walk, with the insert (a call per table descriptor read
    /// cost more than the fill's own work).
    #[inline(always)]
    pub fn fill(&mut self, level: usize, va: u64, asid: Asid, table: u64) {
        let Some(&i) = self.by_level.get(level) else { return };
        if i == NO_CACHE {
            return;
        }
        let c = &mut self.caches[i as usize];
        let tag = tag(va >> c.shift, asid);
        // A descriptor the walk read is never already cached at its level: the lookup
        // would have hit it and started the walk below it.
        debug_assert!(!c.entries.iter().any(|e| e[0] == tag));
        c.insert(tag, table);
    }

    /// Drops every cached descriptor (every address space): an invalidation of all
    /// combined entries (EPT's `INVEPT`, SDM 28.3.3).
    pub fn flush(&mut self) {
        for c in self.caches.iter_mut() {
            c.invalidate_where(|_, _| true);
        }
    }

    /// Drops every cached descriptor of `asid` covering any of `[start, end)`.
    pub fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) {
        for c in self.caches.iter_mut() {
            let shift = c.shift;
            c.invalidate_where(|k, a| {
                let lo = k << shift;
                a == asid && lo < end && lo.saturating_add(1 << shift) > start
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assoc::AssocArray;
    use crate::replacement::Policy;

    /// The previous implementation (one `AssocArray` with LRU per level): the reference.
    struct Reference {
        fmt: Format,
        caches: Vec<Option<AssocArray>>,
        stats: PwcStats,
    }

    impl Reference {
        fn new(fmt: Format, entries: &[usize]) -> Reference {
            let n = fmt.levels().len();
            let caches = (0..n.saturating_sub(1))
                .map(|l| {
                    entries
                        .get(l)
                        .copied()
                        .filter(|&e| e > 0)
                        .map(|e| AssocArray::new(e, e, Policy::Lru, 0))
                })
                .collect::<Vec<_>>();
            Reference {
                fmt,
                stats: PwcStats {
                    hits: vec![0; caches.len()],
                    ..Default::default()
                },
                caches,
            }
        }
        fn lookup(&mut self, va: u64, asid: Asid) -> Option<(usize, u64)> {
            if !self.caches.iter().any(Option::is_some) {
                return None;
            }
            self.stats.lookups += 1;
            let levels = self.fmt.levels();
            for l in (0..self.caches.len()).rev() {
                if let Some(c) = &mut self.caches[l] {
                    if let Some(slot) = c.find(0, va >> levels[l].shift, asid) {
                        self.stats.hits[l] += 1;
                        return Some((l + 1, c.data(slot)));
                    }
                }
            }
            None
        }
        fn fill(&mut self, level: usize, va: u64, asid: Asid, table: u64) {
            let shift = self.fmt.levels()[level].shift;
            if let Some(Some(c)) = self.caches.get_mut(level) {
                c.insert(0, va >> shift, asid, table);
            }
        }
        fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) {
            let levels = self.fmt.levels();
            for (l, c) in self.caches.iter_mut().enumerate() {
                if let Some(c) = c {
                    let shift = levels[l].shift;
                    c.invalidate_where(|k, a, _| {
                        let lo = k << shift;
                        a == asid && lo < end && lo.saturating_add(1 << shift) > start
                    });
                }
            }
        }
    }

    /// The project's SplitMix64, drawn modulo `n` (this test's stream).
    struct Rng(mmulab_base::SplitMix64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0.next_u64() % n
        }
    }

    #[test]
    fn matches_the_assoc_array_lru_reference() {
        let mut rng = Rng(mmulab_base::SplitMix64::new(7));
        for case in 0..300 {
            let fmt = Format::ALL[case % Format::ALL.len()];
            // Up to more ways than the hints have slots (HINT_SLOTS).
            let entries: Vec<usize> = (0..4)
                .map(|_| [0usize, 1, 2, 3, 4, 8, 17, 32, 100, 300][rng.below(10) as usize])
                .collect();
            let mut fast = Pwc::new(fmt, &entries);
            let mut slow = Reference::new(fmt, &entries);
            let levels = fmt.levels();
            let top = levels[0].shift + levels[0].bits;
            // A small window of addresses, so that entries are found, evicted and refilled.
            let window = 1u64 << (levels[levels.len() - 1].shift + 4 + rng.below(12) as u32).min(top);
            for step in 0..2000 {
                let va = rng.below(window);
                let asid = (rng.below(6) == 0) as Asid;
                let (a, b) = (fast.lookup(va, asid), slow.lookup(va, asid));
                assert_eq!(a, b, "case {case} step {step} {fmt:?} {entries:?}");
                // Fill the levels below the hit, as a walk would.
                let from = a.map_or(0, |h| h.0);
                for l in from..levels.len() - 1 {
                    let table = rng.below(1 << 30) << 12;
                    fast.fill(l, va, asid, table);
                    slow.fill(l, va, asid, table);
                }
                if rng.below(40) == 0 {
                    let start = rng.below(window);
                    let len = 1 << (12 + rng.below(20));
                    fast.invalidate_range(asid, start, start + len);
                    slow.invalidate_range(asid, start, start + len);
                }
            }
            assert_eq!(fast.stats(), slow.stats, "case {case}");
            assert_eq!(fast.enabled(), slow.caches.iter().any(Option::is_some));
            // Every miss filter counts exactly the valid entries' fingerprints.
            for c in fast.caches.iter() {
                assert_eq!(c.filter.enabled(), c.entries.len() >= 32, "case {case} {entries:?}");
                let (want, have) = c.filter.check(c.fps.iter().copied());
                assert_eq!(have, want, "case {case} {entries:?}");
            }
        }
    }

    #[test]
    fn eq_mask_finds_every_position() {
        let mut c = [0u16; 16];
        for i in [0, 3, 15] {
            c[i] = 0x8585;
        }
        assert_eq!(eq_mask16(&c, 0x8585), 1 | 1 << 3 | 1 << 15);
        assert_eq!(eq_mask16(&c, 0), 0xffff & !(1 | 1 << 3 | 1 << 15));
    }
}
