//! Partial munmap (`Os::unmap`, crates/model/src/os/unmap.rs): one test per rule, each
//! asserting numbers a wrong implementation would change.

use crate::os_common;

use mmulab_base::AccessKind::{Load, Store};
use mmulab_model::addr::{PageSize, FRAME_SHIFT};
use mmulab_model::os::OsEvent;
use mmulab_model::os::*;
use mmulab_model::pt::Format;
use mmulab_model::walk::lookup;
use os_common::Sys;

const BASE: u64 = 0x4000_0000;
const M2: u64 = 2 << 20;

fn thp() -> Os {
    os_common::thp_without_khugepaged(ThpConfig::default())
}

fn resv(fmt: Format, size: PageSize) -> Os {
    let cfg = ReservationConfig {
        size: Some(size),
        mid_size: MidSize::Off,
        ..ReservationConfig::default()
    };
    Os::Reservation(Reservation::new(cfg, fmt).unwrap())
}

fn at(sys: &mut Sys, va: u64) -> mmulab_model::walk::Mapping {
    let root = sys.spaces[0].as_ref().unwrap().root;
    lookup(&mut sys.mem, sys.fmt, root, va).expect("mapped")
}

#[test]
fn unmapping_the_middle_4k_of_a_thp_splits_it_and_frees_exactly_that_frame() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp());
    sys.access(0, BASE + 0x1234, Store);
    let big = at(&mut sys, BASE);
    assert_eq!(big.size, PageSize::M2);
    let (free0, tables0) = (sys.mem.buddy.free_frames(), sys.mem.pt.live_tables());
    let hole = BASE + 256 * 4096;
    let sd = sys.unmap(0, hole, hole + 4096).unwrap();
    assert!(
        sd.contains(&(0, BASE, BASE + M2)),
        "the split 2 MiB range is shot down: {sd:?}"
    );
    assert!(sd.contains(&(0, hole, hole + 4096)));
    let st = sys.os.stats().clone();
    assert_eq!(st.count(OsEvent::MunmapSplits), 1);
    assert_eq!(st.demotions[PageSize::M2.index()], 1);
    assert_eq!(st.resident_bytes, 511 * 4096);
    assert_eq!(st.resident_by_size[PageSize::K4.index()], 511 * 4096);
    assert_eq!(st.resident_by_size[PageSize::M2.index()], 0);
    let maps = sys.leaves(0);
    assert_eq!(maps.len(), 511);
    assert!(maps.iter().all(|m| m.size == PageSize::K4 && m.va != hole));
    // The remaining pages keep their frames (same physical offset as in the 2 MiB page).
    assert!(maps.iter().all(|m| m.pa - big.pa == m.va - BASE));
    // Exactly the hole's frame is free; the 4 KiB leaf table the split needed is the
    // only other frame that changed hands.
    let hole_pfn = (big.pa >> FRAME_SHIFT) + 256;
    assert!(sys.mem.buddy.is_free(hole_pfn));
    assert!(!sys.mem.buddy.is_free(hole_pfn - 1) && !sys.mem.buddy.is_free(hole_pfn + 1));
    assert_eq!(
        sys.mem.buddy.free_frames(),
        free0,
        "one frame freed, one frame allocated for the new 4 KiB table"
    );
    assert_eq!(sys.mem.pt.live_tables(), tables0 + 1);
    sys.check();
}

#[test]
fn unmapping_a_whole_2m_range_frees_the_order_9_block_and_its_tables() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp());
    sys.access(0, BASE, Store);
    sys.access(0, BASE + M2 + 0x5000, Load);
    let big = at(&mut sys, BASE);
    assert_eq!(big.size, PageSize::M2);
    let (free0, tables0) = (sys.mem.buddy.free_frames(), sys.mem.pt.live_tables());
    let big_free0 = sys.mem.buddy.free_frames_at_least(9);
    sys.unmap(0, BASE, BASE + M2).unwrap();
    assert_eq!(sys.mem.buddy.free_frames(), free0 + 512);
    assert!(sys.mem.buddy.is_free(big.pa >> FRAME_SHIFT));
    assert_eq!(
        sys.os.stats().count(OsEvent::MunmapSplits),
        0,
        "an aligned range splits nothing"
    );
    assert_eq!(
        sys.mem.buddy.free_frames_at_least(9),
        big_free0 + 512,
        "the frames come back as one order-9 block"
    );
    assert_eq!(sys.os.stats().resident_bytes, M2, "the neighbouring THP stays");
    assert_eq!(
        sys.mem.pt.live_tables(),
        tables0,
        "a block has no table of its own to free"
    );
    // A 1 GiB range covering both frees the page directory wholly inside it; with no VMA
    // left beside it, free_pgtables' floor and ceiling take in the whole address space,
    // so the PDPT above it, empty now, goes too (the root stays).
    sys.unmap(0, BASE, BASE + (1 << 30)).unwrap();
    assert_eq!(sys.os.stats().resident_bytes, 0);
    assert_eq!(
        sys.mem.pt.live_tables(),
        tables0 - 2,
        "the page directory under the 1 GiB range and the emptied PDPT are freed"
    );
    sys.check();
}

