//! Linux's zero pages in the Linux policies (`base`, `thp`, `khugepaged`, `mthp`), when
//! `os.zero_page` is on:
//!
//! * A read fault on untouched anonymous memory maps the shared zero page read-only and
//!   allocates nothing (mm/memory.c `do_anonymous_page`: `!(vmf->flags &
//!   FAULT_FLAG_WRITE)` → `my_zero_pfn`, `pte_mkspecial`, no `pte_mkwrite`). mTHP too:
//!   `alloc_anon_folio` is reached only on write faults.
//! * The first store to it is a second fault, a copy-on-write fault: a fresh page
//!   replaces the zero page's entry (`do_wp_page` → `wp_page_copy`, which allocates an
//!   order-0 page, zero-filled since the source is the zero pfn). Load then store: two
//!   faults.
//! * Under THP with `use_zero_page`, a read fault on an empty, suitable PMD range maps
//!   the huge zero page (mm/huge_memory.c `do_huge_pmd_anonymous_page`,
//!   `mm_get_huge_zero_folio`, `set_huge_zero_folio`); if it cannot be allocated the fault
//!   falls back (`THP_FAULT_FALLBACK`). A store to it allocates a huge page (since 6.13,
//!   mm/huge_memory.c `do_huge_zero_wp_pmd`, called from `do_huge_pmd_wp_page`: the
//!   huge zero PMD is replaced by a fresh PMD-mapped THP, counted `THP_FAULT_ALLOC`;
//!   the `thp` policy does this in its fault). Only if that allocation fails is the PMD
//!   split (`__split_huge_pmd` → `__split_huge_zero_page_pmd`: a page table whose every
//!   entry maps the 4 KiB zero page) and the fault handled at the PTE level as a COW
//!   from the zero page (one base page), which [`cow`] models. (Kernels before 6.13
//!   always split there; 3.8–3.x allocated a huge page too.)
//!
//! The frames live in [`crate::mem::zero`] (never freed or moved; counted once).
//! IFetches are not reads of anonymous data here: they allocate as before.

use super::{order_of, FaultCtx, OsEvent, OsStats};
use crate::addr::{PageSize, FRAME_SHIFT};
use crate::error::ModelError;
use crate::translation::Attrs;
use crate::walk::{lookup, map_leaf, Mapping};
use mmulab_base::AccessKind;

/// The attributes of a zero-page entry: user, read-only, young (a new entry is mapped
/// young, `mk_pte` with the VMA's protection).
pub(crate) fn zero_attrs() -> Attrs {
    Attrs(Attrs::USER | Attrs::ACCESSED)
}

/// The leaf mapping `ctx.va` if it maps a zero frame.
pub(crate) fn zero_leaf(ctx: &mut FaultCtx<'_>) -> Option<Mapping> {
    let m = lookup(ctx.mem, ctx.space.fmt, ctx.space.root, ctx.va)?;
    ctx.mem.zero.contains_pa(m.pa).then_some(m)
}

/// The base zero page's first frame, allocated at first use.
fn small_zero(ctx: &mut FaultCtx<'_>, base: PageSize) -> Result<u64, ModelError> {
    small_zero_pfn(ctx.mem, base).ok_or_else(|| ctx.mem.buddy.oom("the zero page"))
}

/// The base zero page's first frame, allocated at first use; `None` if no frame is free.
pub(crate) fn small_zero_pfn(mem: &mut crate::mem::Memory, base: PageSize) -> Option<u64> {
    if let Some((p, _)) = mem.zero.small {
        return Some(p);
    }
    let pfn = mem.buddy.alloc(order_of(base))?;
    mem.zero.small = Some((pfn, order_of(base)));
    Some(pfn)
}

/// Maps the base zero page read-only at the base page holding `ctx.va`.
pub(crate) fn map_zero_page(ctx: &mut FaultCtx<'_>, stats: &mut OsStats) -> Result<(), ModelError> {
    let base = ctx.space.fmt.base_page();
    let pfn = small_zero(ctx, base)?;
    let va = ctx.va & !base.offset_mask();
    map_leaf(
        ctx.mem,
        ctx.space.fmt,
        ctx.space.root,
        va,
        pfn << FRAME_SHIFT,
        base,
        zero_attrs(),
    )?;
    ctx.mem.zero.mapped(base);
    stats.record_leaf(base);
    stats.event(OsEvent::ZeroPageMaps);
    Ok(())
}

