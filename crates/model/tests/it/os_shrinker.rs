//! The THP shrinker (crates/model/src/os/shrinker.rs, mm/huge_memory.c
//! `deferred_split_scan`): which folios it splits, what it counts under the kernel's
//! names, and which frames it frees. Every number is derived by hand in the comments.

use crate::os_common;

use mmulab_base::AccessKind::Store;
use mmulab_model::addr::PageSize;
use mmulab_model::os::*;
use mmulab_model::pt::Format;
use os_common::Sys;
use std::collections::BTreeSet;

const BASE: u64 = 0x4000_0000;
const M2: u64 = 2 << 20;
const PAGE: u64 = 4096;

fn thp(max_ptes_none: Option<u64>, shrink_underused: bool) -> Os {
    let cfg = ThpConfig {
        shrink_underused,
        ..ThpConfig::default()
    };
    let k = KhugepagedConfig {
        enabled: false,
        max_ptes_none,
        ..Default::default()
    };
    let mut os = Os::Thp(Thp::new(cfg, k));
    os.set_zero_page(true);
    os
}

/// Stores one byte to `pages` pages from `va`, remembering them as written.
fn write(sys: &mut Sys, written: &mut BTreeSet<u64>, va: u64, pages: u64) {
    for i in 0..pages {
        sys.access(0, va + i * PAGE, Store);
        written.insert(va + i * PAGE);
    }
}

/// The shrinker told exactly which pages hold data (as the kernel check's replay does).
fn scan(sys: &mut Sys, written: &BTreeSet<u64>) -> u64 {
    let mut sd = Vec::new();
    let known = |_, va: u64| Some(!written.contains(&(va & !(PAGE - 1))));
    sys.os.deferred_split_scan(&mut sys.mem, &known, u64::MAX, &mut sd)
}

fn n(sys: &Sys, name: &str) -> u64 {
    let c = sys.os.stats().kernel_counters();
    c.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| *v)
}

fn at(sys: &mut Sys, va: u64) -> Option<mmulab_model::walk::Mapping> {
    let root = sys.spaces[0].as_ref().unwrap().root;
    mmulab_model::walk::lookup(&mut sys.mem, sys.fmt, root, va)
}

#[test]
fn a_thp_with_more_zero_filled_pages_than_max_ptes_none_is_split_and_its_zero_pages_freed() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp(Some(256), true));
    let mut written = BTreeSet::new();
    // THP A: 100 pages written, 412 zero-filled > 256: underused. THP B: 300 written,
    // 212 zero-filled <= 256: used.
    write(&mut sys, &mut written, BASE, 100);
    write(&mut sys, &mut written, BASE + M2, 300);
    assert_eq!(n(&sys, "thp_fault_alloc"), 2);
    let a = at(&mut sys, BASE).unwrap();
    let free0 = sys.mem.buddy.free_frames();
    let freed = scan(&mut sys, &written);
    // 412 frames freed; one goes to the page table the split needs, one to the zero
    // page (no read has allocated it before).
    assert_eq!(freed, 412);
    assert_eq!(sys.mem.buddy.free_frames(), free0 + 412 - 2);
    assert_eq!(n(&sys, "thp_split_page"), 1);
    assert_eq!(n(&sys, "thp_underused_split_page"), 1);
    assert_eq!(n(&sys, "thp_split_pmd"), 1, "A's PMD is split first");
    assert_eq!(n(&sys, "hugepages-2048kB/split"), 1);
    // A: the written pages stay on their frames, the others map the zero page.
    for i in 0..512 {
        let m = at(&mut sys, BASE + i * PAGE).unwrap();
        assert_eq!(m.size, PageSize::K4);
        if i < 100 {
            assert_eq!(m.pa, a.pa + i * PAGE);
        } else {
            assert!(sys.mem.zero.contains_pa(m.pa), "page {i}");
        }
    }
    assert_eq!(at(&mut sys, BASE + M2).unwrap().size, PageSize::M2, "B stays whole");
    // B left the list: a second pass finds nothing, even told that B is empty now.
    assert_eq!(scan(&mut sys, &BTreeSet::new()), 0);
    assert_eq!(n(&sys, "thp_split_page"), 1);
    sys.check();
}

#[test]
fn a_folio_left_partly_mapped_is_split_whatever_max_ptes_none_and_shrink_underused_say() {
    // max_ptes_none 511 and shrink_underused off: nothing whole is ever split.
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp(None, false));
    let mut written = BTreeSet::new();
    write(&mut sys, &mut written, BASE, 300);
    sys.unmap(0, BASE + 500 * PAGE, BASE + 501 * PAGE).unwrap();
    assert_eq!(n(&sys, "thp_split_pmd"), 1);
    assert_eq!(n(&sys, "thp_deferred_split_page"), 1);
    let free0 = sys.mem.buddy.free_frames();
    // 511 pages still mapped, 300 written: 211 zero-filled, freed; one frame for the
    // zero page.
    assert_eq!(scan(&mut sys, &written), 211);
    assert_eq!(sys.mem.buddy.free_frames(), free0 + 211 - 1);
    assert_eq!(n(&sys, "thp_split_page"), 1);
    assert_eq!(n(&sys, "thp_underused_split_page"), 0, "split as partly mapped");
    assert_eq!(n(&sys, "thp_split_pmd"), 1, "already PTE-mapped: no second PMD split");
    assert_eq!(n(&sys, "hugepages-2048kB/split"), 1);
    assert_eq!(scan(&mut sys, &written), 0, "split once");
    sys.check();
}

#[test]
fn whole_thps_stay_with_max_ptes_none_511_with_shrink_underused_off_or_with_unknown_contents() {
    for (max_ptes_none, on, known) in [(None, true, true), (Some(0), false, true), (Some(0), true, false)] {
        let mut sys = Sys::new(Format::X86_64, 64 << 20, thp(max_ptes_none, on));
        let mut written = BTreeSet::new();
        write(&mut sys, &mut written, BASE, 1);
        let mut sd = Vec::new();
        let freed = if known {
            scan(&mut sys, &written)
        } else {
            // A simulation does not see stores: a faulted THP is assumed written.
            sys.os
                .deferred_split_scan(&mut sys.mem, &|_, _| None, u64::MAX, &mut sd)
        };
        assert_eq!(freed, 0, "{max_ptes_none:?} {on} {known}");
        assert_eq!(n(&sys, "thp_split_page"), 0);
        assert_eq!(at(&mut sys, BASE).unwrap().size, PageSize::M2);
    }
    // The rule guarded: with max_ptes_none 0 and shrink_underused on, the same page
    // (511 zero-filled > 0) is split.
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp(Some(0), true));
    let mut written = BTreeSet::new();
    write(&mut sys, &mut written, BASE, 1);
    assert_eq!(scan(&mut sys, &written), 511);
}

#[test]
fn an_unmapped_thp_leaves_the_list() {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, thp(Some(0), true));
    let mut written = BTreeSet::new();
    write(&mut sys, &mut written, BASE, 1);
    assert_eq!(sys.os.stats().count(OsEvent::ThpFaultAlloc), 1);
    let Os::Thp(t) = &sys.os else { unreachable!() };
    assert_eq!(t.deferred().len(), 1);
    sys.unmap(0, BASE, BASE + M2).unwrap();
    let Os::Thp(t) = &sys.os else { unreachable!() };
    assert!(t.deferred().is_empty());
    assert_eq!(scan(&mut sys, &written), 0);
    sys.check();
}
