//! The counters of an OS policy: pages mapped and resident by size, promotions,
//! demotions, collapses, OS cycles, and the typed events of every policy ([`OsEvent`]).
//!
//! Adding an event: a row in the `os_events!` table below (variant, the name reports and
//! JSON use, what it counts); count it with [`OsStats::event`] or [`OsStats::add`].

use crate::addr::{FolioSize, PageSize};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// One table defines the events: the enum, their names and their docs.
macro_rules! os_events {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal,)*) => {
        /// An event an OS policy counts (typed: reports and JSON use [`OsEvent::name`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum OsEvent {
            $($(#[doc = $doc])* $variant,)*
        }

        impl OsEvent {
            /// Every event, in the table's order.
            pub const ALL: &'static [OsEvent] = &[$(OsEvent::$variant,)*];

            /// The name reports and JSON use (`os.events` in docs/output.md).
            pub const fn name(self) -> &'static str {
                match self {
                    $(OsEvent::$variant => $name,)*
                }
            }
        }
    };
}

os_events! {
    /// khugepaged found no free 2 MiB block for a collapse (after compaction, if on).
    CollapseFailedNoMemory = "collapse_failed_no_memory",
    /// khugepaged skipped a range with more than `max_ptes_none` empty PTEs.
    CollapseSkippedMaxPtesNone = "collapse_skipped_max_ptes_none",
    /// khugepaged skipped a range with pages in swap.
    CollapseSkippedSwapped = "collapse_skipped_swapped",
    /// khugepaged skipped a range not wholly inside one VMA.
    CollapseSkippedVmaEdge = "collapse_skipped_vma_edge",
    /// Direct-compaction attempts.
    CompactionAttempts = "compaction_attempts",
    /// Compaction deferred after failures (compaction_deferred()).
    CompactionDeferred = "compaction_deferred",
    /// Compaction attempts that freed no block of the wanted order.
    CompactionFail = "compaction_fail",
    /// Compaction attempts skipped because compaction is deferred.
    CompactionSkippedDeferred = "compaction_skipped_deferred",
    /// Faults that stalled in direct compaction.
    CompactionStall = "compaction_stall",
    /// Compaction attempts that freed a block of the wanted order.
    CompactionSuccess = "compaction_success",
    /// Store faults on a zero-page entry that copied it into a fresh page (COW from zero;
    /// os.zero_page).
    CowFromZero = "cow_from_zero",
    /// Address spaces ended (exit markers).
    Exits = "exits",
    /// Faults in a reservation's range outside its VMA.
    FaultInUnmappedHole = "fault_in_unmapped_hole",
    /// mTHP folios mapped without the contiguous bit.
    FoliosWithoutContpte = "folios_without_contpte",
    /// Read faults that mapped the huge zero page (os.zero_page, os.thp.use_zero_page).
    HugeZeroPageMaps = "huge_zero_page_maps",
    /// Huge zero pages split into base zero-page entries by a store.
    HugeZeroPageSplits = "huge_zero_page_splits",
    /// 2 MiB ranges khugepaged scanned.
    KhugepagedRangesScanned = "khugepaged_ranges_scanned",
    /// khugepaged wake-ups.
    KhugepagedWakeups = "khugepaged_wakeups",
    /// mTHP faults that fell back to a smaller folio for lack of memory.
    MthpFallbackNoMemory = "mthp_fallback_no_memory",
    /// Reservations freed whole by munmap.
    MunmapReservationsFreed = "munmap_reservations_freed",
    /// Reservations shrunk by munmap.
    MunmapReservationsShrunk = "munmap_reservations_shrunk",
    /// Superpages split at the ends of an munmap range.
    MunmapSplits = "munmap_splits",
    /// munmap calls.
    Munmaps = "munmaps",
    /// Faults that made no reservation: the range already holds pages.
    NoReservationRangeBusy = "no_reservation_range_busy",
    /// Faults that made no reservation: the aligned range crosses the VMA's edge.
    NoReservationVmaEdge = "no_reservation_vma_edge",
    /// 4 KiB pages migrated by compaction.
    PagesMigrated = "pages_migrated",
    /// Promotions refused: the pages' attributes differ.
    PromotionFailedAttrsDiffer = "promotion_failed_attrs_differ",
    /// Promotions refused: the frames are not contiguous.
    PromotionFailedNotContiguous = "promotion_failed_not_contiguous",
    /// Promotions refused by the page-table rewrite.
    PromotionFailedRemap = "promotion_failed_remap",
    /// Promotions to a read-only superpage (some page clean).
    PromotionsReadOnly = "promotions_read_only",
    /// Reclaim runs.
    ReclaimRuns = "reclaim_runs",
    /// Accessed bits reclaim's clock cleared (young pages given a second chance).
    ReclaimYoungCleared = "reclaim_young_cleared",
    /// Reservations that could not be made: no free contiguous block.
    ReservationFailedNoContiguousMemory = "reservation_failed_no_contiguous_memory",
    /// Partial reservations broken under memory pressure.
    ReservationsBroken = "reservations_broken",
    /// Partial reservations broken at a tick below the low watermark.
    ReservationsBrokenWatermark = "reservations_broken_watermark",
    /// Reservations made.
    ReservationsCreated = "reservations_created",
    /// Reservations fully populated.
    ReservationsFull = "reservations_full",
    /// Writes to clean read-only superpages (demotion on write).
    SoftWriteFaults = "soft_write_faults",
    /// Pages read back from swap (major faults).
    SwapIns = "swap_ins",
    /// Pages written to swap.
    SwapOuts = "swap_outs",
    /// Faults that mapped a THP.
    ThpFaultAlloc = "thp_fault_alloc",
    /// THP faults that fell back to 4 KiB pages for lack of a free 2 MiB block.
    ThpFaultFallback = "thp_fault_fallback",
    /// THP faults that fell back: the 2 MiB range already has a page table (pages mapped
    /// or swapped out, or a table left empty; the kernel needs `pmd_none`).
    ThpFaultFallbackRangeBusy = "thp_fault_fallback_range_busy",
    /// THP faults that fell back: the 2 MiB range crosses the VMA's edge.
    ThpFaultFallbackVmaEdge = "thp_fault_fallback_vma_edge",
    /// Read faults that mapped the shared zero page (os.zero_page).
    ZeroPageMaps = "zero_page_maps",
    /// Huge pages split (shrinker, swap-out).
    ThpSplits = "thp_splits",
    /// Underused huge pages the THP shrinker split.
    ThpUnderusedSplit = "thp_underused_split",
    /// PMD mappings split into PTEs (Linux `THP_SPLIT_PMD`: munmap, MADV_DONTNEED or
    /// mprotect of part of a huge page, a store to the huge zero page that found no
    /// huge page, a store to a huge page shared after fork).
    ThpSplitPmd = "thp_split_pmd",
    /// Huge zero pages allocated (Linux `THP_ZERO_PAGE_ALLOC`; the kernel's count also
    /// depends on whether another process holds it).
    ThpZeroPageAlloc = "thp_zero_page_alloc",
    /// Huge pages queued for a deferred split because they became partly unmapped
    /// (Linux `THP_DEFERRED_SPLIT_PAGE`, `deferred_split_folio`).
    ThpDeferredSplitPage = "thp_deferred_split_page",
    /// Huge pages allocated to collapse a range, by khugepaged or MADV_COLLAPSE (Linux
    /// `THP_COLLAPSE_ALLOC`).
    ThpCollapseAlloc = "thp_collapse_alloc",
    /// MADV_COLLAPSE ranges that could not be collapsed.
    MadviseCollapseFailed = "madvise_collapse_failed",
}

