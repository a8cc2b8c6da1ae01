//! Data caches between the cores and main memory: a hierarchy of set-associative,
//! write-back, write-allocate levels on physical addresses, each with its replacement
//! policy (LRU by default; docs/memory.md, "Data caches").
//!
//! Rules of [`Caches::access`] (one reference of one core at a physical address):
//! * Levels are looked up in order (L1D, then L2, then the last level), each through
//!   the core's own copy (a private level) or the one copy (a shared level). A hit at
//!   level k costs the latencies of levels 1..=k summed (serial lookup); a miss of
//!   every level costs all of them plus the memory backend's latency for the fill.
//! * Non-inclusive, non-exclusive: after a hit at level k (or a fill from memory) the
//!   line is filled into every level above it that missed, deepest first; a level's
//!   eviction does not invalidate copies elsewhere. A store marks the line dirty in L1D
//!   only (write-allocate: a store that misses fills the line, then writes it).
//! * A dirty victim of level k is written back into level k+1 (marked dirty if there,
//!   else allocated dirty, which may evict in turn); a dirty victim of the last level
//!   becomes a write request to memory. Clean victims vanish. Write-backs cost the
//!   reference nothing (a write buffer drains them), but they reach memory as requests.
//! * No coherence between cores' private copies (assumed: traces of independent
//!   threads; a shared line written by two cores is simply dirty in both).
//! * Main memory is a [`MemoryBackend`]: every fill that missed everything and every
//!   write-back out of the last level is a [`MemReq`] stamped with the core's clock.
//!
//! Replacement is one kind with the TLBs and page-walk caches: a level's policy is a
//! [`Policy`] of `replacement/`, and under any policy but LRU its victims come from that
//! policy's [`crate::replacement::ReplacementPolicy`] state, the same file a TLB level
//! uses (ways.rs: lines stay in their ways; the policy hears every hit and fill). LRU is
//! the policy's own fast path here: sets.rs's stores keep each set in recency order, so
//! the order *is* the LRU state and a set's tags are all an access reads or writes. Why
//! not LRU through the trait as well: an [`crate::replacement::Lru`] ring beside the
//! tags is a second array read and written per hit and fill, and a victim looked up
//! before the fill, on the path every catalog machine takes (three.rs, tuned under
//! callgrind); the recency order also gives the short path below its "first way". Both are checked to be one policy: ways.rs under LRU
//! against sets.rs's stores (`crates/model/tests/it/cache_policies.rs`). A new policy
//! (a file in `replacement/` and its row in the table there) reaches the data caches
//! with no change here.
//!
//! How (none of it observable): the levels' tag stores are chosen once, at construction
//! (`Tiers`: a path of their own for the common three-level shapes, three.rs, else the
//! general loop here); and each first-level copy remembers the line its last access
//! touched, which that access left most recently used in its set, so the next access to
//! the same line (a store after a load, the next word of a sequential scan) is a hit
//! in the first way with no search (`Mru`). An access is its first level's half
//! (lookup, and on a miss the fill there) and then the rest below; the first level can
//! be taken out to run apart (first.rs: the run loop's two threads).

mod array;
mod first;
mod general;
mod sets;
mod three;
mod ways;

pub use array::{Cache, Victim};
pub use first::{FirstLevel, NO_VICTIM};

use array::Geom;
use sets::{Fixed, Sets};
use three::Three;

use crate::dram::Dram;
use crate::mem::backend::{Flat, MemReq, MemoryBackend};
use crate::replacement::Policy;

/// One configured cache level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelSpec {
    /// Its name (`l1d`, `l2`, `l3`): the key in the statistics.
    pub name: String,
    /// Bytes per copy.
    pub size: u64,
    /// Ways per set.
    pub ways: usize,
    /// Line bytes (a power of two; the same for every level).
    pub line: u32,
    /// Lookup latency in cycles.
    pub latency: u32,
    /// One copy for all cores (true) or one per core.
    pub shared: bool,
    /// Replacement policy (`replacement/`; LRU the default).
    pub replacement: Policy,
    /// Seed of a random policy's stream (one stream for all the level's copies).
    pub seed: u64,
}

/// A validated cache hierarchy (sim's `[caches]` section resolves into it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheSpec {
    /// Levels, nearest the core first.
    pub levels: Vec<LevelSpec>,
    /// Cycles a reference takes besides its TLB lookups, walk and cache/memory
    /// latencies, on the core's clock (assumed; `caches.base_cycles`).
    pub base_cycles: u32,
    /// Cycles of a request to the flat main memory (`caches.memory_latency`, default
    /// `walk.mem_latency`); a DRAM backend replaces it.
    pub memory_latency: u32,
}

