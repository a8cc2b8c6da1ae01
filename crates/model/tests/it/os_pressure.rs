//! Compaction by page migration and reclaim under memory pressure (docs/policies.md,
//! "Compaction" and "Memory pressure"): each test asserts numbers a wrong
//! implementation would change.

use crate::os_common;

use mmulab_base::AccessKind::{Load, Store};
use mmulab_model::addr::{PageSize, FRAME_SHIFT};
use mmulab_model::os::OsEvent;
use mmulab_model::os::OsPolicy;
use mmulab_model::os::*;
use mmulab_model::pt::Format;
use mmulab_model::translation::Attrs;
use mmulab_model::walk::{lookup, Mapping};
use mmulab_model::ModelError;
use os_common::Sys;
use std::collections::BTreeMap;

const BASE: u64 = 0x4000_0000;

fn thp(defrag: Defrag) -> Os {
    Os::Thp(Thp::new(
        ThpConfig {
            defrag,
            ..ThpConfig::default()
        },
        KhugepagedConfig {
            enabled: false,
            ..Default::default()
        },
    ))
}

fn leaf(sys: &mut Sys, asid: u16, va: u64) -> Option<Mapping> {
    let s = sys.spaces[asid as usize].as_ref().unwrap();
    let (fmt, root) = (s.fmt, s.root);
    lookup(&mut sys.mem, fmt, root, va)
}

/// Aged memory with no free 2 MiB block: 30% pinned, spread over every 2 MiB region.
fn aged(os: Os, movable: f64) -> Sys {
    let mut sys = Sys::new(Format::X86_64, 64 << 20, os);
    sys.pinned = sys.mem.age_movable(0.3, 0.0, 5, movable);
    assert_eq!(
        sys.mem.buddy.free_frames_at_least(9),
        0,
        "precondition: no free 2 MiB block"
    );
    sys
}

#[test]
fn compaction_makes_the_huge_pages_that_fragmentation_denies() {
    let touch = |sys: &mut Sys| {
        for r in 0..8u64 {
            sys.access(0, BASE + (r << 21) + 0x3000, Store);
        }
        sys.check();
    };
    // Movable fragmentation, defrag = always: every fault compacts and gets 2 MiB.
    let mut always = aged(thp(Defrag::Always), 1.0);
    touch(&mut always);
    let st = always.os.stats().clone();
    assert_eq!(always.count(PageSize::M2), 8);
    assert_eq!(
        (st.count(OsEvent::CompactionSuccess), st.count(OsEvent::CompactionFail)),
        (8, 0)
    );
    let migrated = st.count(OsEvent::PagesMigrated);
    // Each 2 MiB region holds about 30% of 512 pinned frames.
    assert!((8 * 100..8 * 250).contains(&migrated), "pages migrated: {migrated}");
    let cfg = ThpConfig::default();
    assert_eq!(
        st.os_cycles,
        8 * cfg.compaction_cycles + migrated * cfg.migrate_cycles_per_page,
        "cost: attempts + pages"
    );
    assert_eq!(
        always.pinned,
        always.mem.rmap.external_frames().count() as u64,
        "migration keeps every pinned frame"
    );
    // defrag = never: no compaction, no huge page.
    let mut never = aged(thp(Defrag::Never), 1.0);
    touch(&mut never);
    assert_eq!(never.count(PageSize::M2), 0);
    assert_eq!(never.os.stats().count(OsEvent::CompactionAttempts), 0);
    // defrag = always but the pinned frames are unmovable (kernel memory): it fails,
    // and failures defer the next attempts (1 fail, skip 1; fail, skip 3; fail, skip 1
    // of the next 7): attempts at faults 1, 3 and 7.
    let mut unmovable = aged(thp(Defrag::Always), 0.0);
    touch(&mut unmovable);
    let st = unmovable.os.stats().clone();
    assert_eq!(unmovable.count(PageSize::M2), 0);
    assert_eq!(
        (
            st.count(OsEvent::CompactionFail),
            st.count(OsEvent::CompactionSkippedDeferred)
        ),
        (3, 5)
    );
    assert_eq!(st.count(OsEvent::PagesMigrated), 0);
    assert_eq!(
        st.os_cycles,
        3 * cfg.compaction_cycles,
        "deferred requests cost nothing"
    );
}

