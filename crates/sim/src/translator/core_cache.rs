//! A core's side of the data-cache path (a machine with `[caches]`; docs/memory.md),
//! shared by every translator that has it: the stage-1 core (stage1_cache.rs) and the
//! nested core (nested_cache.rs). The translator records its walks' descriptor reads
//! during the translation; afterwards each read goes through the caches at its physical
//! address ([`CachedCore::cache_walk_read`]), then the reference itself
//! ([`CachedCore::cache_data`]). What differs between translators is only which reads
//! they record and what else their clock counts ([`CachedCore::other_cycles`]); the
//! cycles of the reads and references, the miss slots and the clock are here, once.

use super::mlp::Mlp;
use mmulab_model::cache::{CacheSpec, Caches};
use mmulab_model::pt::Format;

/// The cache path's per-core state.
#[derive(Clone, Debug)]
pub(crate) struct CoreCache {
    /// `caches.base_cycles` (the core's clock per reference).
    pub(crate) base_cycles: u32,
    /// Miss slots (`caches.mlp`; mlp.rs).
    mlp: Mlp,
    /// Every cache level's lookup latency summed (a reference that took longer was
    /// filled from memory).
    pub(crate) lookups: u64,
    /// Cycles of walk descriptor reads (where each hit) in the caches and memory.
    pub(crate) walk_cycles: u64,
    /// Cycles of data references in the caches and memory.
    pub(crate) data_cycles: u64,
}

impl Default for CoreCache {
    fn default() -> Self {
        CoreCache {
            base_cycles: 0,
            mlp: Mlp::new(1, 0),
            lookups: 0,
            walk_cycles: 0,
            data_cycles: 0,
        }
    }
}

impl CoreCache {
    /// An empty state that keeps `base_cycles` of `self` (what a translator still needs
    /// while a second thread holds the rest: its [`CachedCore::other_cycles`]).
    pub(crate) fn husk(&self) -> CoreCache {
        CoreCache {
            base_cycles: self.base_cycles,
            ..CoreCache::default()
        }
    }

    /// This core's clock when its cycles outside the caches are `other`
    /// ([`CachedCore::clock_with`]).
    #[inline(always)]
    fn clock_at(&self, other: u64) -> u64 {
        self.mlp.clock(other + self.walk_cycles + self.data_cycles)
    }

    /// The state for hierarchy `c` with `mlp` miss slots.
    pub(crate) fn new(c: &CacheSpec, mlp: u32) -> CoreCache {
        let l1 = c.levels.first().map_or(0, |l| l.latency);
        CoreCache {
            base_cycles: c.base_cycles,
            mlp: Mlp::new(mlp, l1),
            lookups: c.levels.iter().map(|l| l.latency as u64).sum(),
            walk_cycles: 0,
            data_cycles: 0,
        }
    }
}

/// Bytes of one descriptor of `fmt` as a shift: ARMv7 short descriptors are 4 bytes
/// (ARM ARM B3.5), every other format's (stage-2 formats included) 8.
#[inline]
pub(crate) fn desc_shift(fmt: Format) -> u32 {
    if fmt.arch_name() == "armv7" {
        2
    } else {
        3
    }
}

/// A translator with a data-cache path (see the module doc).
pub(crate) trait CachedCore {
    /// The cache path's state.
    fn core_cache(&self) -> &CoreCache;
    /// The cache path's state, to update.
    fn core_cache_mut(&mut self) -> &mut CoreCache;
    /// Turns the path on: walks record their descriptor reads from now on.
    fn enable_caches(&mut self, cc: CoreCache);
    /// The core's cycles other than its reads' and references' in the caches: base
    /// cycles per reference, TLB and page-walk-cache lookups, dirty-bit writes.
    fn other_cycles(&self) -> u64;

    /// This core's clock in cycles: [`CachedCore::other_cycles`] and its walks' and data
    /// references' cache and memory latencies (derived when a request leaves for
    /// memory, not kept per reference), less the memory latency its data misses
    /// overlapped (mlp.rs).
    #[inline]
    fn clock(&self) -> u64 {
        self.clock_with(&mut None)
    }

