//! The OS policies wired into the machine: config validation of `[os]` and
//! `[memory.age]`, exits through the build workload, time series, background ticks.

use mmulab_model::os::OsEvent;
use mmulab_sim::config::{from_toml, DEFAULT_TOML};
use mmulab_sim::{run, Machine};
use mmulab_trace::workload;
use std::sync::{Arc, Mutex};

fn spec(sets: &[&str]) -> Result<mmulab_sim::config::MachineSpec, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    from_toml(DEFAULT_TOML, None, &sets).map_err(|e| e.to_string())
}

#[test]
fn bad_os_and_memory_keys_are_named() {
    let e = spec(&["os.policy=freebsd"]).unwrap_err();
    assert!(
        e.contains("os.policy") && e.contains("reservation") && e.contains("mthp"),
        "{e}"
    );
    let e = spec(&["os.policy=thp", "os.thp.enabled=sometimes"]).unwrap_err();
    assert!(e.contains("os.thp.enabled"), "{e}");
    let e = spec(&["os.policy=thp", "os.thp.defrag=eager"]).unwrap_err();
    assert!(e.contains("os.thp.defrag"), "{e}");
    let e = spec(&["os.policy=khugepaged", "os.khugepaged.max_ptes_none=600"]).unwrap_err();
    assert!(e.contains("max_ptes_none"), "{e}");
    let e = spec(&["os.thp.colour=red"]).unwrap_err();
    assert!(e.contains("colour"), "{e}");
    let e = spec(&["memory.age.target_free_2m_share=1.5"]).unwrap_err();
    assert!(e.contains("memory.age.target_free_2m_share"), "{e}");
    let e = spec(&["os.policy=mthp", "os.mthp.sizes=[\"1G\"]"]).unwrap_err();
    assert!(e.contains("os.mthp.sizes"), "{e}");
    let e = spec(&["os.policy=reservation", "os.page_size=2M"]).unwrap_err();
    assert!(e.contains("os.page_size"), "{e}");
    assert!(spec(&["os.policy=reservation", "memory.age.target_free_2m_share=0.3"]).is_ok());
    let e = spec(&["memory.age={used=0.3, target_free_2m_share=0.1, movable=1.5}"]).unwrap_err();
    assert!(e.contains("memory.age.movable"), "{e}");
    let e = spec(&["os.reclaim.batch_pages=0"]).unwrap_err();
    assert!(e.contains("os.reclaim.batch_pages"), "{e}");
    // [os.reclaim] is the model's ReclaimConfig itself: unknown keys still refused.
    let e = spec(&["os.reclaim.colour=1"]).unwrap_err();
    assert!(e.contains("colour"), "{e}");
    let r = spec(&["os.reclaim.enabled=true", "os.reclaim.batch_pages=7"])
        .unwrap()
        .os
        .reclaim();
    assert!(r.enabled && r.batch_pages == 7 && r.min_free_pages == 64, "{r:?}");
    // The model's own shrinker threshold is gone (the kernel's rule uses
    // khugepaged.max_ptes_none): an old config naming it is refused, naming the key.
    let e = spec(&["os.reclaim.thp_underused_empty=256"]).unwrap_err();
    assert!(e.contains("thp_underused_empty"), "{e}");
    let e = spec(&["os.reclaim.swapiness=60"]).unwrap_err();
    assert!(e.contains("swapiness"), "{e}");
    let e = spec(&["os.policy=thp", "os.khugepaged.defrag=maybe"]).unwrap_err();
    assert!(e.contains("os.khugepaged.defrag"), "{e}");
    assert!(spec(&[
        "os.policy=thp",
        "os.thp.migrate_cycles_per_page=1",
        "os.reclaim.enabled=true",
        "os.khugepaged.defrag=false"
    ])
    .is_ok());
}