/// Counts of [`OsEvent`]s. An event once counted (even by zero) is reported; one never
/// counted is not (so a report lists the events a run met).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsEvents {
    counts: [u64; 64],
    seen: u64,
}

impl Default for OsEvents {
    fn default() -> Self {
        OsEvents {
            counts: [0; 64],
            seen: 0,
        }
    }
}

const _: () = assert!(OsEvent::ALL.len() <= 64, "OsEvents keeps one bit per event in a u64");

impl OsEvents {
    /// Adds `n` to `e`.
    pub fn add(&mut self, e: OsEvent, n: u64) {
        self.counts[e as usize] += n;
        self.seen |= 1 << e as u8;
    }

    /// The count of `e` (0 if never counted).
    pub fn get(&self, e: OsEvent) -> u64 {
        self.counts[e as usize]
    }

    /// True if no event was counted.
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// The counted events and their counts, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (OsEvent, u64)> + '_ {
        let mut v: Vec<OsEvent> = OsEvent::ALL
            .iter()
            .copied()
            .filter(|&e| self.seen >> e as u8 & 1 != 0)
            .collect();
        v.sort_by_key(|e| e.name());
        v.into_iter().map(|e| (e, self.get(e)))
    }
}

impl Serialize for OsEvents {
    /// A map from event name to count, in name order (docs/output.md).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        for (e, n) in self.iter() {
            m.serialize_entry(e.name(), &n)?;
        }
        m.end()
    }
}