impl CacheSpec {
    /// Host bytes the hierarchy takes for `cores` cores, by level: `(name, copies,
    /// bytes)`. Under LRU a copy holds one tag word per line (at most 8 bytes, sets.rs);
    /// under another policy also its replacement state (at most 8 bytes a line, ways.rs
    /// and replacement/) and per-set marks and ends (16 bytes a set). Upper bounds,
    /// counted in 64 bits, saturating.
    pub fn host_bytes(&self, cores: usize) -> Vec<(String, u64, u64)> {
        self.levels
            .iter()
            .map(|l| {
                let copies = if l.shared { 1 } else { cores.max(1) as u64 };
                let lines = l.size / (l.line.max(1) as u64);
                let sets = lines / (l.ways.max(1) as u64);
                let one = match l.replacement {
                    Policy::Lru => lines.saturating_mul(8),
                    _ => lines.saturating_mul(16).saturating_add(sets.saturating_mul(16)),
                };
                (l.name.clone(), copies, copies.saturating_mul(one))
            })
            .collect()
    }
}

/// Counters of one level, summed over its copies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Data references that hit.
    pub data_hits: u64,
    /// Data references that missed.
    pub data_misses: u64,
    /// Page-walk descriptor reads that hit.
    pub walk_hits: u64,
    /// Page-walk descriptor reads that missed.
    pub walk_misses: u64,
    /// Dirty lines evicted (written back to the next level or memory).
    pub writebacks: u64,
}

/// The most levels a hierarchy may have (`[caches]` has three: l1d, l2, l3).
pub const MAX_LEVELS: usize = 4;

/// Counter slots of a level: `walk << 1 | miss`.
const DATA_HIT: usize = 0;
const DATA_MISS: usize = 1;
const WALK_HIT: usize = 2;
const WALK_MISS: usize = 3;

/// One level: every copy's sets in one tag store (copy `c`'s sets start at set
/// `c × stride`; `stride` is 0 for a shared level).
struct Level {
    meta: Meta,
    sets: Sets,
}

/// A level's state besides its tag store.
#[derive(Clone)]
struct Meta {
    latency: u64,
    stride: usize,
    geom: Geom,
    /// Data and walk hits and misses (slots above).
    counts: [u64; 4],
    writebacks: u64,
}

impl Meta {
    /// The set (within its copy), the store's set index for core `core`, and the tag
    /// word of line number `line`.
    #[inline(always)]
    fn locate(&self, line: u64, core: usize) -> (usize, usize, u64) {
        let (s, key) = self.geom.locate(line);
        (s, core * self.stride + s, key)
    }

    /// [`Meta::locate`] of a level whose set count is a power of two (every `u32`
    /// store's: sets.rs). The store index is below the store's set count whenever
    /// `core` is below [`Caches`]'s `core_limit` (which [`Caches::access`] checks): the
    /// set within the copy is below `geom.sets` (masked), and a private level (`stride =
    /// geom.sets`) holds a copy per core below that limit, a shared one (`stride = 0`)
    /// its one copy.
    #[inline(always)]
    fn locate_pow2(&self, line: u64, core: usize) -> (usize, usize, u64) {
        let (s, key) = self.geom.locate_pow2(line);
        (s, core * self.stride + s, key)
    }

    fn counts(&self) -> LevelCounts {
        LevelCounts {
            data_hits: self.counts[DATA_HIT],
            data_misses: self.counts[DATA_MISS],
            walk_hits: self.counts[WALK_HIT],
            walk_misses: self.counts[WALK_MISS],
            writebacks: self.writebacks,
        }
    }
}

/// The memory backend, the DRAM model and the flat one held by their own types: their
/// calls are then direct (the flat one's inlined), with the request's fields in
/// registers (a `dyn` call takes the request by reference, built in memory).
enum Backend {
    Dram(Box<Dram>),
    Flat(Flat),
    Other(Box<dyn MemoryBackend + Send>),
}

impl Backend {
    /// `b` as its own type if it is a [`Dram`] or a [`Flat`].
    fn of(b: Box<dyn MemoryBackend + Send>) -> Backend {
        if b.as_any().is::<Dram>() {
            // SAFETY: the box holds a `Dram` (checked just above), so its data pointer
            // is that of a `Dram` allocated as one (what `Box<dyn Any>::downcast` does).
            Backend::Dram(unsafe { Box::from_raw(Box::into_raw(b) as *mut Dram) })
        } else if let Some(f) = b.as_any().downcast_ref::<Flat>() {
            Backend::Flat(f.clone())
        } else {
            Backend::Other(b)
        }
    }