#[test]
fn munmap_frees_a_table_only_when_no_neighbouring_vma_shares_it() {
    // Two VMAs in one 2 MiB range, [BASE, BASE + 4K) and [BASE + 8K, BASE + 1M), one
    // page written in each: one 4 KiB table. Unmapping the second leaves the table (the
    // first VMA ends at BASE + 4K: free_pgtables' floor, above the table's start);
    // unmapping the first then frees it, and the tables above it, with no VMA left.
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp());
    sys.space(0).add_vma(BASE, BASE + 4096, false).unwrap();
    sys.space(0).add_vma(BASE + 8192, BASE + (1 << 20), false).unwrap();
    sys.access(0, BASE, Store);
    sys.access(0, BASE + 8192, Store);
    let tables = sys.mem.pt.live_tables();
    sys.unmap(0, BASE + 8192, BASE + (1 << 20)).unwrap();
    assert_eq!(sys.mem.pt.live_tables(), tables, "the table the first VMA uses stays");
    sys.unmap(0, BASE, BASE + 4096).unwrap();
    // PT, PD and PDPT go; the root stays.
    assert_eq!(sys.mem.pt.live_tables(), tables - 3);
    sys.check();
}

#[test]
fn touching_an_unmapped_address_faults_again_into_a_new_inferred_vma() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp());
    sys.access(0, BASE + 10, Load);
    sys.unmap(0, BASE + 4096, BASE + 3 * 4096).unwrap();
    let faults = sys.os.stats().faults;
    sys.access(0, BASE + 4096 + 8, Load);
    assert_eq!(sys.os.stats().faults, faults + 1);
    let v = sys.spaces[0].as_mut().unwrap().vma(BASE + 4096);
    assert_eq!(
        (v.start, v.end, v.inferred),
        (BASE + 4096, BASE + 3 * 4096, true),
        "the hole's VMA is exactly the hole"
    );
    // THP cannot cover the hole with a huge page again: the 2 MiB range spans three VMAs.
    assert_eq!(at(&mut sys, BASE + 4096).size, PageSize::K4);
    assert!(sys.os.stats().count(OsEvent::ThpFaultFallbackVmaEdge) > 0);
    sys.check();
}

#[test]
fn a_partly_unmapped_reservation_never_promotes_over_the_hole() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, resv(Format::X86_64, PageSize::M2));
    for i in 0..100 {
        sys.access(0, BASE + i * 4096, Store);
    }
    let Os::Reservation(r) = &sys.os else { unreachable!() };
    let (pfn, pop) = r.reservation_at(0, BASE).unwrap();
    assert_eq!(pop, 100);
    let free0 = sys.mem.buddy.free_frames();
    sys.unmap(0, BASE + 40 * 4096, BASE + 60 * 4096).unwrap();
    let Os::Reservation(r) = &sys.os else { unreachable!() };
    assert_eq!(r.reservation_at(0, BASE), Some((pfn, 80)), "depopulated, not broken");
    assert_eq!(
        sys.mem.buddy.free_frames(),
        free0,
        "the frames go back to the reservation, not the allocator"
    );
    assert_eq!(sys.os.stats().count(OsEvent::MunmapReservationsShrunk), 1);
    sys.check();
    // Touch every page of the 2 MiB range, the hole included.
    for i in 0..512 {
        sys.access(0, BASE + i * 4096, Store);
    }
    let st = sys.os.stats().clone();
    assert_eq!(st.promotions[PageSize::M2.index()], 0, "promoted over the hole");
    assert_eq!(st.count(OsEvent::FaultInUnmappedHole), 20);
    let hole = at(&mut sys, BASE + 50 * 4096);
    assert_ne!(
        hole.pa >> FRAME_SHIFT,
        pfn + 50,
        "the hole takes a frame from outside the reservation"
    );
    let Os::Reservation(r) = &sys.os else { unreachable!() };
    assert_eq!(r.reservation_at(0, BASE), Some((pfn, 492)));
    sys.check();
    // Control: without the unmap the same touches promote.
    let mut ctl = Sys::new(Format::X86_64, 64 << 20, resv(Format::X86_64, PageSize::M2));
    for i in 0..512 {
        ctl.access(0, BASE + i * 4096, Store);
    }
    assert_eq!(ctl.os.stats().promotions[PageSize::M2.index()], 1);
}

#[test]
fn unmapping_part_of_a_promoted_reservation_demotes_it_and_emptying_it_frees_the_extent() {
    let mut sys = Sys::new(Format::Armv7, 64 << 20, resv(Format::Armv7, PageSize::M1));
    let base = 0x4010_0000;
    for i in 0..256 {
        sys.access(0, base + i * 4096, Store);
    }
    assert_eq!(at(&mut sys, base).size, PageSize::M1);
    let free0 = sys.mem.buddy.free_frames();
    sys.unmap(0, base + 0xf_f000, base + 0x20_0000).unwrap();
    assert_eq!(sys.os.stats().demotions[PageSize::M1.index()], 1);
    assert_eq!(sys.os.stats().resident_bytes, 255 * 4096);
    assert_eq!(
        sys.mem.buddy.free_frames() + 1,
        free0,
        "only the L2 table for the split was allocated"
    );
    sys.check();
    sys.unmap(0, base, base + 0xf_f000).unwrap();
    assert_eq!(sys.os.stats().count(OsEvent::MunmapReservationsFreed), 1);
    let Os::Reservation(r) = &sys.os else { unreachable!() };
    assert_eq!(r.reservation_at(0, base), None);
    assert_eq!(sys.os.stats().resident_bytes, 0);
    sys.check();
}

