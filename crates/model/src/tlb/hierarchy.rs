use super::level::{FillKey, VA_LIMIT_BITS};
use super::{Tlb, TlbSpec};
use crate::addr::Asid;
use crate::translation::Translation;

/// Longest chain of levels a lookup may traverse.
pub const MAX_DEPTH: usize = 8;

/// The TLB levels of one core, wired as a tree: data references enter at the first level
/// serving data (or unified), instruction fetches at the first serving instr (or
/// unified); a miss falls through to the level's `next`.
///
/// Policy: on a hit at level k every level before it on the path is filled (the usual
/// refill of upper levels from a lower one); after a miss in the last level the walk
/// runs and every level on the path is filled. Levels are neither inclusive nor
/// exclusive: evictions are never propagated.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    levels: Vec<Tlb>,
    /// The levels a data / an instruction lookup visits, in order: the entry level, then
    /// its `next` chain (computed once).
    data_path: Path,
    instr_path: Path,
    /// True if every level is LRU with a power-of-two number of sets
    /// ([`Hierarchy::is_lru_pow2`]). The levels never change after construction (no
    /// method hands one out to be replaced), so neither does this.
    lru_pow2: bool,
}

#[derive(Clone, Copy, Debug)]
struct Path {
    levels: [u8; MAX_DEPTH],
    len: usize,
}

impl Path {
    fn new(specs: &[TlbSpec], entry: usize) -> Path {
        let mut p = Path {
            levels: [0; MAX_DEPTH],
            len: 0,
        };
        let mut cur = Some(entry);
        while let Some(i) = cur {
            if p.len == MAX_DEPTH || i >= specs.len() {
                break;
            }
            p.levels[p.len] = i as u8;
            p.len += 1;
            cur = specs[i].next;
        }
        p
    }
}

/// The outcome of a lookup.
#[derive(Clone, Copy, Debug)]
pub struct Lookup {
    /// How many levels of the path ([`Hierarchy::path`]) were looked up.
    pub len: usize,
    /// The hit (level index, slot), if any level hit; [`Hierarchy::entry`] reads it.
    /// (The lookup's cycles are each looked-up level's latency: the machine derives
    /// them from the levels' access counts.)
    pub hit: Option<(usize, usize)>,
}

impl Hierarchy {
    /// Builds levels from validated specs (entry points and acyclic `next` links are
    /// checked by config validation).
    pub fn new(specs: Vec<TlbSpec>, data_entry: usize, instr_entry: usize) -> Hierarchy {
        let data_path = Path::new(&specs, data_entry);
        let instr_path = Path::new(&specs, instr_entry);
        // The invariant `level_on_path` relies on (an empty path holds level 0, so there
        // must be at least one level).
        for p in [&data_path, &instr_path] {
            assert!(
                !specs.is_empty() && p.levels.iter().all(|&i| (i as usize) < specs.len()),
                "TLB path beyond the levels"
            );
        }
        let mut levels: Vec<Tlb> = specs.into_iter().map(Tlb::new).collect();
        // Only the levels references enter at are asked for their most recent entry.
        for (i, t) in levels.iter_mut().enumerate() {
            t.set_tracks_mru(i == data_path.levels[0] as usize || i == instr_path.levels[0] as usize);
        }
        let lru_pow2 = levels.iter().all(Tlb::is_lru_pow2);
        Hierarchy {
            levels,
            data_path,
            instr_path,
            lru_pow2,
        }
    }

    /// The levels, in config order.
    pub fn levels(&self) -> &[Tlb] {
        &self.levels
    }

    /// Cycles spent in lookups so far: each level's accesses times its latency.
    ///
    /// Asked once per reference that goes to memory on a machine with caches (the
    /// core's clock): the common depths are summed straight, with no loop (whose set-up
    /// and unrolled tail cost more than the three levels' sums themselves).
    #[inline(always)]
    pub fn lookup_cycles(&self) -> u64 {
        match self.levels.as_slice() {
            [a, b, c] => a.lookup_cycles() + b.lookup_cycles() + c.lookup_cycles(),
            [a, b] => a.lookup_cycles() + b.lookup_cycles(),
            l => lookup_cycles_any(l),
        }
    }

    /// True if every level's replacement is LRU and its number of sets a power of two
    /// (the common shape, e.g. the default machine's): then [`Hierarchy::lru_pow2`] gives
    /// the path specialised for it.
    pub fn is_lru_pow2(&self) -> bool {
        self.lru_pow2
    }

