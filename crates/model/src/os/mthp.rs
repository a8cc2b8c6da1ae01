//! Linux multi-size THP (anonymous mTHP, 6.8+): a set of enabled folio sizes; at a
//! fault, the largest enabled size whose aligned range lies inside the VMA, has no page
//! mapped yet, and has a free block of its order is allocated (`alloc_anon_folio`).
//!
//! Sizes the format can map as one leaf or group are mapped that way: 2 MiB as a block,
//! and on arm64 (4K granule) a 64 KiB folio as one contiguous-bit group of sixteen
//! entries (contpte), which a TLB that caches groups holds as one entry. Folios of a
//! size the format cannot map as one unit (16K on any 4K format; 64K on x86-64) are
//! mapped as base-page leaves covering the folio (counted as `folios_without_contpte`):
//! they cost what the allocation costs but buy no TLB reach.

use super::remap::leaves;
use super::OsEvent;
use super::{fresh_attrs, order_of, FaultCtx, OsStats};
use crate::addr::{PageSize, FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use crate::walk::map_leaf;

/// mTHP settings: the `[os.mthp]` config section itself (docs/config.md; every key
/// optional, defaulting to [`MthpConfig::default`]), validated by the sim crate.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MthpConfig {
    /// Enabled folio sizes (any of 16K … 2M), base size excluded.
    pub sizes: Vec<PageSize>,
    /// Cycles to zero each 4 KiB page of a folio beyond the first (the first is part of
    /// the fault latency, as for a base page).
    pub zero_cycles_per_page: u64,
}

impl Default for MthpConfig {
    fn default() -> Self {
        MthpConfig {
            sizes: vec![PageSize::K16, PageSize::K64, PageSize::M2],
            zero_cycles_per_page: 0,
        }
    }
}

/// The mTHP policy.
#[derive(Clone, Debug)]
pub struct Mthp {
    cfg: MthpConfig,
    /// Reclaim under memory pressure.
    pub reclaim: super::ReclaimConfig,
    /// Counters.
    pub stats: OsStats,
}

impl Mthp {
    /// A policy with `cfg` (sizes are sorted largest first).
    pub fn new(mut cfg: MthpConfig) -> Mthp {
        cfg.sizes.sort_by(|a, b| b.cmp(a));
        cfg.sizes.dedup();
        Mthp {
            cfg,
            reclaim: super::ReclaimConfig::default(),
            stats: OsStats::default(),
        }
    }
}

impl super::OsPolicy for Mthp {
    fn name(&self) -> &'static str {
        "mthp"
    }

    super::policy_fields!(stats, reclaim);

    /// Handles a fault.
    fn fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        let FaultCtx {
            mem, space, va, kind, ..
        } = ctx;
        let (fmt, root) = (space.fmt, space.root);
        let vma = space.vma(va);
        let attrs = fresh_attrs(kind);
        for &size in &self.cfg.sizes {
            let key = va & !size.offset_mask();
            if !vma.contains_range(key, key + size.bytes()) {
                continue;
            }
            if mem.swap.any_in(space.asid, key, key + size.bytes())
                || !leaves(mem, fmt, root, key, key + size.bytes()).is_empty()
            {
                continue;
            }
            let Some(pfn) = mem.buddy.alloc(order_of(size)) else {
                self.stats.event(OsEvent::MthpFallbackNoMemory);
                continue;
            };
            let pa = pfn << FRAME_SHIFT;
            self.stats.os_cycles += (size.bytes() / FRAME_SIZE - 1) * self.cfg.zero_cycles_per_page;
            if fmt.leaf_level(size).is_some() {
                super::remap::drop_table(mem, fmt, root, key, size);
                if let Err(e) = map_leaf(mem, fmt, root, key, pa, size, attrs) {
                    mem.buddy.free(pfn, order_of(size));
                    return Err(e);
                }
                self.stats.record_map(size);
            } else {
                for off in (0..size.bytes()).step_by(FRAME_SIZE as usize) {
                    // Only the first leaf can need a new page table (one aligned folio
                    // lies inside one last-level table).
                    if let Err(e) = map_leaf(mem, fmt, root, key + off, pa + off, PageSize::K4, attrs) {
                        if off == 0 {
                            mem.buddy.free(pfn, order_of(size));
                        }
                        return Err(e);
                    }
                    self.stats.record_leaf(PageSize::K4);
                }
                self.stats.mapped[size.index()] += 1;
                self.stats.event(OsEvent::FoliosWithoutContpte);
            }
            return Ok(());
        }
        let pfn = mem
            .buddy
            .alloc(0)
            .ok_or_else(|| mem.buddy.oom(&format!("a 4K page at va {va:#x}")))?;
        if let Err(e) = map_leaf(
            mem,
            fmt,
            root,
            va & !PageSize::K4.offset_mask(),
            pfn << FRAME_SHIFT,
            PageSize::K4,
            attrs,
        ) {
            mem.buddy.free(pfn, 0);
            return Err(e);
        }
        self.stats.record_map(PageSize::K4);
        Ok(())
    }
}