    /// The backend as the trait sees it.
    fn get(&self) -> &dyn MemoryBackend {
        match self {
            Backend::Dram(d) => d.as_ref(),
            Backend::Flat(f) => f,
            Backend::Other(b) => b.as_ref(),
        }
    }

    /// Serves a request of `pa`, `write`, `core` at `at` (the fields of a [`MemReq`]);
    /// returns its latency.
    #[inline(always)]
    fn access(&mut self, pa: u64, write: bool, core: u16, at: u64) -> u64 {
        match self {
            Backend::Dram(d) => d.access_core(pa, write, at),
            Backend::Flat(f) => f.access(&MemReq { pa, write, core, at }),
            Backend::Other(b) => Backend::other(b.as_mut(), pa, write, core, at),
        }
    }

    /// [`Backend::access`] through the trait (out of line: the request is built in
    /// memory here only).
    #[inline(never)]
    fn other(b: &mut (dyn MemoryBackend + Send), pa: u64, write: bool, core: u16, at: u64) -> u64 {
        b.access(&MemReq { pa, write, core, at })
    }
}

/// Main memory as the hierarchy sees it: the backend, its counters and the log.
struct Mem {
    backend: Backend,
    /// Fills served by memory.
    reads: u64,
    /// Write-backs served by memory.
    writes: u64,
    /// Every request to memory, in order, when a request stream is being written.
    log: Option<Vec<MemReq>>,
}

impl Mem {
    /// [`Mem::request`] of a request that is logged (out of line, so that a request not
    /// logged is never built in memory).
    #[cold]
    #[inline(never)]
    fn logged(&mut self, pa: u64, write: bool, core: u16, at: u64) -> u64 {
        if let Some(log) = &mut self.log {
            log.push(MemReq { pa, write, core, at });
        }
        self.backend.access(pa, write, core, at)
    }

    /// Sends `req` to memory; returns its latency.
    #[inline(always)]
    fn request(&mut self, req: MemReq) -> u64 {
        if req.write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
        let MemReq { pa, write, core, at } = req;
        if self.log.is_some() {
            return self.logged(pa, write, core, at);
        }
        self.backend.access(pa, write, core, at)
    }
}

/// The cache hierarchy of a machine and the memory below it (see the module rules).
pub struct Caches {
    names: Vec<String>,
    tiers: Tiers,
    /// log2 of the (common) line size.
    line_shift: u32,
    /// The highest physical address the tag stores were built for.
    pa_max: u64,
    /// Per first-level copy, its last access's line ([`Mru`]).
    mru: Vec<Mru>,
    /// 1 if the first level is per core (copy `core`), 0 if shared (copy 0).
    mru_step: usize,
    /// The cores the private levels have copies for (any core if every level is
    /// shared): [`Caches::access`] checks its `core` against it once, for every level.
    core_limit: usize,
    /// While the first level is split off (first.rs): the `core_limit` (which is 0
    /// then, so [`Caches::access`] refuses every core); else 0.
    below_limit: usize,
    mem: Mem,
}

/// The levels' tag stores, their implementation chosen once from the shape: three
/// levels of fixed `u32` sets of 4, 8, 16 or 8, 4, 16 ways take three.rs's path (each
/// store's type known, so no operation dispatches over [`Sets`]); every other hierarchy
/// the general loop of [`Caches::access`]. One match per access.
// The three-level variants are held inline (the machine boxes the whole `Caches`): one
// indirection less per access than a box.
#[allow(clippy::large_enum_variant)]
enum Tiers {
    General(Vec<Level>),
    W4W8W16(Three<Fixed<u32, 4>, Fixed<u32, 8>, Fixed<u32, 16>>),
    W8W4W16(Three<Fixed<u32, 8>, Fixed<u32, 4>, Fixed<u32, 16>>),
}

impl Tiers {
    /// The levels' state besides their tag stores, nearest first.
    fn metas(&self) -> Vec<&Meta> {
        match self {
            Tiers::General(v) => v.iter().map(|l| &l.meta).collect(),
            Tiers::W4W8W16(t) => t.metas(),
            Tiers::W8W4W16(t) => t.metas(),
        }
    }
}