#[test]
fn with_reclaim_a_machine_swaps_a_table_bigger_than_memory_without_it_errors() {
    for policy in ["base", "thp", "mthp"] {
        let s = spec(&[
            &format!("os.policy={policy}"),
            "memory.size=32MiB",
            "os.reclaim.enabled=true",
        ])
        .unwrap();
        let mut m = Machine::new(s).unwrap();
        let mut src = workload::parse("gups:table=64MiB,updates=100K").unwrap();
        let st = run(&mut m, &mut src, None).unwrap();
        assert!(st.os.count(OsEvent::SwapOuts) > 4096, "{policy}: {:?}", st.os.events);
        assert!(
            st.os.count(OsEvent::SwapIns) > 1000,
            "{policy}: random updates come back from swap"
        );
        assert!(st.resident_bytes <= 32 << 20);
        let s = spec(&[&format!("os.policy={policy}"), "memory.size=32MiB"]).unwrap();
        let mut m = Machine::new(s).unwrap();
        let mut src = workload::parse("gups:table=64MiB,updates=100K").unwrap();
        let e = run(&mut m, &mut src, None).unwrap_err().to_string();
        assert!(
            e.contains("memory.size") && e.contains("os.reclaim.enabled"),
            "{policy}: {e}"
        );
    }
}

#[test]
fn movable_aged_memory_is_compacted_for_thp_with_defrag_always() {
    let run_with = |defrag: &str| {
        let sets = [
            "os.policy=thp",
            "memory.size=512MiB",
            "memory.age={used=0.5, target_free_2m_share=0.0, seed=2, movable=1.0}",
        ];
        let mut all: Vec<&str> = sets.to_vec();
        let d = format!("os.thp.defrag={defrag}");
        all.push(&d);
        let mut m = Machine::new(spec(&all).unwrap()).unwrap();
        let mut src = workload::parse("gups:table=64MiB,updates=200K").unwrap();
        run(&mut m, &mut src, None).unwrap()
    };
    let always = run_with("always");
    let never = run_with("never");
    let huge = |s: &mmulab_sim::Stats| s.os.resident_by_size[mmulab_model::addr::PageSize::M2.index()];
    assert_eq!(huge(&always), 64 << 20, "{:?}", always.os.events);
    assert_eq!(always.os.count(OsEvent::CompactionSuccess), 32);
    assert!(always.os.count(OsEvent::PagesMigrated) > 32 * 200);
    assert_eq!(huge(&never), 0);
    assert!(always.stlb_misses() < never.stlb_misses() / 2);
}

#[test]
fn build_workload_processes_exit_and_free_their_memory() {
    for policy in ["base", "reservation", "thp", "mthp"] {
        let s = spec(&[&format!("os.policy={policy}"), "memory.size=512MiB"]).unwrap();
        let mut m = Machine::new(s).unwrap();
        let free0 = m.memory().buddy.free_frames();
        let mut src = workload::parse("build:procs=12,refs=20K,jobs=3,large_size=3MiB").unwrap();
        let st = run(&mut m, &mut src, None).unwrap();
        assert_eq!(st.os.count(OsEvent::Exits), 12, "{policy}");
        // What stays is Linux's zero page (base, thp, mthp: never freed, counted once).
        let zero = m.memory().zero.frame_bytes();
        assert_eq!(zero > 0, policy != "reservation", "{policy}");
        assert_eq!(st.resident_bytes, zero, "{policy}: memory of exited processes");
        assert_eq!(
            m.memory().buddy.free_frames() + zero / 4096,
            free0,
            "{policy}: frames returned"
        );
        assert!(st.os.mapped.iter().sum::<u64>() > 12, "{policy}");
    }
}

struct Shared(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn time_series_shows_khugepaged_raising_coverage() {
    let s = spec(&[
        "os.policy=khugepaged",
        "os.khugepaged.scan_period=200000",
        "memory.size=1GiB",
    ])
    .unwrap();
    let mut m = Machine::new(s).unwrap();
    let buf = Arc::new(Mutex::new(Vec::new()));
    m.set_series(250_000, Box::new(Shared(buf.clone())));
    // init=off: the updates fault the table in while khugepaged collapses it.
    let mut src = workload::parse("gups:table=64MiB,updates=1M,init=off").unwrap();
    let st = run(&mut m, &mut src, None).unwrap();
    m.finish_series().unwrap();
    let text = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        rows.len(),
        8,
        "2M references, a sample every 250K (the last one at the end)"
    );
    let refs: Vec<u64> = rows.iter().map(|r| r["refs"].as_u64().unwrap()).collect();
    assert!(refs.windows(2).all(|w| w[0] < w[1]), "{refs:?}");
    let cov: Vec<f64> = rows.iter().map(|r| r["huge_coverage"].as_f64().unwrap()).collect();
    // One wake-up (at 200K) before the first sample: at most pages_to_scan / 512 = 8 ranges.
    assert!(rows[0]["collapses"].as_u64().unwrap() <= 8, "{}", rows[0]);
    assert!(cov[0] < *cov.last().unwrap(), "{cov:?}");
    assert!(*cov.last().unwrap() > 0.5, "{cov:?}");
    assert!(st.os.collapses > 0);
    let last = rows.last().unwrap();
    assert!(last["bloat_bytes"].as_i64().unwrap() >= 0);
    assert_eq!(last["collapses"].as_u64().unwrap(), st.os.collapses);
}

