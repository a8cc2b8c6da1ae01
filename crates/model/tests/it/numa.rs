//! NUMA emulation (mem/numa.rs): the fake-node split, the interleave index and node
//! choice against hand-worked VMAs, the policies' fallback, and huge pages as one unit
//! on one node. Every expected figure is derived by hand in the comments.

use mmulab_model::mem::numa::{
    fake_split, interleave_index, interleave_nid, weighted_interleave_nid, At, Mode, NumaConfig, MAX_NUMNODES,
};
use mmulab_model::mem::Memory;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn cfg(fake: usize, mode: Mode, nodes: &[usize]) -> NumaConfig {
    NumaConfig {
        fake,
        mode,
        nodes: nodes.to_vec(),
        weights: Vec::new(),
        cpus: Vec::new(),
        page_bytes: 4096,
    }
}

/// 4 GiB + 12 KiB over 3 nodes: the span is 4,294,979,584 bytes = 3 × 1,431,659,861 + 1,
/// so floor(span / 3) = 1,431,659,861, rounded down to the page: 349,526 pages
/// (349,526 × 4096 = 1,431,658,496; the remainder 1,365 < 4096). Nodes 0 and 1 hold
/// 349,526 pages each; the last takes the rest: 1,048,579 − 2 × 349,526 = 349,527.
#[test]
fn odd_size_over_three_nodes() {
    let bytes = 4 * GIB + 12 * KIB;
    let n = fake_split(0, bytes, 3, 4096).unwrap();
    let chunk = 349_526 * 4096;
    assert_eq!(n, vec![(0, chunk), (chunk, 2 * chunk), (2 * chunk, bytes)]);
    assert_eq!((n[2].1 - n[2].0) / 4096, 349_527);
}

/// 10 pages over 4 nodes: 40,960 / 4 = 10,240 bytes = 2.5 pages → 2 pages; nodes of 2, 2,
/// 2 and (10 − 6 =) 4 pages. With a start of 1 MiB every node shifts by it.
#[test]
fn span_not_a_multiple_of_n_pages() {
    let p = 4096;
    let n = fake_split(0, 10 * p, 4, 4096).unwrap();
    assert_eq!(n, vec![(0, 2 * p), (2 * p, 4 * p), (4 * p, 6 * p), (6 * p, 10 * p)]);
    let s = MIB;
    let n = fake_split(s, s + 10 * p, 4, 4096).unwrap();
    assert_eq!(n[0], (s, s + 2 * p));
    assert_eq!(n[3], (s + 6 * p, s + 10 * p));
}

/// Issue 49, defect 5: the chunk is rounded down to the kernel's `PAGE_SIZE`, not to
/// 4 KiB. 64 MiB over 3 nodes: 67,108,864 / 3 = 22,369,621 bytes; down to 16 KiB:
/// 1,365 pages of 16 KiB = 22,364,160 (to 4 KiB it would be 5,461 × 4,096 = 22,368,256,
/// which is 1,365.25 16 KiB pages: node 1's first page would straddle nodes 0 and 1).
/// The last node takes 67,108,864 − 2 × 22,364,160 = 22,380,544. To 64 KiB: 341 pages
/// of 64 KiB = 22,347,776.
#[test]
fn node_boundaries_follow_the_kernel_page() {
    let bytes = 64 * MIB;
    let n = fake_split(0, bytes, 3, 16 * KIB).unwrap();
    assert_eq!(n[0], (0, 22_364_160));
    assert_eq!(n[1], (22_364_160, 44_728_320));
    assert_eq!(n[2], (44_728_320, bytes));
    assert_eq!(bytes - n[2].0, 22_380_544);
    assert_eq!(fake_split(0, bytes, 3, 64 * KIB).unwrap()[1].0, 22_347_776);
    assert_eq!(fake_split(0, bytes, 3, 4 * KIB).unwrap()[1].0, 22_368_256);
    // A node smaller than one 16 KiB page is an error: 32 KiB over 3 nodes.
    let e = fake_split(0, 32 * KIB, 3, 16 * KIB).unwrap_err().to_string();
    assert!(e.contains("16 KiB page") && e.contains("at most 2 nodes"), "{e}");
    // The nodes of a machine built on a 16 KiB kernel.
    let mut c = cfg(3, Mode::Local, &[]);
    c.page_bytes = 16 * KIB;
    let mem = Memory::with_numa(bytes, c).unwrap();
    let ranges = mem.numa.as_ref().unwrap().ranges().to_vec();
    assert_eq!(ranges[1], (22_364_160 / 4096, 44_728_320 / 4096));
}

