//! The mTHP part of the `thp` policy's fault: mm/memory.c `alloc_anon_folio`, reached from
//! `do_anonymous_page` when no PMD-sized page was mapped. The allowed sizes below the PMD
//! size (`os.thp.sizes`, thp.rs) are tried largest first: a size whose naturally aligned
//! range does not fit the VMA (`thp_vma_suitable_orders`) or is not wholly empty
//! (`pte_range_none`) is skipped uncounted; a size whose allocation fails counts
//! `anon_fault_fallback` for that size and the next is tried; the first allocated folio
//! counts `anon_fault_alloc` and is mapped with one `set_ptes` batch. If none is had,
//! the caller maps a base page.
//!
//! The folio is mapped as the `mthp` policy maps one (mthp.rs): in the largest unit the
//! format maps as one leaf or contiguous group that fits it, base-page leaves on x86-64.

use super::remap::leaves;
use super::{FaultCtx, OsEvent, OsStats};
use crate::addr::{FolioSize, FRAME_SHIFT};
use crate::error::ModelError;
use crate::mem::numa::At;
use crate::space::Vma;
use crate::translation::Attrs;
use crate::walk::map_leaf;

/// Tries `sizes` (largest first) for the fault in `ctx`; true if a folio was mapped.
pub(crate) fn map_folio(
    ctx: &mut FaultCtx<'_>,
    vma: &Vma,
    sizes: &[FolioSize],
    attrs: Attrs,
    stats: &mut OsStats,
) -> Result<bool, ModelError> {
    let (fmt, root) = (ctx.space.fmt, ctx.space.root);
    let base = fmt.base_page();
    for &size in sizes {
        let key = ctx.va & !size.offset_mask();
        if !vma.contains_range(key, key + size.bytes()) {
            continue;
        }
        if ctx.mem.swap.any_in(ctx.space.asid, key, key + size.bytes())
            || !leaves(ctx.mem, fmt, root, key, key + size.bytes()).is_empty()
        {
            continue;
        }
        let Some(pfn) = ctx.mem.alloc_pages(size.order(), Some(At::anon(vma, key))) else {
            stats.mthp_of(size).anon_fault_fallback += 1;
            stats.event(OsEvent::MthpFallbackNoMemory);
            continue;
        };
        let pa = pfn << FRAME_SHIFT;
        let unit = fmt
            .page_sizes()
            .into_iter()
            .filter(|&p| p.bytes() <= size.bytes())
            .max()
            .unwrap_or(base);
        for off in (0..size.bytes()).step_by(unit.bytes() as usize) {
            if let Err(e) = map_leaf(ctx.mem, fmt, root, key + off, pa + off, unit, attrs) {
                if off == 0 {
                    ctx.mem.buddy.free(pfn, size.order());
                }
                return Err(e);
            }
            stats.record_leaf(unit);
        }
        if let Some(p) = size.page() {
            stats.mapped[p.index()] += 1;
        }
        if unit.bytes() < size.bytes() {
            let folio = crate::space::Folio {
                pa,
                size,
                partial: false,
            };
            ctx.space.folios.insert(key, folio);
        }
        stats.mthp_of(size).anon_fault_alloc += 1;
        if unit == base {
            stats.event(OsEvent::FoliosWithoutContpte);
        }
        return Ok(true);
    }
    Ok(false)
}
