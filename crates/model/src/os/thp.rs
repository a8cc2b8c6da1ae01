//! Linux transparent huge pages: the fault-time path (`do_huge_pmd_anonymous_page`) and
//! khugepaged's background collapse (`mm/khugepaged.c`).
//!
//! Huge pages are PMD-sized, as Linux's are: 2 MiB with 4 KiB pages (x86-64, arm64,
//! LPAE), 32 MiB with arm64's 16 KiB granule and 512 MiB with its 64 KiB granule, of
//! `HPAGE_PMD_NR` base pages (granule.rs). Below, "2 MiB" and "512" are the 4 KiB case.
//!
//! Fault: with `enabled = always` (or `madvise` and a VMA marked hugepage), if the
//! aligned 2 MiB range around the fault lies inside the VMA and has no page mapped yet,
//! allocate an order-9 block and map one 2 MiB leaf. If no free 2 MiB block exists, the
//! `defrag` mode decides: `always` (and `madvise` in a hugepage VMA) stalls in direct
//! compaction (compact.rs: page migration frees an order-9 block whose used frames are
//! all movable; `compaction_cycles` per attempt plus `migrate_cycles_per_page` per
//! migrated page are charged) and takes the block on success, else falls back to
//! 4 KiB; `defer`, `defer+madvise` and `never` fall back to 4 KiB at once (`defer`
//! variants wake kswapd/kcompactd, which mmulab counts but does not model). A range
//! with a page in swap is not empty (reclaim.rs): the fault maps 4 KiB.
//!
//! khugepaged: every `scan_sleep_millisecs` of simulated time on a machine with a clock
//! (else every `scan_period` references) it scans up to `pages_to_scan` base
//! pages' worth of 2 MiB ranges (a cursor over address spaces and ranges, using the
//! walker), and collapses a range that lies inside its VMA when its empty PTEs ≤
//! `max_ptes_none`: a new 2 MiB block is allocated, the present pages are copied
//! (`copy_cycles_per_page` each; missing ones are zero-filled), the old frames freed,
//! the page table dropped and one 2 MiB leaf installed. With khugepaged's `defrag` on
//! (Linux's default), a collapse that finds no free 2 MiB block tries direct compaction
//! first. Ranges with a page in swap are skipped (`collapse_skipped_swapped`).
//!
//! Shrinker (memory pressure, reclaim.rs, or `Thp::deferred_split_scan`): every
//! PMD-sized page mapped at a fault or a collapse is queued for a deferred split and
//! split when underused; shrinker.rs.

use super::compact::{compact_deferred, CompactCost, Deferral};
use super::granule::{linux_pmd_size, pmd_nr};
use super::remap::{clear_leaves, drop_table, leaves};
use super::OsEvent;
use super::{anon_attrs, map_new_page, order_of, FaultCtx, OsStats, Shootdown, TickCtx};
use crate::addr::Asid;
use crate::addr::{FolioSize, PageSize, FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use crate::mem::numa::At;
use crate::mem::Memory;
use crate::pt::Pte;
use crate::translation::Attrs;
use crate::walk::{map_leaf, walk, Action, Visit, Visitor, WalkCounts, WalkFlags};
use mmulab_base::AccessKind;
use std::collections::BTreeMap;

/// `/sys/kernel/mm/transparent_hugepage/enabled` (config `os.thp.enabled`: `"always"`,
/// `"madvise"`, `"never"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Enabled {
    /// Huge pages wherever possible.
    Always,
    /// Only in VMAs marked with madvise(MADV_HUGEPAGE).
    Madvise,
    /// Never at fault time.
    Never,
}

/// `/sys/kernel/mm/transparent_hugepage/defrag` (config `os.thp.defrag`: `"always"`,
/// `"defer"`, `"defer+madvise"`, `"madvise"`, `"never"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Defrag {
    /// Direct compaction on every huge fault that finds no free block.
    Always,
    /// Never stall; wake background compaction.
    Defer,
    /// Stall only in madvised VMAs, defer elsewhere.
    #[serde(rename = "defer+madvise")]
    DeferMadvise,
    /// Stall only in madvised VMAs.
    Madvise,
    /// Never compact.
    Never,
}