#[test]
fn migrated_pages_keep_their_address_and_attributes_and_move_out_of_the_block() {
    // THP only in madvised VMAs: spaces 1 and 2 get 4 KiB pages, interleaved in memory.
    let cfg = ThpConfig {
        enabled: Enabled::Madvise,
        defrag: Defrag::Always,
        ..ThpConfig::default()
    };
    let mut sys = Sys::new(Format::X86_64, 16 << 20, crate::os_common::thp_without_khugepaged(cfg));
    let mut i = 0u64;
    while sys.mem.buddy.free_frames() > 24 {
        let kind = if i.is_multiple_of(3) { Store } else { Load };
        sys.access(1 + (i % 2) as u16, BASE + (i / 2) * 4096, kind);
        i += 1;
    }
    sys.exit(2);
    assert_eq!(
        sys.mem.buddy.free_frames_at_least(9),
        0,
        "precondition: half free, no free 2 MiB block"
    );
    let before: BTreeMap<u64, Mapping> = sys.leaves(1).into_iter().map(|m| (m.va, m)).collect();
    sys.space(3).add_vma(BASE, BASE + (2 << 20), true).unwrap();
    sys.access(3, BASE, Store);
    let huge = leaf(&mut sys, 3, BASE).unwrap();
    assert_eq!(huge.size, PageSize::M2, "compaction freed a block");
    let block = huge.pa >> FRAME_SHIFT..(huge.pa >> FRAME_SHIFT) + 512;
    let after: BTreeMap<u64, Mapping> = sys.leaves(1).into_iter().map(|m| (m.va, m)).collect();
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "same pages mapped"
    );
    let mut moved = 0;
    for (va, b) in &before {
        let a = after[va];
        assert_eq!((a.size, a.attrs), (b.size, b.attrs), "attributes kept at {va:#x}");
        assert!(
            !block.contains(&(a.pa >> FRAME_SHIFT)),
            "{va:#x} still inside the new huge page"
        );
        if a.pa != b.pa {
            moved += 1;
            assert!(
                block.contains(&(b.pa >> FRAME_SHIFT)),
                "{va:#x} moved although outside the block"
            );
        }
    }
    assert!(moved > 200, "moved {moved}");
    assert_eq!(moved, sys.os.stats().count(OsEvent::PagesMigrated));
    assert!(
        before.values().filter(|m| m.attrs.has(Attrs::DIRTY)).count() > 50,
        "dirty pages were among them"
    );
    sys.check(); // no frame owned twice, nothing leaked
}

/// `os` with reclaim on.
fn reclaiming(mut os: Os) -> Os {
    os.set_reclaim(ReclaimConfig {
        enabled: true,
        ..Default::default()
    })
    .expect("a reclaiming policy");
    os
}

/// Touches `pages` pages of asid 0 once each, then re-touches the first `again`.
fn overflow(os: Os, mem: u64, pages: u64, again: u64) -> Sys {
    let mut sys = Sys::new(Format::X86_64, mem, os);
    for i in 0..pages {
        sys.access(0, BASE + i * 4096, if i % 2 == 0 { Store } else { Load });
        if i % 512 == 0 {
            sys.check();
        }
    }
    for i in 0..again {
        sys.access(0, BASE + i * 4096, Load);
    }
    sys.check();
    sys
}

