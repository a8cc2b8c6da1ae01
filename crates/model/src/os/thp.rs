//! Linux transparent huge pages: the fault-time path (`do_huge_pmd_anonymous_page`) and
//! khugepaged's background collapse (`mm/khugepaged.c`).
//!
//! Fault: with `enabled = always` (or `madvise` and a VMA marked hugepage), if the
//! aligned 2 MiB range around the fault lies inside the VMA and has no page mapped yet,
//! allocate an order-9 block and map one 2 MiB leaf. If no free 2 MiB block exists, the
//! `defrag` mode decides: `always` (and `madvise` in a hugepage VMA) stalls in direct
//! compaction — its cost is charged (`compaction_cycles`) and, because page migration
//! is not modelled, it fails and the fault falls back to 4 KiB; `defer`, `defer+madvise` and `never` fall back to 4 KiB at
//! once (`defer` variants wake kswapd/kcompactd, which mmulab counts but does not model).
//!
//! khugepaged: every `scan_period` references it scans up to `pages_to_scan` base
//! pages' worth of 2 MiB ranges (a cursor over address spaces and ranges, using the
//! walker), and collapses a range that lies inside its VMA when its empty PTEs ≤
//! `max_ptes_none`: a new 2 MiB block is allocated, the present pages are copied
//! (`copy_cycles_per_page` each; missing ones are zero-filled), the old frames freed,
//! the page table dropped and one 2 MiB leaf installed.

use super::remap::{clear_leaves, drop_table, leaves};
use super::{fresh_attrs, map_new_page, order_of, FaultCtx, OsStats, TickCtx};
use crate::addr::{PageSize, FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use crate::mem::Memory;
use crate::pt::Pte;
use crate::translation::Attrs;
use crate::walk::{map_leaf, walk, Action, Visit, Visitor, WalkCounts, WalkFlags};

/// `/sys/kernel/mm/transparent_hugepage/enabled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enabled {
    /// Huge pages wherever possible.
    Always,
    /// Only in VMAs marked with madvise(MADV_HUGEPAGE).
    Madvise,
    /// Never at fault time.
    Never,
}

/// `/sys/kernel/mm/transparent_hugepage/defrag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defrag {
    /// Direct compaction on every huge fault that finds no free block.
    Always,
    /// Never stall; wake background compaction.
    Defer,
    /// Stall only in madvised VMAs, defer elsewhere.
    DeferMadvise,
    /// Stall only in madvised VMAs.
    Madvise,
    /// Never compact.
    Never,
}

/// Fault-time THP settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ThpConfig {
    /// When huge pages are used at fault.
    pub enabled: Enabled,
    /// What a huge fault does when no free 2 MiB block exists.
    pub defrag: Defrag,
    /// Cycles one direct-compaction attempt stalls the fault.
    pub compaction_cycles: u64,
    /// Cycles to zero a 4 KiB page (a 2 MiB fault zeroes 512).
    pub zero_cycles_per_page: u64,
}

impl Default for ThpConfig {
    fn default() -> Self {
        ThpConfig { enabled: Enabled::Always, defrag: Defrag::Madvise, compaction_cycles: 200_000, zero_cycles_per_page: 0 }
    }
}

/// khugepaged settings.
#[derive(Clone, Debug, PartialEq)]
pub struct KhugepagedConfig {
    /// Run the scanner.
    pub enabled: bool,
    /// Base pages' worth of 2 MiB ranges scanned per wake-up.
    pub pages_to_scan: u64,
    /// References between wake-ups.
    pub scan_period: u64,
    /// Collapse only when at most this many PTEs of the range are empty (0..=511).
    pub max_ptes_none: u64,
    /// Cycles to copy one 4 KiB page into the new huge page.
    pub copy_cycles_per_page: u64,
}

impl Default for KhugepagedConfig {
    fn default() -> Self {
        KhugepagedConfig { enabled: true, pages_to_scan: 4096, scan_period: 1_000_000, max_ptes_none: 511, copy_cycles_per_page: 1000 }
    }
}

/// THP at fault, optionally with khugepaged.
#[derive(Clone, Debug)]
pub struct Thp {
    /// Fault-time settings.
    pub cfg: ThpConfig,
    /// Scanner settings.
    pub khugepaged: KhugepagedConfig,
    last_scan: u64,
    cursor: (usize, u64),
    /// Counters.
    pub stats: OsStats,
    name: &'static str,
}

impl Thp {
    /// Policy `thp` (fault-time huge pages; khugepaged only if enabled in `k`).
    pub fn new(cfg: ThpConfig, k: KhugepagedConfig) -> Thp {
        Thp { cfg, khugepaged: k, last_scan: 0, cursor: (0, 0), stats: OsStats::default(), name: "thp" }
    }

    /// Policy `khugepaged`: 4 KiB pages at fault, collapsed in the background.
    pub fn khugepaged_only(k: KhugepagedConfig) -> Thp {
        let cfg = ThpConfig { enabled: Enabled::Never, ..ThpConfig::default() };
        Thp { name: "khugepaged", khugepaged: KhugepagedConfig { enabled: true, ..k }, ..Thp::new(cfg, KhugepagedConfig::default()) }
    }

