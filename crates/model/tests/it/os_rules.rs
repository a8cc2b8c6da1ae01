//! One test per policy rule (docs/policies.md), each asserting numbers that a wrong
//! implementation would change.

use crate::os_common;

use mmulab_base::AccessKind::{Load, Store};
use mmulab_model::addr::PageSize;
use mmulab_model::os::OsEvent;
use mmulab_model::os::*;
use mmulab_model::pt::Format;
use mmulab_model::translation::Attrs;
use mmulab_model::walk::lookup;
use os_common::Sys;

const BASE: u64 = 0x4000_0000;

fn resv(fmt: Format, size: PageSize) -> Os {
    let cfg = ReservationConfig {
        size: Some(size),
        mid_size: MidSize::Off,
        ..ReservationConfig::default()
    };
    Os::Reservation(Reservation::new(cfg, fmt).unwrap())
}

fn leaf(sys: &mut Sys, va: u64) -> mmulab_model::walk::Mapping {
    let root = sys.spaces[0].as_ref().unwrap().root;
    lookup(&mut sys.mem, sys.fmt, root, va).expect("mapped")
}

#[test]
fn read_only_promotion_demotes_on_one_write_and_repromotes_when_all_dirty() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, resv(Format::X86_64, PageSize::M2));
    for i in 0..512 {
        sys.access(0, BASE + i * 4096, Load);
        if i < 511 {
            assert_eq!(
                leaf(&mut sys, BASE).size,
                PageSize::K4,
                "promoted before full at page {i}"
            );
        }
    }
    let m = leaf(&mut sys, BASE);
    assert_eq!(
        (m.size, m.attrs.has(Attrs::WRITABLE)),
        (PageSize::M2, false),
        "clean full reservation → read-only 2M"
    );
    assert_eq!(sys.os.stats().promotions[PageSize::M2.index()], 1);
    sys.access(0, BASE + 5 * 4096, Store);
    assert_eq!(sys.os.stats().demotions[PageSize::M2.index()], 1, "one write demotes");
    let m = leaf(&mut sys, BASE + 5 * 4096);
    assert_eq!(m.size, PageSize::K4);
    assert!(m.attrs.has(Attrs::WRITABLE | Attrs::DIRTY));
    assert!(
        !leaf(&mut sys, BASE).attrs.has(Attrs::WRITABLE),
        "other pages stay read-only"
    );
    sys.check();
    for i in 0..512 {
        sys.access(0, BASE + i * 4096, Store);
    }
    let m = leaf(&mut sys, BASE);
    assert_eq!(m.size, PageSize::M2, "re-promoted once every page is dirty");
    assert!(m.attrs.has(Attrs::WRITABLE | Attrs::DIRTY));
    assert_eq!(sys.os.stats().promotions[PageSize::M2.index()], 2);
    assert!(
        sys.os.stats().count(OsEvent::PromotionFailedAttrsDiffer) > 0,
        "mixed dirty/clean fails first"
    );
    sys.check();
}

#[test]
fn all_dirty_reservation_promotes_writable_at_once() {
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, resv(Format::Armv8_4K, PageSize::M2));
    for i in 0..512 {
        sys.access(0, BASE + i * 4096, Store);
    }
    let m = leaf(&mut sys, BASE);
    assert_eq!(m.size, PageSize::M2);
    assert!(m.attrs.has(Attrs::WRITABLE | Attrs::DIRTY));
    assert_eq!(sys.os.stats().count(OsEvent::PromotionsReadOnly), 0);
    assert_eq!(sys.os.stats().count(OsEvent::ReservationsCreated), 1);
    assert_eq!(sys.os.stats().count(OsEvent::ReservationsFull), 1);
}

#[test]
fn armv7_reservations_are_one_mib_sections_of_256_pages() {
    let mut sys = Sys::new(Format::Armv7, 64 << 20, resv(Format::Armv7, PageSize::M1));
    for i in 0..256 {
        sys.access(0, BASE + i * 4096, Store);
    }
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::M1);
    assert_eq!(sys.os.stats().promotions[PageSize::M1.index()], 1);
    sys.check();
}