#[test]
fn a_workload_bigger_than_memory_completes_by_swapping() {
    let mthp = Os::Mthp(Mthp::new(MthpConfig::default()));
    for os in [Os::Base(Base::default()), thp(Defrag::Madvise), mthp] {
        let name = os.name();
        // 16 MiB of memory, 32 MiB touched, then the first 4 MiB again.
        let sys = overflow(reclaiming(os), 16 << 20, 8192, 1024);
        let st = sys.os.stats();
        let (outs, ins) = (st.count(OsEvent::SwapOuts), st.count(OsEvent::SwapIns));
        assert!(outs >= 8192 - 4096, "{name}: {outs} swap-outs for 32 MiB in 16 MiB");
        assert_eq!(
            ins, 1024,
            "{name}: every re-touched page was cold and came back from swap"
        );
        assert!(st.resident_bytes <= 16 << 20);
        let r = ReclaimConfig::default();
        assert_eq!(
            st.os_cycles,
            ins * r.swap_in_cycles + outs * r.swap_out_cycles_per_page,
            "{name}: swap traffic charged"
        );
        if name == "thp" {
            assert!(
                st.count(OsEvent::ThpSplits) > 0,
                "thp: huge pages split before swap-out"
            );
        }
    }
}

#[test]
fn without_reclaim_the_same_workload_is_out_of_memory_naming_memory_size() {
    let os = Os::Base(Base::default());
    assert!(!os.reclaim().unwrap().enabled, "reclaim is off by default");
    let mut sys = Sys::new(Format::X86_64, 4 << 20, os);
    sys.space(0);
    let mut err = None;
    for i in 0..2048u64 {
        let mut sd = Vec::new();
        let space = sys.spaces[0].as_mut().unwrap();
        let va = BASE + i * 4096;
        if let Err(e) = sys.os.handle_fault(FaultCtx {
            mem: &mut sys.mem,
            space,
            va,
            kind: Load,
            shootdowns: &mut sd,
        }) {
            err = Some(e);
            break;
        }
    }
    match err {
        Some(ModelError::OutOfMemory(m)) => {
            assert!(m.contains("memory.size") && m.contains("os.reclaim.enabled"), "{m}")
        }
        e => panic!("expected out of memory, got {e:?}"),
    }
    assert_eq!(sys.os.stats().count(OsEvent::SwapOuts), 0);
}

#[test]
fn the_clock_gives_recently_used_pages_a_second_chance() {
    // 16 MiB: a hot set of 256 pages used all along, and a cyclic stream over 6000
    // pages (24 MiB), so the hand goes round the whole address space again and again.
    let mut sys = Sys::new(Format::X86_64, 16 << 20, reclaiming(Os::Base(Base::default())));
    let hot = |i: u64| BASE + i * 4096;
    let cold = |i: u64| BASE + (64 << 20) + i * 4096;
    for i in 0..256 {
        sys.access(0, hot(i), Store);
    }
    let mut warm = 0;
    let mut hot_seen_in_swap = 0;
    for i in 0..16_000u64 {
        sys.access(0, cold(i % 6000), Store);
        sys.access(0, hot(i % 256), Load);
        if i == 8_000 {
            // The first reclaim finds every page young and the hand's second turn
            // takes some hot pages before they are used again: skip that transient.
            warm = sys.os.stats().count(OsEvent::SwapIns);
        }
        if i > 8_000 && i % 16 == 0 {
            hot_seen_in_swap += sys.mem.swap.slots.range((0, hot(0))..(0, hot(256))).count();
        }
    }
    sys.check();
    let outs = sys.os.stats().count(OsEvent::SwapOuts);
    assert!(outs > 16_000 + 256 - 4096, "swapped {outs}");
    let hot_in_swap = sys.mem.swap.slots.iter().filter(|(_, va)| *va < cold(0)).count();
    assert_eq!(hot_in_swap, 0, "hot pages kept by their accessed bit");
    // A FIFO would evict the hot pages too, once per turn of the hand.
    assert_eq!(hot_seen_in_swap, 0, "a hot page was in swap in steady state");
    assert!(
        sys.os.stats().count(OsEvent::SwapIns) - warm > 1000,
        "the cold cycle is longer than memory: it swaps"
    );
    assert!(
        warm > 0,
        "the transient exists (else this test checks nothing about FIFO vs clock)"
    );
}

