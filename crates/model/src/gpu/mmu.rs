//! The device MMU: a PTE cache in front of the page table, a TLB whose entries cover the
//! page size of the PTE that filled them, the scratch page for invalid accesses, and the
//! full flush the V3D driver issues after every BO insert or remove.
//!
//! V3D registers (`v3d_regs.h`): `V3D_MMUC_CONTROL` (the MMU's PTE cache: FLUSH,
//! FLUSHING), `V3D_MMU_CTL` (TLB_CLEAR, TLB_CLEARING), `V3D_MMU_ILLEGAL_ADDR` (the
//! scratch page invalid accesses are redirected to). `v3d_mmu_flush_all` flushes the PTE
//! cache and waits for FLUSHING to clear, then clears the TLB and waits for TLB_CLEARING
//! (the order fixed by "Address race-condition in MMU flush"); [`Mmu::flush`] does the
//! same two steps in that order and counts one flush.
//!
//! Neither the TLB's nor the PTE cache's geometry is published: the defaults in
//! [`MmuSpec::v3d`] are assumed, and every profile may set them.

use super::device::{Leaf, Table};
use crate::addr::PageSize;
use crate::mem::Memory;
use crate::replacement::Policy;
use crate::tlb::{Serves, Tlb, TlbSpec, TlbStats, Unsupported};
use crate::translation::{Attrs, Translation};

/// Geometry and costs of a device MMU (all assumed unless a profile says otherwise).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct MmuSpec {
    /// TLB entries.
    pub tlb_entries: usize,
    /// TLB ways (`== tlb_entries`: fully associative).
    pub tlb_ways: usize,
    /// PTE cache lines (64 bytes of descriptors each).
    pub ptec_lines: usize,
    /// PTE cache ways.
    pub ptec_ways: usize,
    /// GPU cycles of a TLB miss served by the PTE cache.
    pub ptec_cycles: u32,
    /// GPU cycles of a PTE line fetched from memory.
    pub fetch_cycles: u32,
    /// GPU cycles of one full flush (PTE cache flush, then TLB clear, each waited for).
    pub flush_cycles: u32,
    /// GPU cycles of the work around one memory access (shading, raster, blending).
    pub access_cycles: u32,
}

impl MmuSpec {
    /// The assumed V3D geometry: a 64-entry 4-way TLB, a 32-line 2-way PTE cache
    /// (64-byte lines of 16 PTEs), 20 cycles per PTE-cache-served miss, 200 per PTE line
    /// from DRAM, 2,000 per flush, 40 cycles of other work per access. All assumed.
    pub const fn v3d() -> MmuSpec {
        MmuSpec {
            tlb_entries: 64,
            tlb_ways: 4,
            ptec_lines: 32,
            ptec_ways: 2,
            ptec_cycles: 20,
            fetch_cycles: 200,
            flush_cycles: 2000,
            access_cycles: 40,
        }
    }
}

/// Counters of a device MMU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MmuCounts {
    /// Accesses translated.
    pub accesses: u64,
    /// TLB misses (each looks the PTE up through the PTE cache).
    pub tlb_misses: u64,
    /// Descriptor-line lookups in the PTE cache.
    pub ptec_lookups: u64,
    /// PTE cache misses: descriptor lines fetched from memory.
    pub pte_fetches: u64,
    /// Accesses to invalid pages, redirected to the scratch page.
    pub scratch: u64,
    /// Stores to read-only pages (the driver aborts them; counted, not stopped).
    pub write_violations: u64,
    /// Full flushes (PTE cache, then TLB).
    pub flushes: u64,
    /// TLB fills by the page size of the filling PTE: 4K, 64K, 1M, 2M.
    pub fills: [u64; 4],
}

/// A small set-associative LRU cache of descriptor lines. Written here rather than
/// reusing the TLB because it caches memory lines by key, not translations.
#[derive(Clone, Debug)]
struct LineCache {
    sets: Vec<Vec<u64>>,
    ways: usize,
}

impl LineCache {
    fn new(lines: usize, ways: usize) -> LineCache {
        let ways = ways.clamp(1, lines.max(1));
        LineCache {
            sets: vec![Vec::with_capacity(ways); (lines / ways).max(1)],
            ways,
        }
    }
    /// True on a hit; a miss fills (LRU victim).
    fn access(&mut self, key: u64) -> bool {
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(key % n) as usize];
        if let Some(i) = set.iter().position(|&k| k == key) {
            let k = set.remove(i);
            set.insert(0, k);
            return true;
        }
        if set.len() == self.ways {
            set.pop();
        }
        set.insert(0, key);
        false
    }
    fn clear(&mut self) {
        self.sets.iter_mut().for_each(Vec::clear);
    }
}

