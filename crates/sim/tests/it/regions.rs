//! Per-region counting (`Machine::count_regions`, `SessionOptions::regions`): what each
//! trace VMA's references cost and what they made resident, derived by hand.

use mmulab_model::addr::PageSize;
use mmulab_sim::config::{from_toml, DEFAULT_TOML};
use mmulab_sim::{Machine, Stats};
use mmulab_trace::{AccessKind, MemRef};

const A: u64 = 0x4000_0000;
const B: u64 = 0x8000_0000;
const OUT: u64 = 0x1000_0000;

/// A machine with THP `always`, 256 MiB of memory and no zero page.
fn thp_always() -> Machine {
    let sets: Vec<String> = [
        "os.policy=thp",
        "os.thp.enabled=always",
        "memory.size=256MiB",
        "os.zero_page=false",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Machine::new(from_toml(DEFAULT_TOML, None, &sets).unwrap()).unwrap()
}

fn load(addr: u64) -> MemRef {
    MemRef {
        addr,
        size: 8,
        kind: AccessKind::Load,
        core: 0,
        asid: 1,
    }
}

/// Two VMAs: A, 4 MiB 2 MiB-aligned (two huge pages under THP `always`), and B, 64 KiB
/// (too small for one: sixteen 4 KiB pages). A is touched once in each 2 MiB half, twice
/// over; B's sixteen pages twice over; one load falls outside both. Each first touch
/// faults once, mapping a 2 MiB page in A and a 4 KiB one in B; A then holds 4 MiB
/// resident of which 8 KiB touched, B 64 KiB of 64 KiB. The regions' walk cycles add
/// up to the run's. Unmapping B gives back its 64 KiB and forgets its touched pages.
#[test]
fn each_vma_gets_its_references_walks_faults_and_memory() {
    let mut m = thp_always();
    m.set_trace_vmas(&[(B, B + (64 << 10)), (A, A + (4 << 20))]);
    m.count_regions();
    for _ in 0..2 {
        m.access(&load(A)).unwrap();
        m.access(&load(A + (2 << 20) + 4096)).unwrap();
        for p in 0..16 {
            m.access(&load(B + p * 4096)).unwrap();
        }
    }
    m.access(&load(OUT)).unwrap();
    let s = Stats::collect(&m);
    let r = s.regions.as_ref().expect("counted");
    assert_eq!(r.len(), 3, "{r:?}");
    let (a, b, out) = (&r[0], &r[1], &r[2]);
    assert_eq!((a.start, a.end, a.outside), (A, A + (4 << 20), false));
    assert_eq!((b.start, b.end), (B, B + (64 << 10)));
    assert!(out.outside);
    assert_eq!((a.references, b.references, out.references), (4, 32, 1));
    assert_eq!(a.faults_by_size[PageSize::M2.index()], 2);
    assert_eq!(a.faults(), 2);
    assert_eq!(b.faults_by_size[PageSize::K4.index()], 16);
    assert_eq!(b.faults(), 16);
    assert_eq!(out.faults(), 1);
    assert_eq!(a.resident_bytes, 4 << 20);
    assert_eq!(b.resident_bytes, 64 << 10);
    assert_eq!(
        (a.touched_bytes, b.touched_bytes, out.touched_bytes),
        (8192, 64 << 10, 4096)
    );
    assert_eq!(
        r.iter().map(|x| x.walk_cycles).sum::<u64>(),
        s.counters.walk_cycles,
        "the regions' walk cycles are the run's"
    );
    assert!(a.walk_cycles > 0 && b.walk_cycles > a.walk_cycles, "{a:?} {b:?}");

    m.unmap(1, B, B + (64 << 10)).unwrap();
    let s = Stats::collect(&m);
    let b = &s.regions.as_ref().unwrap()[1];
    assert_eq!((b.resident_bytes, b.touched_bytes), (0, 0));
}

/// On a guest machine (`[vm]`, nested walks) the regions' walk cycles still add up to
/// the run's: stage-2 reads, both stages' walk caches and the stage-2 TLB included.
#[test]
fn a_guests_regions_add_up_to_its_walk_cycles() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/vm/epyc-zen4-kvm.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = Machine::new(from_toml(&text, None, &[]).unwrap()).unwrap();
    m.set_trace_vmas(&[(A, A + (8 << 20))]);
    m.count_regions();
    for i in 0..4096u64 {
        m.access(&load(A + (i * 7919 % 2048) * 4096)).unwrap();
    }
    let s = Stats::collect(&m);
    let r = s.regions.as_ref().unwrap();
    assert_eq!(r[0].references, 4096);
    assert!(s.counters.walk_cycles > 0);
    assert_eq!(r.iter().map(|x| x.walk_cycles).sum::<u64>(), s.counters.walk_cycles);
}

/// A trace's allocations refine its regions (`preload_vmas`, `TraceMeta::allocations`):
/// two 2 MiB allocations the kernel merged into the anonymous 4 MiB VMA at A are two
/// regions, each with its own huge page and references; an allocation inside the file
/// mapping at B does not cut it; one that no VMA sample held (at OUT, mapped and gone
/// between samples) is a region of its own, not the outside entry.
#[test]
fn a_traces_allocations_cut_merged_vmas_and_add_the_ones_no_sample_held() {
    let vmas = format!(
        "# sample 0 t_ms=0 pid=1\n{A:x}-{:x} rw-p 00000000 00:00 0\n{B:x}-{:x} rw-p 00000000 fe:00 7 /tmp/f\n",
        A + (4 << 20),
        B + (64 << 10)
    );
    let allocs = mmulab_trace::meta::allocation_section(&[
        (A, A + (2 << 20)),
        (A + (2 << 20), A + (4 << 20)),
        (B + 4096, B + 8192),
        (OUT, OUT + (1 << 20)),
    ]);
    let meta = mmulab_trace::TraceMeta {
        sections: vec![("vmas".into(), vmas.into_bytes()), ("allocations".into(), allocs)],
        ..Default::default()
    };
    let mut m = thp_always();
    assert_eq!(mmulab_sim::preload_vmas(&mut m, &meta), 2);
    m.count_regions();
    for _ in 0..3 {
        m.access(&load(A + 8)).unwrap();
    }
    m.access(&load(A + (2 << 20) + 8)).unwrap();
    m.access(&load(B + 4096)).unwrap();
    m.access(&load(OUT + 4096)).unwrap();
    let s = Stats::collect(&m);
    let r = s.regions.as_ref().expect("counted");
    let spans: Vec<(u64, u64, bool)> = r.iter().map(|x| (x.start, x.end, x.outside)).collect();
    assert_eq!(
        spans,
        vec![
            (OUT, OUT + (1 << 20), false),
            (A, A + (2 << 20), false),
            (A + (2 << 20), A + (4 << 20), false),
            (B, B + (64 << 10), false),
            (0, 0, true)
        ]
    );
    let refs: Vec<u64> = r.iter().map(|x| x.references).collect();
    assert_eq!(refs, vec![1, 3, 1, 1, 0]);
    assert_eq!(r[1].faults_by_size[PageSize::M2.index()], 1);
    assert_eq!(r[2].faults_by_size[PageSize::M2.index()], 1);
}