#[test]
fn aged_memory_gives_thp_fewer_huge_pages_in_the_sim() {
    let run_with = |sets: &[&str]| {
        let mut all = vec!["os.policy=thp", "memory.size=1GiB"];
        all.extend_from_slice(sets);
        let mut m = Machine::new(spec(&all).unwrap()).unwrap();
        let mut src = workload::parse("gups:table=128MiB,updates=200K").unwrap();
        run(&mut m, &mut src, None).unwrap()
    };
    let fresh = run_with(&[]);
    let aged = run_with(&["memory.age={used=0.6, target_free_2m_share=0.05, seed=2}"]);
    let huge = |s: &mmulab_sim::Stats| s.os.resident_by_size[mmulab_model::addr::PageSize::M2.index()];
    assert_eq!(huge(&fresh), 128 << 20);
    assert!(
        huge(&aged) < huge(&fresh) / 2,
        "aged {} fresh {}",
        huge(&aged),
        huge(&fresh)
    );
    assert!(aged.stlb_misses() > fresh.stlb_misses());
    assert!(aged.pinned_frames > 0);
}

#[test]
fn trace_vmas_decide_where_thp_may_use_huge_pages() {
    // One VMA of 3 MiB starting 2 MiB-aligned: the first 2 MiB range fits, the second
    // crosses the VMA's end and must fall back to 4 KiB.
    // Loads only: without zero pages, so that every fault allocates.
    let s = spec(&["os.policy=thp", "memory.size=256MiB", "os.zero_page=false"]).unwrap();
    let mut m = Machine::new(s).unwrap();
    assert_eq!(m.set_trace_vmas(&[(0x4000_0000, 0x4000_0000 + (3 << 20))]), 1);
    let mut src = workload::parse("seq:size=3MiB,refs=768,stride=4096,base=0x40000000").unwrap();
    let st = run(&mut m, &mut src, None).unwrap();
    let p = |s: mmulab_model::addr::PageSize| st.os.resident_by_size[s.index()];
    assert_eq!(p(mmulab_model::addr::PageSize::M2), 2 << 20);
    assert_eq!(p(mmulab_model::addr::PageSize::K4), 1 << 20);
    assert_eq!(st.os.count(OsEvent::ThpFaultFallbackVmaEdge), 256);
}

#[test]
fn preloaded_trace_vmas_are_every_range_the_samples_held_the_later_winning() {
    // The same run as above, with the VMAs from a trace's metadata: the first sample (a
    // 4 MiB VMA) is superseded by the last (3 MiB) where they overlap, and its last MiB,
    // which only the first held, stays a VMA of its own (TraceMeta::vmas_union): two VMAs,
    // and the edge at 3 MiB still stops a huge page there.
    let text = "# sample 0 t_ms=0 pid=1\n40000000-40400000 rw-p 00000000 00:00 0\n\
                # sample 1 t_ms=100 pid=1\n40000000-40300000 rw-p 00000000 00:00 0\n";
    let meta = mmulab_trace::TraceMeta {
        sections: vec![("vmas".into(), text.as_bytes().to_vec())],
        ..Default::default()
    };
    let s = spec(&["os.policy=thp", "memory.size=256MiB"]).unwrap();
    let mut m = Machine::new(s).unwrap();
    assert_eq!(mmulab_sim::preload_vmas(&mut m, &mmulab_trace::TraceMeta::default()), 0);
    assert_eq!(mmulab_sim::preload_vmas(&mut m, &meta), 2);
    let mut src = workload::parse("seq:size=3MiB,refs=768,stride=4096,base=0x40000000").unwrap();
    let st = run(&mut m, &mut src, None).unwrap();
    assert_eq!(st.os.count(OsEvent::ThpFaultFallbackVmaEdge), 256);
    assert!(mmulab_sim::trace_file_meta(std::path::Path::new("/nonexistent.mlt")).is_none());
}

