//! A nested (two-stage) machine with data caches (`[vm]` and `[caches]`): every read of
//! the two-dimensional walk, and the data, go through the caches at host-physical
//! addresses; the walk costs where its reads hit. Counts derived by hand.
//!
//! The machine: an x86-64 guest (4 levels, 4 KiB pages: policy `base`) over EPT
//! (4 levels), guest memory 16 MiB, no page-walk caches, no stage-2 TLB, a flat
//! memory of 30 cycles (`walk.mem_latency`). Each test loads `A` (the warm-up: guest
//! and stage-2 faults map everything), drops every cached translation
//! (`Machine::flush_tlbs`) and loads `A` again: the walk the test counts.
//!
//! Which reads share a line. Every guest-physical address is below 16 MiB, so every
//! stage-2 walk reads the same EPT PML4 entry (index 0) and the same PDPT entry (index
//! 0), and its PD entry is one of entries 0..7 (gPA >> 21 < 8): the first 64 bytes of
//! the one PD table, one line. The four guest descriptors are in four guest tables,
//! four pages: four lines. The data (offset 0 of `A`'s page) is a line of its own.

use mmulab_sim::config::from_toml;
use mmulab_sim::{Machine, Stats};
use mmulab_trace::{AccessKind, MemRef};

const A: u64 = 0x4000_0000;

fn machine(backing: &str, caches: &str, extra: &[&str]) -> Machine {
    let toml = format!(
        r#"
[machine]
arch = "x86_64"
[memory]
size = "1GiB"
[walk]
pwc_entries = []
mem_latency = 30
[[tlb]]
name = "l1"
serves = "data"
entries = 8
ways = 8
page_sizes = ["4K", "2M", "1G"]
[os]
policy = "base"
zero_page = false
[vm]
stage2 = "ept"
backing = "{backing}"
memory = "16MiB"
{caches}
"#
    );
    let sets: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    Machine::new(from_toml(&toml, None, &sets).expect("config")).expect("machine")
}

/// A fully associative L1D of `lines` 64-byte lines (4 cycles), and below it, if
/// `l2`, a fully associative L2 of 64 lines (10 cycles).
fn caches(lines: u32, l2: bool) -> String {
    let mut s = format!(
        "[caches]\n[caches.l1d]\nsize = {}\nways = {lines}\nlatency = 4\n",
        lines * 64
    );
    if l2 {
        s += "[caches.l2]\nsize = 4096\nways = 64\nlatency = 10\n";
    }
    s
}

/// Loads `A`, drops the cached translations, loads `A` again: the statistics before
/// and after the second load.
fn rewalk(m: &mut Machine, kind: AccessKind) -> (Stats, Stats) {
    m.access(&MemRef::new(A, AccessKind::Load, 8)).unwrap();
    m.flush_tlbs();
    let before = m.stats();
    m.access(&MemRef::new(A, kind, 8)).unwrap();
    (before, m.stats())
}

/// (walk hits, walk misses, data hits, data misses) of cache level `i`, after less before.
fn level(b: &Stats, a: &Stats, i: usize) -> (u64, u64, u64, u64) {
    let x = a.caches.as_ref().unwrap().stats.levels[i].1;
    let y = b.caches.as_ref().unwrap().stats.levels[i].1;
    (
        x.walk_hits - y.walk_hits,
        x.walk_misses - y.walk_misses,
        x.data_hits - y.data_hits,
        x.data_misses - y.data_misses,
    )
}

/// (walk cycles, data cycles, guest reads' cycles, stage-2 reads' cycles), after less before.
fn cycles(b: &Stats, a: &Stats) -> (u64, u64, u64, u64) {
    let split = |s: &Stats| s.nested.as_ref().unwrap().walk_caches.unwrap();
    let data = |s: &Stats| s.caches.as_ref().unwrap().data_cycles;
    (
        a.counters.walk_cycles - b.counters.walk_cycles,
        data(a) - data(b),
        split(a).cycles[0] - split(b).cycles[0],
        split(a).cycles[1] - split(b).cycles[1],
    )
}

