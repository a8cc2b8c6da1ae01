//! OS policies: the only components that write leaf descriptors for user memory. A
//! policy decides, at a fault and in the background, which page size backs which
//! virtual range.
//!
//! Contract:
//! * [`Os::handle_fault`] (the policy's [`OsPolicy::fault`] inside) is called when a
//!   hardware walk reaches an invalid descriptor (or a store finds a read-only page). It must leave a valid leaf covering the faulting
//!   address (writable if the access was a store) or return an error, and push onto
//!   `shootdowns` every range whose existing translations it changed, so the machine
//!   can invalidate TLBs and walk caches.
//! * [`OsPolicy::tick`] is called by the machine every `os.tick_interval` references
//!   (never per reference: the hot path stays a counter compare), with the simulated
//!   time when the machine has a clock (`TickCtx::now_ns`). Background work
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
//!   (crates/model/tests/it/os_contract.rs) check this for every policy.
//!
//! Adding a policy: a file here with a struct implementing [`OsPolicy`] (`fault`, and
//! whichever hooks with defaults it needs: `tick`, `exit_space`, `shrink`, `unmap_frames`,
//! `reclaim`…); a row in the `policies!` table below (which generates the closed [`Os`]
//! enum and its static dispatch, so no hook can be forgotten by a hand-written match);
//! the sim crate's `os.policy` config (config_os.rs: a variant of `OsSpec` holding the
//! policy's config type, which derives `Deserialize`, and its keys); a row in the contract
//! suite's list of policies; a section in docs/policies.md.

mod anon_folio;
mod base;
pub mod compact;
mod fixed;
pub mod granule;
mod madvise;
mod mthp;
pub mod reclaim;
pub mod remap;
mod reservation;
mod shrinker;
mod stats;
mod thp;
pub mod unmap;
pub(crate) mod zero;

pub use base::Base;
pub use fixed::Fixed;
pub use madvise::Advice;
pub use mthp::{Mthp, MthpConfig};
pub use reclaim::ReclaimConfig;
pub use reservation::{MidSize, Reservation, ReservationConfig};
pub use shrinker::{Contents, DeferredSplit, ScanSettings};
pub use stats::{MthpCounts, OsEvent, OsEvents, OsStats};
pub use thp::{Defrag, Enabled, KhugepagedConfig, SizeMode, Thp, ThpConfig};

use crate::addr::{Asid, PageSize, FRAME_SHIFT};
use crate::error::ModelError;
use crate::mem::numa::At;
use crate::mem::Memory;
use crate::space::AddressSpace;
use crate::translation::Attrs;
use crate::walk::{map_leaf, Mapping};
use mmulab_base::AccessKind;

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
    /// References simulated so far (the clock of background work on a machine without
    /// a clock).
    pub now: u64,
    /// Simulated nanoseconds so far, on a machine with a clock (`machine.clock_mhz`):
    /// then background work runs on this clock (khugepaged's `scan_sleep_millisecs`).
    pub now_ns: Option<u64>,
    /// Ranges whose translations changed.
    pub shootdowns: &'a mut Vec<Shootdown>,
}