#[test]
fn memory_pressure_breaks_the_least_recently_changed_partial_reservations() {
    let mut sys = Sys::new(Format::X86_64, 8 << 20, resv(Format::X86_64, PageSize::M2));
    // One page in each range until a reservation cannot be made.
    let mut r = 0;
    while sys.os.stats().count(OsEvent::ReservationFailedNoContiguousMemory) == 0 {
        sys.access(0, BASE + (r << 21), Store);
        r += 1;
    }
    let created = sys.os.stats().count(OsEvent::ReservationsCreated);
    assert!(created >= 2, "created {created}");
    // Touch the first reservation again so it is no longer the least recently changed.
    sys.access(0, BASE + 4096, Store);
    // Base pages in the ranges without reservations until memory runs out.
    let mut touched = 0;
    while sys.os.stats().count(OsEvent::ReservationsBroken) == 0 {
        sys.access(0, BASE + ((r - 1) << 21) + (1 + touched) * 4096, Store);
        touched += 1;
        assert!(touched < 511, "memory never ran short");
    }
    if let Os::Reservation(res) = &sys.os {
        assert!(
            res.reservation_at(0, BASE).is_some(),
            "the recently changed reservation survives"
        );
        assert!(
            res.reservation_at(0, BASE + (1 << 21)).is_none(),
            "the least recently changed is broken first"
        );
    }
    assert_eq!(
        sys.os.stats().resident_bytes,
        (r + 1 + touched) * 4096,
        "every touched page stays mapped"
    );
    sys.check();
}

fn khuge(max_ptes_none: u64) -> Os {
    Os::Thp(Thp::khugepaged_only(KhugepagedConfig {
        max_ptes_none: Some(max_ptes_none),
        scan_period: 1,
        pages_to_scan: Some(1 << 20),
        ..Default::default()
    }))
}

#[test]
fn khugepaged_with_max_ptes_none_zero_never_collapses_a_partial_range() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, khuge(0));
    for i in 0..511 {
        sys.access(0, BASE + i * 4096, Load);
    }
    for _ in 0..5 {
        sys.tick();
        sys.now += 10;
    }
    assert_eq!(sys.os.stats().collapses, 0);
    assert!(
        sys.os.stats().count(OsEvent::CollapseSkippedMaxPtesNone) > 0,
        "the range was scanned"
    );
    assert_eq!(sys.count(PageSize::M2), 0);
    // The last page makes it full: now it collapses, copying 512 pages.
    sys.access(0, BASE + 511 * 4096, Load);
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 1);
    assert_eq!(sys.os.stats().os_cycles, 512 * 1000);
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::M2);
    sys.check();
}

#[test]
fn khugepaged_default_collapses_a_range_with_one_page_and_counts_the_copy() {
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, khuge(511));
    sys.access(0, BASE + 7 * 4096, Store);
    sys.access(0, BASE + (1 << 21), Load);
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 2);
    assert_eq!(sys.os.stats().os_cycles, 2 * 1000, "one page copied per range");
    let m = leaf(&mut sys, BASE + 7 * 4096);
    assert_eq!(m.size, PageSize::M2);
    assert!(m.attrs.has(Attrs::DIRTY), "a dirty page makes the huge page dirty");
    // Bloat: 4 MiB resident for 2 touched pages.
    assert_eq!(sys.os.stats().resident_bytes, 4 << 20);
    sys.check();
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
fn fragmented_memory_yields_fewer_superpages() {
    let touch = |sys: &mut Sys| {
        for r in 0..40u64 {
            sys.access(0, BASE + (r << 21), Store);
        }
    };
    let mut fresh = Sys::new(Format::X86_64, 256 << 20, thp());
    fresh.pinned = fresh.mem.age(0.5, 1.0, 3);
    touch(&mut fresh);
    let mut aged = Sys::new(Format::X86_64, 256 << 20, thp());
    aged.pinned = aged.mem.age(0.5, 0.05, 3);
    touch(&mut aged);
    let (f, a) = (fresh.count(PageSize::M2), aged.count(PageSize::M2));
    assert_eq!(f, 40, "unfragmented: every fault gets 2M");
    assert!(a < f / 2, "fragmented: {a} superpages vs {f}");
    assert_eq!(aged.os.stats().count(OsEvent::ThpFaultFallback) as usize, 40 - a);
    aged.check();
    fresh.check();
    // Same for reservations.
    let mut r_aged = Sys::new(Format::X86_64, 256 << 20, resv(Format::X86_64, PageSize::M2));
    r_aged.pinned = r_aged.mem.age(0.5, 0.05, 3);
    for i in 0..(8 * 512) {
        r_aged.access(0, BASE + i * 4096, Store);
    }
    let p = r_aged.os.stats().promotions[PageSize::M2.index()];
    assert!(p < 8, "fragmented reservations promoted {p} of 8");
    r_aged.check();
}