/// Two 4 MiB VMAs from a trace's smaps sample, the first madvised (`hg`), the second not,
/// each touched once per 4 KiB page. Under THP `madvise` only the first gets huge pages
/// (2 × 2 MiB, Linux `thp_vma_allowable_order` checks `VM_HUGEPAGE`), the second
/// 1,024 small ones; under `always` a `nh` VMA gets none (`VM_NOHUGEPAGE`).
#[test]
fn a_traces_madvise_flags_decide_where_thp_madvise_maps_huge_pages() {
    let text = "# sample 0 t_ms=0 pid=1\n40000000-40400000 rw-p 00000000 00:00 0\n\
                VmFlags: rd wr mr mw me ac hg\n\
                40400000-40800000 rw-p 00000000 00:00 0\nVmFlags: rd wr mr mw me ac nh\n";
    let meta = mmulab_trace::TraceMeta {
        sections: vec![("vmas".into(), text.as_bytes().to_vec())],
        ..Default::default()
    };
    let huge_and_small = |enabled: &str| {
        let s = spec(&[
            "os.policy=thp",
            "memory.size=256MiB",
            "os.zero_page=false",
            &format!("os.thp.enabled={enabled}"),
        ])
        .unwrap();
        let mut m = Machine::new(s).unwrap();
        assert_eq!(mmulab_sim::preload_vmas(&mut m, &meta), 2);
        let mut src = workload::parse("seq:size=8MiB,refs=2048,stride=4096,base=0x40000000").unwrap();
        let st = run(&mut m, &mut src, None).unwrap();
        let p = |s: mmulab_model::addr::PageSize| st.os.resident_by_size[s.index()];
        (p(mmulab_model::addr::PageSize::M2), p(mmulab_model::addr::PageSize::K4))
    };
    assert_eq!(huge_and_small("madvise"), (4 << 20, 4 << 20));
    // `always`: the hg VMA as before; the nh one still small.
    assert_eq!(huge_and_small("always"), (4 << 20, 4 << 20));
    assert_eq!(huge_and_small("never"), (0, 8 << 20));
}

#[test]
fn unmap_events_drop_the_range_from_every_tlb_and_fault_again() {
    use mmulab_sim::Stats;
    use mmulab_trace::{AccessKind, Event, MemRef};
    const BASE: u64 = 0x4000_0000;
    let load = |addr| MemRef {
        addr,
        size: 8,
        kind: AccessKind::Load,
        core: 0,
        asid: 1,
    };
    let s = spec(&["os.policy=thp", "memory.size=512MiB"]).unwrap();
    let mut m = Machine::new(s).unwrap();
    for _ in 0..2 {
        for p in 0..8 {
            m.access(&load(BASE + p * 4096)).unwrap();
        }
    }
    let before = Stats::collect(&m);
    assert_eq!(before.counters.faults, 1, "one THP fault");
    // The warm pages hit: no walk.
    m.access(&load(BASE + 4096)).unwrap();
    assert_eq!(Stats::collect(&m).counters.walks, before.counters.walks);
    m.event(&Event::Unmap {
        asid: 1,
        start: BASE + 4096,
        end: BASE + 2 * 4096,
    })
    .unwrap();
    let after = Stats::collect(&m);
    assert_eq!(
        after.counters.references,
        before.counters.references + 1,
        "an event is no reference"
    );
    assert_eq!(after.os.count(OsEvent::Munmaps), 1);
    assert_eq!(after.os.count(OsEvent::MunmapSplits), 1);
    assert!(after.counters.shootdowns >= 2, "split range and unmapped range");
    // The unmapped page faults again: a stale TLB entry would have hit.
    m.access(&load(BASE + 4096)).unwrap();
    let s1 = Stats::collect(&m);
    assert_eq!(s1.counters.faults, after.counters.faults + 1);
    // A neighbour inside the old 2 MiB page walks (the 2 MiB entry is gone) but does
    // not fault (its 4 KiB leaf survived the split).
    m.access(&load(BASE)).unwrap();
    let s2 = Stats::collect(&m);
    assert_eq!(s2.counters.walks, s1.counters.walks + 1);
    assert_eq!(s2.counters.faults, s1.counters.faults);
}