/// An OS policy: what each kind of policy must and may do. Only `fault` and the
/// counters are required; every other hook has a documented default that is right for
/// a policy keeping no state beyond its page tables. [`Os`] wraps every policy with the
/// work common to all (swap-in, reclaim and retry around faults, page-table teardown at
/// exit, the munmap rules) and calls these hooks from it.
pub trait OsPolicy {
    /// The config name (`os.policy`).
    fn name(&self) -> &'static str;
    /// The policy's counters.
    fn stats(&self) -> &OsStats;
    /// The policy's counters, to count into.
    fn stats_mut(&mut self) -> &mut OsStats;
    /// Handles a fault: must leave a valid leaf covering `ctx.va` (writable for a store)
    /// or return an error, and push every range whose existing translations changed.
    fn fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError>;
    /// Background work every `os.tick_interval` references, under the same shootdown
    /// rule. Default: none.
    fn tick(&mut self, _ctx: TickCtx<'_>) -> Result<(), ModelError> {
        Ok(())
    }
    /// Whether [`OsPolicy::tick`] can do anything: a policy that overrides it says so
    /// (the machine then skips the ticks of one that does not, when nothing else is
    /// due at them). Default: false, as the default `tick`.
    fn has_tick(&self) -> bool {
        false
    }
    /// The reclaim settings of a policy that reclaims under memory pressure (THP
    /// shrinker, swap-out). Default: `None`, the policy does not reclaim and out of
    /// memory is an error.
    fn reclaim(&self) -> Option<&ReclaimConfig> {
        None
    }
    /// The reclaim settings to set, for a policy that reclaims. Default: `None`.
    fn reclaim_mut(&mut self) -> Option<&mut ReclaimConfig> {
        None
    }
    /// The policy's own reclaim, tried before swap-out (the THP shrinker): frees up to
    /// `want` frames, returns how many it freed. Default: frees nothing.
    fn shrink(&mut self, _mem: &mut Memory, _cfg: &ReclaimConfig, _shootdowns: &mut Vec<Shootdown>, _want: u64) -> u64 {
        0
    }
    /// Address space `asid` ends: drop the policy's state for it (its page tables and
    /// leaves are torn down by [`Os::exit`] after this). Default: nothing to drop.
    fn exit_space(&mut self, _mem: &mut Memory, _asid: Asid) {}
    /// Turns Linux's zero pages on or off (`os.zero_page`; zero.rs). Returns false if
    /// the policy has none (the default: `fixed`, and `reservation`, since FreeBSD
    /// allocates a zeroed page on a read fault).
    fn set_zero_page(&mut self, _on: bool) -> bool {
        false
    }
    /// The alignment munmap ranges must have. Default: the 4 KiB base page.
    fn unmap_align(&self) -> PageSize {
        PageSize::K4
    }
    /// Frees the frames of the leaves munmap cleared from `[start, end)` of `asid`.
    /// Default: every leaf's frames go back to the buddy allocator.
    fn unmap_frames(&mut self, mem: &mut Memory, _asid: Asid, _start: u64, _end: u64, maps: &[Mapping]) {
        for m in maps {
            free_leaf(mem, m);
        }
    }
}

/// The [`OsPolicy`] hooks of a policy whose counters are its `stats` field (and, with
/// `reclaim`, whose reclaim settings are its `reclaim` field): one copy instead of the
/// same accessors in every policy's file.
macro_rules! policy_fields {
    (stats) => {
        fn stats(&self) -> &$crate::os::OsStats {
            &self.stats
        }

        fn stats_mut(&mut self) -> &mut $crate::os::OsStats {
            &mut self.stats
        }
    };
    (stats, reclaim) => {
        $crate::os::policy_fields!(stats);

        fn reclaim(&self) -> Option<&$crate::os::ReclaimConfig> {
            Some(&self.reclaim)
        }

        fn reclaim_mut(&mut self) -> Option<&mut $crate::os::ReclaimConfig> {
            Some(&mut self.reclaim)
        }
    };
}
pub(crate) use policy_fields;