/// A per-size control, `/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled`
/// (config `os.thp.sizes = { "64K" = "always", "2M" = "inherit" }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SizeMode {
    /// This size wherever possible.
    Always,
    /// This size only in VMAs marked with MADV_HUGEPAGE.
    Madvise,
    /// As the top-level `enabled` says.
    Inherit,
    /// Never this size.
    Never,
}

/// Fault-time THP settings: the `[os.thp]` config section itself (docs/config.md; every
/// key optional, defaulting to [`ThpConfig::default`]), validated by the sim crate.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThpConfig {
    /// When huge pages are used at fault.
    pub enabled: Enabled,
    /// What a huge fault does when no free 2 MiB block exists.
    pub defrag: Defrag,
    /// Cycles one direct-compaction attempt stalls the fault (the scanners).
    pub compaction_cycles: u64,
    /// Cycles to migrate one 4 KiB page during compaction.
    pub migrate_cycles_per_page: u64,
    /// Cycles to zero a 4 KiB page (a 2 MiB fault zeroes 512).
    pub zero_cycles_per_page: u64,
    /// `/sys/kernel/mm/transparent_hugepage/use_zero_page` (default on, as Linux's): a
    /// read fault maps the huge zero page. Takes effect with `os.zero_page` (zero.rs).
    pub use_zero_page: bool,
    /// The per-size controls (mTHP, Linux 6.8+): anonymous folio sizes from 16 KiB up to
    /// the PMD size, each `always`, `madvise`, `inherit` or `never`. A size not listed
    /// is `never`, except the PMD size, which is `inherit` (the kernel's defaults). Sizes
    /// below the PMD size are tried at a fault that maps no PMD (`alloc_anon_folio`).
    pub sizes: BTreeMap<FolioSize, SizeMode>,
    /// `/sys/kernel/mm/transparent_hugepage/shrink_underused` (default on, as Linux's
    /// since 6.12): every PMD-sized page a fault or a collapse maps is queued for the
    /// THP shrinker, which splits it when underused (shrinker.rs).
    pub shrink_underused: bool,
}

impl Default for ThpConfig {
    fn default() -> Self {
        ThpConfig {
            enabled: Enabled::Always,
            defrag: Defrag::Madvise,
            compaction_cycles: 200_000,
            migrate_cycles_per_page: 4_000,
            zero_cycles_per_page: 0,
            use_zero_page: true,
            sizes: BTreeMap::new(),
            shrink_underused: true,
        }
    }
}

/// khugepaged settings: the `[os.khugepaged]` config section itself (docs/config.md;
/// every key optional, defaulting to [`KhugepagedConfig::default`]), validated by the
/// sim crate.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KhugepagedConfig {
    /// Run the scanner with policy `thp` (off by default, as in the config);
    /// [`Thp::khugepaged_only`] always runs it.
    pub enabled: bool,
    /// Base pages' worth of PMD-sized ranges scanned per wake-up (`None`: the kernel's
    /// default, `HPAGE_PMD_NR * 8`: 4096 with 4 KiB pages, 16384 with 16 KiB, 65536 with
    /// 64 KiB).
    pub pages_to_scan: Option<u64>,
    /// References between wake-ups, on a machine without a clock.
    pub scan_period: u64,
    /// Milliseconds of simulated time between wake-ups on a machine with a clock
    /// (`machine.clock_mhz`; `/sys/kernel/mm/transparent_hugepage/khugepaged/
    /// scan_sleep_millisecs`, Linux's default 10000).
    pub scan_sleep_millisecs: u64,
    /// Collapse only when at most this many PTEs of the range are empty
    /// (0 ..= `HPAGE_PMD_NR - 1`; `None`: the kernel's default, `HPAGE_PMD_NR - 1`: 511
    /// with 4 KiB pages, 2047 with 16 KiB, 8191 with 64 KiB).
    pub max_ptes_none: Option<u64>,
    /// Cycles to copy one 4 KiB page into the new huge page.
    pub copy_cycles_per_page: u64,
    /// Direct compaction when a collapse finds no free 2 MiB block
    /// (`/sys/kernel/mm/transparent_hugepage/khugepaged/defrag`, default 1).
    pub defrag: bool,
}

