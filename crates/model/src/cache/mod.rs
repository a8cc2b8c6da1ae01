//! Data caches between the cores and main memory: a hierarchy of set-associative,
//! LRU, write-back, write-allocate levels on physical addresses (docs/memory.md, "Data
//! caches").
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

mod array;

pub use array::{Cache, Victim};

use crate::mem::backend::{MemReq, MemoryBackend};

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

struct Level {
    latency: u32,
    shared: bool,
    copies: Vec<Cache>,
    counts: LevelCounts,
}

/// The cache hierarchy of a machine and the memory below it (see the module rules).
pub struct Caches {
    names: Vec<String>,
    levels: Vec<Level>,
    backend: Box<dyn MemoryBackend + Send>,
    /// Fills served by memory.
    mem_reads: u64,
    /// Write-backs served by memory.
    mem_writes: u64,
    /// Every request to memory, in order, when a request stream is being written.
    log: Option<Vec<MemReq>>,
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("levels", &self.names)
            .field("mem_reads", &self.mem_reads)
            .field("mem_writes", &self.mem_writes)
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
    /// Main memory below the last level.
    pub fn backend(&self) -> &dyn MemoryBackend {
        self.backend.as_ref()
    }

    /// The hierarchy `spec` describes for `cores` cores over `backend`.
    pub fn new(spec: &CacheSpec, cores: usize, backend: Box<dyn MemoryBackend + Send>) -> Caches {
        let levels = spec
            .levels
            .iter()
            .map(|l| Level {
                latency: l.latency,
                shared: l.shared,
                copies: (0..if l.shared { 1 } else { cores.max(1) })
                    .map(|_| Cache::new(l.size, l.ways, l.line))
                    .collect(),
                counts: LevelCounts::default(),
            })
            .collect();
        Caches {
            names: spec.levels.iter().map(|l| l.name.clone()).collect(),
            levels,
            backend,
            mem_reads: 0,
            mem_writes: 0,
            log: None,
        }
    }

    /// Starts (or stops) keeping every memory request for [`Caches::take_log`].
    pub fn set_logging(&mut self, on: bool) {
        self.log = on.then(Vec::new);
    }

    /// Requests logged since the last call (none unless logging is on).
    #[inline]
    pub fn logged(&self) -> usize {
        self.log.as_ref().map_or(0, Vec::len)
    }

    /// Takes the logged requests, leaving the log empty (and on).
    pub fn take_log(&mut self) -> Vec<MemReq> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// One reference of core `core` at physical address `pa` (a store if `write`; a
    /// page-walk descriptor read if `walk`): its latency in cycles. `now` gives the
    /// core's clock when a request must go to memory (called at most once).
    #[inline]
    pub fn access(&mut self, core: usize, pa: u64, write: bool, walk: bool, now: impl FnOnce() -> u64) -> u64 {
        let mut lat = 0u64;
        let mut hit_at = self.levels.len();
        for (i, l) in self.levels.iter_mut().enumerate() {
            lat += l.latency as u64;
            let c = if l.shared { 0 } else { core };
            let hit = l.copies[c].lookup(pa, write && i == 0);
            let n = &mut l.counts;
            match (hit, walk) {
                (true, false) => n.data_hits += 1,
                (true, true) => n.walk_hits += 1,
                (false, false) => n.data_misses += 1,
                (false, true) => n.walk_misses += 1,
            }
            if hit {
                hit_at = i;
                break;
            }
        }
        if hit_at == 0 {
            return lat;
        }
        // The time a request leaves for memory: the core's clock plus the lookups so far
        // (asked of the core once, only if some request goes to memory).
        let mut now = Some(now);
        let mut at = None;
        let mut clock = move |lat: u64| -> u64 { *at.get_or_insert_with(|| now.take().map_or(0, |f| f()) + lat) };
        if hit_at == self.levels.len() {
            let t = clock(lat);
            lat += self.request(MemReq {
                pa: pa & !self.line_mask(),
                write: false,
                core: core as u16,
                at: t,
            });
        }
        // Fill every level that missed, deepest first.
        for i in (0..hit_at).rev() {
            let dirty = write && i == 0;
            let c = if self.levels[i].shared { 0 } else { core };
            if let Some(v) = self.levels[i].copies[c].fill(pa, dirty) {
                if v.dirty {
                    self.evicted(i, core, v.pa, &mut || clock(lat));
                }
            }
        }
        lat
    }

    /// `line - 1` of the (common) line size.
    #[inline]
    fn line_mask(&self) -> u64 {
        // Every level has the same line size (config validation); level 0 exists.
        (1u64 << self.levels[0].copies[0].line_shift()) - 1
    }

    /// Level `i` of core `core` displaced the dirty line at `pa`: it goes to the next
    /// level, or to memory (at time `at()`) from the last.
    fn evicted(&mut self, i: usize, core: usize, mut pa: u64, at: &mut dyn FnMut() -> u64) {
        self.levels[i].counts.writebacks += 1;
        let mut next = i + 1;
        loop {
            if next == self.levels.len() {
                let t = at();
                self.request(MemReq {
                    pa,
                    write: true,
                    core: core as u16,
                    at: t,
                });
                return;
            }
            let c = if self.levels[next].shared { 0 } else { core };
            match self.levels[next].copies[c].write_back(pa) {
                Some(w) if w.dirty => {
                    self.levels[next].counts.writebacks += 1;
                    pa = w.pa;
                    next += 1;
                }
                _ => return,
            }
        }
    }

    /// Sends `req` to memory; returns its latency.
    #[inline]
    fn request(&mut self, req: MemReq) -> u64 {
        if req.write {
            self.mem_writes += 1;
        } else {
            self.mem_reads += 1;
        }
        if let Some(log) = &mut self.log {
            log.push(req);
        }
        self.backend.access(&req)
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            levels: self
                .names
                .iter()
                .cloned()
                .zip(self.levels.iter().map(|l| l.counts))
                .collect(),
            mem_reads: self.mem_reads,
            mem_writes: self.mem_writes,
        }
    }
}