/// N is capped at MAX_NUMNODES = 16 (arm64's NODES_SHIFT 4): numa=fake=20 on 1 GiB gives
/// 16 nodes of 64 MiB. Too many nodes for the memory (3 pages over 4: 12,288 / 4 =
/// 3,072 bytes → 0 pages) and N = 0 are errors naming numa.fake.
#[test]
fn cap_and_too_many_nodes() {
    assert_eq!(MAX_NUMNODES, 16);
    let n = fake_split(0, GIB, 20, 4096).unwrap();
    assert_eq!(n.len(), 16);
    assert!(n.iter().all(|r| r.1 - r.0 == 64 * MIB));
    let e = fake_split(0, 3 * 4096, 4, 4096).unwrap_err().to_string();
    assert!(e.contains("numa.fake = 4") && e.contains("at most 3 nodes"), "{e}");
    let e = fake_split(0, GIB, 0, 4096).unwrap_err().to_string();
    assert!(e.contains("numa.fake = 0"), "{e}");
    assert!(Memory::with_numa(3 * 4096, cfg(4, Mode::Local, &[])).is_err());
}

/// The interleave index of `get_vma_policy`, `(vm_pgoff >> order) + ((addr − vm_start)
/// >> (PAGE_SHIFT + order))`, on hand-worked VMAs.
#[test]
fn interleave_index_hand_worked() {
    // Anonymous VMA at 1 MiB (vm_pgoff = 0x100), page 5 of it: 0x100 + 5 = 261; over 8
    // nodes 261 mod 8 = 5.
    let i = interleave_index(0x100, 0x10_0000, 0x10_5000, 0, 12);
    assert_eq!(i, 261);
    assert_eq!(interleave_nid(&[0, 1, 2, 3, 4, 5, 6, 7], i), 5);
    // A file mapping: vm_pgoff = 3 at 4 MiB, page 2 of it: 3 + 2 = 5; over the mask
    // {1, 3, 6}: 5 mod 3 = 2, the third node of the mask: 6.
    let i = interleave_index(3, 0x40_0000, 0x40_2000, 0, 12);
    assert_eq!(i, 5);
    assert_eq!(interleave_nid(&[1, 3, 6], i), 6);
    // Order 9 (a 2 MiB THP): VMA at 1 GiB (vm_pgoff 0x40000), the fourth 2 MiB unit:
    // (0x40000 >> 9) + (0x60_0000 >> 21) = 512 + 3 = 515; 515 mod 8 = 3.
    let i = interleave_index(0x40000, 0x4000_0000, 0x4060_0000, 9, 12);
    assert_eq!(i, 515);
    assert_eq!(interleave_nid(&[0, 1, 2, 3, 4, 5, 6, 7], i), 3);
    // Order 9 in a VMA not 2 MiB aligned (1 GiB + 1 MiB, vm_pgoff 0x40100 = 262,400):
    // 262,400 >> 9 = 512 (512.5 rounded down), and the first aligned unit at 1 GiB +
    // 2 MiB is 1 MiB into the VMA: 0x10_0000 >> 21 = 0; index 512, the same as the
    // unit before it would have had: both terms round down.
    assert_eq!(interleave_index(0x40100, 0x4010_0000, 0x4020_0000, 9, 12), 512);
    // The same VMA on a 16 KiB kernel (PAGE_SHIFT 14, vm_pgoff 0x40100 / 4 = 0x10040),
    // its 32 MiB THP is order 11 in 16 KiB pages: (0x10040 >> 11) + ... = 32 + 0; in
    // 4 KiB units with order 13 (0x40100 >> 13 = 32): the same, as `At::anon` assumes.
    assert_eq!(interleave_index(0x10040, 0x4010_0000, 0x4200_0000, 11, 14), 32);
    assert_eq!(interleave_index(0x40100, 0x4010_0000, 0x4200_0000, 13, 12), 32);
}

/// Weighted interleave with weights [3, 1] over nodes {0, 1}: total 4; target = ilx
/// mod 4; targets 0, 1, 2 fall in node 0's weight 3, target 3 in node 1's. So indices
/// 0..8 go to 0, 0, 0, 1, 0, 0, 0, 1. Weights are indexed by node id: with the mask
/// {1, 2} and weights [9, 1, 2], node 1 takes targets 0 and node 2 targets 1, 2.
#[test]
fn weighted_interleave_three_to_one() {
    let got: Vec<usize> = (0..8).map(|i| weighted_interleave_nid(&[0, 1], &[3, 1], i)).collect();
    assert_eq!(got, [0, 0, 0, 1, 0, 0, 0, 1]);
    let got: Vec<usize> = (0..6)
        .map(|i| weighted_interleave_nid(&[1, 2], &[9, 1, 2], i))
        .collect();
    assert_eq!(got, [1, 2, 2, 1, 2, 2]);
}