#[test]
fn a_64k_contiguous_group_cut_at_one_edge_is_split() {
    let mut sys = Sys::new(
        Format::Armv8_4K,
        64 << 20,
        Os::Mthp(Mthp::new(MthpConfig {
            sizes: Some(vec![PageSize::K64.into()]),
            zero_cycles_per_page: 0,
        })),
    );
    sys.access(0, BASE, Store);
    assert_eq!(at(&mut sys, BASE).size, PageSize::K64);
    sys.unmap(0, BASE + 0xc000, BASE + 0x2_0000).unwrap();
    assert_eq!(sys.os.stats().demotions[PageSize::K64.index()], 1);
    assert_eq!(sys.os.stats().resident_bytes, 12 * 4096);
    assert_eq!(at(&mut sys, BASE).size, PageSize::K4);
    sys.check();
}

#[test]
fn bad_ranges_are_errors_and_change_nothing() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp());
    sys.access(0, BASE, Store);
    let before = sys.os.stats().clone();
    for (s, e) in [
        (BASE + M2, BASE),
        (BASE, BASE),
        (BASE + 8, BASE + 4096),
        (BASE, BASE + 4097),
        (1 << 48, (1 << 48) + 4096),
    ] {
        let err = sys.unmap(0, s, e).unwrap_err().to_string();
        assert!(err.contains("unmap of"), "{err}");
    }
    let mut fixed = Sys::new(Format::X86_64, 64 << 20, Os::Fixed(Fixed::new(PageSize::M2)));
    fixed.access(0, BASE, Load);
    let err = fixed.unmap(0, BASE + 4096, BASE + M2).unwrap_err().to_string();
    assert!(
        err.contains("aligned to 2M") || err.contains("aligned to 2 MiB") || err.contains("aligned"),
        "{err}"
    );
    assert_eq!(*sys.os.stats(), before);
    assert_eq!(fixed.os.stats().resident_bytes, M2);
    sys.check();
    fixed.check();
}

#[test]
fn an_mthp_folio_left_partly_mapped_is_queued_for_a_deferred_split_once() {
    // hugepages-64kB always, the PMD size never (check-kernel's 42_mthp_munmap_part): a
    // 2 MiB VMA written whole holds 32 folios of 64 KiB, in 4 KiB entries on x86-64.
    // By hand, with folio k at [64k KiB, 64(k+1) KiB):
    // - munmap [68K, 72K) cuts folio 1: split_deferred 1;
    // - munmap [124K, 132K) cuts folio 1 again (already partly mapped: not counted) and
    //   folio 2: 2;
    // - munmap [72K, 76K) cuts folio 1 a third time: 2;
    // - munmap [192K, 256K) takes folio 3 whole (nothing is left mapped): 2;
    // - munmap [256K, 260K) cuts folio 4: 3.
    // No PMD is split and no PMD-order folio is queued.
    use mmulab_model::addr::FolioSize;
    let f = |s: &str| FolioSize::parse(s).unwrap();
    let cfg = ThpConfig {
        enabled: Enabled::Always,
        sizes: [(f("64K"), SizeMode::Always), (f("2M"), SizeMode::Never)]
            .into_iter()
            .collect(),
        ..ThpConfig::default()
    };
    let mut sys = Sys::new(Format::X86_64, 64 << 20, os_common::thp_without_khugepaged(cfg));
    sys.space(0).add_vma(BASE, BASE + M2, false).unwrap();
    for va in (BASE..BASE + M2).step_by(4096) {
        sys.access(0, va, Store);
    }
    let deferred = |sys: &Sys| {
        let k: std::collections::BTreeMap<String, u64> = sys.os.stats().kernel_counters().into_iter().collect();
        // A per-size counter that is zero is not listed.
        let n = |name: &str| k.get(name).copied().unwrap_or(0);
        (
            n("hugepages-64kB/anon_fault_alloc"),
            n("hugepages-64kB/split_deferred"),
            n("thp_deferred_split_page"),
            n("thp_split_pmd"),
        )
    };
    assert_eq!(deferred(&sys), (32, 0, 0, 0));
    let k = 1024;
    for ((lo, hi), want) in [
        ((68 * k, 72 * k), 1),
        ((124 * k, 132 * k), 2),
        ((72 * k, 76 * k), 2),
        ((192 * k, 256 * k), 2),
        ((256 * k, 260 * k), 3),
    ] {
        sys.unmap(0, BASE + lo, BASE + hi).unwrap();
        assert_eq!(deferred(&sys), (32, want, 0, 0), "after munmap [{lo:#x}, {hi:#x})");
    }
    sys.check();
}