impl Default for KhugepagedConfig {
    fn default() -> Self {
        KhugepagedConfig {
            enabled: false,
            pages_to_scan: None,
            scan_period: 1_000_000,
            scan_sleep_millisecs: 10_000,
            max_ptes_none: None,
            copy_cycles_per_page: 1000,
            defrag: true,
        }
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
    /// Simulated time of the last wake-up (ns), on a machine with a clock.
    last_wake_ns: u64,
    cursor: (usize, u64),
    /// The large folios mapped, for the THP shrinker (shrinker.rs).
    deferred: super::DeferredSplit,
    defer: Deferral,
    /// Counters.
    pub stats: OsStats,
    /// Reclaim under memory pressure.
    pub reclaim: super::ReclaimConfig,
    /// Linux's zero pages (`os.zero_page`; zero.rs).
    pub zero_page: bool,
    name: &'static str,
}

impl Thp {
    /// Policy `thp` (fault-time huge pages; khugepaged only if enabled in `k`).
    pub fn new(cfg: ThpConfig, k: KhugepagedConfig) -> Thp {
        Thp {
            cfg,
            khugepaged: k,
            last_scan: 0,
            last_wake_ns: 0,
            cursor: (0, 0),
            deferred: Default::default(),
            defer: Deferral::default(),
            stats: OsStats::default(),
            reclaim: super::ReclaimConfig::default(),
            zero_page: false,
            name: "thp",
        }
    }

    /// Policy `khugepaged`: 4 KiB pages at fault, collapsed in the background.
    pub fn khugepaged_only(k: KhugepagedConfig) -> Thp {
        let cfg = ThpConfig {
            enabled: Enabled::Never,
            ..ThpConfig::default()
        };
        Thp {
            name: "khugepaged",
            khugepaged: KhugepagedConfig { enabled: true, ..k },
            ..Thp::new(cfg, KhugepagedConfig::default())
        }
    }

    /// A block for a PMD-sized page of `size`, with direct compaction per the defrag
    /// mode.
    fn alloc_huge(
        &mut self,
        mem: &mut Memory,
        size: PageSize,
        madvised: bool,
        at: At,
        shootdowns: &mut Vec<Shootdown>,
    ) -> Option<u64> {
        // The fault's gfp allows direct reclaim and compaction (`vma_thp_gfp_mask`).
        let stall = match self.cfg.defrag {
            Defrag::Always => true,
            Defrag::Madvise | Defrag::DeferMadvise => madvised,
            Defrag::Defer | Defrag::Never => false,
        };
        if let Some(p) = mem.alloc_thp(order_of(size), at, stall) {
            return Some(p);
        }
        if matches!(self.cfg.defrag, Defrag::Defer | Defrag::DeferMadvise) && !stall {
            self.stats.event(OsEvent::CompactionDeferred);
        }
        if !stall {
            return None;
        }
        self.stats.event(OsEvent::CompactionStall);
        let cost = self.compact_cost();
        compact_deferred(mem, order_of(size), cost, &mut self.defer, &mut self.stats, shootdowns)
    }

    /// Whether folios of `size` may back a fault in `vma` (mm/huge_memory.c
    /// `__thp_vma_allowable_orders` with the masks of `thp_vma_allowable_orders`: the
    /// size's own mode, `inherit` following the top-level `enabled`; never in a
    /// `VM_NOHUGEPAGE` VMA). `pmd` is the PMD size, whose mode defaults to `inherit`.
    fn allowed(&self, size: FolioSize, pmd: FolioSize, vma: &crate::space::Vma) -> bool {
        if vma.nohugepage {
            return false;
        }
        let dflt = if size == pmd {
            SizeMode::Inherit
        } else {
            SizeMode::Never
        };
        match self.cfg.sizes.get(&size).copied().unwrap_or(dflt) {
            SizeMode::Always => true,
            SizeMode::Madvise => vma.hugepage,
            SizeMode::Never => false,
            SizeMode::Inherit => match self.cfg.enabled {
                Enabled::Always => true,
                Enabled::Madvise => vma.hugepage,
                Enabled::Never => false,
            },
        }
    }

