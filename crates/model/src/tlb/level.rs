use super::{TlbSpec, Unsupported};
use crate::addr::{Asid, PageSize};
use crate::assoc::{AssocArray, Prepared, INVALID, MAX_KEY};
use crate::translation::{Attrs, Translation};
use serde::Serialize;

/// Event counts of one TLB level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TlbStats {
    /// Lookups.
    pub accesses: u64,
    /// Lookups that found an entry.
    pub hits: u64,
    /// Lookups that found none.
    pub misses: u64,
    /// Entries inserted.
    pub fills: u64,
    /// Valid entries displaced by fills.
    pub evictions: u64,
    /// Fills that cached a smaller piece of an unsupported page size.
    pub splinters: u64,
    /// Fills skipped because the size is unsupported and the level bypasses it.
    pub bypasses: u64,
    /// Entries removed by invalidations (shootdowns).
    pub invalidations: u64,
}

impl TlbStats {
    /// Adds `b`'s counts to these (figures summed over cores or levels).
    pub fn add(&mut self, b: &TlbStats) {
        self.accesses += b.accesses;
        self.hits += b.hits;
        self.misses += b.misses;
        self.fills += b.fills;
        self.evictions += b.evictions;
        self.splinters += b.splinters;
        self.bypasses += b.bypasses;
        self.invalidations += b.invalidations;
    }
}

/// `last_vpn` when there is no most recent entry: no address shifted right by a page
/// shift (12 or more; 63 before the first fill) equals it.
const NO_VPN: u64 = u64::MAX;

/// Page shift by `PageSize as usize`, padded to 16 entries (the padding is never a
/// held size) so that an index masked with 15 needs no bounds check.
const SHIFT_BY_INDEX: [u32; 16] = {
    let mut t = [0; 16];
    let mut i = 0;
    while i < PageSize::ALL.len() {
        t[i] = PageSize::ALL[i].shift();
        i += 1;
    }
    t
};

/// Page sizes of a bitmask (bit = `PageSize as usize`), smallest first.
struct Sizes(u16);

impl Iterator for Sizes {
    type Item = PageSize;
    #[inline(always)]
    fn next(&mut self) -> Option<PageSize> {
        if self.0 == 0 {
            return None;
        }
        let size = PageSize::ALL[self.0.trailing_zeros() as usize];
        self.0 &= self.0 - 1;
        Some(size)
    }
}

/// Addresses at or beyond 2^56 are never cached: a key (page number << 4 | size) must
/// stay within the associative array's 48 key bits.
pub const VA_LIMIT_BITS: u32 = 56;

/// One TLB level.
#[derive(Clone, Debug)]
pub struct Tlb {
    spec: TlbSpec,
    array: AssocArray,
    /// Bitmask of supported sizes (bit = `PageSize as usize`).
    supported: u16,
    /// Per page size: the largest supported smaller size (the splinter piece).
    splinter: [Option<PageSize>; 9],
    /// The most recently hit or filled slot: a repeated hit on it changes no
    /// replacement state (every policy's touch is idempotent for the MRU way), so the
    /// set scan can be skipped. Cleared by any invalidation (`last_vpn = NO_VPN`).
    last_slot: u32,
    last_vpn: u64,
    /// Whether hits and fills remember their slot: only levels a reference enters at
    /// are asked for [`Tlb::mru_hit`] (the hierarchy turns it off for the others; a
    /// level that never remembers never reports a most-recent hit).
    tracks_mru: bool,
    last_shift: u32,
    last_asid: Asid,
    /// Valid entries of each page size: a lookup skips sizes the level holds none of.
    held: [u32; 9],
    /// Bit `size as usize` set iff `held[size] > 0`: the sizes a lookup probes, smallest
    /// first (the order of `page_sizes`; splintered pieces are supported sizes too).
    held_mask: u16,
    /// Counters, except `misses` (lookups less hits) and `evictions` (fills less fills
    /// of empty ways), which [`Tlb::stats`] derives: the hot path counts each event once.
    counts: TlbStats,
    /// Fills that took an empty way (no eviction).
    fills_empty: u64,
    /// Hits on the most recent entry ([`Tlb::mru_hit`]): one count for a lookup and a
    /// hit, added to both by [`Tlb::stats`].
    mru_hits: u64,
    /// Every (key, address space) ever filled, when compulsory misses are counted
    /// ([`Tlb::count_compulsory`]); `None` (the default) costs one test per fill.
    first_fills: Option<std::collections::HashSet<(u64, Asid)>>,
    /// Fills of a key this level never held before: its compulsory misses.
    compulsory: u64,
}