/// A device MMU over a [`Table`].
#[derive(Clone, Debug)]
pub struct Mmu {
    /// The page table.
    pub table: Table,
    spec: MmuSpec,
    tlb: Tlb,
    ptec: LineCache,
    /// Physical address of the scratch page.
    scratch: u64,
    counts: MmuCounts,
    lines: Vec<u64>,
}

impl Mmu {
    /// An MMU over `table`; invalid accesses go to `scratch`.
    pub fn new(table: Table, spec: MmuSpec, scratch: u64) -> Result<Mmu, super::GpuError> {
        if spec.tlb_entries == 0
            || spec.tlb_ways == 0
            || spec.tlb_entries % spec.tlb_ways != 0
            || !(spec.tlb_entries / spec.tlb_ways).is_power_of_two()
            || spec.ptec_lines == 0
            || spec.ptec_ways == 0
            || spec.ptec_lines % spec.ptec_ways != 0
        {
            return Err(super::GpuError::Config(format!(
                "mmu: tlb_entries = {}, tlb_ways = {}, ptec_lines = {}, ptec_ways = {}: entries must be a \
                 positive multiple of ways (TLB sets a power of two)",
                spec.tlb_entries, spec.tlb_ways, spec.ptec_lines, spec.ptec_ways
            )));
        }
        let tlb = Tlb::new(TlbSpec {
            name: "gpu-tlb".into(),
            serves: Serves::Unified,
            entries: spec.tlb_entries,
            ways: spec.tlb_ways,
            page_sizes: table.page_sizes(),
            unsupported: Unsupported::Splinter,
            replacement: Policy::Lru,
            latency: 1,
            next: None,
            seed: 0,
        });
        Ok(Mmu {
            table,
            spec,
            tlb,
            ptec: LineCache::new(spec.ptec_lines, spec.ptec_ways),
            scratch,
            counts: MmuCounts::default(),
            lines: Vec::with_capacity(4),
        })
    }

    /// The geometry and costs.
    pub fn spec(&self) -> &MmuSpec {
        &self.spec
    }

    /// Translates one access to GPU virtual address `va`; returns the physical address
    /// (the scratch page's for an invalid page).
    pub fn access(&mut self, mem: &mut Memory, va: u64, write: bool) -> u64 {
        self.counts.accesses += 1;
        if let Some((_, t)) = self.tlb.lookup(va, 0) {
            if write && !t.attrs.has(Attrs::WRITABLE) {
                self.counts.write_violations += 1;
            }
            return t.translate(va);
        }
        self.counts.tlb_misses += 1;
        self.lines.clear();
        let leaf = self.table.lookup(mem, va, &mut self.lines);
        for &line in &self.lines {
            self.counts.ptec_lookups += 1;
            if !self.ptec.access(line) {
                self.counts.pte_fetches += 1;
            }
        }
        let Some(Leaf {
            va: base,
            pa,
            size,
            writeable,
        }) = leaf
        else {
            self.counts.scratch += 1;
            return self.scratch + (va & 0xfff);
        };
        if write && !writeable {
            self.counts.write_violations += 1;
        }
        let k = match size {
            PageSize::K64 => 1,
            PageSize::M1 => 2,
            PageSize::M2 => 3,
            _ => 0,
        };
        self.counts.fills[k] += 1;
        let attrs = Attrs(if writeable { Attrs::WRITABLE } else { 0 });
        self.tlb.fill(
            &Translation {
                va: base,
                pa,
                size,
                asid: 0,
                attrs,
            },
            va,
        );
        pa + (va - base)
    }

    /// The full flush: the PTE cache first, then the TLB (`v3d_mmu_flush_all`).
    pub fn flush(&mut self) {
        self.ptec.clear();
        self.tlb.flush();
        self.counts.flushes += 1;
    }

    /// Drops the TLB entries and cached descriptor lines of `[start, end)` (the range
    /// flush Panfrost issues with `AS_COMMAND_FLUSH_PT` after a map or unmap); counted
    /// as a flush.
    pub fn flush_range(&mut self, start: u64, end: u64) {
        self.ptec.clear();
        self.tlb.invalidate_range(0, start, end);
        self.counts.flushes += 1;
    }

    /// The counters.
    pub fn counts(&self) -> MmuCounts {
        self.counts
    }

    /// The TLB level's own counters.
    pub fn tlb_stats(&self) -> TlbStats {
        self.tlb.stats()
    }

    /// Estimated GPU cycles of the counted work (the cost model, every latency assumed):
    /// accesses × `access_cycles` + TLB misses × `ptec_cycles` + PTE fetches ×
    /// `fetch_cycles` + flushes × `flush_cycles`.
    pub fn gpu_cycles(&self) -> u64 {
        let (c, s) = (&self.counts, &self.spec);
        c.accesses * s.access_cycles as u64
            + c.tlb_misses * s.ptec_cycles as u64
            + c.pte_fetches * s.fetch_cycles as u64
            + c.flushes * s.flush_cycles as u64
    }
}
