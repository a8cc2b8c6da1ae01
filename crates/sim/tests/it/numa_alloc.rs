//! NUMA allocation paths seen from a whole run (mem/numa.rs): where a fault's huge page
//! lands when its local node is full. Every expected figure is derived by hand in the
//! comments.

use mmulab_sim::config::from_toml;
use mmulab_sim::{catalog, run, Machine};
use mmulab_trace::workload;

/// The statistics (JSON) of workload `spec` on catalog machine `name` with `sets`.
fn stats(name: &str, sets: &[&str], spec: &str) -> serde_json::Value {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let toml = catalog::get(name).unwrap();
    let mut m = Machine::new(from_toml(toml, None, &sets).unwrap()).unwrap();
    let mut src = workload::parse(spec).unwrap();
    run(&mut m, &mut src, None).unwrap().to_json()
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

const SETS: [&str; 5] = [
    "memory.size=64MiB",
    "numa.fake=2",
    "numa.policy=local",
    "os.policy=thp",
    "os.zero_page=false",
];

/// Issue 49, defect 3: `alloc_pages_mpol` tries a THP on the local node alone
/// (`__GFP_THISNODE`) and, without direct reclaim in the fault's gfp (defrag `madvise`,
/// the default, outside a `MADV_HUGEPAGE` VMA), falls back to 4 KiB pages rather than
/// take a remote huge page.
///
/// 64 MiB in two fake nodes of 32 MiB (8,192 frames each); the core is on node 0. The
/// first fault's three page tables (PGD, PUD, PMD) take node 0's first frames, so node
/// 0 keeps 15 free 2 MiB blocks: 15 THPs there (30 MiB). The other 9 of the 24 2 MiB
/// regions of a 48 MiB sequential pass fall back: 9 × 512 = 4,608 4 KiB pages and 9
/// PTE tables (12 page-table pages in all). Node 0's last 8,192 − 3 − 15 × 512 = 509
/// frames go first (the local node), then node 1: of the 15 × 512 + 4,608 + 12 =
/// 12,300 frames node 0 holds 8,192 and node 1 the other 4,108, all misses; node 0's
/// hits: 15 + 3 + 509 = 527 allocations. Before the fix node 1 took 9 remote THPs.
#[test]
fn thp_on_a_full_local_node_falls_back_to_base_pages() {
    let v = stats("cortex-a76", &SETS, "seq:size=48MiB");
    let ev = &v["os"]["events"];
    assert_eq!(n(&ev["thp_fault_alloc"]), 15, "{ev}");
    assert_eq!(n(&ev["thp_fault_fallback"]), 9, "{ev}");
    assert_eq!(n(&v["memory"]["pages"]["2M"]), 15);
    assert_eq!(n(&v["memory"]["pages"]["4K"]), 4_608);
    assert_eq!(n(&v["memory"]["page_table_pages"]), 12);
    let nodes = &v["numa"]["nodes"];
    assert_eq!(n(&nodes[0]["alloc_frames"]), 8_192);
    assert_eq!(n(&nodes[0]["numa_hit"]), 527);
    assert_eq!(n(&nodes[1]["alloc_frames"]), 4_108);
    assert_eq!(n(&nodes[1]["numa_miss"]), 4_108);
}

/// With defrag `always` the fault may reclaim, so after the local node fails the kernel
/// retries on the policy's other nodes: the 9 remaining THPs land on node 1 (24 THPs,
/// 9 × 512 = 4,608 frames of node 1, each a miss).
#[test]
fn thp_that_may_reclaim_takes_a_remote_huge_page() {
    let mut sets = SETS.to_vec();
    sets.push("os.thp.defrag=always");
    let v = stats("cortex-a76", &sets, "seq:size=48MiB");
    assert_eq!(n(&v["os"]["events"]["thp_fault_alloc"]), 24);
    let nodes = &v["numa"]["nodes"];
    assert_eq!(n(&nodes[1]["alloc_frames"]), 4_608);
    assert_eq!(n(&nodes[1]["numa_miss"]), 9);
}