    /// MADV_COLLAPSE of `[start, end)` of `space` (mm/khugepaged.c `madvise_collapse`):
    /// every PMD-sized range wholly inside both the range and its VMA
    /// (`hstart = ALIGN(start)`, `hend = ALIGN_DOWN(end)`) is collapsed synchronously,
    /// whatever `enabled` and `max_ptes_none` say (`cc->is_khugepaged` is false, so
    /// `hpage_collapse_scan_pmd` counts no limit on empty PTEs), except in a
    /// `VM_NOHUGEPAGE` VMA. A range already mapped by a PMD (a THP or the huge zero
    /// page: `SCAN_PMD_MAPPED`) counts as done; one with no page table
    /// (`SCAN_PMD_NULL`) or no free block fails. Returns the ranges that failed.
    pub fn madvise_collapse(
        &mut self,
        mem: &mut Memory,
        space: &mut crate::space::AddressSpace,
        start: u64,
        end: u64,
        shootdowns: &mut Vec<Shootdown>,
    ) -> Result<u64, ModelError> {
        let size = linux_pmd_size(space.fmt).map_err(ModelError::Conflict)?;
        let mask = size.offset_mask();
        let (mut key, hend) = ((start + mask) & !mask, end & !mask);
        let mut failed = 0;
        while key < hend {
            let vma = space.vma(key);
            let ok = if vma.nohugepage || vma.inferred || !vma.contains_range(key, key + size.bytes()) {
                false
            } else {
                match crate::walk::lookup(mem, space.fmt, space.root, key) {
                    Some(m) if m.size >= size => true,
                    _ if !has_table(mem, space, key, size) => false,
                    _ => {
                        let defrag = self.khugepaged.defrag;
                        self.collapse(mem, space, key, size, defrag, shootdowns)?
                    }
                }
            };
            if !ok {
                failed += 1;
                self.stats.event(OsEvent::MadviseCollapseFailed);
            }
            key += size.bytes();
        }
        Ok(failed)
    }

    /// Counts a PMD-sized page allocated at a fault (`map_anon_folio_pmd`:
    /// `THP_FAULT_ALLOC` and the size's `anon_fault_alloc`).
    fn count_huge_alloc(&mut self, size: PageSize) {
        self.stats.record_map(size);
        self.stats.os_cycles += (size.bytes() / FRAME_SIZE) * self.cfg.zero_cycles_per_page;
        self.stats.event(OsEvent::ThpFaultAlloc);
        self.stats.mthp_of(size).anon_fault_alloc += 1;
    }

    /// A store to the huge zero page mapped at `key` (mm/huge_memory.c
    /// `do_huge_zero_wp_pmd`, Linux 6.13+): a fresh PMD-sized page replaces it. False if
    /// none could be allocated (counted as a fallback); the caller then splits the PMD
    /// and copies one base page (zero.rs `cow`, `__split_huge_pmd`).
    fn huge_zero_wp(&mut self, ctx: &mut FaultCtx<'_>, key: u64, size: PageSize) -> Result<bool, ModelError> {
        let vma = ctx.space.vma(key);
        let Some(pfn) = self.alloc_huge(ctx.mem, size, vma.hugepage, At::anon(&vma, key), ctx.shootdowns) else {
            self.stats.event(OsEvent::ThpFaultFallback);
            self.stats.mthp_of(size).anon_fault_fallback += 1;
            return Ok(false);
        };
        let (fmt, root) = (ctx.space.fmt, ctx.space.root);
        clear_leaves(ctx.mem, fmt, root, key, key + size.bytes());
        ctx.mem.zero.unmapped(size);
        self.stats.record_unmap(size);
        let attrs = anon_attrs(AccessKind::Store, self.zero_page);
        if let Err(e) = map_leaf(ctx.mem, fmt, root, key, pfn << FRAME_SHIFT, size, attrs) {
            ctx.mem.buddy.free(pfn, order_of(size));
            return Err(e);
        }
        self.count_huge_alloc(size);
        self.queue_fault_thp(ctx.space.asid, key, pfn, size);
        ctx.shootdowns.push((ctx.space.asid, key, key + size.bytes()));
        Ok(true)
    }