/// One table defines the closed set of policies: the [`Os`] enum and the static
/// dispatch of every [`OsPolicy`] hook to its variant.
macro_rules! policies {
    ($($(#[doc = $doc:literal])* $variant:ident($ty:ty),)*) => {
        /// The configured policy (closed enum: static dispatch).
        #[derive(Clone, Debug)]
        pub enum Os {
            $($(#[doc = $doc])* $variant($ty),)*
        }

        impl OsPolicy for Os {
            fn name(&self) -> &'static str {
                match self { $(Os::$variant(p) => p.name(),)* }
            }
            fn stats(&self) -> &OsStats {
                match self { $(Os::$variant(p) => p.stats(),)* }
            }
            fn stats_mut(&mut self) -> &mut OsStats {
                match self { $(Os::$variant(p) => p.stats_mut(),)* }
            }
            fn fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
                match self { $(Os::$variant(p) => p.fault(ctx),)* }
            }
            fn tick(&mut self, ctx: TickCtx<'_>) -> Result<(), ModelError> {
                match self { $(Os::$variant(p) => p.tick(ctx),)* }
            }
            fn has_tick(&self) -> bool {
                match self { $(Os::$variant(p) => p.has_tick(),)* }
            }
            fn reclaim(&self) -> Option<&ReclaimConfig> {
                match self { $(Os::$variant(p) => p.reclaim(),)* }
            }
            fn reclaim_mut(&mut self) -> Option<&mut ReclaimConfig> {
                match self { $(Os::$variant(p) => p.reclaim_mut(),)* }
            }
            fn shrink(&mut self, mem: &mut Memory, cfg: &ReclaimConfig, sd: &mut Vec<Shootdown>, want: u64) -> u64 {
                match self { $(Os::$variant(p) => p.shrink(mem, cfg, sd, want),)* }
            }
            fn exit_space(&mut self, mem: &mut Memory, asid: Asid) {
                match self { $(Os::$variant(p) => p.exit_space(mem, asid),)* }
            }
            fn set_zero_page(&mut self, on: bool) -> bool {
                match self { $(Os::$variant(p) => p.set_zero_page(on),)* }
            }
            fn unmap_align(&self) -> PageSize {
                match self { $(Os::$variant(p) => p.unmap_align(),)* }
            }
            fn unmap_frames(&mut self, mem: &mut Memory, asid: Asid, start: u64, end: u64, maps: &[Mapping]) {
                match self { $(Os::$variant(p) => p.unmap_frames(mem, asid, start, end, maps),)* }
            }
        }
    };
}

policies! {
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
    pub fn handle_fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        let Some(cfg) = self.reclaim().filter(|c| c.enabled).copied() else {
            return self.fault(ctx);
        };
        if ctx.mem.buddy.free_frames() < cfg.min_free_pages {
            self.reclaim_frames(
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
            match self.fault(again) {
                Err(ModelError::OutOfMemory(msg)) => {
                    if self.reclaim_frames(ctx.mem, &cfg, ctx.shootdowns, cfg.batch_pages) == 0 {
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

    /// Frees at least `want` frames if it can (the policy's own reclaim, then
    /// swap-out); returns the frames freed.
    fn reclaim_frames(
        &mut self,
        mem: &mut Memory,
        cfg: &ReclaimConfig,
        shootdowns: &mut Vec<Shootdown>,
        want: u64,
    ) -> u64 {
        self.stats_mut().event(OsEvent::ReclaimRuns);
        let mut freed = self.shrink(mem, cfg, shootdowns, want);
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
        let at = numa_at(mem, space, page);
        let mut pfn = mem.alloc_pages(order_of(base), at);
        if pfn.is_none() && self.reclaim_frames(mem, cfg, shootdowns, cfg.batch_pages) > 0 {
            pfn = mem.alloc_pages(order_of(base), at);
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
        stats.event(OsEvent::SwapIns);
        stats.os_cycles += cfg.swap_in_cycles;
        Ok(())
    }

    /// Sets the reclaim settings. A policy that does not reclaim (`fixed`,
    /// `reservation`) refuses settings that turn reclaim on, rather than ignoring them.
    pub fn set_reclaim(&mut self, cfg: ReclaimConfig) -> Result<(), String> {
        let name = self.name();
        match self.reclaim_mut() {
            Some(r) => *r = cfg,
            None if cfg.enabled => {
                return Err(format!(
                    "os.reclaim.enabled = true: policy \"{name}\" does not reclaim (policies base, thp, khugepaged and mthp do)"
                ))
            }
            None => {}
        }
        Ok(())
    }

    /// Ends `space`: the policy drops its state for it, then every leaf's frames and
    /// every page table are freed.
    pub fn exit(&mut self, mem: &mut Memory, space: &AddressSpace) {
        self.exit_space(mem, space.asid);
        let stats = self.stats_mut();
        for m in remap::teardown(mem, space.fmt, space.root) {
            free_leaf(mem, &m);
            stats.record_unmap(m.size);
        }
        stats.event(OsEvent::Exits);
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
        let align = self.unmap_align();
        unmap::check_range(space, start, end, align)?;
        let (fmt, root, asid) = (space.fmt, space.root, space.asid);
        let split = self.linux_split(unmap::Split::Unmap);
        unmap::split_straddlers(mem, space, start, end, self.stats_mut(), shootdowns, split)?;
        let maps = remap::clear_leaves(mem, fmt, root, start, end);
        self.unmap_frames(mem, asid, start, end, &maps);
        let stats = self.stats_mut();
        for m in &maps {
            stats.record_unmap(m.size);
        }
        space.remove_range(start, end);
        unmap::free_tables_inside(mem, space, start, end);
        // Pages of the range in swap are discarded with it: a later touch is a fresh
        // fault, not a swap-in.
        mem.swap.drop_range(asid, start, end);
        shootdowns.push((asid, start, end));
        stats.event(OsEvent::Munmaps);
        Ok(())
    }

    /// How a Linux policy counts a PMD split for `why` (`THP_SPLIT_PMD`, and a deferred
    /// split when part of the page goes); FreeBSD's and the fixed policy count neither.
    pub(crate) fn linux_split(&self, why: unmap::Split) -> unmap::Split {
        match self {
            Os::Base(_) | Os::Thp(_) | Os::Mthp(_) => why,
            Os::Fixed(_) | Os::Reservation(_) => unmap::Split::Uncounted,
        }
    }

    /// Linux's THP shrinker (shrinker.rs) for policies `thp` and `khugepaged`; with
    /// `want = u64::MAX` as `echo 2 > /proc/sys/vm/drop_caches` runs it. Other policies
    /// have none and free nothing. Returns the 4 KiB frames freed.
    pub fn deferred_split_scan(
        &mut self,
        mem: &mut Memory,
        contents: Contents<'_>,
        want: u64,
        shootdowns: &mut Vec<Shootdown>,
    ) -> u64 {
        match self {
            Os::Thp(t) => t.deferred_split_scan(mem, contents, want, shootdowns),
            _ => 0,
        }
    }

    /// The policy's counters (also [`OsPolicy::stats`]).
    pub fn stats(&self) -> &OsStats {
        OsPolicy::stats(self)
    }

    /// The config name of the policy (also [`OsPolicy::name`]).
    pub fn name(&self) -> &'static str {
        OsPolicy::name(self)
    }
}

/// Order (log2 of 4 KiB frames) of a page size.
pub(crate) fn order_of(size: PageSize) -> u32 {
    size.shift() - FRAME_SHIFT
}

/// Frees the frames a leaf maps.
pub(crate) fn free_leaf(mem: &mut Memory, m: &Mapping) {
    // A leaf on a zero page frees nothing (the zero pages are never freed; zero.rs).
    if mem.zero.contains_pa(m.pa) {
        mem.zero.unmapped(m.size);
        return;
    }
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
/// containing `va` with `attrs` (read-write; [`linux_anon_attrs`] or [`fresh_attrs`]).
/// Shared by the demand-paging policies.
pub(crate) fn map_new_page(
    ctx: &mut FaultCtx<'_>,
    size: PageSize,
    attrs: Attrs,
    stats: &mut OsStats,
) -> Result<(), ModelError> {
    let va = ctx.va & !size.offset_mask();
    let at = numa_at(ctx.mem, ctx.space, va);
    let pfn = ctx
        .mem
        .alloc_pages(order_of(size), at)
        .ok_or_else(|| ctx.mem.buddy.oom(&format!("a {size} page at va {:#x}", ctx.va)))?;
    let pa = pfn << FRAME_SHIFT;
    if let Err(e) = map_leaf(ctx.mem, ctx.space.fmt, ctx.space.root, va, pa, size, attrs) {
        ctx.mem.buddy.free(pfn, order_of(size));
        return Err(e);
    }
    stats.record_map(size);
    Ok(())
}

/// Where the unit at `addr` of `space` lies for the NUMA policy (its VMA), when nodes
/// are emulated; `None` otherwise, without consulting (or inferring) a VMA.
pub(crate) fn numa_at(mem: &Memory, space: &mut AddressSpace, addr: u64) -> Option<At> {
    mem.numa.as_ref()?;
    Some(At::anon(&space.vma(addr), addr))
}

/// The attributes FreeBSD gives a fresh anonymous page: read-write and accessed, and
/// dirty only if the faulting access was a store. amd64 `pmap_enter`: `newpte = pa |
/// PG_A | PG_V`, `PG_M` only `if ((flags & VM_PROT_WRITE) != 0)`; arm64 `pmap_enter`:
/// `ATTR_AF` in the new L3 entry, `ATTR_S1_AP_RO` (with `ATTR_SW_DBM`: clean) unless the
/// access was a write. Also a swap-in (`do_swap_page` makes the entry dirty only for a
/// write fault) and the `fixed` policy.
pub(crate) fn fresh_attrs(kind: AccessKind) -> Attrs {
    match kind {
        AccessKind::Store => Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED),
        _ => Attrs::user_rw().with(Attrs::ACCESSED),
    }
}

/// The attributes of a fresh anonymous page of a Linux policy: Linux's
/// ([`linux_anon_attrs`]), with zero pages on or off. With `os.zero_page` on a page is
/// allocated only at a write fault (or an instruction fetch); with it off a read fault
/// allocates too, and `do_anonymous_page` still maps the page dirty in a writable VMA
/// (`pte_mkwrite(pte_mkdirty(entry))` does not look at the fault's kind). Before #49
/// mmulab mapped it clean there, FreeBSD's rule ([`fresh_attrs`]), which `base` keeps
/// with zero pages off (it stands for FreeBSD's base pages then).
pub(crate) fn anon_attrs(kind: AccessKind, _zero_page: bool) -> Attrs {
    linux_anon_attrs(kind)
}

/// The attributes Linux gives a fresh anonymous page (base page, mTHP folio or THP): mapped
/// young, since `vm_page_prot` carries the accessed bit (x86 `PAGE_SHARED`/`PAGE_COPY`:
/// `___A`; arm64 `PROT_DEFAULT`: `PTE_AF`; ARMv7 `pgprot_user`: `L_PTE_YOUNG`), and dirty
/// in a writable VMA whether the fault was a read or a write: mm/memory.c
/// `do_anonymous_page` (`folio_mk_pte(folio, vma->vm_page_prot)`, `pte_sw_mkyoung`, `if
/// (vma->vm_flags & VM_WRITE) entry = pte_mkwrite(pte_mkdirty(entry), vma)`), and for a
/// THP mm/huge_memory.c `__do_huge_pmd_anonymous_page` (`mk_huge_pmd(page,
/// vma->vm_page_prot)`, `maybe_pmd_mkwrite(pmd_mkdirty(entry), vma)`). With zero pages on
/// only a write fault reaches the allocation (and a THP read fault with
/// `use_zero_page = false`). An instruction fetch is a file-backed text page in Linux
/// (`finish_fault` → `set_pte_range`: young, dirty only for a write): young, clean.
pub(crate) fn linux_anon_attrs(kind: AccessKind) -> Attrs {
    match kind {
        AccessKind::IFetch => Attrs::user_rw().with(Attrs::ACCESSED),
        _ => Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED),
    }
}
