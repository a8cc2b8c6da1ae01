//! Linux multi-size THP (anonymous mTHP, 6.8+): a set of enabled folio sizes; at a
//! fault, the largest enabled size whose aligned range lies inside the VMA, has no page
//! mapped yet, and has a free block of its order is allocated (`alloc_anon_folio`).
//!
//! Sizes follow the granule (granule.rs): anonymous orders 2 ..= `PMD_ORDER` of the
//! base page — 16K … 2M with 4 KiB pages, 64K … 32M with 16 KiB, 256K … 512M with 64 KiB.
//! With no `sizes` configured, mmulab's default for the format applies
//! (`granule::default_mthp_sizes`).
//!
//! A folio is mapped in the largest unit the format maps as one leaf or one
//! contiguous-bit group that fits it: a size the format maps as one unit (2 MiB as a
//! block; on arm64 with 4 KiB pages a 64 KiB folio as one group of sixteen entries) is
//! mapped that way; a larger folio is mapped as several such units, as arm64's contpte
//! code folds every aligned, fully covered `CONT_PTE_SIZE` range of a folio
//! (`arch/arm64/mm/contpte.c`: `contpte_set_ptes`; a 1 MiB folio on a 4 KiB granule is
//! sixteen 64 KiB groups); a TLB that caches groups holds each as one entry. Folios with
//! no unit above the base page (16K on any 4 KiB format; 64K on x86-64) are mapped as
//! base-page leaves (counted as `folios_without_contpte`): they cost what the allocation
//! costs but buy no TLB reach.

use super::granule::default_mthp_sizes;
use super::remap::leaves;
use super::OsEvent;
use super::{anon_attrs, order_of, FaultCtx, OsStats};
use crate::addr::{FolioSize, FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use crate::mem::numa::At;
use crate::walk::map_leaf;

/// mTHP settings: the `[os.mthp]` config section itself (docs/config.md; every key
/// optional, defaulting to [`MthpConfig::default`]), validated by the sim crate.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MthpConfig {
    /// Enabled folio sizes (orders 2 ..= PMD of the base page: 16K, 32K, … 2M with 4 KiB
    /// pages); `None`: mmulab's default for the format (`granule::default_mthp_sizes`).
    pub sizes: Option<Vec<FolioSize>>,
    /// Cycles to zero each 4 KiB of a folio beyond its first base page (the first is
    /// part of the fault latency, as for a base page).
    pub zero_cycles_per_page: u64,
}

/// The mTHP policy.
#[derive(Clone, Debug)]
pub struct Mthp {
    cfg: MthpConfig,
    /// Reclaim under memory pressure.
    pub reclaim: super::ReclaimConfig,
    /// Counters.
    pub stats: OsStats,
    /// Linux's zero page for read faults (`os.zero_page`; zero.rs): folios are then
    /// allocated only on write faults, as `alloc_anon_folio` is.
    pub zero_page: bool,
}

impl Mthp {
    /// A policy with `cfg` (sizes are sorted largest first).
    pub fn new(mut cfg: MthpConfig) -> Mthp {
        if let Some(sizes) = &mut cfg.sizes {
            sizes.sort_by(|a, b| b.cmp(a));
            sizes.dedup();
        }
        Mthp {
            cfg,
            reclaim: super::ReclaimConfig::default(),
            stats: OsStats::default(),
            zero_page: false,
        }
    }
}

impl super::OsPolicy for Mthp {
    fn name(&self) -> &'static str {
        "mthp"
    }

    super::policy_fields!(stats, reclaim);

    fn set_zero_page(&mut self, on: bool) -> bool {
        self.zero_page = on;
        true
    }

    /// Handles a fault (`alloc_anon_folio`, then `set_ptes`).
    fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        // do_anonymous_page: a read maps the zero page before alloc_anon_folio is
        // reached; a store to a zero-page entry is do_wp_page's order-0 copy.
        if self.zero_page && super::zero::fault(&mut ctx, &mut self.stats)? {
            return Ok(());
        }
        let FaultCtx {
            mem,
            space,
            va,
            kind,
            shootdowns,
            ..
        } = ctx;
        let (fmt, root) = (space.fmt, space.root);
        let base = fmt.base_page();
        let vma = space.vma(va);
        // do_anonymous_page: one entry, young and dirty, for every page of the folio.
        let attrs = anon_attrs(kind, self.zero_page);
        let default;
        let sizes: &[FolioSize] = match &self.cfg.sizes {
            Some(s) => s,
            None => {
                default = {
                    let mut v = default_mthp_sizes(fmt);
                    v.reverse();
                    v
                };
                &default
            }
        };
        for &size in sizes {
            let key = va & !size.offset_mask();
            if !vma.contains_range(key, key + size.bytes()) {
                continue;
            }
            if mem.swap.any_in(space.asid, key, key + size.bytes())
                || !leaves(mem, fmt, root, key, key + size.bytes()).is_empty()
            {
                continue;
            }
            let Some(pfn) = mem.alloc_pages(size.order(), Some(At::anon(&vma, key))) else {
                self.stats.event(OsEvent::MthpFallbackNoMemory);
                continue;
            };
            let pa = pfn << FRAME_SHIFT;
            self.stats.os_cycles += (size.bytes() - base.bytes()) / FRAME_SIZE * self.cfg.zero_cycles_per_page;
            // The largest unit (one leaf or one contiguous group) that fits the folio.
            let unit = fmt
                .page_sizes()
                .into_iter()
                .filter(|&p| p.bytes() <= size.bytes())
                .max()
                .unwrap_or(base);
            if FolioSize::from(unit) == size {
                // An empty table dropped: the walk caches may still point at it.
                if super::remap::drop_table(mem, fmt, root, key, unit) {
                    shootdowns.push((space.asid, key, key + size.bytes()));
                }
                if let Err(e) = map_leaf(mem, fmt, root, key, pa, unit, attrs) {
                    mem.buddy.free(pfn, size.order());
                    return Err(e);
                }
                self.stats.record_map(unit);
            } else {
                for off in (0..size.bytes()).step_by(unit.bytes() as usize) {
                    // Only the first unit can need a new page table (one aligned folio
                    // lies inside one last-level table).
                    if let Err(e) = map_leaf(mem, fmt, root, key + off, pa + off, unit, attrs) {
                        if off == 0 {
                            mem.buddy.free(pfn, size.order());
                        }
                        return Err(e);
                    }
                    self.stats.record_leaf(unit);
                }
                if let Some(p) = size.page() {
                    self.stats.mapped[p.index()] += 1;
                }
                let folio = crate::space::Folio {
                    pa,
                    size,
                    partial: false,
                };
                space.folios.insert(key, folio);
                if unit == base {
                    self.stats.event(OsEvent::FoliosWithoutContpte);
                }
            }
            return Ok(());
        }
        let pfn = mem
            .buddy
            .alloc(order_of(base))
            .ok_or_else(|| mem.buddy.oom(&format!("a {base} page at va {va:#x}")))?;
        if let Err(e) = map_leaf(
            mem,
            fmt,
            root,
            va & !base.offset_mask(),
            pfn << FRAME_SHIFT,
            base,
            attrs,
        ) {
            mem.buddy.free(pfn, order_of(base));
            return Err(e);
        }
        self.stats.record_map(base);
        Ok(())
    }
}
