//! The device translator: a GPU as a requester beside the CPU cores. It owns the GPU's
//! driver state and MMU ([`mmulab_model::gpu::driver::Gpu`]) and translates GPU virtual
//! addresses through it, with BO memory taken from the machine's shared physical memory
//! ([`System`]'s buddy allocator).
//!
//! Contract differences from the CPU translator, both as on the hardware: a device MMU
//! never faults to the OS (V3D sends an access to an invalid page to the scratch page
//! and counts it; the driver maps every BO page before the GPU may use it), so
//! [`Translator::resume`] has nothing to continue; and CPU shootdowns do not reach it
//! (the GPU driver flushes its own MMU after every BO insert and remove), so
//! [`Translator::invalidate_range`] and [`Translator::spaces_changed`] do nothing.

use super::{Stop, Translator};
use crate::stats::gpu::GpuStats;
use crate::stats::{Report, Stats};
use crate::system::System;
use mmulab_model::addr::Asid;
use mmulab_model::gpu::driver::Gpu;
use mmulab_model::gpu::GpuError;
use mmulab_trace::{AccessKind, MemRef};

/// A GPU requester.
#[derive(Debug)]
pub struct Device {
    /// Its profile name (machines/gpu/NAME.toml).
    pub(crate) profile: String,
    /// "4K-only" or "big-super".
    pub(crate) pages: String,
    /// Driver and MMU.
    pub(crate) gpu: Gpu,
}

impl Device {
    /// Creates BO `bo` of `bytes` with memory from `sys`.
    pub(crate) fn create(&mut self, sys: &mut System, bo: u32, bytes: u64) -> Result<(), GpuError> {
        self.gpu.create(&mut sys.mem, bo, bytes)
    }

    /// Destroys BO `bo`, returning its memory to `sys`.
    pub(crate) fn destroy(&mut self, sys: &mut System, bo: u32) -> Result<(), GpuError> {
        self.gpu.destroy(&mut sys.mem, bo)
    }
}

impl Translator for Device {
    fn access(&mut self, sys: &mut System, r: &MemRef) -> Result<(), Stop> {
        self.gpu.mmu.access(&mut sys.mem, r.addr, r.kind == AccessKind::Store);
        Ok(())
    }

    fn resume(&mut self, _sys: &mut System, _r: &MemRef, _upto: u8, _attempt: u8) -> Result<(), Stop> {
        Ok(())
    }

    fn invalidate_range(&mut self, _asid: Asid, _start: u64, _end: u64) {}

    fn spaces_changed(&mut self) {}

    /// A device's walks are its MMU's own (reported under `gpu`), not the cores'.
    fn walk_cycles(&self) -> u64 {
        0
    }
}

impl Report for Device {
    fn report(&self, s: &mut Stats) {
        s.gpu.push(GpuStats::of(self));
    }
}

impl GpuStats {
    /// The statistics of a device.
    pub(crate) fn of(d: &Device) -> GpuStats {
        let c = d.gpu.mmu.counts();
        let dc = d.gpu.counts();
        let total: u64 = dc.mapped.iter().sum();
        GpuStats {
            profile: d.profile.clone(),
            pages: d.pages.clone(),
            driver: *d.gpu.spec(),
            mmu: *d.gpu.mmu.spec(),
            accesses: c.accesses,
            tlb_misses: c.tlb_misses,
            tlb_misses_per_1k: if c.accesses > 0 {
                c.tlb_misses as f64 * 1000.0 / c.accesses as f64
            } else {
                0.0
            },
            ptec_lookups: c.ptec_lookups,
            pte_fetches: c.pte_fetches,
            scratch: c.scratch,
            write_violations: c.write_violations,
            flushes: c.flushes,
            flush_cycles: c.flushes * d.gpu.mmu.spec().flush_cycles as u64,
            gpu_cycles: d.gpu.mmu.gpu_cycles(),
            tlb_fills: c.fills,
            mapped_bytes: dc.mapped,
            coverage: if total > 0 {
                (total - dc.mapped[0]) as f64 / total as f64
            } else {
                0.0
            },
            bos_created: dc.creates,
            bos_destroyed: dc.destroys,
            bos_live: d.gpu.live(),
            ptes_written: dc.ptes_written,
            segments: dc.segments,
            thp: dc.thp,
            thp_fallbacks: dc.thp_fallbacks,
        }
    }
}