#[test]
fn thp_madvise_uses_huge_pages_only_in_marked_vmas_and_never_across_edges() {
    let cfg = ThpConfig {
        enabled: Enabled::Madvise,
        ..ThpConfig::default()
    };
    let mut sys = Sys::new(
        Format::X86_64,
        64 << 20,
        Os::Thp(Thp::new(
            cfg,
            KhugepagedConfig {
                enabled: false,
                ..Default::default()
            },
        )),
    );
    sys.space(0).add_vma(BASE, BASE + (4 << 20), true).unwrap();
    sys.space(0).add_vma(BASE + (4 << 20), BASE + (8 << 20), false).unwrap();
    sys.space(0).add_vma(BASE + (8 << 20), BASE + (9 << 20), true).unwrap();
    sys.access(0, BASE, Load);
    sys.access(0, BASE + (4 << 20), Load);
    sys.access(0, BASE + (8 << 20), Load);
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::M2);
    assert_eq!(leaf(&mut sys, BASE + (4 << 20)).size, PageSize::K4, "not madvised");
    assert_eq!(
        leaf(&mut sys, BASE + (8 << 20)).size,
        PageSize::K4,
        "2M range crosses the VMA end"
    );
    assert_eq!(sys.os.stats().count(OsEvent::ThpFaultFallbackVmaEdge), 1);
}

#[test]
fn mthp_takes_the_largest_enabled_size_whose_range_is_empty() {
    let os = Os::Mthp(Mthp::new(MthpConfig {
        sizes: Some(vec![PageSize::K16.into(), PageSize::K64.into()]),
        zero_cycles_per_page: 0,
    }));
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, os);
    sys.space(0).add_vma(BASE, BASE + 0x1_3000, false).unwrap();
    sys.space(0).add_vma(BASE + 0x1_3000, BASE + 0x1_4000, false).unwrap();
    sys.space(0).add_vma(BASE + 0x1_4000, BASE + 0x2_0000, false).unwrap();
    sys.access(0, BASE, Load);
    let m = leaf(&mut sys, BASE);
    assert_eq!(m.size, PageSize::K64, "64K folio mapped as one contiguous-bit group");
    assert!(m.attrs.has(Attrs::CONTIG));
    sys.access(0, BASE + 0x1_3000, Load);
    assert_eq!(
        leaf(&mut sys, BASE + 0x1_3000).size,
        PageSize::K4,
        "a one-page VMA gets a 4K page"
    );
    sys.access(0, BASE + 0x1_8000, Load);
    let stats = sys.os.stats().clone();
    assert_eq!(stats.mapped[PageSize::K64.index()], 1);
    assert_eq!(
        stats.mapped[PageSize::K16.index()],
        1,
        "64K range crosses a VMA edge: 16K"
    );
    assert_eq!(stats.resident_bytes, (64 + 4 + 16) << 10);
    sys.check();
    // On x86-64 a 64K folio has no single-entry form: sixteen 4K entries.
    let os = Os::Mthp(Mthp::new(MthpConfig {
        sizes: Some(vec![PageSize::K64.into()]),
        zero_cycles_per_page: 0,
    }));
    let mut x = Sys::new(Format::X86_64, 64 << 20, os);
    x.access(0, BASE, Load);
    assert_eq!(leaf(&mut x, BASE).size, PageSize::K4);
    assert_eq!(x.os.stats().count(OsEvent::FoliosWithoutContpte), 1);
    assert_eq!(x.os.stats().resident_bytes, 64 << 10);
}