/// What a first-level copy knows of its last access: that access's line number and its
/// store set index. Whatever the access did, it left that line most recently used, the
/// first way of its set (a hit moves its line there, a miss fills it there, and nothing
/// after that in the access touches the first level: write-backs go down). Only an
/// access of the same copy changes the copy, and each one sets this anew; so while
/// `line` is unchanged, the next access to it is a hit in the first way, whose only
/// effects are the hit's count and, for a store, the dirty bit (the order is already
/// right). Under a policy other than LRU (ways.rs) "the first way" is the way the set's
/// last lookup or fill took, and the policy hears the hit as any other.
/// Checked against the reference model: `crates/model/tests/it/cache_differential.rs`,
/// `crates/model/tests/it/cache_policies.rs`.
#[derive(Clone, Copy, Debug)]
struct Mru {
    /// Line number (`u64::MAX`: none yet; no line number is that large).
    line: u64,
    /// Its set in the first level's store.
    set: usize,
}

impl Mru {
    const NONE: Mru = Mru { line: u64::MAX, set: 0 };
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("levels", &self.names)
            .field("mem_reads", &self.mem.reads)
            .field("mem_writes", &self.mem.writes)
            .finish()
    }
}

/// The statistics of a [`Caches`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Per level, nearest first: name and counts.
    pub levels: Vec<(String, LevelCounts)>,
    /// Fills served by memory.
    pub mem_reads: u64,
    /// Write-backs served by memory.
    pub mem_writes: u64,
}

impl Caches {
    /// True if main memory below the last level is the DRAM model ([`Dram`]).
    pub fn backend_is_dram(&self) -> bool {
        matches!(self.mem.backend, Backend::Dram(_))
    }

    /// Main memory below the last level.
    pub fn backend(&self) -> &dyn MemoryBackend {
        self.mem.backend.get()
    }

    /// The hierarchy `spec` describes for `cores` cores over `backend`, for any
    /// physical address.
    pub fn new(spec: &CacheSpec, cores: usize, backend: Box<dyn MemoryBackend + Send>) -> Caches {
        Caches::with_limit(spec, cores, backend, u64::MAX)
    }

    /// [`Caches::new`] for physical addresses up to `pa_max` (the top of the machine's
    /// memory): levels whose tags then fit in 30 bits keep `u32` tag words (sets.rs).
    /// An access above `pa_max` is a caller's bug and panics. At most [`MAX_LEVELS`]
    /// levels, all of one line size (config validation; asserted).
    pub fn with_limit(spec: &CacheSpec, cores: usize, backend: Box<dyn MemoryBackend + Send>, pa_max: u64) -> Caches {
        assert!(
            !spec.levels.is_empty() && spec.levels.len() <= MAX_LEVELS,
            "a cache hierarchy has 1 to {MAX_LEVELS} levels"
        );
        let line = spec.levels[0].line;
        assert!(
            spec.levels.iter().all(|l| l.line == line),
            "one line size for every level"
        );
        let copies = cores.max(1);
        let levels = spec
            .levels
            .iter()
            .map(|l| {
                let n = if l.shared { 1 } else { copies };
                let (sets, geom) = array::build(
                    (l.size, l.ways, l.line),
                    n,
                    pa_max,
                    (l.replacement, l.seed),
                    array::Layout::Chosen,
                );
                Level {
                    meta: Meta {
                        latency: l.latency as u64,
                        stride: if l.shared { 0 } else { geom.sets as usize },
                        geom,
                        counts: [0; 4],
                        writebacks: 0,
                    },
                    sets,
                }
            })
            .collect::<Vec<_>>();
        let l1_shared = spec.levels[0].shared;
        let all_shared = spec.levels.iter().all(|l| l.shared);
        Caches {
            names: spec.levels.iter().map(|l| l.name.clone()).collect(),
            tiers: three::tiers(levels),
            line_shift: line.trailing_zeros(),
            pa_max,
            mru: vec![Mru::NONE; if l1_shared { 1 } else { copies }],
            mru_step: !l1_shared as usize,
            core_limit: if all_shared { usize::MAX } else { copies },
            below_limit: 0,
            mem: Mem {
                backend: Backend::of(backend),
                reads: 0,
                writes: 0,
                log: None,
            },
        }
    }

