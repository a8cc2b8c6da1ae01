//! OS policies: the only components that write leaf descriptors for user memory. A
//! policy decides, at a fault and in the background, which page size backs which
//! virtual range.
//!
//! Contract:
//! * [`Os::fault`] is called when a hardware walk reaches an invalid descriptor (or a
//!   store finds a read-only page). It must leave a valid leaf covering the faulting
//!   address (writable if the access was a store) or return an error, and push onto
//!   `shootdowns` every range whose existing translations it changed, so the machine
//!   can invalidate TLBs and walk caches.
//! * [`Os::tick`] is called by the machine every `os.tick_interval` references (never
//!   per reference: the hot path stays a counter compare). Background work
//!   (khugepaged's scan, re-promotion, reservation breaking under pressure) happens
//!   here, under the same shootdown rule.
//! * [`Os::exit`] ends an address space: every frame it owned goes back to the buddy
//!   allocator and every page table is freed.
//! * [`Os::unmap`] removes `[start, end)` of one address space (munmap): superpages
//!   straddling an end are split first, the frames inside are freed (or returned to
//!   their FreeBSD reservation), tables wholly inside are freed, the VMAs trimmed, and
//!   the range shot down (rules in [`unmap`]).
//! * Memory pressure (reclaim.rs): for `base`, `thp`/`khugepaged` and `mthp`, a fault
//!   that finds free memory below the `min_free_pages` watermark, or whose allocation
//!   fails, first reclaims (THP shrinker, then clock swap-out); a fault on a page in
//!   swap is a major fault (`swap_ins`). Only when reclaim frees nothing is the
//!   out-of-memory error returned. Direct compaction (compact.rs) migrates movable
//!   pages of any address space; the shootdowns it pushes may name other asids.
//! * Frames: each leaf owns the frames it maps (a 2 MiB leaf owns an order-9 block; a
//!   64 KiB mTHP folio mapped as sixteen 4 KiB leaves is freed leaf by leaf and the
//!   buddy allocator merges it back). A frame is never owned twice; reserved but
//!   unpopulated frames are owned by the reservation. The contract tests
//!   (crates/model/tests/os_contract.rs) check this for every policy.
//!
//! Adding a policy: a file here with a struct, its `fault` (and `tick`/`exit` if it
//! keeps state); a variant of [`Os`] and of the sim crate's `os.policy` config
//! (config.rs `OsSpec`); a row in the contract suite's list of policies; a section in
//! docs/policies.md.

mod base;
pub mod compact;
mod fixed;
mod mthp;
pub mod reclaim;
pub mod remap;
mod reservation;
mod thp;
pub mod unmap;

pub use base::Base;
pub use fixed::Fixed;
pub use mthp::{Mthp, MthpConfig};
pub use reclaim::ReclaimConfig;
pub use reservation::{Reservation, ReservationConfig};
pub use thp::{Defrag, Enabled, KhugepagedConfig, Thp, ThpConfig};

use crate::addr::{Asid, PageSize, FRAME_SHIFT};
use crate::error::ModelError;
use crate::mem::Memory;
use crate::space::AddressSpace;
use crate::translation::Attrs;
use crate::walk::{map_leaf, Mapping};
use mmulab_trace::AccessKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// Counts of an OS policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OsStats {
    /// Page faults handled.
    pub faults: u64,
    /// Leaves created, by size (`PageSize as usize`): at faults, promotions, collapses.
    pub mapped: [u64; 9],
    /// Bytes currently mapped.
    pub resident_bytes: u64,
    /// Bytes currently mapped, by leaf size (what the TLBs see).
    pub resident_by_size: [u64; 9],
    /// Promotions (many small leaves replaced by one large one, in place), by new size.
    pub promotions: [u64; 9],
    /// Demotions (a large leaf split into small ones), by the demoted size.
    pub demotions: [u64; 9],
    /// khugepaged collapses (copy into a new 2 MiB page).
    pub collapses: u64,
    /// Cycles of OS work beyond the per-fault latency: copies, compaction, scans.
    pub os_cycles: u64,
    /// Named event counters of the policy (reservations created, failures by reason…).
    pub events: BTreeMap<&'static str, u64>,
}