    /// The config name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Handles a fault.
    pub fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        let size = PageSize::M2;
        let key = ctx.va & !size.offset_mask();
        let vma = ctx.space.vma(ctx.va);
        let want = match self.cfg.enabled {
            Enabled::Always => true,
            Enabled::Madvise => vma.hugepage,
            Enabled::Never => false,
        };
        if want && ctx.space.fmt.leaf_level(size).is_some() {
            if !vma.contains_range(key, key + size.bytes()) {
                self.stats.event("thp_fault_fallback_vma_edge");
            } else if !leaves(ctx.mem, ctx.space.fmt, ctx.space.root, key, key + size.bytes()).is_empty() {
                self.stats.event("thp_fault_fallback_range_busy");
            } else if let Some(pfn) = self.alloc_huge(ctx.mem, vma.hugepage) {
                drop_table(ctx.mem, ctx.space.fmt, ctx.space.root, key, size);
                map_leaf(ctx.mem, ctx.space.fmt, ctx.space.root, key, pfn << FRAME_SHIFT, size, fresh_attrs(ctx.kind))?;
                self.stats.record_map(size);
                self.stats.os_cycles += 512 * self.cfg.zero_cycles_per_page;
                self.stats.event("thp_fault_alloc");
                return Ok(());
            } else {
                self.stats.event("thp_fault_fallback");
            }
        }
        self.stats.os_cycles += self.cfg.zero_cycles_per_page;
        map_new_page(&mut ctx, PageSize::K4, &mut self.stats)
    }

    /// An order-9 block, with direct compaction per the defrag mode.
    fn alloc_huge(&mut self, mem: &mut Memory, madvised: bool) -> Option<u64> {
        if let Some(p) = mem.buddy.alloc(order_of(PageSize::M2)) {
            return Some(p);
        }
        let stall = match self.cfg.defrag {
            Defrag::Always => true,
            Defrag::Madvise | Defrag::DeferMadvise => madvised,
            Defrag::Defer | Defrag::Never => false,
        };
        if matches!(self.cfg.defrag, Defrag::Defer | Defrag::DeferMadvise) && !stall {
            self.stats.event("compaction_deferred");
        }
        if !stall {
            return None;
        }
        self.stats.event("compaction_stall");
        self.stats.os_cycles += self.cfg.compaction_cycles;
        // Page migration is not modelled: the stall is paid, the fault falls back.
        self.stats.event("compaction_fail");
        None
    }

    /// khugepaged's wake-up (see the module doc).
    pub fn tick(&mut self, ctx: TickCtx<'_>) -> Result<(), ModelError> {
        let k = &self.khugepaged;
        if !k.enabled || ctx.now < self.last_scan + k.scan_period {
            return Ok(());
        }
        self.last_scan = ctx.now;
        self.stats.event("khugepaged_wakeups");
        let mut budget = k.pages_to_scan;
        let size = PageSize::M2;
        let nspaces = ctx.spaces.len();
        let mut visited = 0;
        while budget > 0 && visited <= nspaces {
            let (si, from) = self.cursor;
            let Some(Some(space)) = ctx.spaces.get_mut(si) else {
                self.cursor = ((si + 1) % nspaces.max(1), 0);
                visited += 1;
                continue;
            };
            let (fmt, root, asid) = (space.fmt, space.root, space.asid);
            if fmt.leaf_level(size).is_none() {
                return Ok(());
            }
            // Find the next 2 MiB range with a last-level table at or after `from`.
            let top = fmt.levels()[0];
            let end = top.span().saturating_mul(top.entries() as u64);
            let mut f = FindTables { level: fmt.leaf_level(size).unwrap(), found: None, want_after: from };
            walk(ctx.mem, fmt, root, 0, from, end, WalkFlags::TABLE_PRE, &mut f, &mut WalkCounts::default());
            let Some((key, present)) = f.found else {
                self.cursor = ((si + 1) % nspaces.max(1), 0);
                visited += 1;
                continue;
            };
            self.cursor = (si, key + size.bytes());
            budget = budget.saturating_sub(512);
            self.stats.event("khugepaged_ranges_scanned");
            let none = 512 - present;
            let vma = space.vma(key);
            if none > k.max_ptes_none {
                self.stats.event("collapse_skipped_max_ptes_none");
                continue;
            }
            if !vma.contains_range(key, key + size.bytes()) {
                self.stats.event("collapse_skipped_vma_edge");
                continue;
            }
            let Some(pfn) = ctx.mem.buddy.alloc(order_of(size)) else {
                self.stats.event("collapse_failed_no_memory");
                continue;
            };
            let old = clear_leaves(ctx.mem, fmt, root, key, key + size.bytes());
            let mut attrs = Attrs::user_rw().with(Attrs::ACCESSED);
            for m in &old {
                if m.attrs.has(Attrs::DIRTY) {
                    attrs = attrs.with(Attrs::DIRTY);
                }
                super::free_leaf(ctx.mem, m);
                self.stats.record_unmap(m.size);
                self.stats.os_cycles += k.copy_cycles_per_page * (m.size.bytes() / FRAME_SIZE);
            }
            drop_table(ctx.mem, fmt, root, key, size);
            map_leaf(ctx.mem, fmt, root, key, pfn << FRAME_SHIFT, size, attrs)?;
            self.stats.record_map(size);
            self.stats.collapses += 1;
            ctx.shootdowns.push((asid, key, key + size.bytes()));
        }
        Ok(())
    }
}

/// Finds the first table descriptor at `level - 1` (pointing to a table of leaves
/// smaller than the superpage) covering a range at or after `want_after`, and counts
/// its valid entries.
struct FindTables {
    level: usize,
    found: Option<(u64, u64)>,
    want_after: u64,
}

impl Visitor for FindTables {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if v.level < self.level {
            return Action::Continue;
        }
        if v.va < self.want_after {
            return Action::SkipChildren;
        }
        if let Pte::Table(child) = v.pte {
            let n = (0..512).filter(|&i| mem.pt.read(child, i) != 0).count() as u64;
            self.found = Some((v.va, n));
            return Action::Stop;
        }
        Action::SkipChildren
    }
}
