//! Page sizes by granule (model os/granule.rs): Linux's THP is PMD-sized (2M / 32M /
//! 512M with 4K / 16K / 64K pages), khugepaged collapses `HPAGE_PMD_NR` base pages with
//! the kernel's defaults for that size, mTHP orders and contpte folding follow the
//! granule. Each expected figure is derived in a comment.

use crate::os_common;

use mmulab_base::AccessKind::{Load, Store};
use mmulab_model::addr::PageSize;
use mmulab_model::os::*;
use mmulab_model::pt::Format;
use mmulab_model::walk::lookup;
use os_common::Sys;

/// 1 GiB-aligned, so every PMD size divides it.
const BASE: u64 = 0x4000_0000;

fn leaf(sys: &mut Sys, va: u64) -> mmulab_model::walk::Mapping {
    let root = sys.spaces[0].as_ref().unwrap().root;
    lookup(&mut sys.mem, sys.fmt, root, va).expect("mapped")
}

fn thp() -> Os {
    Os::Thp(Thp::new(
        ThpConfig::default(),
        KhugepagedConfig {
            enabled: false,
            ..Default::default()
        },
    ))
}

#[test]
fn a_thp_fault_maps_the_pmd_size_of_the_granule() {
    // (format, PMD size): one entry of the level above the last.
    for (fmt, pmd) in [
        (Format::X86_64, PageSize::M2),
        (Format::Armv8_4K, PageSize::M2),
        (Format::Armv8_16K, PageSize::M32),
        (Format::Armv8_64K, PageSize::M512),
        (Format::Armv7Lpae, PageSize::M2),
    ] {
        let mut sys = Sys::new(fmt, 2 << 30, thp());
        sys.access(0, BASE + 12345, Store);
        let m = leaf(&mut sys, BASE);
        assert_eq!(m.size, pmd, "{fmt:?}");
        assert_eq!(sys.os.stats().mapped[pmd.index()], 1, "{fmt:?}");
        // Zeroing is charged per 4 KiB: a 32M page is 8192 of them.
        sys.check();
    }
}

#[test]
fn a_thp_fallback_maps_the_granule_s_base_page_not_4k() {
    // 16 MiB of memory holds no 32M block: the fault falls back to one 16K page.
    let mut sys = Sys::new(Format::Armv8_16K, 16 << 20, thp());
    sys.access(0, BASE + 0x5000, Load);
    let m = leaf(&mut sys, BASE + 0x5000);
    assert_eq!((m.va, m.size), (BASE + 0x4000, PageSize::K16));
    assert_eq!(sys.os.stats().count(OsEvent::ThpFaultFallback), 1);
    sys.check();
}

fn khuge(fmt_default: bool) -> Os {
    Os::Thp(Thp::khugepaged_only(KhugepagedConfig {
        scan_period: 1,
        // None: the kernel's defaults for the granule (HPAGE_PMD_NR - 1, HPAGE_PMD_NR * 8).
        max_ptes_none: if fmt_default { None } else { Some(511) },
        ..Default::default()
    }))
}

#[test]
fn khugepaged_collapses_2048_pages_of_16k_into_32m() {
    // HPAGE_PMD_NR = 32M / 16K = 2048. One touched page: 2047 empty PTEs, exactly the
    // default max_ptes_none (2047), so the range collapses; the copy is charged per
    // 4 KiB: one 16K page is 4 × 1000 cycles.
    let mut sys = Sys::new(Format::Armv8_16K, 256 << 20, khuge(true));
    sys.access(0, BASE + 3 * 16384, Store);
    assert_eq!(leaf(&mut sys, BASE + 3 * 16384).size, PageSize::K16);
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 1);
    assert_eq!(sys.os.stats().os_cycles, 4 * 1000);
    assert_eq!(leaf(&mut sys, BASE + 3 * 16384).size, PageSize::M32);
    assert_eq!(sys.os.stats().resident_bytes, 32 << 20);
    sys.check();
}

#[test]
fn khugepaged_with_the_4k_limit_skips_a_sparse_16k_range() {
    // max_ptes_none = 511 of 2048 PTEs: one present page leaves 2047 empty > 511.
    let mut sys = Sys::new(Format::Armv8_16K, 256 << 20, khuge(false));
    sys.access(0, BASE, Load);
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 0);
    // Skipped (once per pass over the address spaces; a wake-up may pass twice, as
    // khugepaged_do_scan's pass_through_head allows).
    assert!(sys.os.stats().count(OsEvent::CollapseSkippedMaxPtesNone) >= 1);
    // 1537 present pages leave 511 empty: it collapses.
    for i in 1..1537 {
        sys.access(0, BASE + i * 16384, Load);
    }
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 1);
    sys.check();
}

#[test]
fn khugepaged_collapses_on_64k_pages_into_512m() {
    // HPAGE_PMD_NR = 512M / 64K = 8192; the default scan budget is 8 × 8192 pages.
    let mut sys = Sys::new(Format::Armv8_64K, 1 << 30, khuge(true));
    sys.access(0, BASE + 65536, Load);
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 1);
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::M512);
    sys.check();
}

fn mthp(sizes: Option<Vec<PageSize>>) -> Os {
    let sizes = sizes.map(|v| v.into_iter().map(Into::into).collect());
    Os::Mthp(Mthp::new(MthpConfig {
        sizes,
        zero_cycles_per_page: 0,
    }))
}

#[test]
fn mthp_folds_a_large_folio_into_contiguous_groups() {
    // A 1M folio on 4K pages: no 1M leaf, but sixteen aligned 64K contpte groups
    // (contpte_set_ptes folds each), not 256 base pages.
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, mthp(Some(vec![PageSize::M1])));
    sys.access(0, BASE + 0x12345, Load);
    assert_eq!(sys.count(PageSize::K64), 16);
    assert_eq!(sys.count(PageSize::K4), 0);
    assert_eq!(sys.os.stats().mapped[PageSize::M1.index()], 1);
    assert_eq!(sys.os.stats().count(OsEvent::FoliosWithoutContpte), 0);
    // On x86-64 there is no contiguous bit: 256 base pages.
    let mut sys = Sys::new(Format::X86_64, 64 << 20, mthp(Some(vec![PageSize::M1])));
    sys.access(0, BASE + 0x12345, Load);
    assert_eq!(sys.count(PageSize::K4), 256);
    assert_eq!(sys.os.stats().count(OsEvent::FoliosWithoutContpte), 1);
    sys.check();
}

#[test]
fn mthp_defaults_follow_the_granule() {
    // 16K pages: 64K (4 base pages), 2M (a 128-entry contpte group), 32M (PMD). A fault
    // in an empty, large VMA with free memory takes the largest: 32M.
    let mut sys = Sys::new(Format::Armv8_16K, 256 << 20, mthp(None));
    sys.access(0, BASE + 0x4000, Load);
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::M32);
    // With 16 MiB of memory no 32M block exists: the next size, a 2M group.
    let mut sys = Sys::new(Format::Armv8_16K, 16 << 20, mthp(None));
    sys.access(0, BASE + 0x4000, Load);
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::M2);
    assert_eq!(sys.count(PageSize::M2), 1);
    sys.check();
}