#[inline]
fn key(vpn: u64, size: PageSize) -> u64 {
    (vpn << 4) | size as u64
}

#[inline]
fn size_of_key(k: u64) -> PageSize {
    PageSize::ALL[(k & 0xf) as usize]
}

/// A translation prepared for insertion into TLB levels: page number, key, tag and
/// fingerprint computed once for every level of a path that holds its size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FillKey {
    vpn: u64,
    size: PageSize,
    asid: Asid,
    prepared: Prepared,
    data: u64,
}

impl FillKey {
    #[inline(always)]
    pub(crate) fn new(t: &Translation) -> FillKey {
        let vpn = t.va >> t.size.shift();
        FillKey {
            vpn,
            size: t.size,
            asid: t.asid,
            prepared: Prepared::new(key(vpn, t.size), t.asid),
            data: pack(t.pa, t.attrs),
        }
    }
}

/// Payload layout: physical base | attrs (the base is at least 4 KiB aligned).
#[inline]
fn pack(pa: u64, attrs: Attrs) -> u64 {
    pa | attrs.0 as u64
}

impl Tlb {
    /// An empty level.
    pub fn new(spec: TlbSpec) -> Tlb {
        let array = AssocArray::new(spec.entries, spec.ways, spec.replacement, spec.seed);
        let supported = spec.page_sizes.iter().fold(0u16, |m, p| m | 1 << *p as u16);
        let splinter = PageSize::ALL.map(|size| spec.page_sizes.iter().rev().copied().find(|p| *p < size));
        Tlb {
            spec,
            array,
            supported,
            splinter,
            last_slot: 0,
            last_vpn: NO_VPN,
            tracks_mru: true,
            last_shift: 63,
            last_asid: 0,
            held: [0; 9],
            held_mask: 0,
            counts: TlbStats::default(),
            fills_empty: 0,
            mru_hits: 0,
            first_fills: None,
            compulsory: 0,
        }
    }

    /// The level's counters.
    pub fn stats(&self) -> TlbStats {
        let (accesses, hits) = (self.counts.accesses + self.mru_hits, self.counts.hits + self.mru_hits);
        TlbStats {
            accesses,
            hits,
            misses: accesses - hits,
            evictions: self.counts.fills - self.fills_empty,
            ..self.counts
        }
    }

    /// Cycles spent in lookups so far: [`Tlb::stats`]'s accesses (most-recent hits
    /// included) times the latency, without building the whole [`TlbStats`].
    #[inline(always)]
    pub fn lookup_cycles(&self) -> u64 {
        (self.counts.accesses + self.mru_hits) * self.spec.latency as u64
    }

    /// Starts counting compulsory misses: from now on a fill of a (key, address space)
    /// this level never filled before counts one ([`Tlb::compulsory`]). The first
    /// reference to a translation-entry key misses at every level it looks up (nothing
    /// could hold it), and each such miss fills the key, so counting first fills counts
    /// the compulsory part of the 3C classification. A size the level bypasses is never
    /// filled and so never counted.
    pub fn count_compulsory(&mut self) {
        if self.first_fills.is_none() {
            self.first_fills = Some(Default::default());
        }
    }

    /// Compulsory misses since [`Tlb::count_compulsory`], `None` if not counted.
    pub fn compulsory(&self) -> Option<u64> {
        self.first_fills.as_ref().map(|_| self.compulsory)
    }

    /// Zeroes the counters.
    pub fn reset_stats(&mut self) {
        self.counts = TlbStats::default();
        self.fills_empty = 0;
        self.mru_hits = 0;
    }

    /// Takes back the lookup [`Tlb::mru_hit`] just counted (a store that found a clean
    /// entry takes the full path, which counts its lookup again).
    #[inline]
    pub fn undo_mru_hit(&mut self) {
        self.mru_hits -= 1;
    }

    /// The level's description.
    pub fn spec(&self) -> &TlbSpec {
        &self.spec
    }

    /// True if the level's replacement is LRU and its number of sets a power of two:
    /// the shape the hierarchy's specialised path serves ([`super::Hierarchy::lru_pow2`]).
    pub fn is_lru_pow2(&self) -> bool {
        self.array.is_lru_pow2()
    }

    /// True if the level holds entries of `size` as such.
    #[inline]
    pub fn supports(&self, size: PageSize) -> bool {
        self.supported & (1 << size as u16) != 0
    }