    /// [`CachedCore::clock`] with [`CachedCore::other_cycles`] kept in `other` once
    /// asked (it does not change while one reference's reads and data go through the
    /// caches: only the translation counts those cycles). Always inlined, as
    /// [`CachedCore::other_cycles`] is into it.
    #[inline(always)]
    fn clock_with(&self, other: &mut Option<u64>) -> u64 {
        let other = *other.get_or_insert_with(|| self.other_cycles());
        self.core_cache().clock_at(other)
    }

    /// When this core is done: its clock, or the return of its last miss in flight.
    fn end_cycles(&self) -> u64 {
        self.core_cache().mlp.end(self.clock())
    }

    /// One walk descriptor read at physical address `pa` of core `core` through
    /// `caches`: its latency, added to the walk cycles (walk reads never overlap: each
    /// needs the one before it). `other`: the reference's [`CachedCore::other_cycles`]
    /// once known (start with `None`; [`CachedCore::clock_with`]).
    #[inline]
    fn cache_walk_read(&mut self, caches: &mut Caches, core: usize, pa: u64, other: &mut Option<u64>) -> u64 {
        let lat = caches.access(core, pa, false, true, || self.clock_with(other));
        self.core_cache_mut().walk_cycles += lat;
        lat
    }

    /// The data reference at physical address `pa` (a store if `store`) of core `core`
    /// through `caches`; a fill from memory takes a miss slot (mlp.rs). `other` as for
    /// [`CachedCore::cache_walk_read`].
    #[inline]
    fn cache_data(&mut self, caches: &mut Caches, core: usize, pa: u64, store: bool, other: &mut Option<u64>) {
        // A request to memory leaves when a miss slot is free.
        let mut issued = None;
        let me = &*self;
        let lat = caches.access(core, pa, store, false, || {
            let t = me.clock_with(other);
            let w = me.core_cache().mlp.wait(t);
            issued = Some((t, w));
            t + w
        });
        let cc = self.core_cache_mut();
        cc.data_cycles += lat;
        // A fill from memory (not only a write-back of a victim) takes a slot.
        if let Some((t, w)) = issued {
            if lat > cc.lookups {
                cc.mlp.miss(t, w, lat);
            }
        }
    }
}

/// The cache side of a machine (`run::pipeline`): its caches and memory, and each
/// core's cache-path state, moved together to the thread that replays records.
pub(crate) struct CacheSide {
    pub(crate) caches: Box<Caches>,
    pub(crate) cores: Vec<CoreCache>,
    /// The caches' first level is split off ([`Caches::split`]) and runs on the
    /// simulating thread: the records are its misses (see [`replay`]).
    pub(crate) split: bool,
}

/// A record's header ([`replay`]): descriptor reads in the low byte (the first level
/// on the cache thread), then these bits, then the core from bit 16. A store.
pub(crate) const REC_STORE: u64 = 1 << 8;
/// The reference may take [`Caches::access_repeat`] (no walk reads; its address came
/// from the TLB entry that hit; the first level on the cache thread).
pub(crate) const REC_REPEAT: u64 = 1 << 9;
/// A walk's descriptor read (else a data reference; the first level split off).
pub(crate) const REC_WALK: u64 = 1 << 10;
/// The core's place in a record's header.
pub(crate) const REC_CORE_SHIFT: u32 = 16;

/// Appends to `out` the record of an access of core `core` that missed the split-off
/// first level (a walk read if `walk`): `other` is the core's cycles outside the caches
/// and the first level's hits, `(line, victim)` what [`FirstLevel::access`] gave.
///
/// [`FirstLevel::access`]: mmulab_model::cache::FirstLevel::access
#[inline(always)]
pub(crate) fn record_miss(out: &mut Vec<u64>, core: usize, walk: bool, other: u64, (line, victim): (u64, u64)) {
    let h = ((core as u64) << REC_CORE_SHIFT) | (walk as u64 * REC_WALK);
    out.extend_from_slice(&[h, other, line, victim]);
}

