//! A GPU's statistics ([`GpuStats`], the `gpu` array of the JSON report;
//! docs/output.md), filled by the device translator (translator/device.rs).

use mmulab_model::gpu::driver::DriverSpec;
use mmulab_model::gpu::mmu::MmuSpec;
use serde::Serialize;

/// A GPU's statistics (the `gpu` array of the JSON report; docs/output.md).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GpuStats {
    /// Profile name.
    pub profile: String,
    /// "4K-only" or "big-super".
    pub pages: String,
    /// The driver configuration.
    pub driver: DriverSpec,
    /// The MMU geometry and costs (assumed values).
    pub mmu: MmuSpec,
    /// GPU accesses translated.
    pub accesses: u64,
    /// GPU TLB misses.
    pub tlb_misses: u64,
    /// TLB misses per 1,000 accesses.
    pub tlb_misses_per_1k: f64,
    /// Descriptor-line lookups in the PTE cache.
    pub ptec_lookups: u64,
    /// Descriptor lines fetched from memory (PTE cache misses).
    pub pte_fetches: u64,
    /// Accesses redirected to the scratch page (invalid PTE).
    pub scratch: u64,
    /// Stores to read-only pages.
    pub write_violations: u64,
    /// Full (V3D) or range (Mali) MMU flushes.
    pub flushes: u64,
    /// Cycles of those flushes (cost model).
    pub flush_cycles: u64,
    /// Estimated GPU cycles (cost model: accesses, TLB misses, PTE fetches, flushes).
    pub gpu_cycles: u64,
    /// TLB fills by the page size of the PTE: 4K, 64K, 1M, 2M.
    pub tlb_fills: [u64; 4],
    /// Bytes of every BO created by the page size its PTEs map: 4K, 64K, 1M, 2M.
    pub mapped_bytes: [u64; 4],
    /// Share of those bytes in pages larger than 4 KiB.
    pub coverage: f64,
    /// BOs created, destroyed, live at the end.
    pub bos_created: u64,
    /// BOs destroyed.
    pub bos_destroyed: u64,
    /// BOs live at the end.
    pub bos_live: usize,
    /// PTEs written.
    pub ptes_written: u64,
    /// Scatterlist segments of the BOs created.
    pub segments: u64,
    /// Transparent huge pages gemfs got, and huge-page parts it had to back with kernel
    /// pages.
    pub thp: u64,
    /// Huge-page parts backed with kernel pages.
    pub thp_fallbacks: u64,
}