/// Maps the huge zero page of `size` at the aligned range holding `ctx.va` (the range is
/// empty and inside its VMA: the caller checked). False if no huge zero page could be
/// allocated (the fault falls back).
pub(crate) fn map_huge_zero(ctx: &mut FaultCtx<'_>, size: PageSize, stats: &mut OsStats) -> Result<bool, ModelError> {
    let pfn = match ctx.mem.zero.huge {
        Some((p, _)) => p,
        None => match ctx.mem.buddy.alloc(order_of(size)) {
            Some(p) => {
                ctx.mem.zero.huge = Some((p, order_of(size)));
                stats.event(OsEvent::ThpZeroPageAlloc);
                p
            }
            None => return Ok(false),
        },
    };
    let (fmt, root) = (ctx.space.fmt, ctx.space.root);
    let key = ctx.va & !size.offset_mask();
    super::remap::drop_table(ctx.mem, fmt, root, key, size);
    map_leaf(ctx.mem, fmt, root, key, pfn << FRAME_SHIFT, size, zero_attrs())?;
    ctx.mem.zero.mapped(size);
    stats.record_leaf(size);
    stats.event(OsEvent::HugeZeroPageMaps);
    Ok(true)
}

/// A store faulted on the zero leaf `m`: a huge zero leaf is split into base zero
/// entries first; then the faulting base entry gets a fresh page (COW from zero).
pub(crate) fn cow(ctx: &mut FaultCtx<'_>, m: Mapping, stats: &mut OsStats) -> Result<(), ModelError> {
    let (fmt, root, asid) = (ctx.space.fmt, ctx.space.root, ctx.space.asid);
    let base = fmt.base_page();
    if m.size > base {
        // __split_huge_zero_page_pmd: every base entry maps the base zero page.
        let zero = small_zero(ctx, base)?;
        super::remap::clear_leaves(ctx.mem, fmt, root, m.va, m.va + m.size.bytes());
        ctx.mem.zero.unmapped(m.size);
        stats.record_unmap(m.size);
        for off in (0..m.size.bytes()).step_by(base.bytes() as usize) {
            map_leaf(ctx.mem, fmt, root, m.va + off, zero << FRAME_SHIFT, base, zero_attrs())?;
            ctx.mem.zero.mapped(base);
            stats.record_leaf(base);
        }
        stats.demotions[m.size.index()] += 1;
        stats.event(OsEvent::HugeZeroPageSplits);
        stats.event(OsEvent::ThpSplitPmd);
        ctx.shootdowns.push((asid, m.va, m.va + m.size.bytes()));
    }
    // wp_page_copy: an order-0 page (zero-filled: the source is the zero pfn).
    let va = ctx.va & !base.offset_mask();
    let pfn = ctx
        .mem
        .buddy
        .alloc(order_of(base))
        .ok_or_else(|| ctx.mem.buddy.oom(&format!("the copy of the zero page at va {va:#x}")))?;
    super::remap::clear_leaves(ctx.mem, fmt, root, va, va + base.bytes());
    ctx.mem.zero.unmapped(base);
    stats.record_unmap(base);
    let attrs = Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED);
    if let Err(e) = map_leaf(ctx.mem, fmt, root, va, pfn << FRAME_SHIFT, base, attrs) {
        ctx.mem.buddy.free(pfn, order_of(base));
        return Err(e);
    }
    stats.record_map(base);
    stats.event(OsEvent::CowFromZero);
    ctx.shootdowns.push((asid, va, va + base.bytes()));
    Ok(())
}

/// The zero-page part of a Linux fault at base-page level: a store to a zero leaf is a
/// COW (true); a load on an address with no leaf maps the zero page (true); anything
/// else is left to the policy (false).
pub(crate) fn fault(ctx: &mut FaultCtx<'_>, stats: &mut OsStats) -> Result<bool, ModelError> {
    match ctx.kind {
        AccessKind::Store => match zero_leaf(ctx) {
            Some(m) => cow(ctx, m, stats).map(|()| true),
            None => Ok(false),
        },
        AccessKind::Load => {
            if lookup(ctx.mem, ctx.space.fmt, ctx.space.root, ctx.va).is_some() {
                return Ok(false);
            }
            map_zero_page(ctx, stats).map(|()| true)
        }
        AccessKind::IFetch => Ok(false),
    }
}