    /// A PMD-sized page mapped at a fault goes on the deferred split list
    /// (`map_anon_folio_pmd` → `deferred_split_folio(folio, false)`, 6.12+), unless
    /// `shrink_underused` is off.
    fn queue_fault_thp(&mut self, asid: Asid, key: u64, pfn: u64, size: PageSize) {
        let queued = self.cfg.shrink_underused;
        self.deferred.mapped(asid, key, pfn, size.into(), queued, None);
    }

    fn compact_cost(&self) -> CompactCost {
        CompactCost {
            attempt_cycles: self.cfg.compaction_cycles,
            migrate_cycles_per_page: self.cfg.migrate_cycles_per_page,
        }
    }

    /// The THP shrinker (shrinker.rs) over every address space: `contents` says which
    /// base pages are zero-filled where the caller knows (the kernel check's replay, which
    /// sees every store); `want` frames (`u64::MAX`: all, as `echo 2 >
    /// /proc/sys/vm/drop_caches`). Returns the 4 KiB frames freed.
    pub fn deferred_split_scan(
        &mut self,
        mem: &mut Memory,
        contents: super::Contents<'_>,
        want: u64,
        shootdowns: &mut Vec<Shootdown>,
    ) -> u64 {
        let s = super::ScanSettings {
            max_ptes_none: self.khugepaged.max_ptes_none,
            zero_page: self.zero_page,
            want,
        };
        self.deferred.scan(mem, s, contents, &mut self.stats, shootdowns)
    }

    /// The large folios kept for the shrinker (shrinker.rs).
    pub fn deferred(&self) -> &super::DeferredSplit {
        &self.deferred
    }