/// Replays records (`run::pipeline`) through `side`: the same steps in the same
/// order as `Stage1::cache_access`, [`CachedCore::cache_walk_read`] and
/// [`CachedCore::cache_data`], with the core's cycles outside the caches known in
/// advance instead of asked for (the same number: only the translation changes them).
/// Where the caches' first level runs decides what a record is:
///
/// * On this thread (`side.split` false; a machine whose memory is flat, where the
///   caches are the lighter side): a record per data reference, its header (reads,
///   flags, core), the core's [`CachedCore::other_cycles`] after its translation, its
///   physical address, and the physical address of each descriptor read; each goes
///   through [`Caches::access`].
/// * On the simulating thread (`side.split`; a machine with the DRAM model, whose cost
///   makes this the heavier side): a record per access (descriptor read or data) that
///   missed the first level ([`FirstLevel::access`]), four words: its header (walk or
///   data, core), the core's cycles outside the caches plus the latencies of its first
///   level's hits so far (the simulating thread adds those up: a hit needs no clock),
///   so the core's clock is the same sum; the line; and the dirty line the first
///   level's fill displaced ([`NO_VICTIM`]: none; always a word, so a record's length is
///   no branch, which about every other record mispredicted). Each goes through
///   [`Caches::access_below`]: every count, cycle and request is the same.
///
/// [`FirstLevel::access`]: mmulab_model::cache::FirstLevel::access
/// [`NO_VICTIM`]: mmulab_model::cache::NO_VICTIM
pub(crate) fn replay(side: &mut CacheSide, recs: &[u64]) {
    if side.split {
        replay_split(side, recs)
    } else {
        replay_whole(side, recs)
    }
}

/// [`replay`] of records of whole references (the first level on this thread).
fn replay_whole(side: &mut CacheSide, recs: &[u64]) {
    let caches = &mut *side.caches;
    let mut i = 0;
    while let [h, other, pa, rest @ ..] = &recs[i..] {
        let (h, other, pa) = (*h, *other, *pa);
        let n = (h & 0xff) as usize;
        let core = (h >> REC_CORE_SHIFT) as usize;
        let store = h & REC_STORE != 0;
        let reads = &rest[..n];
        i += 3 + n;
        let cc = &mut side.cores[core];
        if h & REC_REPEAT != 0 {
            if let Some(lat) = caches.access_repeat(core, pa, store) {
                cc.data_cycles += lat;
                continue;
            }
        }
        for &read in reads {
            walk_read(caches, cc, core, other, Acc::Whole(read, false));
        }
        data(caches, cc, core, other, Acc::Whole(pa, store));
    }
}

/// [`replay`] of records of first-level misses (the first level split off).
fn replay_split(side: &mut CacheSide, recs: &[u64]) {
    let caches = &mut *side.caches;
    for rec in recs.chunks_exact(4) {
        let &[h, other, line, victim] = rec else {
            unreachable!("chunks of 4")
        };
        let core = (h >> REC_CORE_SHIFT) as usize;
        let cc = &mut side.cores[core];
        if h & REC_WALK != 0 {
            walk_read(caches, cc, core, other, Acc::Below(line, victim));
        } else {
            data(caches, cc, core, other, Acc::Below(line, victim));
        }
    }
}

/// One access of a record: a whole one (physical address, store), or the rest of one
/// that missed the split-off first level (line, dirty victim).
#[derive(Clone, Copy)]
enum Acc {
    Whole(u64, bool),
    Below(u64, u64),
}

/// `acc` of core `core` (a walk read if `walk`) through `caches`: its latency.
#[inline(always)]
fn go(caches: &mut Caches, core: usize, walk: bool, acc: Acc, now: impl FnOnce() -> u64) -> u64 {
    match acc {
        Acc::Whole(pa, store) => caches.access(core, pa, store, walk, now),
        Acc::Below(line, victim) => caches.access_below(core, line, walk, victim, now),
    }
}

/// A descriptor read, as [`CachedCore::cache_walk_read`] takes it.
#[inline(always)]
fn walk_read(caches: &mut Caches, cc: &mut CoreCache, core: usize, other: u64, acc: Acc) {
    let lat = go(caches, core, true, acc, || cc.clock_at(other));
    cc.walk_cycles += lat;
}

/// A data reference, as [`CachedCore::cache_data`] takes it.
#[inline(always)]
fn data(caches: &mut Caches, cc: &mut CoreCache, core: usize, other: u64, acc: Acc) {
    let mut issued = None;
    let me = &*cc;
    let lat = go(caches, core, false, acc, || {
        let t = me.clock_at(other);
        let w = me.mlp.wait(t);
        issued = Some((t, w));
        t + w
    });
    cc.data_cycles += lat;
    if let Some((t, w)) = issued {
        if lat > cc.lookups {
            cc.mlp.miss(t, w, lat);
        }
    }
}