    fn entry(&self, slot: usize, asid: Asid) -> Translation {
        let k = self.array.key(slot);
        let size = size_of_key(k);
        let d = self.array.data(slot);
        Translation {
            va: (k >> 4) << size.shift(),
            pa: d & !0xfff,
            size,
            asid,
            attrs: Attrs((d & 0xfff) as u16),
        }
    }

    /// If `va` falls in the most recently hit or filled entry, counts a hit and returns
    /// that entry's attribute bits: the fast path for runs of references to one page.
    #[inline(always)]
    pub fn mru_hit(&mut self, va: u64, asid: Asid) -> Option<Attrs> {
        if va >> self.last_shift == self.last_vpn && asid == self.last_asid {
            self.mru_hits += 1;
            // SAFETY: `last_slot` is 0 (every array has a slot 0) or a slot a lookup or
            // fill returned, and the array's size never changes.
            Some(Attrs(
                (unsafe { self.array.data_unchecked(self.last_slot as usize) } & 0xfff) as u16,
            ))
        } else {
            None
        }
    }

    /// The physical address of `va` if the most recently hit or filled entry covers it
    /// (counts nothing, changes nothing): the data-cache path's translation of a
    /// reference that just hit or filled this level.
    #[inline(always)]
    pub fn mru_pa(&self, va: u64, asid: Asid) -> Option<u64> {
        if va >> self.last_shift == self.last_vpn && asid == self.last_asid {
            // SAFETY: as in `mru_hit`.
            let d = unsafe { self.array.data_unchecked(self.last_slot as usize) };
            Some((d & !0xfff) + (va & ((1u64 << self.last_shift) - 1)))
        } else {
            None
        }
    }

    /// Looks `va` up; counts the access and returns the entry on a hit.
    #[inline]
    pub fn lookup(&mut self, va: u64, asid: Asid) -> Option<(usize, Translation)> {
        self.probe(va, asid).map(|slot| (slot, self.entry(slot, asid)))
    }

    /// Looks `va` up; counts the access and returns the slot on a hit ([`Tlb::entry_at`]
    /// reads it). Always inlined: the hierarchy calls it at two sites, the entry level's
    /// and the shared one of the levels behind it, so the host keeps a branch history
    /// for each.
    ///
    /// It does not test the most recent entry first ([`Tlb::mru_hit`] is the caller's
    /// fast path): the set search finds that entry too, and touching the most recently
    /// used way changes no policy's state.
    #[inline(always)]
    pub fn probe(&mut self, va: u64, asid: Asid) -> Option<usize> {
        if va >> VA_LIMIT_BITS != 0 {
            return self.probe_beyond();
        }
        self.probe_below_limit::<false>(va, asid)
    }

    /// A lookup of an address of 56 bits or more: always a miss (see `probe_sizes`).
    #[cold]
    #[inline(never)]
    pub(crate) fn probe_beyond(&mut self) -> Option<usize> {
        self.counts.accesses += 1;
        None
    }

    /// [`Tlb::probe`] of an address the caller checked is below 2^56. `FAST`: the
    /// caller knows the level is LRU with a power-of-two number of sets
    /// ([`Tlb::is_lru_pow2`]; see [`AssocArray::find_prepared`]).
    #[inline(always)]
    pub(crate) fn probe_below_limit<const FAST: bool>(&mut self, va: u64, asid: Asid) -> Option<usize> {
        debug_assert!(va >> VA_LIMIT_BITS == 0);
        self.counts.accesses += 1;
        // A level holding 4 KiB entries only (every level under the base policy, most
        // of them most of the time under the others): one probe whose shift and key
        // nibble are constants, with no loop state to keep live (measured: 24 fewer
        // instructions per GUPS update than the loop).
        let mut held = self.held_mask;
        if held == 1 << PageSize::K4 as u16 {
            return self.probe_size::<FAST>(va, asid, PageSize::K4 as usize);
        }
        // One other size (e.g. 2 MiB entries only, under a fixed-size policy).
        if held & held.wrapping_sub(1) == 0 {
            return if held == 0 {
                None
            } else {
                self.probe_size::<FAST>(va, asid, held.trailing_zeros() as usize)
            };
        }
        // The held sizes by bit, smallest first (a bit index is `PageSize as usize`, so
        // it is the size's key nibble).
        while held != 0 {
            if let Some(slot) = self.probe_size::<FAST>(va, asid, held.trailing_zeros() as usize) {
                return Some(slot);
            }
            held &= held - 1;
        }
        None
    }