impl OsStats {
    /// Records a new leaf of `size` (counted in `mapped` too).
    pub fn record_map(&mut self, size: PageSize) {
        self.mapped[size.index()] += 1;
        self.record_leaf(size);
    }

    /// Records a new leaf of `size` without counting it in `mapped` (a piece of a
    /// larger folio, e.g. one of sixteen 4 KiB leaves of a 64 KiB mTHP folio).
    pub fn record_leaf(&mut self, size: PageSize) {
        self.resident_bytes += size.bytes();
        self.resident_by_size[size.index()] += size.bytes();
    }

    /// Records a leaf of `size` removed.
    pub fn record_unmap(&mut self, size: PageSize) {
        self.resident_bytes -= size.bytes();
        self.resident_by_size[size.index()] -= size.bytes();
    }

    /// Adds one to a named event counter.
    pub fn event(&mut self, name: &'static str) {
        *self.events.entry(name).or_default() += 1;
    }

    /// A named event counter (0 if never counted).
    pub fn count(&self, name: &str) -> u64 {
        self.events.get(name).copied().unwrap_or(0)
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

/// Everything a policy may touch in background work.
pub struct TickCtx<'a> {
    /// Physical memory and page tables.
    pub mem: &'a mut Memory,
    /// All address spaces, indexed by asid (`None`: never used or exited).
    pub spaces: &'a mut [Option<AddressSpace>],
    /// References simulated so far (the clock of background work).
    pub now: u64,
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
    /// FreeBSD reservation-based superpages.
    Reservation(Reservation),
    /// Linux THP at fault time and/or khugepaged collapses.
    Thp(Thp),
    /// Linux multi-size THP.
    Mthp(Mthp),
}

impl Os {
    /// Handles a fault: a swap-in if the page is in swap, else the policy's fault —
    /// with reclaim first when free memory is below the watermark, and reclaim and a
    /// retry when an allocation fails (see the module contract).
    pub fn fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        let Some(cfg) = self.reclaim_cfg().filter(|c| c.enabled).copied() else {
            return self.policy_fault(ctx);
        };
        if ctx.mem.buddy.free_frames() < cfg.min_free_pages {
            self.reclaim(
                ctx.mem,
                &cfg,
                ctx.shootdowns,
                cfg.batch_pages.max(cfg.min_free_pages - ctx.mem.buddy.free_frames()),
            );
        }
        let base = ctx.space.fmt.base_page();
        let page = ctx.va & !base.offset_mask();
        if !ctx.mem.swap.slots.is_empty() && ctx.mem.swap.slots.remove(&(ctx.space.asid, page)) {
            return self.swap_in(ctx, &cfg, page, base);
        }
        for _ in 0..16 {
            let again = FaultCtx {
                mem: &mut *ctx.mem,
                space: &mut *ctx.space,
                va: ctx.va,
                kind: ctx.kind,
                shootdowns: &mut *ctx.shootdowns,
            };
            match self.policy_fault(again) {
                Err(ModelError::OutOfMemory(msg)) => {
                    if self.reclaim(ctx.mem, &cfg, ctx.shootdowns, cfg.batch_pages) == 0 {
                        return Err(ModelError::OutOfMemory(msg));
                    }
                    // The failed attempt counted a fault; the retry counts it again.
                    self.stats_mut().faults -= 1;
                }
                r => return r,
            }
        }
        Err(ctx
            .mem
            .buddy
            .oom(&format!("the page at va {:#x} after repeated reclaim", ctx.va)))
    }

    /// Frees at least `want` frames if it can (THP shrinker, then swap-out); returns
    /// the frames freed.
    fn reclaim(&mut self, mem: &mut Memory, cfg: &ReclaimConfig, shootdowns: &mut Vec<Shootdown>, want: u64) -> u64 {
        self.stats_mut().event("reclaim_runs");
        let mut freed = 0;
        if let Os::Thp(p) = self {
            freed += p.shrink(mem, cfg.thp_underused_empty, shootdowns, want);
        }
        if freed < want {
            freed += reclaim::swap_out(mem, cfg, self.stats_mut(), shootdowns, want - freed);
        }
        freed
    }

