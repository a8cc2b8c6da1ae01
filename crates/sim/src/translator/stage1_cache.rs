//! The stage-1 translator's data-cache path (a machine with `[caches]`; docs/memory.md):
//! the access is translated as without caches, but its walks record their descriptor
//! reads; then every descriptor read goes through the caches at the descriptor's
//! physical address, and the reference itself at its physical address (taken from the
//! TLB entry that hit or was just filled). Machines without caches never come here:
//! the run loop's plain path and `Translator::access` are the code they always ran.

use super::{Stage1, Stop};
use crate::system::System;
use crate::SimError;
use mmulab_model::cache::Caches;
use mmulab_model::walk::lookup;
use mmulab_trace::{AccessKind, MemRef};

impl Stage1 {
    /// Turns the data-cache path on: walks record their descriptor reads.
    /// `mlp` miss slots (mlp.rs); `l1` and `lookups`: the first level's latency and
    /// every level's summed (a reference that took longer went to memory).
    pub(crate) fn enable_caches(&mut self, base_cycles: u32, mlp: u32, l1: u32, lookups: u32) {
        self.cached = true;
        self.base_cycles = base_cycles;
        self.mlp = super::mlp::Mlp::new(mlp, l1);
        self.lookups = lookups as u64;
    }

    /// [`super::Translator::access`] with walks recording their descriptor reads (the
    /// record starts empty; a fault's retry adds to it).
    #[inline]
    pub(crate) fn access_rec(&mut self, sys: &mut System, r: &MemRef) -> Result<(), Stop> {
        self.rec.n = 0;
        super::Translator::access(self, sys, r)
    }

    /// After a translated access of core `core`: its recorded descriptor reads, then
    /// the reference, through `caches`. Instruction fetches do not use the data caches
    /// (no instruction cache is modelled).
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
        // ARMv7 short descriptors are 4 bytes (ARM ARM B3.5); every other format's 8.
        let shift = if self.fmt.arch_name() == "armv7" { 2 } else { 3 };
        for i in 0..self.rec.n {
            let (table, index) = self.rec.reads[i];
            let pa = table + ((index as u64) << shift);
            let lat = caches.access(core, pa, false, true, || self.clock());
            self.counters.walk_cache_cycles += lat;
        }
        let pa = self.pa_of(sys, r)?;
        // A request to memory leaves when a miss slot is free (mlp.rs).
        let mut issued = None;
        let me = &*self;
        let lat = caches.access(core, pa, r.kind == AccessKind::Store, false, || {
            let t = me.clock();
            let w = me.mlp.wait(t);
            issued = Some((t, w));
            t + w
        });
        self.counters.data_cache_cycles += lat;
        // A fill from memory (not only a write-back of a victim) takes a slot.
        if let Some((t, w)) = issued {
            if lat > self.lookups {
                self.mlp.miss(t, w, lat);
            }
        }
        Ok(())
    }

    /// The physical address of `r` after its translation: from the entry level's most
    /// recent entry (the one that hit or was just filled), else (the entry level did not
    /// take the translation: a size it bypasses) from the page table, with no simulated
    /// effect.
    #[inline]
    fn pa_of(&self, sys: &mut System, r: &MemRef) -> Result<u64, SimError> {
        let entry = self.tlbs.path(false)[0] as usize;
        if let Some(pa) = self.tlbs.levels()[entry].mru_pa(r.addr, r.asid) {
            return Ok(pa);
        }
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

    /// This core's clock in cycles: `base_cycles` per reference, its TLB lookups, its
    /// page-walk-cache lookups, its walks' and data references' cache and memory
    /// latencies, its dirty-bit writes (derived from the counters when a request
    /// leaves for memory, not kept per reference), less the memory latency its data
    /// misses overlapped (mlp.rs).
    pub(crate) fn clock(&self) -> u64 {
        let c = &self.counters;
        let refs: u64 = c.kinds.iter().sum();
        let tlb: u64 = self
            .tlbs
            .levels()
            .iter()
            .map(|t| t.stats().accesses * t.spec().latency as u64)
            .sum();
        let pwc = if self.pwc.enabled() {
            c.walks * self.cost.pwc_latency as u64
        } else {
            0
        };
        self.mlp.clock(
            refs * self.base_cycles as u64
                + tlb
                + pwc
                + c.walk_cache_cycles
                + c.data_cache_cycles
                + c.dirty_writes * self.cost.mem_latency as u64,
        )
    }

    /// When this core is done: its clock, or the return of its last miss in flight.
    pub(crate) fn end_cycles(&self) -> u64 {
        self.mlp.end(self.clock())
    }
}