#[test]
fn thp_sizes_no_page_table_maps_as_one_unit_are_folio_sizes_too() {
    // hugepages-128kB and hugepages-32kB always, the PMD size never (check-kernel's
    // 2x_mthp_*k_always): a 160 KiB VMA at a 2 MiB boundary. The first store takes a
    // 128 KiB folio (its aligned range lies inside the VMA and is empty); a store at
    // +128 KiB cannot (that 128 KiB range ends past the VMA) and takes 32 KiB
    // (alloc_anon_folio, largest allowed order first).
    let f = |s: &str| mmulab_model::addr::FolioSize::parse(s).unwrap();
    let cfg = |pmd: SizeMode| ThpConfig {
        enabled: Enabled::Always,
        sizes: [
            (f("128K"), SizeMode::Always),
            (f("32K"), SizeMode::Always),
            (f("2M"), pmd),
        ]
        .into_iter()
        .collect(),
        ..ThpConfig::default()
    };
    for (fmt, unit) in [(Format::X86_64, PageSize::K4), (Format::Armv8_4K, PageSize::K64)] {
        let os = Os::Thp(Thp::new(cfg(SizeMode::Never), KhugepagedConfig::default()));
        let mut sys = Sys::new(fmt, 64 << 20, os);
        sys.space(0).add_vma(BASE, BASE + (160 << 10), false).unwrap();
        sys.access(0, BASE + 0x5000, Store);
        sys.access(0, BASE + (128 << 10), Store);
        let stats = sys.os.stats().clone();
        let k: std::collections::BTreeMap<String, u64> = stats.kernel_counters().into_iter().collect();
        assert_eq!(k.get("hugepages-128kB/anon_fault_alloc"), Some(&1), "{fmt:?} {k:?}");
        assert_eq!(k.get("hugepages-32kB/anon_fault_alloc"), Some(&1), "{fmt:?} {k:?}");
        assert_eq!(k.get("thp_fault_alloc"), Some(&0), "{fmt:?}");
        assert_eq!(stats.resident_bytes, 160 << 10, "{fmt:?}");
        // A 128 KiB folio is mapped with the largest unit that fits it: 4 KiB entries on
        // x86-64, two 64 KiB contiguous groups on arm64; a 32 KiB folio is below the
        // contiguous size, so 4 KiB entries on both.
        assert_eq!(leaf(&mut sys, BASE + 0x5000).size, unit, "{fmt:?}");
        assert_eq!(leaf(&mut sys, BASE + (136 << 10)).size, PageSize::K4, "{fmt:?}");
        assert_eq!(stats.faults, 2, "{fmt:?}: each folio one fault");
        sys.check();
    }
}

#[test]
fn exit_returns_every_frame() {
    for os in [
        resv(Format::X86_64, PageSize::M2),
        thp(),
        khuge(511),
        Os::Base(Base::default()),
    ] {
        let mut sys = Sys::new(Format::X86_64, 64 << 20, os);
        let free0 = sys.mem.buddy.free_frames();
        for i in 0..700 {
            sys.access(0, BASE + i * 4096, Store);
            sys.access(1, BASE + i * 8192, Load);
        }
        sys.now += 2_000_000;
        sys.tick();
        sys.exit(0);
        sys.exit(1);
        assert_eq!(sys.mem.buddy.free_frames(), free0, "{}", sys.os.name());
        assert_eq!(sys.os.stats().resident_bytes, 0);
    }
    // Contiguous-bit groups are freed once, as whole folios (regression: clearing the
    // first entry of a group made the other fifteen look like single pages).
    let os = Os::Mthp(Mthp::new(MthpConfig {
        sizes: Some(vec![PageSize::K64.into()]),
        zero_cycles_per_page: 0,
    }));
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, os);
    let free0 = sys.mem.buddy.free_frames();
    for i in 0..100 {
        sys.access(0, BASE + i * 4096, Store);
    }
    assert_eq!(sys.os.stats().mapped[PageSize::K64.index()], 7);
    sys.check();
    sys.exit(0);
    assert_eq!(sys.mem.buddy.free_frames(), free0);
    assert_eq!(sys.os.stats().resident_bytes, 0);
}

#[test]
fn arm64_reservations_promote_64k_groups_first_then_2m() {
    let cfg = ReservationConfig {
        size: Some(PageSize::M2),
        mid_size: MidSize::Size(PageSize::K64),
        ..ReservationConfig::default()
    };
    let os = Os::Reservation(Reservation::new(cfg, Format::Armv8_4K).unwrap());
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, os);
    for i in 0..16 {
        sys.access(0, BASE + i * 4096, Store);
    }
    let m = leaf(&mut sys, BASE);
    assert_eq!(
        m.size,
        PageSize::K64,
        "a full 64K group becomes one contiguous-bit group"
    );
    assert!(m.attrs.has(Attrs::CONTIG | Attrs::WRITABLE | Attrs::DIRTY));
    assert_eq!(sys.os.stats().promotions[PageSize::K64.index()], 1);
    sys.check();
    // 15 pages of the next group: no promotion; loads make the group read-only on fill.
    for i in 16..31 {
        sys.access(0, BASE + i * 4096, Store);
    }
    assert_eq!(leaf(&mut sys, BASE + 16 * 4096).size, PageSize::K4);
    sys.access(0, BASE + 31 * 4096, Load);
    // Mixed dirty/clean: the group fails; the clean page becomes read-only.
    assert_eq!(leaf(&mut sys, BASE + 16 * 4096).size, PageSize::K4);
    assert!(!leaf(&mut sys, BASE + 31 * 4096).attrs.has(Attrs::WRITABLE));
    sys.access(0, BASE + 31 * 4096, Store);
    assert_eq!(leaf(&mut sys, BASE + 16 * 4096).size, PageSize::K64, "all dirty now");
    for i in 32..512 {
        sys.access(0, BASE + i * 4096, Store);
    }
    assert_eq!(
        leaf(&mut sys, BASE).size,
        PageSize::M2,
        "groups and pages gathered into 2M"
    );
    assert_eq!(sys.os.stats().promotions[PageSize::M2.index()], 1);
    assert_eq!(
        sys.os.stats().promotions[PageSize::K64.index()],
        32,
        "every group promoted on the way"
    );
    sys.check();
}