    /// The probe of one held size (`i` = `PageSize as usize`, its key nibble; masked
    /// with 15, so the 16-entry shift table needs no bounds check).
    #[inline(always)]
    fn probe_size<const FAST: bool>(&mut self, va: u64, asid: Asid, i: usize) -> Option<usize> {
        let i = i & 15;
        let shift = SHIFT_BY_INDEX[i];
        let vpn = va >> shift;
        let slot = self
            .array
            .find_prepared::<FAST>(vpn, &Prepared::new_below_max((vpn << 4) | i as u64, asid))?;
        self.counts.hits += 1;
        self.remember(slot, vpn, shift, asid);
        Some(slot)
    }

    /// The entry in `slot` (a slot [`Tlb::probe`] returned), as a translation of `asid`.
    #[inline]
    pub fn entry_at(&self, slot: usize, asid: Asid) -> Translation {
        self.entry(slot, asid)
    }

    /// The attribute bits of the entry in `slot`.
    #[inline(always)]
    pub fn attrs_at(&self, slot: usize) -> Attrs {
        Attrs((self.array.data(slot) & 0xfff) as u16)
    }

    /// The sizes a lookup of `va` probes: every size the level holds an entry of,
    /// smallest first. None for an address of 56 bits or more: no page table maps one
    /// (the walk refuses it), and its key would not fit the array's tag.
    #[inline(always)]
    fn probe_sizes(&self, va: u64) -> Sizes {
        Sizes(if va >> VA_LIMIT_BITS == 0 { self.held_mask } else { 0 })
    }

    #[inline]
    fn hold(&mut self, size: PageSize) {
        self.held[size.index()] += 1;
        self.held_mask |= 1 << size.index();
    }

    #[inline]
    fn release(&mut self, size: PageSize) {
        self.held[size.index()] -= 1;
        if self.held[size.index()] == 0 {
            self.held_mask &= !(1 << size.index());
        }
    }

    /// Turns the most-recent-entry fast path ([`Tlb::mru_hit`]) on or off; off, the
    /// level skips remembering its hits and fills.
    pub fn set_tracks_mru(&mut self, on: bool) {
        self.tracks_mru = on;
        self.last_vpn = NO_VPN;
    }

    #[inline]
    fn remember(&mut self, slot: usize, vpn: u64, shift: u32, asid: Asid) {
        if !self.tracks_mru {
            return;
        }
        self.last_slot = slot as u32;
        self.last_vpn = vpn;
        self.last_shift = shift;
        self.last_asid = asid;
    }

    /// Caches `t` for an access to `va` (splintering or bypassing an unsupported size);
    /// returns the slot, or `None` when bypassed.
    pub fn fill(&mut self, t: &Translation, va: u64) -> Option<usize> {
        self.fill_key::<false>(&FillKey::new(t), t, va)
    }

    /// [`Tlb::fill`] of a size the level does not hold: splinter or bypass.
    #[inline(never)]
    fn fill_unsupported(&mut self, t: &Translation, va: u64) -> Option<usize> {
        match (self.spec.unsupported, self.splinter_size(t.size)) {
            (Unsupported::Splinter, Some(piece)) => {
                self.counts.splinters += 1;
                Some(self.insert(&t.piece(va, piece)))
            }
            _ => {
                self.counts.bypasses += 1;
                None
            }
        }
    }

    /// Inserts `t` (of a supported size) and keeps the held-size counts: an eviction of
    /// an entry of the same size (the common case) leaves them as they are.
    #[inline(always)]
    fn insert(&mut self, t: &Translation) -> usize {
        self.insert_key::<false>(&FillKey::new(t))
    }

    /// [`Tlb::insert`] of a prepared entry.
    #[inline(always)]
    fn insert_key<const FAST: bool>(&mut self, k: &FillKey) -> usize {
        if let Some(seen) = self.first_fills.as_mut() {
            self.compulsory += seen.insert((key(k.vpn, k.size), k.asid)) as u64;
        }
        // The steady state of a level holding one size: the array is full, so the fill
        // evicts a valid entry, of that size, and the held-size counts stay as they are;
        // the displaced entry need not be read.
        if self.array.is_full() && self.held_mask == 1 << k.size as u16 {
            let slot = self.array.replace_full_by::<FAST>(k.vpn, &k.prepared, k.data);
            self.counts.fills += 1;
            self.remember(slot, k.vpn, k.size.shift(), k.asid);
            return slot;
        }
        let (slot, old) = self.array.insert_by::<FAST>(k.vpn, &k.prepared, k.data);
        self.counts.fills += 1;
        if old != INVALID {
            // The key's low nibble is its size: compare before decoding (usually equal).
            if old & 0xf != k.size as u64 {
                self.release(size_of_key(old & MAX_KEY));
                self.hold(k.size);
            }
        } else {
            self.fills_empty += 1;
            self.hold(k.size);
        }
        self.remember(slot, k.vpn, k.size.shift(), k.asid);
        slot
    }

