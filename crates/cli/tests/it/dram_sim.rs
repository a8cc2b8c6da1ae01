//! `[dram]` under the data caches, end to end: every request that misses the last level
//! reaches the DRAM model (its reads and writes equal the caches' memory counts), the
//! Pi 5 profile's top address bit picks the rank, and the section's prerequisites are
//! clear errors.

use crate::common;
use common::{json_at_root as json_ok, mmulab_at_root as mmulab};

// cortex-a76-pi5 has a clock (2400 MHz, assumed in the catalog); skylake-caches has none.
const PI5: &[&str] = &[
    "sim",
    "-m",
    "cortex-a76-pi5",
    "--set",
    "machine.clock_mhz=2400",
    "--set",
    "dram.profile=lpddr4x-4267-pi5",
    // Private pages: under the zero-page default a load-only run reads one shared frame.
    "--set",
    "os.zero_page=false",
    "--json",
];

#[test]
fn every_memory_request_reaches_the_dram() {
    let mut args = PI5.to_vec();
    args.extend(["--workload", "seq:size=8MiB,refs=200K"]);
    let v = json_ok(&args);
    let mem = &v["caches"]["memory"];
    let d = &v["dram"];
    assert_eq!(d["reads"], mem["reads"], "{d}");
    assert_eq!(d["writes"], mem["writes"], "{d}");
    let reads = d["reads"].as_u64().unwrap();
    // 200K 8-byte loads every 64 bytes over 8 MiB (131,072 lines): the first 131,072
    // loads fill one line each, the other 68,928 revisit lines long evicted from the
    // 2 MiB L3 — at least one fill per line touched.
    assert!(reads >= 131_072, "{d}");
    let hits = d["row_hits"].as_u64().unwrap();
    let misses = d["row_misses"].as_u64().unwrap();
    let conflicts = d["row_conflicts"].as_u64().unwrap();
    assert_eq!(hits + misses + conflicts, reads + d["writes"].as_u64().unwrap());
    // A freshly booted model allocates from the bottom of its 8 GiB: every page sits
    // below the rank bit (bit 32), so rank 1 sees nothing.
    let ranks: Vec<u64> = d["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(ranks.len(), 2);
    assert_eq!(ranks[1], 0, "{d}");
    assert_eq!(ranks[0], hits + misses + conflicts);
}

#[test]
fn dram_needs_caches_and_a_clock() {
    let e = |args: &[&str]| String::from_utf8_lossy(&mmulab(args).stderr).to_string();
    let no_caches = e(&[
        "sim",
        "-m",
        "cortex-a76",
        "--workload",
        "seq:size=1MiB",
        "--set",
        "dram.profile=ddr4-3200",
    ]);
    assert!(no_caches.contains("[dram] needs [caches]"), "{no_caches}");
    let no_clock = e(&[
        "sim",
        "-m",
        "skylake-caches",
        "--workload",
        "seq:size=1MiB",
        "--set",
        "dram.profile=ddr4-3200",
    ]);
    assert!(no_clock.contains("machine.clock_mhz"), "{no_clock}");
    let bad = e(&[
        "sim",
        "-m",
        "cortex-a76-pi5",
        "--workload",
        "seq:size=1MiB",
        "--set",
        "machine.clock_mhz=2400",
        "--set",
        "dram.profile=lpddr9",
    ]);
    assert!(bad.contains("dram.profile") && bad.contains("lpddr9"), "{bad}");
}
