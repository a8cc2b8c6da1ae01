//! The stage-1 translator's data-cache path (a machine with `[caches]`; docs/memory.md):
//! the access is translated as without caches, but its walks record their descriptor
//! reads; then every descriptor read goes through the caches at the descriptor's
//! physical address, and the reference itself at its physical address (taken from the
//! TLB entry that hit or was just filled), through the path every translator with
//! caches shares (core_cache.rs). Machines without caches never come here: the run
//! loop's plain path and `Translator::access` are the code they always ran.

use super::super::core_cache::{desc_shift, record_miss, CachedCore, CoreCache, REC_CORE_SHIFT, REC_REPEAT, REC_STORE};
use super::{Stage1, Stop};
use crate::system::System;
use crate::SimError;
use mmulab_model::cache::{Caches, FirstLevel};
use mmulab_model::walk::lookup;
use mmulab_trace::{AccessKind, MemRef};

impl CachedCore for Stage1 {
    fn core_cache(&self) -> &CoreCache {
        &self.cc
    }

    fn core_cache_mut(&mut self) -> &mut CoreCache {
        &mut self.cc
    }

    /// Walks record their descriptor reads from now on.
    fn enable_caches(&mut self, cc: CoreCache) {
        self.cached = true;
        self.cc = cc;
    }

    /// `base_cycles` per reference, its TLB lookups, its page-walk-cache lookups, its
    /// dirty-bit writes. Always inlined: its callers (the first request to memory of
    /// a reference) already save every register it needs.
    #[inline(always)]
    fn other_cycles(&self) -> u64 {
        let c = &self.counters;
        let refs: u64 = c.kinds.iter().sum();
        let tlb = self.tlbs.lookup_cycles();
        let pwc = if self.pwc.enabled() {
            c.walks * self.cost.pwc_latency as u64
        } else {
            0
        };
        refs * self.cc.base_cycles as u64 + tlb + pwc + c.dirty_writes * self.cost.mem_latency as u64
    }
}

/// `known` of [`Stage1::cache_access_full`] when the caller has no physical address.
/// A real address equal to it (none is: simulated memory is far below 2^64 bytes) would
/// only be looked up again, to the same value ([`Tlb::mru_pa`] changes nothing).
///
/// [`Tlb::mru_pa`]: mmulab_model::tlb::Tlb::mru_pa
const UNKNOWN: u64 = u64::MAX;

impl Stage1 {
    /// [`super::Translator::access`] with walks recording their descriptor reads (the
    /// record starts empty; a fault's retry adds to it).
    #[inline]
    pub(crate) fn access_rec(&mut self, sys: &mut System, r: &MemRef) -> Result<(), Stop> {
        self.rec.n = 0;
        super::Translator::access(self, sys, r)
    }

    /// After a translated access of core `core`: its recorded descriptor reads, then
    /// the reference, through `caches`. Instruction fetches do not use the data caches
    /// (no instruction cache is modelled). A reference without walk reads to the line
    /// its core's first level used last (a GUPS store after its load) is done here,
    /// inlined into the run loop ([`Caches::access_repeat`]: the same effects as
    /// through [`CachedCore::cache_data`], whose clock and miss slots a first-level hit
    /// does not touch); every other goes out of line.
    #[inline(always)]
    pub(crate) fn cache_access(
        &mut self,
        sys: &mut System,
        caches: &mut Caches,
        core: usize,
        r: &MemRef,
    ) -> Result<(), SimError> {
        if r.kind == AccessKind::IFetch {
            return Ok(());
        }
        let mut known = UNKNOWN;
        if self.rec.n == 0 {
            if let Some(pa) = self.tlbs.entry_level(false).mru_pa(r.addr, r.asid) {
                if let Some(lat) = caches.access_repeat(core, pa, r.kind == AccessKind::Store) {
                    self.cc.data_cycles += lat;
                    return Ok(());
                }
                known = pa;
            }
        }
        self.cache_access_full(sys, caches, core, r, known).map_err(|e| *e)
    }

    /// [`Stage1::cache_access`] of a data reference: its recorded descriptor reads,
    /// then the reference. `known` is the reference's physical address if the caller
    /// found it already, else [`UNKNOWN`]. A plain `u64` and a boxed error keep every
    /// argument in a register (an `Option` takes two and a `SimError` returned in place
    /// a hidden pointer, which put two arguments on the stack at each call).
    #[inline(never)]
    fn cache_access_full(
        &mut self,
        sys: &mut System,
        caches: &mut Caches,
        core: usize,
        r: &MemRef,
        known: u64,
    ) -> Result<(), Box<SimError>> {
        let shift = desc_shift(self.fmt);
        let mut other = None;
        for i in 0..self.rec.n {
            let (table, index) = self.rec.reads[i];
            self.cache_walk_read(caches, core, table + ((index as u64) << shift), &mut other);
        }
        let pa = match known {
            UNKNOWN => match self.tlbs.entry_level(false).mru_pa(r.addr, r.asid) {
                Some(pa) => pa,
                None => self.pa_of(sys, r)?,
            },
            pa => pa,
        };
        self.cache_data(caches, core, pa, r.kind == AccessKind::Store, &mut other);
        Ok(())
    }