#[test]
fn the_thp_shrinker_splits_underused_collapsed_pages_before_swapping() {
    let k = KhugepagedConfig {
        scan_period: 1,
        pages_to_scan: Some(1 << 20),
        ..Default::default()
    };
    let mut sys = Sys::new(Format::X86_64, 32 << 20, reclaiming(Os::Thp(Thp::khugepaged_only(k))));
    // One page in each of 6 ranges (511 empty), and 400 pages in a 7th (112 empty).
    for r in 0..6u64 {
        sys.access(0, BASE + (r << 21) + 0x5000, Store);
    }
    for i in 0..400u64 {
        sys.access(0, BASE + (6 << 21) + i * 4096, Store);
    }
    sys.now += 10;
    sys.tick();
    assert_eq!(sys.os.stats().collapses, 7);
    // khugepaged collapsed with the kernel's max_ptes_none (511); an administrator then
    // lowers it to 255. The shrinker reads the current value (mm/huge_memory.c
    // thp_underused): more than 255 zero-filled pages is underused. The simulation does
    // not see stores, so a page empty at collapse counts as zero-filled (shrinker.rs).
    let Os::Thp(t) = &mut sys.os else { unreachable!() };
    t.khugepaged.max_ptes_none = Some(255);
    let old: Vec<u64> = (0..6u64)
        .map(|r| leaf(&mut sys, 0, BASE + (r << 21)).unwrap().pa)
        .collect();
    // Pressure from another address space.
    let mut i = 0;
    while sys.os.stats().count(OsEvent::ReclaimRuns) == 0 {
        sys.access(1, BASE + i * 4096, Store);
        i += 1;
    }
    let st = sys.os.stats().clone();
    assert!(st.count(OsEvent::ThpUnderusedSplit) >= 1, "{st:?}");
    assert_eq!(
        st.count(OsEvent::SwapOuts),
        0,
        "the shrinker freed enough: no swap-out yet"
    );
    let split = st.count(OsEvent::ThpUnderusedSplit) as usize;
    // The split pages keep their one used subpage, at its place in the old block.
    let mut kept = 0;
    for (r, pa) in old.iter().enumerate() {
        let m = leaf(&mut sys, 0, BASE + ((r as u64) << 21) + 0x5000).unwrap();
        if m.size == PageSize::K4 {
            assert_eq!(m.pa, pa + 0x5000);
            assert!(
                leaf(&mut sys, 0, BASE + ((r as u64) << 21)).is_none(),
                "empty subpage freed"
            );
            kept += 1;
        }
    }
    assert_eq!(kept, split);
    // The dense page (112 empty <= 255) is not underused.
    assert_eq!(leaf(&mut sys, 0, BASE + (6 << 21)).unwrap().size, PageSize::M2);
    sys.check();
}

#[test]
fn unmapping_a_range_discards_its_pages_in_swap() {
    // 32 MiB touched through 16 MiB: the first pages are in swap. Unmap the first 4 MiB;
    // touching them again is an ordinary fault on a fresh page, not a swap-in.
    let mut sys = overflow(reclaiming(Os::Base(Base::default())), 16 << 20, 8192, 0);
    assert!(
        sys.mem.swap.any_in(0, BASE, BASE + (4 << 20)),
        "precondition: pages of the range in swap"
    );
    let ins = sys.os.stats().count(OsEvent::SwapIns);
    sys.unmap(0, BASE, BASE + (4 << 20)).unwrap();
    assert!(!sys.mem.swap.any_in(0, BASE, BASE + (4 << 20)));
    sys.check();
    for i in 0..1024 {
        sys.access(0, BASE + i * 4096, Load);
    }
    sys.check();
    assert_eq!(
        sys.os.stats().count(OsEvent::SwapIns),
        ins,
        "no swap-in for pages the unmap discarded"
    );
}