    /// A major fault: the page's data comes back from swap into a fresh base page.
    fn swap_in(&mut self, ctx: FaultCtx<'_>, cfg: &ReclaimConfig, page: u64, base: PageSize) -> Result<(), ModelError> {
        let FaultCtx {
            mem,
            space,
            kind,
            shootdowns,
            ..
        } = ctx;
        let mut pfn = mem.buddy.alloc(order_of(base));
        if pfn.is_none() && self.reclaim(mem, cfg, shootdowns, cfg.batch_pages) > 0 {
            pfn = mem.buddy.alloc(order_of(base));
        }
        let Some(pfn) = pfn else {
            mem.swap.slots.insert((space.asid, page));
            return Err(mem.buddy.oom(&format!("swapping in the page at va {page:#x}")));
        };
        if let Err(e) = map_leaf(
            mem,
            space.fmt,
            space.root,
            page,
            pfn << FRAME_SHIFT,
            base,
            fresh_attrs(kind),
        ) {
            mem.buddy.free(pfn, order_of(base));
            mem.swap.slots.insert((space.asid, page));
            return Err(e);
        }
        let stats = self.stats_mut();
        stats.faults += 1;
        stats.record_map(base);
        stats.event("swap_ins");
        stats.os_cycles += cfg.swap_in_cycles;
        Ok(())
    }

    /// The reclaim settings of a policy that reclaims (`base`, `thp`, `khugepaged`,
    /// `mthp`).
    pub fn reclaim_cfg(&self) -> Option<&ReclaimConfig> {
        match self {
            Os::Base(p) => Some(&p.reclaim),
            Os::Thp(p) => Some(&p.reclaim),
            Os::Mthp(p) => Some(&p.reclaim),
            _ => None,
        }
    }

    /// Sets the reclaim settings (ignored by `fixed` and `reservation`).
    pub fn set_reclaim(&mut self, cfg: ReclaimConfig) {
        match self {
            Os::Base(p) => p.reclaim = cfg,
            Os::Thp(p) => p.reclaim = cfg,
            Os::Mthp(p) => p.reclaim = cfg,
            _ => {}
        }
    }

