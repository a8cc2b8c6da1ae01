//! `mmulab sim` on a virtual machine with data caches (`[vm]` and `[caches]`, the latter
//! from `--set`): the run prints the cache counters as a stage-1 machine does, and the
//! nested walk's reads reach them (docs/virtualization.md, "Data caches").

use crate::common;
use common::{json_at_root, mmulab_at_root};

const ARGS: &[&str] = &[
    "sim",
    "-m",
    "machines/vm/epyc-zen4-kvm.toml",
    "--set",
    "caches.l1d.size=32KiB",
    "--set",
    "caches.l1d.ways=8",
    "--set",
    "caches.l1d.latency=4",
    "--workload",
    "gups:table=64MiB,updates=20K,init=off",
];

#[test]
fn a_vm_with_caches_runs_and_prints_the_cache_counters() {
    let out = mmulab_at_root(ARGS);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for want in [
        "walk hits",
        "walk misses",
        "memory: ",
        "walk reads in the data caches: guest",
    ] {
        assert!(text.contains(want), "no '{want}' in:\n{text}");
    }
    let mut args = ARGS.to_vec();
    args.push("--json");
    let v = json_at_root(&args);
    let l1 = &v["caches"]["l1d"];
    let (hits, misses) = (l1["walk_hits"].as_u64().unwrap(), l1["walk_misses"].as_u64().unwrap());
    // Every descriptor read of both stages went through the L1D, once each.
    let reads = v["walks"]["stage1_refs"].as_u64().unwrap() + v["walks"]["stage2_refs"].as_u64().unwrap();
    assert_eq!(hits + misses, reads, "{}", v["caches"]);
    assert!(misses > 0 && v["caches"]["memory"]["reads"].as_u64().unwrap() > 0);
    let split = &v["vm"]["walk_caches"];
    assert!(split["stage2_cycles"].as_u64().unwrap() > 0, "{split}");
}