/// Counts of an OS policy.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
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
    /// The policy's typed event counters (reservations created, failures by reason…).
    pub events: OsEvents,
    /// Linux's per-size mTHP counters (`hugepages-<size>kB/stats/`), by the folio size's
    /// shift (`FolioSize::shift`: index 15 is 32 KiB), so that sizes no page table maps
    /// as one unit have theirs too.
    pub mthp: [MthpCounts; MTHP_SLOTS],
}

/// Slots of [`OsStats::mthp`]: one per shift up to `FolioSize::MAX_SHIFT`.
pub const MTHP_SLOTS: usize = FolioSize::MAX_SHIFT as usize + 1;

/// The per-size mTHP counters Linux keeps in
/// `/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/` (the PMD size
/// included), under the kernel's names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MthpCounts {
    /// Folios of this size allocated at a fault (`MTHP_STAT_ANON_FAULT_ALLOC`).
    pub anon_fault_alloc: u64,
    /// Faults that tried this size and found no memory (`MTHP_STAT_ANON_FAULT_FALLBACK`).
    pub anon_fault_fallback: u64,
    /// Folios of this size queued for a deferred split (`MTHP_STAT_SPLIT_DEFERRED`).
    pub split_deferred: u64,
    /// Folios of this size split into base pages (`MTHP_STAT_SPLIT`; the THP shrinker,
    /// shrinker.rs).
    pub split: u64,
}

impl OsStats {
    /// The per-size mTHP counters of folios of `size`.
    pub fn mthp_of(&mut self, size: impl Into<FolioSize>) -> &mut MthpCounts {
        &mut self.mthp[size.into().shift() as usize]
    }

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

    /// Adds one to event `e`.
    pub fn event(&mut self, e: OsEvent) {
        self.events.add(e, 1);
    }

    /// Adds `n` to event `e` (counted as met even when `n` is 0).
    pub fn add(&mut self, e: OsEvent, n: u64) {
        self.events.add(e, n);
    }

    /// The count of event `e` (0 if never counted).
    pub fn count(&self, e: OsEvent) -> u64 {
        self.events.get(e)
    }

    /// The counters under the kernel's own names, as `/proc/vmstat` (`thp_fault_alloc`,
    /// `thp_fault_fallback`, `thp_split_pmd`, `thp_zero_page_alloc`,
    /// `thp_collapse_alloc`, `thp_deferred_split_page`, `thp_split_page`,
    /// `thp_underused_split_page`) and the per-size mTHP `stats/`
    /// files (`hugepages-64kB/anon_fault_alloc`, …: sizes with a non-zero counter) name
    /// them, for comparison with a live kernel (docs/kernel-check.md).
    pub fn kernel_counters(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = [
            OsEvent::ThpFaultAlloc,
            OsEvent::ThpFaultFallback,
            OsEvent::ThpSplitPmd,
            OsEvent::ThpZeroPageAlloc,
            OsEvent::ThpCollapseAlloc,
            OsEvent::ThpDeferredSplitPage,
        ]
        .iter()
        .map(|&e| (e.name().to_string(), self.count(e)))
        .collect();
        // The kernel's names of two counters mmulab names its own way.
        v.push(("thp_split_page".into(), self.count(OsEvent::ThpSplits)));
        v.push((
            "thp_underused_split_page".into(),
            self.count(OsEvent::ThpUnderusedSplit),
        ));
        for shift in FolioSize::MIN_SHIFT..=FolioSize::MAX_SHIFT {
            let c = &self.mthp[shift as usize];
            let dir = format!("hugepages-{}kB", 1u64 << (shift - 10));
            for (name, n) in [
                ("anon_fault_alloc", c.anon_fault_alloc),
                ("anon_fault_fallback", c.anon_fault_fallback),
                ("split_deferred", c.split_deferred),
                ("split", c.split),
            ] {
                if n > 0 {
                    v.push((format!("{dir}/{name}"), n));
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_snake_case() {
        let mut names: Vec<&str> = OsEvent::ALL.iter().map(|e| e.name()).collect();
        assert!(names
            .iter()
            .all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), OsEvent::ALL.len());
    }

    #[test]
    fn events_serialize_in_name_order_and_keep_zero_counts() {
        let mut s = OsStats::default();
        s.event(OsEvent::SwapOuts);
        s.add(OsEvent::ReclaimYoungCleared, 0);
        s.add(OsEvent::CompactionAttempts, 3);
        s.event(OsEvent::SwapOuts);
        let j = serde_json::to_string(&s.events).unwrap();
        assert_eq!(
            j,
            r#"{"compaction_attempts":3,"reclaim_young_cleared":0,"swap_outs":2}"#
        );
        assert_eq!(s.count(OsEvent::SwapIns), 0);
        assert!(OsStats::default().events.is_empty());
    }
}