    /// [`Stage1::cache_access`] on the pipeline (run::pipeline): instead of going
    /// through the caches, each descriptor read and then the reference become records
    /// in `out` for the cache thread's `replay` (core_cache.rs), which takes the same
    /// steps. With the caches' first level here (`first`, split off), each takes it
    /// first: a hit adds its latency to this core's walk or data cycles (kept here until
    /// [`Stage1::put_core_cache`]), and only a miss is a record. The reference's
    /// [`CachedCore::other_cycles`] is taken once (only the translation changes it).
    #[inline(always)]
    pub(crate) fn cache_record(
        &mut self,
        sys: &mut System,
        first: Option<&mut FirstLevel>,
        core: usize,
        r: &MemRef,
        out: &mut Vec<u64>,
    ) -> Result<(), SimError> {
        if r.kind == AccessKind::IFetch {
            return Ok(());
        }
        // The physical address, and whether the entry level's most recent entry (the
        // one that hit or was just filled) gave it.
        let (pa, from_tlb) = match self.tlbs.entry_level(false).mru_pa(r.addr, r.asid) {
            Some(pa) => (pa, true),
            None => (self.pa_of(sys, r)?, false),
        };
        let store = r.kind == AccessKind::Store;
        let Some(first) = first else {
            self.cache_record_whole(core, pa, store, from_tlb, out);
            return Ok(());
        };
        if self.rec.n == 0 {
            // No walk: the reference alone (most often a hit, a GUPS store after its
            // load).
            match first.access(core, pa, store, false) {
                None => self.cc.data_cycles += first.latency(),
                Some(miss) => record_miss(out, core, false, self.other_now(None), miss),
            }
            return Ok(());
        }
        self.cache_record_walk(first, core, pa, store, out);
        Ok(())
    }

    /// [`Stage1::cache_record`] of a reference with descriptor reads, the first level
    /// here (out of line).
    #[inline(never)]
    fn cache_record_walk(&mut self, first: &mut FirstLevel, core: usize, pa: u64, store: bool, out: &mut Vec<u64>) {
        let shift = desc_shift(self.fmt);
        let mut other = None;
        for i in 0..self.rec.n {
            let (table, index) = self.rec.reads[i];
            match first.access(core, table + ((index as u64) << shift), false, true) {
                None => self.cc.walk_cycles += first.latency(),
                Some(miss) => {
                    let o = *other.get_or_insert_with(|| self.other_cycles());
                    record_miss(out, core, true, self.other_now(Some(o)), miss);
                }
            }
        }
        match first.access(core, pa, store, false) {
            None => self.cc.data_cycles += first.latency(),
            Some(miss) => record_miss(out, core, false, self.other_now(other), miss),
        }
    }

    /// [`Stage1::cache_record`] with the whole caches on the cache thread: the
    /// reference's record (core_cache.rs's `replay`), its descriptor reads' physical
    /// addresses after it.
    #[inline(always)]
    fn cache_record_whole(&mut self, core: usize, pa: u64, store: bool, from_tlb: bool, out: &mut Vec<u64>) {
        let n = self.rec.n;
        // With no walk and its address from the TLB entry, its line may be the first
        // level's most recent (`Caches::access_repeat`).
        let repeat = from_tlb && n == 0;
        let h = n as u64
            | if store { REC_STORE } else { 0 }
            | if repeat { REC_REPEAT } else { 0 }
            | (core as u64) << REC_CORE_SHIFT;
        let shift = desc_shift(self.fmt);
        out.reserve(3 + n);
        out.extend_from_slice(&[h, self.other_cycles(), pa]);
        out.extend(
            self.rec.reads[..n]
                .iter()
                .map(|&(table, index)| table + ((index as u64) << shift)),
        );
    }

    /// The `other` word of a record ([`replay`](super::super::core_cache::replay)):
    /// [`CachedCore::other_cycles`] (`other` if known) and the first-level hits' cycles
    /// kept here.
    #[inline(always)]
    fn other_now(&self, other: Option<u64>) -> u64 {
        other.unwrap_or_else(|| self.other_cycles()) + self.cc.walk_cycles + self.cc.data_cycles
    }

    /// The cache-path state, for the cache thread (run::pipeline); the core keeps
    /// what its [`CachedCore::other_cycles`] needs.
    pub(crate) fn take_core_cache(&mut self) -> CoreCache {
        let husk = self.cc.husk();
        std::mem::replace(&mut self.cc, husk)
    }

    /// The cache-path state back from the cache thread, with the cycles of the first
    /// level's hits taken here meanwhile ([`Stage1::cache_record`]) added.
    pub(crate) fn put_core_cache(&mut self, mut cc: CoreCache) {
        cc.walk_cycles += self.cc.walk_cycles;
        cc.data_cycles += self.cc.data_cycles;
        self.cc = cc;
    }

    /// The physical address of `r` after its translation when the entry level's most
    /// recent entry (the one that hit or was just filled) does not cover it (the level
    /// did not take the translation: a size it bypasses): from the page table, with no
    /// simulated effect.
    #[inline(never)]
    fn pa_of(&mut self, sys: &mut System, r: &MemRef) -> Result<u64, SimError> {
        let si = sys.space(r.asid)?;
        let root = sys.root(si);
        let m = lookup(&mut sys.mem, self.fmt, root, r.addr).ok_or_else(|| {
            SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "va {:#x} of asid {} has no mapping after its translation (a model bug)",
                r.addr, r.asid
            )))
        })?;
        Ok(m.pa + (r.addr & m.size.offset_mask()))
    }
}