/// Through the allocator: 16 MiB over 4 nodes of 1,024 frames (node n = frames
/// [1024n, 1024(n+1))), consecutive pages of a VMA at 1 MiB (vm_pgoff 0x100 = 256,
/// 256 mod 4 = 0) land on nodes 0, 1, 2, 3, 0, … at each node's lowest free frame —
/// after the root table the test does not allocate, so node 0's first frame is 0.
/// Every allocation is an interleave hit.
#[test]
fn interleave_spreads_pages_and_counts_hits() {
    let mut mem = Memory::with_numa(16 * MIB, cfg(4, Mode::Interleave, &[])).unwrap();
    let vma_start = MIB;
    let at = |page: u64| At {
        vm_start: vma_start,
        vm_pgoff: vma_start >> 12,
        addr: vma_start + page * 4096,
    };
    let got: Vec<u64> = (0..6).map(|p| mem.alloc_pages(0, Some(at(p))).unwrap()).collect();
    assert_eq!(got, [0, 1024, 2048, 3072, 1, 1025]);
    let n = mem.numa.as_ref().unwrap();
    let hits: Vec<u64> = n.counters().iter().map(|c| c.interleave_hit).collect();
    assert_eq!(hits, [2, 2, 1, 1]);
    assert!(n.counters().iter().all(|c| c.numa_miss == 0));
    // A page table (outside a VMA) takes the task counter: il_prev starts at
    // MAX_NUMNODES − 1, so the first goes to the first node, the next to node 1.
    let t = mem.alloc_table(512).unwrap() >> 12;
    let u = mem.alloc_table(512).unwrap() >> 12;
    assert_eq!((t, u), (2, 1026));
}

/// Bind to {2, 3} from a core on node 0: node 0's zonelist is 0, 1, 2, 3 (cores on node
/// 0 only), restricted to the mask: 2, then 3. 1,024 pages fill node 2 (hits), the next
/// 1,024 go to node 3 (misses there, foreign on node 2), then nothing: nodes 0 and 1
/// stay free but bind never falls outside its nodes.
#[test]
fn bind_falls_back_only_inside_its_nodes() {
    let mut mem = Memory::with_numa(16 * MIB, cfg(4, Mode::Bind, &[2, 3])).unwrap();
    let first = mem.alloc_pages(0, None).unwrap();
    assert_eq!(first, 2048);
    for _ in 1..1024 {
        assert!(mem.alloc_pages(0, None).unwrap() / 1024 == 2);
    }
    assert_eq!(mem.alloc_pages(0, None), Some(3072));
    for _ in 1..1024 {
        assert!(mem.alloc_pages(0, None).unwrap() / 1024 == 3);
    }
    assert_eq!(mem.alloc_pages(0, None), None);
    assert_eq!(mem.buddy.free_frames(), 2048);
    let c = mem.numa.as_ref().unwrap().counters();
    assert_eq!((c[2].numa_hit, c[3].numa_miss, c[2].numa_foreign), (1024, 1024, 1024));
    assert_eq!((c[2].local_node, c[2].other_node), (0, 1024));
}

/// Preferred {1}: node 1 first; when it is full, node 1's zonelist 1, 2, 3, 0 (node 0
/// has the cores: PENALTY_FOR_NODE_WITH_CPUS and the `n < node` penalty put it last)
/// gives node 2, then 3, then 0.
#[test]
fn preferred_falls_back_along_the_zonelist() {
    let mut mem = Memory::with_numa(16 * MIB, cfg(4, Mode::Preferred, &[1])).unwrap();
    assert_eq!(mem.numa.as_ref().unwrap().zonelist(1), [1, 2, 3, 0]);
    assert_eq!(mem.alloc_pages(0, None), Some(1024));
    for _ in 1..1024 {
        mem.alloc_pages(0, None).unwrap();
    }
    assert_eq!(mem.alloc_pages(0, None), Some(2048));
    for _ in 1..1024 {
        mem.alloc_pages(0, None).unwrap();
    }
    assert_eq!(mem.alloc_pages(0, None), Some(3072));
    // Preferred {2}: node 2's zonelist is 2, 3, 1, 0: node 3 (20·16 + load 0), then node
    // 1 (21·16 + load 4, as node 1 led node 0's remote group) before node 0 (the CPU
    // penalty: 22·16). With 2 and 3 full the next page is node 1's first frame.
    let mut mem = Memory::with_numa(16 * MIB, cfg(4, Mode::Preferred, &[2])).unwrap();
    assert_eq!(mem.numa.as_ref().unwrap().zonelist(2), [2, 3, 1, 0]);
    for _ in 0..2048 {
        assert!(mem.alloc_pages(0, None).unwrap() >= 2048);
    }
    assert_eq!(mem.alloc_pages(0, None), Some(1024));
}