#[test]
fn a_write_to_a_read_only_64k_group_demotes_only_that_group() {
    let cfg = ReservationConfig {
        size: Some(PageSize::M2),
        mid_size: MidSize::Size(PageSize::K64),
        ..ReservationConfig::default()
    };
    let os = Os::Reservation(Reservation::new(cfg, Format::Armv8_4K).unwrap());
    let mut sys = Sys::new(Format::Armv8_4K, 64 << 20, os);
    for i in 0..32 {
        sys.access(0, BASE + i * 4096, Load);
    }
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::K64);
    assert_eq!(leaf(&mut sys, BASE + 16 * 4096).size, PageSize::K64);
    sys.access(0, BASE + 4096, Store);
    assert_eq!(sys.os.stats().demotions[PageSize::K64.index()], 1);
    assert_eq!(leaf(&mut sys, BASE).size, PageSize::K4);
    assert_eq!(
        leaf(&mut sys, BASE + 16 * 4096).size,
        PageSize::K64,
        "the neighbour group stays"
    );
    sys.check();
}

/// pmap_promote_pde's scan: page 0 first, then 511 down to 1, write-protecting each
/// clean writable page before comparing it with page 0; the first mismatch stops it.
#[test]
fn a_failed_promotion_write_protects_only_the_pages_scanned_before_the_mismatch() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, resv(Format::X86_64, PageSize::M2));
    // Page 100 dirty (a store), every other page clean but writable (loads).
    sys.access(0, BASE + 100 * 4096, Store);
    for i in (0..512).filter(|&i| i != 100) {
        sys.access(0, BASE + i * 4096, Load);
    }
    assert_eq!(sys.os.stats().count(OsEvent::PromotionFailedAttrsDiffer), 1);
    // Page 0 (first) and pages 511 down to 101 were write-protected: 1 + 411 = 412.
    // Page 100 (dirty, writable) mismatched the read-only first page and stopped the
    // scan: it and pages 1..=99 keep write permission: 1 + 99 = 100.
    let leaves = sys.leaves(0);
    let writable: Vec<u64> = leaves
        .iter()
        .filter(|m| m.attrs.has(Attrs::WRITABLE))
        .map(|m| (m.va - BASE) / 4096)
        .collect();
    assert_eq!(leaves.len(), 512);
    assert_eq!(writable, (1..=100).collect::<Vec<_>>());
    // A store to page 50 needs no fault; a store to page 300 soft-faults.
    let before = sys.os.stats().count(OsEvent::SoftWriteFaults);
    sys.access(0, BASE + 50 * 4096, Store);
    assert_eq!(sys.os.stats().count(OsEvent::SoftWriteFaults), before);
    sys.access(0, BASE + 300 * 4096, Store);
    assert_eq!(sys.os.stats().count(OsEvent::SoftWriteFaults), before + 1);
    sys.check();
}

/// vm_reserv_alloc_page makes a reservation for an anonymous object even where it
/// extends past the object's end (the object may grow), never before its start.
#[test]
fn an_anonymous_reservation_may_extend_past_the_vma_end_but_not_before_its_start() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, resv(Format::X86_64, PageSize::M2));
    // A VMA of 1 MiB starting at a 2 MiB boundary: the reservation's tail lies past it.
    sys.space(0).add_vma(BASE, BASE + (1 << 20), false).unwrap();
    sys.access(0, BASE + 4096, Load);
    assert_eq!(sys.os.stats().count(OsEvent::ReservationsCreated), 1);
    assert_eq!(sys.os.stats().count(OsEvent::NoReservationVmaEdge), 0);
    // A VMA starting 1 MiB into a 2 MiB range: the reservation would start before it.
    sys.space(0).add_vma(BASE + (5 << 20), BASE + (8 << 20), false).unwrap();
    sys.access(0, BASE + (5 << 20), Load);
    assert_eq!(sys.os.stats().count(OsEvent::ReservationsCreated), 1);
    assert_eq!(sys.os.stats().count(OsEvent::NoReservationVmaEdge), 1);
    sys.check();
}