#[test]
fn a_dontneed_event_frees_the_pages_keeps_the_vma_and_splits_the_huge_page_it_cuts() {
    use mmulab_sim::Stats;
    use mmulab_trace::{AccessKind, Event, MemRef};
    const BASE: u64 = 0x4000_0000;
    let store = |addr| MemRef {
        addr,
        size: 8,
        kind: AccessKind::Store,
        core: 0,
        asid: 1,
    };
    let s = spec(&["os.policy=thp", "memory.size=512MiB"]).unwrap();
    let mut m = Machine::new(s).unwrap();
    m.access(&store(BASE)).unwrap();
    let before = Stats::collect(&m);
    assert_eq!(before.counters.faults, 1, "one THP fault");
    // MADV_DONTNEED of 64 KiB inside the THP: its PMD is split (thp_split_pmd) and the
    // folio queued for a deferred split; 496 pages stay, 16 go.
    m.event(&Event::DontNeed {
        asid: 1,
        start: BASE + 0x2000,
        end: BASE + 0x12000,
    })
    .unwrap();
    let after = Stats::collect(&m);
    assert_eq!(after.os.count(OsEvent::ThpSplitPmd), 1);
    assert_eq!(after.os.count(OsEvent::ThpDeferredSplitPage), 1);
    assert_eq!(after.os.count(OsEvent::Munmaps), 0, "no munmap");
    assert_eq!(after.os.resident_bytes, (512 - 16) * 4096);
    // The VMA stays: a store in the discarded range faults a fresh 4 KiB page (the
    // range's PMD has a page table now), no error.
    m.access(&store(BASE + 0x3000)).unwrap();
    let s1 = Stats::collect(&m);
    assert_eq!(s1.counters.faults, 2);
    assert_eq!(s1.os.resident_bytes, (512 - 15) * 4096);
}

#[test]
fn malformed_events_and_legacy_markers_are_clear_errors() {
    use mmulab_trace::event::{LegacyMarkers, UNMAP_TAG};
    use mmulab_trace::{AccessKind, Event, MemRef};
    let r = |addr, asid| MemRef {
        addr,
        size: 0,
        kind: AccessKind::Load,
        core: 0,
        asid,
    };
    let machine = || Machine::new(spec(&["os.policy=base"]).unwrap()).unwrap();
    for (start, end) in [
        (0x4000_2000, 0x4000_0000),
        (0x4000_0000, 0x4000_0000),
        (0x4000_0800, 0x4000_2000),
    ] {
        let e = machine()
            .event(&Event::Unmap { asid: 1, start, end })
            .unwrap_err()
            .to_string();
        assert!(e.contains("asid 1") && e.contains("4 KiB-aligned, non-empty"), "{e}");
    }
    // Through the legacy decoder (old traces), a trace that ends between the two
    // markers of an unmap is an error, not a skipped unmap; a complete pair unmaps.
    let mut m = machine();
    let mut src = LegacyMarkers::new(Refs(vec![r(0x4000_0000, 1), r(UNMAP_TAG | 0x4000_0000, 1)]));
    let e = run(&mut m, &mut src, None).unwrap_err().to_string();
    assert!(e.contains("truncated") && e.contains("0x40000000"), "{e}");
    let mut m = machine();
    let pair = Event::Unmap {
        asid: 1,
        start: 0x4000_0000,
        end: 0x4000_2000,
    }
    .legacy_refs();
    let mut src = LegacyMarkers::new(Refs(vec![r(0x4000_0000, 1), pair[0], pair[1], r(0x4000_0000, 1)]));
    let st = run(&mut m, &mut src, None).unwrap();
    assert_eq!(st.os.count(OsEvent::Munmaps), 1);
    assert_eq!(
        (st.counters.references, st.counters.faults),
        (2, 2),
        "the markers are not references"
    );
}

