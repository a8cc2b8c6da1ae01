//! The nested translator's data-cache path (a machine with `[vm]` and `[caches]`;
//! docs/virtualization.md, "Data caches"). Every memory read of the two-dimensional
//! walk goes through the caches at its **host-physical** address, in the order the walk
//! made it: each stage-2 descriptor (stage-2 tables live in host memory: the table's
//! address plus index × 8), each guest descriptor (its guest-physical address, the
//! table's plus index × descriptor size, translated by the stage-2 translation the walk
//! just made of the guest table), then the data reference at the host-physical address
//! of the combined-TLB entry that hit or of the walk's result. The reads are recorded
//! during the translation (faulting walks and their retries included) and sent through
//! the caches after it, by the path the stage-1 core uses too (core_cache.rs); the
//! walk's cycles are where its reads hit. Without `[caches]` nothing is recorded and no
//! cycle changes.

use super::super::core_cache::{desc_shift, CachedCore, CoreCache};
use super::Nested;
use crate::system::System;
use mmulab_model::cache::Caches;
use mmulab_model::pt::Format;
use mmulab_model::translation::Translation;
use mmulab_model::walk::{lookup, WalkReads};
use mmulab_trace::{AccessKind, MemRef};

/// One access's memory reads at host-physical addresses.
#[derive(Clone, Debug, Default)]
pub(super) struct NestedReads {
    /// Descriptor reads in walk order: (host-physical address, stage: 0 guest, 1
    /// stage 2). Up to 16 attempts of up to 24 reads; the vector keeps its capacity.
    reads: Vec<(u64, u8)>,
    /// The host-physical address of the data (set by the TLB hit or the walk).
    pub(super) data_pa: u64,
}

impl NestedReads {
    /// The descriptor reads of one stage-2 walk (tables in host memory, `fmt`).
    pub(super) fn stage2_reads(&mut self, fmt: Format, w: &WalkReads) {
        let shift = desc_shift(fmt);
        for &(table, index) in &w.reads[..w.n] {
            self.reads.push((table + ((index as u64) << shift), 1));
        }
    }
}

impl CachedCore for Nested {
    fn core_cache(&self) -> &CoreCache {
        &self.cc
    }

    fn core_cache_mut(&mut self) -> &mut CoreCache {
        &mut self.cc
    }

    fn enable_caches(&mut self, cc: CoreCache) {
        self.cached = true;
        self.cc = cc;
    }

    /// `base_cycles` per reference, the combined TLB's lookups, both stages'
    /// page-walk-cache lookups, the stage-2 TLB's lookups, the dirty-bit writes.
    fn other_cycles(&self) -> u64 {
        let w = &self.c;
        let refs: u64 = w.kinds.iter().sum();
        let tlb = self.tlbs.lookup_cycles();
        // A page-walk cache is looked up once per walk of its stage when it has any level.
        let pwc1 = if self.pwc1.enabled() { w.walks } else { 0 };
        let pwc2 = if self.pwc2.enabled() { w.s2_walks } else { 0 };
        let pwc = (pwc1 + pwc2) * self.cost.pwc_latency as u64;
        let s2tlb = self.s2tlb.as_ref().map_or(0, |t| {
            let l = &t.levels()[0];
            l.stats().accesses * l.spec().latency as u64
        });
        refs * self.cc.base_cycles as u64 + tlb + pwc + s2tlb + self.dirty_write_cycles()
    }
}

impl Nested {
    /// Records the read of descriptor `index` of the guest table at guest-physical
    /// `table`, whose page stage 2 translated to `h`: at `h`'s host-physical page. (A
    /// descriptor beyond that page — an ARMv7 guest's 16 KiB first-level table over
    /// smaller host pages: the walk translates the table's base only — is located by a
    /// stage-2 lookup with no simulated effect.)
    pub(super) fn record_guest_read(&mut self, sys: &mut System, h: &Translation, table: u64, index: usize) {
        let gpa = table + ((index as u64) << desc_shift(self.guest));
        let mut hpa = h.pa + (gpa - h.va);
        if gpa - h.va >= h.size.bytes() {
            if let Some(host) = sys.host.as_deref_mut() {
                let root = host.root();
                if let Some(m) = lookup(&mut host.mem, self.stage2, root, gpa) {
                    hpa = m.pa + (gpa & m.size.offset_mask());
                }
            }
        }
        self.rec.reads.push((hpa, 0));
    }

    /// Records the read of descriptor `index` of the guest table at guest-physical
    /// `table` found through a combined (EPT) walk-cache entry, which holds the table's
    /// host-physical address: located by a stage-2 lookup with no simulated effect.
    pub(super) fn record_combined_read(&mut self, sys: &mut System, table: u64, index: usize) {
        let gpa = table + ((index as u64) << desc_shift(self.guest));
        if let Some(host) = sys.host.as_deref_mut() {
            let root = host.root();
            if let Some(m) = lookup(&mut host.mem, self.stage2, root, gpa) {
                self.rec.reads.push((m.pa + (gpa & m.size.offset_mask()), 0));
            }
        }
    }

    /// [`super::Translator::access`] with walks recording their reads (the record
    /// starts empty; a fault's retry adds to it).
    pub(crate) fn access_rec(&mut self, sys: &mut System, r: &MemRef) -> Result<(), super::Stop> {
        self.rec.reads.clear();
        super::Translator::access(self, sys, r)
    }

    /// After a translated access of core `core`: its recorded descriptor reads, then
    /// the data reference, through `caches`. Instruction fetches do not use the data
    /// caches (no instruction cache is modelled), as on a stage-1 core.
    pub(crate) fn cache_access(&mut self, caches: &mut Caches, core: usize, r: &MemRef) {
        if r.kind == AccessKind::IFetch {
            return;
        }
        let reads = std::mem::take(&mut self.rec.reads);
        let mut other = None;
        for &(pa, stage) in &reads {
            let lat = self.cache_walk_read(caches, core, pa, &mut other);
            let s = stage as usize & 1;
            self.c.cache_cycles[s] += lat;
            // Longer than every level's lookup: it missed them all (mlp.rs's rule).
            if lat > self.cc.lookups {
                self.c.cache_mem_reads[s] += 1;
            }
        }
        self.rec.reads = reads;
        let pa = self.rec.data_pa;
        self.cache_data(caches, core, pa, r.kind == AccessKind::Store, &mut other);
    }

    /// Drops every cached translation of both stages, the stage-1 walk caches' of
    /// address space 0 (for tests that need walks to repeat: `Machine::flush_tlbs`).
    pub(crate) fn flush_tlbs(&mut self) {
        self.tlbs.flush();
        self.pwc1.invalidate_range(0, 0, u64::MAX);
        self.invalidate_stage2(0, u64::MAX);
    }
}