    /// Collapses the PMD-sized range at `key` of `space` into one new huge page
    /// (mm/khugepaged.c `collapse_huge_page`, khugepaged's and MADV_COLLAPSE's): a block
    /// is allocated (`alloc_charge_folio`, counted `THP_COLLAPSE_ALLOC`; with `defrag`
    /// direct compaction first), the present pages copied, the old frames and the page
    /// table freed, one huge leaf installed. False if no block could be had.
    fn collapse(
        &mut self,
        mem: &mut Memory,
        space: &mut crate::space::AddressSpace,
        key: u64,
        size: PageSize,
        defrag: bool,
        shootdowns: &mut Vec<Shootdown>,
    ) -> Result<bool, ModelError> {
        let (fmt, root, asid) = (space.fmt, space.root, space.asid);
        let nr = pmd_nr(fmt, size);
        let vma = space.vma(key);
        let mut pfn = mem.alloc_pages(order_of(size), Some(At::anon(&vma, key)));
        if pfn.is_none() && defrag {
            let cost = self.compact_cost();
            pfn = compact_deferred(mem, order_of(size), cost, &mut self.defer, &mut self.stats, shootdowns);
        }
        let Some(pfn) = pfn else {
            return Ok(false);
        };
        let old = clear_leaves(mem, fmt, root, key, key + size.bytes());
        let base = fmt.base_page().bytes();
        let mut present = vec![0u64; nr.div_ceil(64) as usize];
        for m in old.iter().filter(|m| !mem.zero.contains_pa(m.pa)) {
            for off in (0..m.size.bytes()).step_by(base as usize) {
                let i = (m.va + off - key) / base;
                present[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        let queued = self.cfg.shrink_underused;
        self.deferred.mapped(asid, key, pfn, size.into(), queued, Some(present));
        // mm/khugepaged.c collapse_huge_page: `_pmd = folio_mk_pmd(folio,
        // vma->vm_page_prot)` (young; `mk_huge_pmd` in older kernels), then
        // `maybe_pmd_mkwrite(pmd_mkdirty(_pmd), vma)`: dirty whatever the old entries were.
        let attrs = Attrs::user_rw().with(Attrs::ACCESSED | Attrs::DIRTY);
        for m in &old {
            // Zero-page entries are not copied (the new page is zero-filled there).
            if !mem.zero.contains_pa(m.pa) {
                self.stats.os_cycles += self.khugepaged.copy_cycles_per_page * (m.size.bytes() / FRAME_SIZE);
            }
            super::free_leaf(mem, m);
            self.stats.record_unmap(m.size);
        }
        drop_table(mem, fmt, root, key, size);
        map_leaf(mem, fmt, root, key, pfn << FRAME_SHIFT, size, attrs)?;
        self.stats.record_map(size);
        self.stats.collapses += 1;
        self.stats.event(OsEvent::ThpCollapseAlloc);
        shootdowns.push((asid, key, key + size.bytes()));
        Ok(true)
    }

    /// Forgets the large folios of `asid` (at exit).
    pub fn drop_space(&mut self, asid: Asid) {
        self.deferred.drop_space(asid);
    }
}

/// True if a last-level page table lies under the PMD-sized range at `key`.
fn has_table(mem: &mut Memory, space: &crate::space::AddressSpace, key: u64, size: PageSize) -> bool {
    let level = space.fmt.leaf_level(size).expect("a PMD size is a leaf");
    let mut f = FindTables {
        fmt: space.fmt,
        level,
        entries: space.fmt.levels()[level + 1].entries(),
        found: None,
        want_after: key,
    };
    walk(
        mem,
        space.fmt,
        space.root,
        0,
        key,
        key + size.bytes(),
        WalkFlags::TABLE_PRE,
        &mut f,
        &mut WalkCounts::default(),
    );
    f.found.is_some_and(|(va, _)| va == key)
}

/// Finds the first table descriptor at `level` (pointing to a table of leaves smaller
/// than the superpage, `entries` of them) covering a range at or after `want_after`,
/// and counts its valid entries.
struct FindTables {
    fmt: crate::pt::Format,
    level: usize,
    entries: usize,
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
            // khugepaged_scan_pmd counts an entry that is none or maps the zero page
            // (`pte_none(pteval) || is_zero_pfn(pte_pfn(pteval))`) as none.
            let present = |raw: u64| match self.fmt.decode(self.level + 1, raw) {
                Pte::Leaf { pa, .. } => !mem.zero.contains_pa(pa),
                _ => raw != 0,
            };
            let n = (0..self.entries).filter(|&i| present(mem.pt.read(child, i))).count() as u64;
            self.found = Some((v.va, n));
            return Action::Stop;
        }
        Action::SkipChildren
    }
}

impl super::OsPolicy for Thp {
    super::policy_fields!(stats, reclaim);

    fn set_zero_page(&mut self, on: bool) -> bool {
        self.zero_page = on;
        true
    }

    fn shrink(
        &mut self,
        mem: &mut Memory,
        _cfg: &super::ReclaimConfig,
        shootdowns: &mut Vec<Shootdown>,
        want: u64,
    ) -> u64 {
        self.deferred_split_scan(mem, &|_, _| None, want, shootdowns)
    }

    fn unmap_frames(&mut self, mem: &mut Memory, asid: Asid, start: u64, end: u64, maps: &[crate::walk::Mapping]) {
        for m in maps {
            super::free_leaf(mem, m);
        }
        self.deferred.unmapped(asid, start, end);
    }

    fn exit_space(&mut self, _mem: &mut Memory, asid: Asid) {
        self.drop_space(asid);
    }

    /// The config name.
    fn name(&self) -> &'static str {
        self.name
    }