    /// The lookup and fills specialised for a hierarchy whose levels are all LRU with a
    /// power-of-two number of sets ([`Hierarchy::is_lru_pow2`]): one mask for the set and
    /// LRU reached directly, with no per-level test of the shape. `None` for any other
    /// hierarchy, so the specialised path cannot run on a shape it does not serve. Same
    /// results and counters as [`Hierarchy::lookup`] and [`Hierarchy::fill_path`].
    #[inline(always)]
    pub fn lru_pow2(&mut self) -> Option<LruPow2<'_>> {
        if self.lru_pow2 {
            Some(LruPow2(self))
        } else {
            None
        }
    }

    /// Updates the attribute bits of the entry in `slot` of level `level` (a store's
    /// dirty bit on the hit entry).
    pub fn set_attrs(&mut self, level: usize, slot: usize, attrs: crate::translation::Attrs) {
        self.levels[level].set_attrs(slot, attrs);
    }

    /// Level `i` of a path. Paths are built from validated specs, every index in them
    /// is checked against the levels once in [`Hierarchy::new`], and the number of
    /// levels never changes afterwards (no method adds, removes or replaces one), so the lookups and
    /// fills on every reference index without a check.
    #[inline(always)]
    fn level_on_path(&mut self, i: u8) -> &mut Tlb {
        debug_assert!((i as usize) < self.levels.len());
        // SAFETY: i comes from a path, and every path index is < levels.len() (see above).
        unsafe { self.levels.get_unchecked_mut(i as usize) }
    }

    /// The level references of this kind enter at.
    #[inline(always)]
    pub fn entry_level(&mut self, instr: bool) -> &mut Tlb {
        let i = if instr {
            self.instr_path.levels[0]
        } else {
            self.data_path.levels[0]
        };
        self.level_on_path(i)
    }

    /// The levels a lookup of this kind visits, in order.
    #[inline(always)]
    pub fn path(&self, instr: bool) -> &[u8] {
        let p = if instr { &self.instr_path } else { &self.data_path };
        &p.levels[..p.len]
    }

    /// Looks `va` up along the path for its kind of reference. The entry level is looked
    /// up at its own call site and the levels behind it at a second one (the loop),
    /// so the host's branch predictor keeps separate histories for the first level and
    /// the rest — their hit rates and set sizes differ. Both are inlined into the
    /// caller (measured: 2.8% fewer instructions on GUPS than a call for the loop).
    #[inline]
    pub fn lookup(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        self.lookup_as::<false>(va, asid, instr)
    }

    /// [`Hierarchy::lookup`], with `FAST` specialised for a hierarchy that
    /// [`Hierarchy::is_lru_pow2`] (checked in debug builds). `FAST` on another hierarchy
    /// is memory-safe but looks up the wrong sets: only [`LruPow2`], which exists for
    /// that shape only, passes `true`.
    #[inline(always)]
    fn lookup_as<const FAST: bool>(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        debug_assert!(
            !FAST || self.lru_pow2,
            "the FAST lookup on a hierarchy that is not LRU with 2^k sets"
        );
        let path = if instr { self.instr_path } else { self.data_path };
        if va >> VA_LIMIT_BITS != 0 {
            return self.lookup_beyond(&path);
        }
        let first = path.levels[0] as usize;
        let tlb = self.level_on_path(path.levels[0]);
        if let Some(slot) = tlb.probe_below_limit::<FAST>(va, asid) {
            return Lookup {
                len: 1,
                hit: Some((first, slot)),
            };
        }
        self.lookup_behind::<FAST>(&path, va, asid)
    }

    /// A lookup of an address no level can hold (2^56 or more): a miss at every level.
    #[cold]
    #[inline(never)]
    fn lookup_beyond(&mut self, path: &Path) -> Lookup {
        for &i in &path.levels[..path.len] {
            self.levels[i as usize].probe_beyond();
        }
        Lookup {
            len: path.len,
            hit: None,
        }
    }

    /// The levels behind the entry level (one shared site for all of them), for an
    /// address below 2^56.
    #[inline(always)]
    fn lookup_behind<const FAST: bool>(&mut self, path: &Path, va: u64, asid: Asid) -> Lookup {
        for n in 1..path.len {
            let i = path.levels[n];
            if let Some(slot) = self.level_on_path(i).probe_below_limit::<FAST>(va, asid) {
                return Lookup {
                    len: n + 1,
                    hit: Some((i as usize, slot)),
                };
            }
        }
        Lookup {
            len: path.len,
            hit: None,
        }
    }

    /// The translation a lookup hit: level `level`, `slot`.
    #[inline]
    pub fn entry(&self, level: usize, slot: usize, asid: Asid) -> Translation {
        self.levels[level].entry_at(slot, asid)
    }

    /// Fills the levels of the path of this kind of reference, up to (not including)
    /// position `upto`, with `t` for an access to `va`.
    ///
    /// One out-of-line loop with each level's fill inlined into it: a miss fills two or
    /// three levels, and one call costs less than one per level.
    #[inline(never)]
    pub fn fill_path(&mut self, instr: bool, upto: usize, t: &Translation, va: u64) {
        self.fill_path_as::<false>(instr, upto, t, va)
    }

    /// [`Hierarchy::fill_path`], inlined into its caller: the walk's common case fills
    /// with the translation still in registers.
    #[inline(always)]
    pub fn fill_path_inline(&mut self, instr: bool, upto: usize, t: &Translation, va: u64) {
        self.fill_path_as::<false>(instr, upto, t, va)
    }

    /// [`Hierarchy::fill_path_inline`] with `FAST` (see `Hierarchy::lookup_as`).
    #[inline(always)]
    fn fill_path_as<const FAST: bool>(&mut self, instr: bool, upto: usize, t: &Translation, va: u64) {
        debug_assert!(
            !FAST || self.lru_pow2,
            "the FAST fill on a hierarchy that is not LRU with 2^k sets"
        );
        let path = if instr { self.instr_path } else { self.data_path };
        let k = FillKey::new(t);
        // The entry level at a call site of its own, the levels behind it at another (as
        // in `lookup`): the host predicts each site's branches (e.g. whether the level
        // remembers its most recent entry) without the two interleaving.
        if let Some((&first, behind)) = path.levels[..upto.min(path.len)].split_first() {
            self.level_on_path(first).fill_key::<FAST>(&k, t, va);
            for &i in behind {
                self.level_on_path(i).fill_key::<FAST>(&k, t, va);
            }
        }
    }

    /// Starts counting compulsory misses at every level ([`Tlb::count_compulsory`]).
    pub fn count_compulsory(&mut self) {
        for t in &mut self.levels {
            t.count_compulsory();
        }
    }

    /// Fills the levels `path` names with `t` for an access to `va`.
    #[inline]
    pub fn fill(&mut self, path: &[u8], t: &Translation, va: u64) {
        for &i in path {
            self.levels[i as usize].fill(t, va);
        }
    }

    /// Sets `bits` in every level's cached entry covering `va` (no replacement update).
    pub fn add_attrs(&mut self, va: u64, asid: Asid, bits: u16) {
        for t in &mut self.levels {
            t.add_attrs(va, asid, bits);
        }
    }

    /// Removes every entry of every level (counted as invalidations).
    pub fn flush(&mut self) {
        for t in &mut self.levels {
            t.flush();
        }
    }

    /// Removes every entry of `asid` overlapping `[start, end)` from every level.
    pub fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) -> usize {
        self.levels
            .iter_mut()
            .map(|t| t.invalidate_range(asid, start, end))
            .sum()
    }
}