    /// [`Tlb::fill`] of a prepared entry (`k` made from `t`): the hierarchy prepares one
    /// for all the levels of a path.
    #[inline(always)]
    pub(crate) fn fill_key<const FAST: bool>(&mut self, k: &FillKey, t: &Translation, va: u64) -> Option<usize> {
        if self.supports(k.size) {
            return Some(self.insert_key::<FAST>(k));
        }
        if self.spec.unsupported == Unsupported::Bypass {
            // Per-size arrays (e.g. an L1 for 4K beside one for 2M) bypass on most fills.
            self.counts.bypasses += 1;
            return None;
        }
        self.fill_unsupported(t, va)
    }

    /// The largest supported size smaller than `size`.
    fn splinter_size(&self, size: PageSize) -> Option<PageSize> {
        self.splinter[size.index()]
    }

    /// Sets `bits` in the cached entry covering `va`, if any, without touching
    /// replacement state (the hardware's dirty-bit update of its cached copies).
    pub fn add_attrs(&mut self, va: u64, asid: Asid, bits: u16) -> bool {
        for size in self.probe_sizes(va) {
            let vpn = va >> size.shift();
            let set = self.array.set_of(vpn);
            if let Some(slot) = self.array.peek(set, key(vpn, size), asid) {
                let d = self.array.data(slot);
                self.array.set_data(slot, d | bits as u64);
                return true;
            }
        }
        false
    }

    /// Updates the attribute bits of a cached entry (e.g. dirty after a store).
    pub fn set_attrs(&mut self, slot: usize, attrs: Attrs) {
        let d = self.array.data(slot);
        self.array.set_data(slot, (d & !0xfff) | attrs.0 as u64);
    }

    /// Removes every entry of `asid` overlapping `[start, end)`; returns how many.
    ///
    /// A small range (a page shot down by reclaim, a split superpage) looks up each page
    /// of each held size that overlaps it — the only places such an entry can be;
    /// a large one (an exit, a wide unmap) scans the whole array.
    pub fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) -> usize {
        self.last_vpn = NO_VPN;
        if start >= end {
            return 0;
        }
        if (end - 1) >> VA_LIMIT_BITS == 0 {
            let pages: u64 = Sizes(self.held_mask)
                .map(|s| ((end - 1) >> s.shift()) - (start >> s.shift()) + 1)
                .sum();
            if pages <= 8 || pages * 8 <= self.spec.entries as u64 {
                return self.invalidate_pages(asid, start, end);
            }
        }
        let held = &mut self.held;
        let n = self.array.invalidate_where(|k, a, _| {
            let size = size_of_key(k);
            let va = (k >> 4) << size.shift();
            let hit = a == asid && va < end && va + size.bytes() > start;
            if hit {
                held[size.index()] -= 1;
            }
            hit
        });
        self.held_mask = self
            .held
            .iter()
            .enumerate()
            .fold(0, |m, (i, &h)| if h > 0 { m | 1 << i } else { m });
        self.counts.invalidations += n as u64;
        n
    }

    /// [`Tlb::invalidate_range`] by looking up every page of every held size overlapping
    /// `[start, end)` (the caller checked the range is small and below 2^56).
    fn invalidate_pages(&mut self, asid: Asid, start: u64, end: u64) -> usize {
        let mut n = 0;
        for size in Sizes(self.held_mask) {
            for vpn in (start >> size.shift())..=((end - 1) >> size.shift()) {
                let set = self.array.set_of(vpn);
                if let Some(slot) = self.array.peek(set, key(vpn, size), asid) {
                    self.array.invalidate_slot(slot);
                    self.release(size);
                    n += 1;
                }
            }
        }
        self.counts.invalidations += n as u64;
        n
    }

    /// Removes every entry.
    pub fn flush(&mut self) {
        self.last_vpn = NO_VPN;
        self.held = [0; 9];
        self.held_mask = 0;
        let n = self.array.invalidate_where(|_, _, _| true);
        self.counts.invalidations += n as u64;
    }

    /// Valid entries now held.
    pub fn occupancy(&self) -> usize {
        self.array.occupancy()
    }
}