    fn policy_fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        match self {
            Os::Base(p) => p.fault(ctx),
            Os::Fixed(p) => p.fault(ctx),
            Os::Reservation(p) => p.fault(ctx),
            Os::Thp(p) => p.fault(ctx),
            Os::Mthp(p) => p.fault(ctx),
        }
    }

    /// Background work (see the module contract).
    pub fn tick(&mut self, ctx: TickCtx<'_>) -> Result<(), ModelError> {
        match self {
            Os::Reservation(p) => p.tick(ctx),
            Os::Thp(p) => p.tick(ctx),
            _ => Ok(()),
        }
    }

    /// Ends `space`: frees its frames, its reservations and its page tables.
    pub fn exit(&mut self, mem: &mut Memory, space: &AddressSpace) {
        let stats = match self {
            Os::Base(p) => &mut p.stats,
            Os::Fixed(p) => &mut p.stats,
            Os::Reservation(p) => {
                p.drop_space(mem, space.asid);
                &mut p.stats
            }
            Os::Thp(p) => {
                p.drop_space(space.asid);
                &mut p.stats
            }
            Os::Mthp(p) => &mut p.stats,
        };
        for m in remap::teardown(mem, space.fmt, space.root) {
            free_leaf(mem, &m);
            stats.record_unmap(m.size);
        }
        self.stats_mut().event("exits");
    }

    /// Unmaps `[start, end)` of `space` (munmap; see the [`unmap`] module for the rules).
    /// Bad ranges (empty, inverted, unaligned, beyond the address space) are errors and
    /// change nothing.
    pub fn unmap(
        &mut self,
        mem: &mut Memory,
        space: &mut AddressSpace,
        start: u64,
        end: u64,
        shootdowns: &mut Vec<Shootdown>,
    ) -> Result<(), ModelError> {
        let align = match self {
            Os::Fixed(p) => p.page_size,
            _ => PageSize::K4,
        };
        unmap::check_range(space, start, end, align)?;
        let (fmt, root, asid) = (space.fmt, space.root, space.asid);
        unmap::split_straddlers(mem, space, start, end, self.stats_mut(), shootdowns)?;
        let maps = remap::clear_leaves(mem, fmt, root, start, end);
        if let Os::Reservation(p) = self {
            p.unmap_frames(mem, asid, start, end, &maps);
        } else {
            for m in &maps {
                free_leaf(mem, m);
            }
        }
        let stats = self.stats_mut();
        for m in &maps {
            stats.record_unmap(m.size);
        }
        unmap::free_tables_inside(mem, space, start, end);
        // Pages of the range in swap are discarded with it: a later touch is a fresh
        // fault, not a swap-in.
        mem.swap.drop_range(asid, start, end);
        space.remove_range(start, end);
        shootdowns.push((asid, start, end));
        stats.event("munmaps");
        Ok(())
    }

    /// The policy's counters.
    pub fn stats(&self) -> &OsStats {
        match self {
            Os::Base(p) => &p.stats,
            Os::Fixed(p) => &p.stats,
            Os::Reservation(p) => &p.stats,
            Os::Thp(p) => &p.stats,
            Os::Mthp(p) => &p.stats,
        }
    }

    fn stats_mut(&mut self) -> &mut OsStats {
        match self {
            Os::Base(p) => &mut p.stats,
            Os::Fixed(p) => &mut p.stats,
            Os::Reservation(p) => &mut p.stats,
            Os::Thp(p) => &mut p.stats,
            Os::Mthp(p) => &mut p.stats,
        }
    }

    /// The config name of the policy.
    pub fn name(&self) -> &'static str {
        match self {
            Os::Base(_) => "base",
            Os::Fixed(_) => "fixed",
            Os::Reservation(_) => "reservation",
            Os::Thp(p) => p.name(),
            Os::Mthp(_) => "mthp",
        }
    }
}

/// Order (log2 of 4 KiB frames) of a page size.
pub(crate) fn order_of(size: PageSize) -> u32 {
    size.shift() - FRAME_SHIFT
}

/// Frees the frames a leaf maps.
pub(crate) fn free_leaf(mem: &mut Memory, m: &Mapping) {
    mem.buddy.free(m.pa >> FRAME_SHIFT, order_of(m.size));
}

/// Frees `count` frames from `pfn` (any alignment) in maximal aligned blocks.
pub(crate) fn free_run(mem: &mut Memory, mut pfn: u64, count: u64) {
    let end = pfn + count;
    while pfn < end {
        let mut order = pfn.trailing_zeros().min(crate::mem::MAX_ORDER);
        while pfn + (1 << order) > end {
            order -= 1;
        }
        mem.buddy.free(pfn, order);
        pfn += 1 << order;
    }
}

/// Allocates physical memory for one page of `size` and maps it at the aligned address
/// containing `va`, read-write. Shared by the demand-paging policies.
pub(crate) fn map_new_page(ctx: &mut FaultCtx<'_>, size: PageSize, stats: &mut OsStats) -> Result<(), ModelError> {
    let pfn = ctx
        .mem
        .buddy
        .alloc(order_of(size))
        .ok_or_else(|| ctx.mem.buddy.oom(&format!("a {size} page at va {:#x}", ctx.va)))?;
    let va = ctx.va & !size.offset_mask();
    let pa = pfn << FRAME_SHIFT;
    if let Err(e) = map_leaf(ctx.mem, ctx.space.fmt, ctx.space.root, va, pa, size, Attrs::user_rw()) {
        ctx.mem.buddy.free(pfn, order_of(size));
        return Err(e);
    }
    stats.record_map(size);
    Ok(())
}

/// The attributes a fresh anonymous page gets: read-write, and already dirty and
/// accessed if the faulting access was a store (as pmap_enter / do_anonymous_page do).
pub(crate) fn fresh_attrs(kind: AccessKind) -> Attrs {
    match kind {
        AccessKind::Store => Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED),
        _ => Attrs::user_rw().with(Attrs::ACCESSED),
    }
}