    /// Handles a fault: mm/memory.c `__handle_mm_fault` (a PMD-sized page when the PMD
    /// is empty and the size is allowed, `create_huge_pmd`), else `do_anonymous_page`
    /// (the zero page for a read, else `alloc_anon_folio`'s mTHP sizes, else a base page).
    fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        let zero = self.zero_page;
        // do_huge_pmd_anonymous_page: a PMD-sized page, 2M / 32M / 512M by granule
        // (granule.rs); a format without THP was refused at configuration.
        let fmt = ctx.space.fmt;
        let (size, huge_ok) = match linux_pmd_size(fmt) {
            Ok(s) => (s, true),
            Err(_) => (fmt.base_page(), false),
        };
        // A store to a (huge) zero-page entry (zero.rs).
        if zero && ctx.kind == AccessKind::Store {
            if let Some(m) = super::zero::zero_leaf(&mut ctx) {
                if huge_ok && m.size == size && self.huge_zero_wp(&mut ctx, m.va, size)? {
                    return Ok(());
                }
                return super::zero::cow(&mut ctx, m, &mut self.stats);
            }
        }
        let key = ctx.va & !size.offset_mask();
        let vma = ctx.space.vma(ctx.va);
        if huge_ok && self.allowed(size.into(), size.into(), &vma) {
            if !vma.contains_range(key, key + size.bytes()) {
                self.stats.event(OsEvent::ThpFaultFallbackVmaEdge);
            } else if ctx.mem.swap.any_in(ctx.space.asid, key, key + size.bytes())
                || !leaves(ctx.mem, ctx.space.fmt, ctx.space.root, key, key + size.bytes()).is_empty()
                || has_table(ctx.mem, ctx.space, key, size)
            {
                // __handle_mm_fault tries create_huge_pmd only when `pmd_none`: a page
                // table there, even an empty one (left by MADV_DONTNEED of 4 KiB pages, or
                // by a munmap that shares its 2 MiB range with a neighbouring VMA), means
                // base pages.
                self.stats.event(OsEvent::ThpFaultFallbackRangeBusy);
            } else if zero && self.cfg.use_zero_page && ctx.kind == AccessKind::Load {
                // do_huge_pmd_anonymous_page: a read maps the huge zero page
                // (mm_get_huge_zero_folio); if it cannot be had, THP_FAULT_FALLBACK.
                if super::zero::map_huge_zero(&mut ctx, size, &mut self.stats)? {
                    return Ok(());
                }
                self.stats.event(OsEvent::ThpFaultFallback);
                self.stats.mthp_of(size).anon_fault_fallback += 1;
            } else if let Some(pfn) = self.alloc_huge(ctx.mem, size, vma.hugepage, At::anon(&vma, key), ctx.shootdowns)
            {
                drop_table(ctx.mem, ctx.space.fmt, ctx.space.root, key, size);
                if let Err(e) = map_leaf(
                    ctx.mem,
                    ctx.space.fmt,
                    ctx.space.root,
                    key,
                    pfn << FRAME_SHIFT,
                    size,
                    anon_attrs(ctx.kind, zero),
                ) {
                    ctx.mem.buddy.free(pfn, order_of(size));
                    return Err(e);
                }
                self.count_huge_alloc(size);
                self.queue_fault_thp(ctx.space.asid, key, pfn, size);
                return Ok(());
            } else {
                // vma_alloc_anon_folio_pmd: THP_FAULT_FALLBACK and the size's
                // anon_fault_fallback.
                self.stats.event(OsEvent::ThpFaultFallback);
                self.stats.mthp_of(size).anon_fault_fallback += 1;
            }
        }
        // The fallback is do_anonymous_page: with zero pages, a read maps the zero page.
        if zero && super::zero::fault(&mut ctx, &mut self.stats)? {
            return Ok(());
        }
        let attrs = anon_attrs(ctx.kind, zero);
        if huge_ok && ctx.kind != AccessKind::IFetch {
            // alloc_anon_folio: the allowed sizes below the PMD size, largest first.
            let (pmd, base) = (FolioSize::from(size), FolioSize::from(fmt.base_page()));
            let sizes: Vec<FolioSize> = self
                .cfg
                .sizes
                .keys()
                .rev()
                .copied()
                .filter(|&p| p < pmd && p > base && self.allowed(p, pmd, &vma))
                .collect();
            if !sizes.is_empty() && super::anon_folio::map_folio(&mut ctx, &vma, &sizes, attrs, &mut self.stats)? {
                // Kept for the shrinker, off its list until an unmap cuts it.
                if let Some((&k, f)) = ctx.space.folios.range(..=ctx.va).next_back() {
                    self.deferred
                        .mapped(ctx.space.asid, k, f.pa >> FRAME_SHIFT, f.size, false, None);
                }
                return Ok(());
            }
        }
        let base = fmt.base_page();
        self.stats.os_cycles += (base.bytes() / FRAME_SIZE) * self.cfg.zero_cycles_per_page;
        map_new_page(&mut ctx, base, attrs, &mut self.stats)
    }