/// A [`Hierarchy`] known to be LRU with power-of-two set counts in every level (made by
/// [`Hierarchy::lru_pow2`] only): its lookup and fills take the specialised path.
#[derive(Debug)]
pub struct LruPow2<'a>(&'a mut Hierarchy);

impl LruPow2<'_> {
    /// [`Hierarchy::lookup`], specialised.
    #[inline(always)]
    pub fn lookup(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        self.0.lookup_as::<true>(va, asid, instr)
    }

    /// [`Hierarchy::fill_path`], specialised (out of line, as there).
    #[inline(never)]
    pub fn fill_path(&mut self, instr: bool, upto: usize, t: &Translation, va: u64) {
        self.0.fill_path_as::<true>(instr, upto, t, va)
    }

    /// [`Hierarchy::fill_path_inline`], specialised.
    #[inline(always)]
    pub fn fill_path_inline(&mut self, instr: bool, upto: usize, t: &Translation, va: u64) {
        self.0.fill_path_as::<true>(instr, upto, t, va)
    }
}

/// [`Hierarchy::lookup_cycles`] of a hierarchy of other than two or three levels, out
/// of line: its loop kept in the (inlined) caller needs registers the caller then saves
/// on every call, for the common depths too.
#[cold]
#[inline(never)]
fn lookup_cycles_any(levels: &[Tlb]) -> u64 {
    levels.iter().map(Tlb::lookup_cycles).sum()
}