#[test]
fn build_workload_with_unmap_frees_arrays_mid_life() {
    for policy in ["base", "reservation", "thp", "mthp"] {
        let s = spec(&[&format!("os.policy={policy}"), "memory.size=512MiB"]).unwrap();
        let mut m = Machine::new(s).unwrap();
        let free0 = m.memory().buddy.free_frames();
        let mut src = workload::parse("build:procs=6,refs=40K,jobs=2,large_size=3MiB,unmap=2").unwrap();
        let st = run(&mut m, &mut src, None).unwrap();
        assert_eq!(
            st.counters.references,
            6 * 40_000,
            "{policy}: events are not references"
        );
        assert_eq!(st.os.count(OsEvent::Munmaps), 12, "{policy}");
        assert_eq!(st.os.count(OsEvent::Exits), 6, "{policy}");
        // Linux's zero page stays (never freed, counted once).
        let zero = m.memory().zero.frame_bytes();
        assert_eq!(st.resident_bytes, zero, "{policy}");
        assert_eq!(
            m.memory().buddy.free_frames() + zero / 4096,
            free0,
            "{policy}: frames returned"
        );
    }
}

/// A trace held in memory (tests only).
struct Refs(Vec<mmulab_trace::MemRef>);

impl mmulab_trace::TraceSource for Refs {
    fn next_batch(&mut self, buf: &mut mmulab_trace::Batch, max: usize) -> Result<usize, mmulab_trace::TraceError> {
        let n = self.0.len().min(max);
        buf.refs.extend(self.0.drain(..n));
        Ok(n)
    }
    fn describe(&self) -> String {
        "in-memory references".into()
    }
}

/// `[os.reclaim]` under a policy that has no reclaim (FreeBSD reservations, fixed
/// pages) was silently ignored; it is refused, naming the key and the policy.
#[test]
fn reclaim_on_a_policy_without_reclaim_is_refused() {
    for policy in ["reservation", "fixed"] {
        for key in ["os.reclaim.enabled=true", "os.reclaim.batch_pages=7"] {
            let mut sets = vec![format!("os.policy={policy}"), key.to_string()];
            if policy == "fixed" {
                sets.push("os.page_size=2M".into());
            }
            let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
            let e = spec(&sets).unwrap_err();
            let name = key.split('=').next().unwrap();
            assert!(e.contains(name) && e.contains(&format!("\"{policy}\"")), "{e}");
        }
    }
    for policy in ["base", "thp", "khugepaged", "mthp"] {
        let sets = [format!("os.policy={policy}"), "os.reclaim.enabled=true".to_string()];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        assert!(Machine::new(spec(&sets).unwrap()).is_ok(), "{policy} reclaims");
    }
}

/// Bloat at its peak (`Stats::peak_bloat_bytes`), derived by hand. GUPS first writes
/// its 64 MiB table in order (`Table[i] = i`), then updates it at random. Under THP
/// `always` each 2 MiB range faults in as one huge page at its first write: right after
/// that fault every earlier page is touched and only the faulting 4 KiB of the new
/// range, so the bloat is 2 MiB − 4 KiB, 32 times, and never more (the random updates
/// fault nothing). At the end the whole table is touched: bloat 0, 64 MiB resident.
/// Under base pages every fault makes resident the one page it touches: peak bloat 0.
/// Without tracking, none of the figures.
#[test]
fn peak_bloat_is_one_huge_page_less_its_first_touch_for_an_ordered_fill() {
    let go = |sets: &[&str], track: bool| {
        let mut m = Machine::new(spec(sets).unwrap()).unwrap();
        if track {
            m.track_touched();
        }
        let mut src = workload::parse("gups:table=64MiB,updates=100K").unwrap();
        run(&mut m, &mut src, None).unwrap()
    };
    let thp = go(&["os.policy=thp", "os.thp.enabled=always", "os.zero_page=false"], true);
    assert_eq!(thp.mapped[mmulab_model::addr::PageSize::M2.index()], 32);
    assert_eq!(thp.peak_bloat_bytes, Some((2 << 20) - 4096));
    assert_eq!(thp.peak_resident_bytes, Some(64 << 20));
    assert_eq!(thp.touched_bytes, Some(64 << 20));
    let base = go(&["os.policy=base", "os.zero_page=false"], true);
    assert_eq!(base.peak_bloat_bytes, Some(0));
    assert_eq!(base.peak_resident_bytes, Some(64 << 20));
    let untracked = go(&["os.policy=thp", "os.thp.enabled=always"], false);
    assert_eq!(untracked.peak_bloat_bytes, None);
    assert_eq!(untracked.peak_resident_bytes, None);
}