#[test]
fn a_24_read_walk_whose_lines_are_all_cached_costs_the_l1d_latency_per_read() {
    // 4 KiB host pages: 4 × (4 + 1) + 4 = 24 reads (4 guest, 20 EPT). The L1D holds 64
    // lines, fully associative: the warm-up touches at most 13 distinct lines (PML4,
    // PDPT and PD lines; at most 5 EPT PT lines, one per translated gPA page: 4 guest
    // tables and the data page; 4 guest lines; the data line), so nothing is evicted
    // and the re-walk reads only lines its warm-up read: 24 L1D hits, 24 × 4 = 96
    // cycles (without caches 24 × 30 = 720); guest 4 × 4 = 16, stage 2 20 × 4 = 80. The
    // data hits too: 4 cycles.
    let mut m = machine("4K", &caches(64, false), &[]);
    let (b, a) = rewalk(&mut m, AccessKind::Load);
    assert_eq!(a.counters.walks - b.counters.walks, 1);
    assert_eq!(a.counters.walk_reads - b.counters.walk_reads, 24);
    assert_eq!(level(&b, &a, 0), (24, 0, 1, 0));
    assert_eq!(cycles(&b, &a), (96, 4, 16, 80));
    let n = a.nested.as_ref().unwrap().walk_caches.unwrap();
    let n0 = b.nested.as_ref().unwrap().walk_caches.unwrap();
    assert_eq!(n.memory_reads, n0.memory_reads, "no read of the re-walk went to memory");
    // The warm-up read each of the 4 guest lines from memory once (its faulting walks
    // read the same descriptors, the index of `A` in each table), and at least the
    // PML4, PDPT and PD lines of stage 2.
    assert_eq!(n0.memory_reads[0], 4);
    assert!(n0.memory_reads[1] >= 3, "{n0:?}");
    // The JSON: the cache counters as on a stage-1 machine, the split under `vm`.
    let j = a.to_json();
    assert!(
        j["caches"]["l1d"]["walk_hits"].as_u64().unwrap() >= 24,
        "{}",
        j["caches"]
    );
    assert_eq!(j["vm"]["walk_caches"]["stage2_cycles"].as_u64(), Some(n.cycles[1]));
    assert_eq!(j["caches"]["core_cycles"].as_array().map(Vec::len), Some(1));
    // Without caches the same walk costs 24 × 30, and neither key is there.
    let mut plain = machine("4K", "", &[]);
    let (b, a) = rewalk(&mut plain, AccessKind::Load);
    assert_eq!(a.counters.walk_cycles - b.counters.walk_cycles, 720);
    let j = a.to_json();
    assert!(j.get("caches").is_none() && j["vm"].get("walk_caches").is_none());
}

#[test]
fn reads_that_share_a_line_hit_a_small_l1d() {
    // 2 MiB host pages (hugetlb): each EPT walk reads PML4, PDPT and the PD leaf (3):
    // 4 × (3 + 1) + 3 = 19 reads. By line: [E4 E3 E2 G0] [E4 E3 E2 G1] [E4 E3 E2 G2]
    // [E4 E3 E2 G3] [E4 E3 E2], then the data D (E4, E3, E2: the one PML4, PDPT and PD
    // line; G0..G3 the four guest lines). The L1D has 4 lines (LRU); the L2 64, which
    // keep everything the warm-up read. The warm-up ended with E4 E3 E2 D, so the L1D
    // holds those 4. The re-walk: E4, E3, E2 hit; G0 misses (evicting D, the least
    // recent) and hits in L2; then each E4 E3 E2 hits again (3 other lines between two
    // reads of each) and each G misses the L1D (evicting the G before it). L1D: 15 walk
    // hits, 4 walk misses; L2: 4 walk hits. The data misses the L1D (G3, E4, E3, E2 are
    // there) and hits in L2. Cycles: 15 × 4 + 4 × (4 + 10) = 116 (guest 56, stage 2
    // 60); data 14. Without caches: 19 × 30 = 570.
    let mut m = machine("hugetlb-2M", &caches(4, true), &[]);
    let (b, a) = rewalk(&mut m, AccessKind::Load);
    let (n0, n1) = (b.nested.as_ref().unwrap(), a.nested.as_ref().unwrap());
    assert_eq!(
        (n1.stage1_refs() - n0.stage1_refs(), n1.stage2_refs() - n0.stage2_refs()),
        (4, 15)
    );
    assert_eq!(level(&b, &a, 0), (15, 4, 0, 1));
    assert_eq!(level(&b, &a, 1), (4, 0, 1, 0));
    assert_eq!(cycles(&b, &a), (116, 14, 56, 60));
}

#[test]
fn a_store_to_a_clean_entry_charges_its_dirty_bit_write_as_on_a_stage1_core() {
    // The load maps `A`'s page clean (`os.zero_page = false`: a private page; the walk
    // sets its accessed bit, not its dirty bit). The store then hits the clean, writable
    // combined entry: the entry is dropped and the 2D walk runs again (24 reads, as in
    // the first test) and sets the dirty bit, whose write costs one `walk.mem_latency`
    // (30), as `Stage1::store_to_clean` charges it. Without caches 24 × 30 + 30 = 750;
    // with the 64-line L1D, where the 24 reads hit, 24 × 4 + 30 = 126.
    let l1d = caches(64, false);
    for (caches, want) in [("", 750), (l1d.as_str(), 126)] {
        let mut m = machine("4K", caches, &[]);
        m.access(&MemRef::new(A, AccessKind::Load, 8)).unwrap();
        let b = m.stats();
        m.access(&MemRef::new(A, AccessKind::Store, 8)).unwrap();
        let a = m.stats();
        let (c0, c1) = (&b.counters, &a.counters);
        assert_eq!(
            (c1.dirty_writes - c0.dirty_writes, c1.walk_reads - c0.walk_reads),
            (1, 24)
        );
        assert_eq!(c1.walk_cycles - c0.walk_cycles, want, "caches: {caches:?}");
    }
}
