//! OS policies: the only components that write leaf descriptors for user memory. A
//! policy decides, at a fault and (later) in the background, which page size backs
//! which virtual range.
//!
//! Contract: [`Os::fault`] is called when a hardware walk reaches an invalid descriptor
//! (or a store finds a read-only page). It must leave a valid leaf covering the faulting
//! address (or return an error) and push onto `shootdowns` every range whose existing
//! translations it changed, so the machine can invalidate TLBs and walk caches.
//!
//! Adding a policy: a file here with a struct and its `fault`; a variant of [`Os`] and
//! of the sim crate's `os.policy` config; a run through the policy contract tests.

mod base;
mod fixed;

pub use base::Base;
pub use fixed::Fixed;

use crate::addr::{Asid, PageSize};
use crate::error::ModelError;
use crate::mem::Memory;
use crate::space::AddressSpace;
use crate::translation::Attrs;
use crate::walk::map_leaf;
use mmulab_trace::AccessKind;
use serde::Serialize;

/// Counts of an OS policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OsStats {
    /// Page faults handled.
    pub faults: u64,
    /// Pages mapped, by size (`PageSize as usize`).
    pub mapped: [u64; 9],
    /// Bytes currently mapped.
    pub resident_bytes: u64,
}

impl OsStats {
    /// Records a new mapping.
    pub fn record_map(&mut self, size: PageSize) {
        self.mapped[size.index()] += 1;
        self.resident_bytes += size.bytes();
    }
}

/// A range of one address space whose translations changed: TLBs must drop it.
pub type Shootdown = (Asid, u64, u64);

/// Everything a policy may touch while handling a fault.
pub struct FaultCtx<'a> {
    /// Physical memory and page tables.
    pub mem: &'a mut Memory,
    /// The faulting address space.
    pub space: &'a mut AddressSpace,
    /// The faulting virtual address.
    pub va: u64,
    /// What the reference was.
    pub kind: AccessKind,
    /// Ranges whose translations changed.
    pub shootdowns: &'a mut Vec<Shootdown>,
}

/// The configured policy (closed enum: static dispatch).
#[derive(Clone, Debug)]
pub enum Os {
    /// Every page 4 KiB, demand-paged at first touch.
    Base(Base),
    /// Every touched region backed by pages of one size.
    Fixed(Fixed),
}

impl Os {
    /// Handles a fault.
    pub fn fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        match self {
            Os::Base(p) => p.fault(ctx),
            Os::Fixed(p) => p.fault(ctx),
        }
    }

    /// The policy's counters.
    pub fn stats(&self) -> &OsStats {
        match self {
            Os::Base(p) => &p.stats,
            Os::Fixed(p) => &p.stats,
        }
    }

    /// The config name of the policy.
    pub fn name(&self) -> &'static str {
        match self {
            Os::Base(_) => "base",
            Os::Fixed(_) => "fixed",
        }
    }
}

/// Allocates physical memory for one page of `size` and maps it at the aligned address
/// containing `va`, read-write. Shared by the demand-paging policies.
pub(crate) fn map_new_page(ctx: &mut FaultCtx<'_>, size: PageSize, stats: &mut OsStats) -> Result<(), ModelError> {
    let order = size.shift() - crate::addr::FRAME_SHIFT;
    let pfn = ctx
        .mem
        .buddy
        .alloc(order)
        .ok_or_else(|| ctx.mem.buddy.oom(&format!("a {size} page at va {:#x}", ctx.va)))?;
    let va = ctx.va & !size.offset_mask();
    let pa = pfn << crate::addr::FRAME_SHIFT;
    map_leaf(ctx.mem, ctx.space.fmt, ctx.space.root, va, pa, size, Attrs::user_rw())?;
    stats.record_map(size);
    Ok(())
}