    /// The tag store each level uses (`u32x4`, `u64x16`, `any`, …; sets.rs).
    #[doc(hidden)]
    pub fn kinds(&self) -> Vec<&'static str> {
        match &self.tiers {
            Tiers::General(v) => v.iter().map(|l| l.sets.kind()).collect(),
            Tiers::W4W8W16(t) => t.kinds(),
            Tiers::W8W4W16(t) => t.kinds(),
        }
    }

    /// Starts (or stops) keeping every memory request for [`Caches::take_log`].
    pub fn set_logging(&mut self, on: bool) {
        self.mem.log = on.then(Vec::new);
    }

    /// Requests logged since the last call (none unless logging is on).
    #[inline]
    pub fn logged(&self) -> usize {
        self.mem.log.as_ref().map_or(0, Vec::len)
    }

    /// Takes the logged requests, leaving the log empty (and on).
    pub fn take_log(&mut self) -> Vec<MemReq> {
        self.mem.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// One reference of core `core` at physical address `pa` (a store if `write`; a
    /// page-walk descriptor read if `walk`): its latency in cycles. `now` gives the
    /// core's clock when a request must go to memory (called at most once).
    ///
    /// One pass down the levels (each set located once and kept for the fills), the
    /// fills deepest first, each dirty victim written down the levels at once.
    #[inline]
    pub fn access(&mut self, core: usize, pa: u64, write: bool, walk: bool, now: impl FnOnce() -> u64) -> u64 {
        assert!(
            pa <= self.pa_max,
            "physical address {pa:#x} above the {:#x} the caches were built for (a model bug)",
            self.pa_max
        );
        // Every level's store index is in bounds from here on (`Meta::locate_pow2`);
        // a core above the limit indexed a private level's store out of bounds before.
        assert!(
            core < self.core_limit,
            "core {core} has no cache copies, or the first level is split off"
        );
        let line = pa >> self.line_shift;
        // SAFETY: `mru` holds one entry per core below `core_limit` when the first
        // level is private (`mru_step` 1, `core_limit` the copies), one when it is
        // shared (`mru_step` 0): the index is in bounds.
        let mru = unsafe { self.mru.get_unchecked_mut(core * self.mru_step) };
        let r = three::Req {
            mem: &mut self.mem,
            line_shift: self.line_shift,
            core,
            line,
            write,
            walk,
        };
        match &mut self.tiers {
            // SAFETY (both): `core` was checked against `core_limit` above.
            Tiers::W4W8W16(t) => unsafe { t.access(r, mru, now) },
            Tiers::W8W4W16(t) => unsafe { t.access(r, mru, now) },
            // Its own arguments, not `r`: a request passed out of line is built on the
            // stack, which the compiler then did before the match, on every path.
            Tiers::General(_) => self.general(core, line, write, walk, now),
        }
    }

    /// [`Caches::access`] of a data reference (not a walk read) of core `core` when
    /// `pa` lies in the first level's most recent line of that core (a GUPS store after
    /// its load): the same effects, the line marked (dirty if `write`) and a first-level
    /// hit counted, and its latency; `None`, with nothing done, for any other reference
    /// (then [`Caches::access`] takes it, and checks `pa` and `core`). Small enough to
    /// inline where [`Caches::access`] is a call, so a repeat skips the call.
    #[inline(always)]
    pub fn access_repeat(&mut self, core: usize, pa: u64, write: bool) -> Option<u64> {
        if pa > self.pa_max || core >= self.core_limit {
            return None;
        }
        let line = pa >> self.line_shift;
        // SAFETY: as in `access`: `core` is below `core_limit`.
        let mru = unsafe { self.mru.get_unchecked(core * self.mru_step) };
        if line != mru.line {
            return None;
        }
        let set = mru.set;
        // The first branch of three.rs's `run` and of `general`, with `walk` false.
        Some(match &mut self.tiers {
            Tiers::W4W8W16(t) => t.repeat(set, write),
            Tiers::W8W4W16(t) => t.repeat(set, write),
            Tiers::General(levels) => {
                let l = &mut levels[0];
                l.sets.mark_first(set, write);
                l.meta.counts[0] += 1;
                l.meta.latency
            }
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            levels: self
                .names
                .iter()
                .cloned()
                .zip(self.tiers.metas().into_iter().map(Meta::counts))
                .collect(),
            mem_reads: self.mem.reads,
            mem_writes: self.mem.writes,
        }
    }
}

impl Caches {
    /// [`Caches::access`] on any levels: one pass down the levels (each set located
    /// once and kept for the fills), the fills deepest first, each dirty victim written
    /// down the levels at once. Out of line: every catalog machine's hierarchy takes
    /// three.rs's path, which is inlined into the callers.
    #[inline(never)]
    fn general(&mut self, core: usize, line: u64, write: bool, walk: bool, now: impl FnOnce() -> u64) -> u64 {
        let Tiers::General(levels) = &mut self.tiers else {
            unreachable!("only a hierarchy of general levels takes the general loop")
        };
        let (mem, line_shift) = (&mut self.mem, self.line_shift);
        let mru = &mut self.mru[core * self.mru_step];
        general::general(levels, mem, line_shift, (core, line, write, walk), mru, now)
    }
}