    /// khugepaged wakes up only when it is on.
    fn has_tick(&self) -> bool {
        self.khugepaged.enabled
    }

    /// khugepaged's wake-up (see the module doc).
    fn tick(&mut self, ctx: TickCtx<'_>) -> Result<(), ModelError> {
        let k = self.khugepaged.clone();
        // khugepaged() → khugepaged_wait_work(): it sleeps scan_sleep_millisecs between
        // scans (khugepaged_do_scan). On a machine with a clock that is simulated time;
        // without one, `scan_period` references stand in for it. (The scan the kernel
        // makes when the first mm registers, before anything much is mapped, and the
        // scan's own duration before the next sleep are not modelled.)
        let due = match ctx.now_ns {
            Some(ns) => ns >= self.last_wake_ns + k.scan_sleep_millisecs.saturating_mul(1_000_000),
            None => ctx.now >= self.last_scan + k.scan_period,
        };
        if !k.enabled || !due {
            return Ok(());
        }
        self.last_scan = ctx.now;
        self.last_wake_ns = ctx.now_ns.unwrap_or(0);
        self.stats.event(OsEvent::KhugepagedWakeups);
        let nspaces = ctx.spaces.len();
        let mut visited = 0;
        let mut budget: Option<u64> = None;
        while budget != Some(0) && visited <= nspaces {
            let (si, from) = self.cursor;
            let Some(Some(space)) = ctx.spaces.get_mut(si) else {
                self.cursor = ((si + 1) % nspaces.max(1), 0);
                visited += 1;
                continue;
            };
            let (fmt, root, asid) = (space.fmt, space.root, space.asid);
            // khugepaged_scan_pmd over PMD-sized ranges: 2M / 32M / 512M by granule,
            // HPAGE_PMD_NR base pages each, with the kernel's defaults for that size.
            let Ok(size) = linux_pmd_size(fmt) else {
                return Ok(());
            };
            let nr = pmd_nr(fmt, size);
            let budget = budget.get_or_insert(k.pages_to_scan.unwrap_or(nr * 8));
            let max_ptes_none = k.max_ptes_none.unwrap_or(nr - 1);
            let level = fmt.leaf_level(size).expect("a PMD size is a leaf");
            // Find the next PMD-sized range with a last-level table at or after `from`.
            let top = fmt.levels()[0];
            let end = top.span().saturating_mul(top.entries() as u64);
            let mut f = FindTables {
                fmt,
                level,
                entries: fmt.levels()[level + 1].entries(),
                found: None,
                want_after: from,
            };
            walk(
                ctx.mem,
                fmt,
                root,
                0,
                from,
                end,
                WalkFlags::TABLE_PRE,
                &mut f,
                &mut WalkCounts::default(),
            );
            let Some((key, present)) = f.found else {
                self.cursor = ((si + 1) % nspaces.max(1), 0);
                visited += 1;
                continue;
            };
            self.cursor = (si, key + size.bytes());
            *budget = budget.saturating_sub(nr);
            self.stats.event(OsEvent::KhugepagedRangesScanned);
            let none = nr - present;
            let vma = space.vma(key);
            if none > max_ptes_none {
                self.stats.event(OsEvent::CollapseSkippedMaxPtesNone);
                continue;
            }
            if !vma.contains_range(key, key + size.bytes()) {
                self.stats.event(OsEvent::CollapseSkippedVmaEdge);
                continue;
            }
            if ctx.mem.swap.any_in(asid, key, key + size.bytes()) {
                self.stats.event(OsEvent::CollapseSkippedSwapped);
                continue;
            }
            let defrag = k.defrag;
            if !self.collapse(ctx.mem, space, key, size, defrag, ctx.shootdowns)? {
                self.stats.event(OsEvent::CollapseFailedNoMemory);
            }
        }
        Ok(())
    }
}