/// Local: a core's own node first. Cores 0 and 1 on nodes 3 and 1; the second fault of
/// core 1 (index 3 wraps to core 1 as the machine's `r.core % cores`) is on node 1.
#[test]
fn local_follows_the_running_core() {
    let mut c = cfg(4, Mode::Local, &[]);
    c.cpus = vec![3, 1];
    let mut mem = Memory::with_numa(16 * MIB, c).unwrap();
    mem.set_cpu(0);
    assert_eq!(mem.alloc_pages(0, None), Some(3072));
    mem.set_cpu(3);
    assert_eq!(mem.alloc_pages(0, None), Some(1024));
    let n = mem.numa.as_ref().unwrap();
    assert_eq!((n.counters()[3].local_node, n.counters()[1].local_node), (1, 1));
}

/// A THP is one unit on one node, even where node boundaries are not 2 MiB aligned:
/// with 4 GiB + 12 KiB over 3 nodes, node 0 is frames [0, 349,526); 349,526 / 512 =
/// 682.7, so exactly 682 order-9 blocks fit in it (the 683rd, frames 349,184..349,696,
/// would cross into node 1); the 342 frames left stay allocatable as 4 KiB pages.
#[test]
fn huge_pages_never_cross_a_node() {
    let mut mem = Memory::with_numa(4 * GIB + 12 * KIB, cfg(3, Mode::Bind, &[0])).unwrap();
    let mut blocks = 0;
    while let Some(p) = mem.alloc_pages(9, None) {
        assert!(p + 512 <= 349_526, "block {p} crosses node 0's end");
        blocks += 1;
    }
    assert_eq!(blocks, 682);
    let mut small = 0;
    while mem.alloc_pages(0, None).is_some() {
        small += 1;
    }
    assert_eq!(small, 349_526 - 682 * 512);
    // Freeing merges inside the node only: node 1's free frames are untouched.
    assert_eq!(mem.buddy.free_frames_in(349_526, 699_052), 349_526);
}

/// The interleave of THPs through the allocator: 32 MiB over 4 nodes of 8 MiB; a VMA
/// at 1 GiB (vm_pgoff 0x40000, >> 9 = 512, 512 mod 4 = 0): its units 0..4 of 2 MiB go
/// to nodes 0, 1, 2, 3, each one whole block at its node's start.
#[test]
fn thp_units_interleave_whole() {
    let mut mem = Memory::with_numa(32 * MIB, cfg(4, Mode::Interleave, &[])).unwrap();
    let got: Vec<u64> = (0..4)
        .map(|u| {
            let at = At {
                vm_start: GIB,
                vm_pgoff: GIB >> 12,
                addr: GIB + u * 2 * MIB,
            };
            mem.alloc_pages(9, Some(at)).unwrap()
        })
        .collect();
    assert_eq!(got, [0, 2048, 4096, 6144]);
    let n = mem.numa.as_ref().unwrap();
    assert!(n
        .counters()
        .iter()
        .all(|c| c.alloc_frames == 512 && c.interleave_hit == 1));
}

/// Interleave falls back along the chosen node's zonelist when that node is full, and
/// then it is not an interleave hit: 16 KiB over 2 nodes of 2 frames ([0, 2), [2, 4));
/// a VMA at 0 (vm_pgoff 0): pages 1 and 3 go to node 1 (frames 2, 3, hits), page 5
/// also wants node 1, which is full: node 1's zonelist 1, 0 gives frame 0 (a miss on
/// node 0, foreign on node 1, no interleave hit).
#[test]
fn interleave_fallback_is_not_a_hit() {
    let mut mem = Memory::with_numa(16 * KIB, cfg(2, Mode::Interleave, &[])).unwrap();
    let at = |page: u64| At {
        vm_start: 0,
        vm_pgoff: 0,
        addr: page * 4096,
    };
    let got: Vec<u64> = [1, 3, 5]
        .iter()
        .map(|&p| mem.alloc_pages(0, Some(at(p))).unwrap())
        .collect();
    assert_eq!(got, [2, 3, 0]);
    let c = mem.numa.as_ref().unwrap().counters();
    assert_eq!((c[0].interleave_hit, c[0].numa_miss), (0, 1));
    assert_eq!((c[1].interleave_hit, c[1].numa_foreign), (2, 1));
}