/// Issue 47 item 1: a touch between sampled windows faults its page in as the access
/// would, and counts no reference, lookup or walk. By hand, with the zero page on: a
/// first read maps the zero page (1 fault), the window's store then copies it (a second
/// fault, one `cow_from_zero`); a first write maps a writable page (1 fault), and the
/// window's store takes none.
#[test]
fn touches_fault_pages_in_as_the_unrecorded_access_did() {
    use mmulab_sim::Stats;
    use mmulab_trace::{AccessKind, Event, MemRef};
    const P: u64 = 0x4000_0000;
    let store = MemRef {
        addr: P + 8,
        size: 8,
        kind: AccessKind::Store,
        core: 0,
        asid: 1,
    };
    for (write, faults_after_touch, faults_after_store, cows) in [(false, 1, 2, 1), (true, 1, 1, 0)] {
        let s = spec(&["os.policy=base", "os.zero_page=true", "memory.size=512MiB"]).unwrap();
        let mut m = Machine::new(s).unwrap();
        m.event(&Event::Touch {
            asid: 1,
            addr: P,
            write,
        })
        .unwrap();
        let t = Stats::collect(&m);
        assert_eq!(t.counters.touches, 1);
        assert_eq!(t.counters.references, 0, "a touch is no reference");
        assert_eq!(t.counters.walks, 0, "a touch is no walk");
        assert_eq!(t.counters.faults, faults_after_touch, "write {write}");
        m.access(&store).unwrap();
        let a = Stats::collect(&m);
        assert_eq!(a.counters.references, 1);
        assert_eq!(a.counters.faults, faults_after_store, "write {write}");
        assert_eq!(a.os.count(OsEvent::CowFromZero), cows, "write {write}");
        // A second touch of a page already usable changes nothing.
        m.event(&Event::Touch {
            asid: 1,
            addr: P,
            write: true,
        })
        .unwrap();
        assert_eq!(Stats::collect(&m).counters.faults, faults_after_store);
    }
}

/// A write touch under THP `always` maps the whole 2 MiB page, as a first write in the
/// real run would (`do_huge_pmd_anonymous_page`): the window's later loads anywhere in
/// it fault no more, and the huge page is counted as mapped.
#[test]
fn a_touch_under_thp_maps_the_huge_page_the_windows_then_find() {
    use mmulab_model::addr::PageSize;
    use mmulab_sim::Stats;
    use mmulab_trace::{AccessKind, Event, MemRef};
    const BASE: u64 = 0x4000_0000;
    let s = spec(&["os.policy=thp", "os.thp.enabled=always", "memory.size=512MiB"]).unwrap();
    let mut m = Machine::new(s).unwrap();
    m.event(&Event::Touch {
        asid: 1,
        addr: BASE + 0x1000,
        write: true,
    })
    .unwrap();
    let t = Stats::collect(&m);
    assert_eq!(t.mapped[PageSize::M2 as usize], 1);
    assert_eq!((t.counters.faults, t.counters.references), (1, 0));
    for p in [0u64, 100, 511] {
        m.access(&MemRef {
            addr: BASE + p * 4096,
            size: 8,
            kind: AccessKind::Load,
            core: 0,
            asid: 1,
        })
        .unwrap();
    }
    assert_eq!(Stats::collect(&m).counters.faults, 1, "the windows find the huge page");
}

/// A touch outside the format's user address space is refused, naming it (a 32-bit
/// machine given an x86-64 recording), as a reference there is; it never maps memory.
#[test]
fn a_touch_outside_the_user_address_space_is_an_error_naming_it() {
    use mmulab_trace::Event;
    let s = from_toml(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/armada-xp.toml")).unwrap(),
        None,
        &[],
    )
    .unwrap();
    let mut m = Machine::new(s).unwrap();
    let e = m
        .event(&Event::Touch {
            asid: 0,
            addr: 0x7fff_0000_0000,
            write: true,
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("0x7fff00000000") && e.contains("--outside-user drop"), "{e}");
    assert_eq!(m.stats().counters.faults, 0);
}
