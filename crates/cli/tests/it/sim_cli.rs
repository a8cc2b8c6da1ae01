//! `mmulab sim` and `mmulab demo` end to end: golden runs on tiny committed traces whose
//! figures are derived by hand below, config handling, determinism and errors.

use serde_json::Value;
use std::path::PathBuf;

use crate::common;
use common::{err_at_root as err_text, json_at_root as json_ok, mmulab_at_root as mmulab};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data(name: &str) -> String {
    root().join("tests/data").join(name).display().to_string()
}

/// tests/data/tiny.din on tests/data/tiny.toml (L1: 2 entries, LRU, 4K only; L2: 4
/// entries, 4K+2M; no page-walk caches; 10 cycles per walk reference), 4 KiB pages:
///
/// | # | ref | L1 | L2 | walk reads |
/// |---|---|---|---|---|
/// | 1 | load 0x1000 | miss | miss | 1 (PML4E invalid) → fault (zero page) → 4 |
/// | 2 | load 0x1008 | hit | – | – |
/// | 3 | store 0x2000 | miss | miss | 4 (PTE invalid) → fault (new page) → 4 |
/// | 4 | load 0x3000 | miss (evicts 0x1000) | miss | 4 → fault (zero page) → 4 |
/// | 5 | load 0x1000 | miss (evicts 0x2000) | hit | – |
/// | 6 | load 0x2000 | miss (evicts 0x3000) | hit | – |
/// | 7 | ifetch 0x400000 | miss | miss | 3 (PDE invalid) → fault (new page) → 4 |
///
/// L1 7/1/6, L2 6/2/4, 8 walks, 28 reads, 4 faults, no accessed/dirty updates (every
/// entry is installed young, the stored page dirty; it was 4 when pages were mapped old);
/// cycles: lookups 7×1 + 6×5 = 37, walks 28×10 = 280. Tables: PML4, PDPT, PD, 2 PTs.
/// Pages allocated: 2 (the loads map Linux's zero page, os.zero_page's default).
#[test]
fn golden_tiny_trace_4k() {
    let v = json_ok(&[
        "sim",
        "--config",
        &data("tiny.toml"),
        "--trace",
        &data("tiny.din"),
        "--json",
    ]);
    assert_eq!(v["references"], 7);
    assert_eq!(
        (v["loads"].as_u64(), v["stores"].as_u64(), v["ifetches"].as_u64()),
        (Some(5), Some(1), Some(1))
    );
    let l = |n: &str, k: &str| v["tlb"][n][k].as_u64().unwrap();
    assert_eq!((l("l1", "accesses"), l("l1", "hits"), l("l1", "misses")), (7, 1, 6));
    assert_eq!((l("l2", "accesses"), l("l2", "hits"), l("l2", "misses")), (6, 2, 4));
    assert_eq!(v["walks"]["count"], 8);
    assert_eq!(v["walks"]["memory_refs"], 28);
    assert_eq!(v["faults"], 4);
    assert_eq!(v["ad_updates"], 0);
    assert_eq!(v["cycles"]["translation"], 317);
    assert_eq!(v["mosmodel"]["walk_cycles"], 280);
    assert_eq!(v["mosmodel"]["stlb_misses"], 4);
    assert_eq!(v["mosmodel"]["stlb_hits"], 2);
    assert_eq!(v["memory"]["page_table_pages"], 5);
    assert_eq!(v["memory"]["pages"]["4K"], 2);
}

/// The same trace with `fixed` 2 MiB pages. The L1 holds only 4K, so it splinters: it
/// caches the 4 KiB piece touched and misses on each new piece, while the L2 holds the
/// 2M page:
///
/// 1 load 0x1000: L1 miss, L2 miss, walk 1 → fault (maps 0–2M young and clean) → 3
/// reads. 2 hit. 3 store 0x2000: L1 miss, L2 hit on a clean entry: the dirty bit is set
/// in place (1 A/D update, 10 cycles). 4, 5, 6: L1 miss, L2 hit.
/// 7 ifetch 0x400000: L1 miss, L2 miss, walk 3 (PDE invalid) → fault → 3.
///
/// L1 7/1/6 with 6 splinters, L2 6/4/2, 4 walks, 10 reads, 2 faults, 1 A/D update;
/// walk cycles 10×10 + 10 = 110, lookups 37. Tables: PML4, PDPT, PD.
#[test]
fn golden_tiny_trace_2m_splinters_in_l1() {
    let v = json_ok(&[
        "sim",
        "--config",
        &data("tiny.toml"),
        "--trace",
        &data("tiny.din"),
        "--json",
        "--set",
        "os.policy=fixed",
        "--set",
        "os.page_size=2M",
    ]);
    let l = |n: &str, k: &str| v["tlb"][n][k].as_u64().unwrap();
    assert_eq!(
        (
            l("l1", "accesses"),
            l("l1", "hits"),
            l("l1", "misses"),
            l("l1", "splinters")
        ),
        (7, 1, 6, 6)
    );
    assert_eq!(
        (
            l("l2", "accesses"),
            l("l2", "hits"),
            l("l2", "misses"),
            l("l2", "splinters")
        ),
        (6, 4, 2, 0)
    );
    assert_eq!(v["walks"]["count"], 4);
    assert_eq!(v["walks"]["memory_refs"], 10);
    assert_eq!(v["faults"], 2);
    assert_eq!(v["ad_updates"], 1);
    assert_eq!(v["mosmodel"]["walk_cycles"], 110);
    assert_eq!(v["cycles"]["translation"], 147);
    assert_eq!(v["memory"]["page_table_pages"], 3);
    assert_eq!(v["memory"]["pages"]["2M"], 2);
}

#[test]
fn lackey_trace_kinds() {
    let v = json_ok(&[
        "sim",
        "--config",
        &data("tiny.toml"),
        "--trace",
        &data("tiny.lackey"),
        "--format",
        "lackey",
        "--json",
    ]);
    assert_eq!(
        (v["loads"].as_u64(), v["stores"].as_u64(), v["ifetches"].as_u64()),
        (Some(1), Some(2), Some(1))
    );
}

#[test]
fn the_issue_example_config_works_verbatim_and_reports_every_field() {
    let v = json_ok(&[
        "sim",
        "--config",
        &data("issue2-example.toml"),
        "--workload",
        // init=off: the table is first touched by the measured updates, so every page's
        // fault is in the measured part (with the initialisation they are the warm-up's).
        "gups:table=64MiB,refs=200K,init=off",
        "--json",
    ]);
    assert_eq!(v["references"], 200_000);
    for level in ["l1d", "l1i", "l2"] {
        let t = &v["tlb"][level];
        assert_eq!(
            t["accesses"].as_u64().unwrap(),
            t["hits"].as_u64().unwrap() + t["misses"].as_u64().unwrap()
        );
    }
    assert_eq!(v["tlb"]["l1i"]["accesses"], 0);
    assert_eq!(v["tlb"]["l1d"]["accesses"], 200_000);
    // Every L1D miss goes to the L2; every L2 miss starts a walk.
    assert_eq!(v["tlb"]["l2"]["accesses"], v["tlb"]["l1d"]["misses"]);
    assert!(v["walks"]["count"].as_u64().unwrap() >= v["tlb"]["l2"]["misses"].as_u64().unwrap());
    for k in ["walk_cycles", "stlb_misses", "stlb_hits"] {
        assert!(v["mosmodel"][k].is_u64(), "{k}");
    }
    assert_eq!(v["mosmodel"]["stlb_misses"], v["tlb"]["l2"]["misses"]);
    assert!(v["cycles"]["translation"].as_u64().unwrap() > 0);
    // Each page's first touch is an update's load (Linux's zero page, a fault), then its
    // store (the copy, a second fault): two faults per 4 KiB page mapped.
    assert_eq!(
        v["faults"].as_u64().unwrap(),
        2 * v["memory"]["pages"]["4K"].as_u64().unwrap()
    );
}

#[test]
fn huge_pages_cut_walks_for_gups() {
    let base = json_ok(&["sim", "--workload", "gups:table=256MiB,refs=300K", "--json"]);
    let huge = json_ok(&[
        "sim",
        "--workload",
        "gups:table=256MiB,refs=300K",
        "--json",
        "--set",
        "os.policy=fixed",
        "--set",
        "os.page_size=2M",
    ]);
    let walks = |v: &Value| v["walks"]["count"].as_u64().unwrap();
    // 256 MiB = 65,536 4K pages (far beyond 2,048 L2 entries) but only 128 2M pages.
    assert!(walks(&base) > 100_000, "{}", walks(&base));
    assert!(walks(&huge) < 1_000, "{}", walks(&huge));
    assert_eq!(huge["memory"]["pages"]["2M"], 128);
    assert!(huge["cycles"]["translation"].as_u64() < base["cycles"]["translation"].as_u64());
}

#[test]
fn set_overrides_name_levels_and_allow_odd_geometries() {
    let v = json_ok(&[
        "sim",
        "--workload",
        "chase:pages=3000,refs=30000",
        "--json",
        "--set",
        "tlb.l2.entries=1536",
        "--set",
        "tlb.l2.ways=12",
        "--set",
        "tlb.l2.replacement=plru",
    ]);
    // 3,000 pages in a random cycle through 64 + 1,536 entries: nearly every L2 lookup of
    // the second pass misses (a cyclic chase larger than an LRU-like TLB).
    assert!(v["tlb"]["l2"]["misses"].as_u64().unwrap() > 20_000);
    let e = err_text(&["sim", "--workload", "seq:size=1M", "--set", "tlb.l2.entries=100"]);
    assert!(e.contains("tlb[l2].entries") && e.contains("multiple of ways"), "{e}");
    let e = err_text(&["sim", "--workload", "seq:size=1M", "--set", "tlb.nosuch.entries=1"]);
    assert!(e.contains("nosuch"), "{e}");
}

#[test]
fn unknown_config_keys_name_the_key_and_file() {
    let dir = std::env::temp_dir().join(format!("mmulab-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(data("tiny.toml"))
        .unwrap()
        .replace("latency = 5", "latency = 5\ncolour = \"red\"");
    let path = dir.join("bad.toml");
    std::fs::write(&path, text).unwrap();
    let e = err_text(&["sim", "--config", path.to_str().unwrap(), "--workload", "seq:size=1M"]);
    assert!(e.contains("colour") && e.contains("bad.toml"), "{e}");
    let e = err_text(&[
        "sim",
        "--workload",
        "seq:size=1M",
        "--set",
        "os.policy=fixed",
        "--set",
        "os.page_size=64K",
    ]);
    assert!(e.contains("os.page_size") && e.contains("x86_64"), "{e}");
    let e = err_text(&["sim", "--workload", "seq:size=1M", "--set", "os.policy=thp2"]);
    assert!(e.contains("os.policy"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `[os]` takes only the chosen policy's sections: another policy's key is refused by
/// name, naming the file; `--set os.policy` over a catalog machine and a config works.
#[test]
fn os_sections_of_another_policy_are_refused_naming_key_and_file() {
    let dir = std::env::temp_dir().join(format!("mmulab-os-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tiny = std::fs::read_to_string(data("tiny.toml")).unwrap();
    let path = dir.join("thp.toml");
    let thp = tiny.replace(
        "[os]\npolicy = \"base\"",
        "[os]\npolicy = \"thp\"\n[os.thp]\nzero_cycles_per_page = 250\n[os.mthp]\nsizes = [\"64K\"]",
    );
    std::fs::write(&path, &thp).unwrap();
    let cfg = path.to_str().unwrap();
    let e = err_text(&["sim", "--config", cfg, "--workload", "seq:size=1M"]);
    assert!(
        e.contains("thp.toml")
            && e.contains("os.mthp.sizes is set, but os.policy = \"thp\": [os.mthp] applies only to policy \"mthp\""),
        "{e}"
    );
    // Without the stray section the file runs; changing the policy by --set then refuses
    // the thp section by name, over a catalog machine too.
    std::fs::write(&path, thp.replace("[os.mthp]\nsizes = [\"64K\"]", "")).unwrap();
    json_ok(&["sim", "--config", cfg, "--workload", "seq:size=1M", "--json"]);
    for args in [
        vec!["sim", "--config", cfg],
        vec!["sim", "--machine", "neoverse-n1", "--config", cfg],
    ] {
        let mut args = args.clone();
        args.extend(["--workload", "seq:size=1M", "--set", "os.policy=mthp"]);
        let e = err_text(&args);
        assert!(
            e.contains("thp.toml") && e.contains("os.thp.zero_cycles_per_page is set, but os.policy = \"mthp\""),
            "{e}"
        );
    }
    for policy in ["base", "reservation", "thp", "khugepaged", "mthp"] {
        let set = format!("os.policy={policy}");
        let v = json_ok(&[
            "sim",
            "--machine",
            "cortex-a72",
            "--workload",
            "seq:size=4M",
            "--set",
            &set,
            "--json",
        ]);
        assert_eq!(v["memory"]["policy"], policy, "{v}");
    }
    // A config with no [os] runs as policy base with every default: the same JSON.
    let no_os = dir.join("no-os.toml");
    std::fs::write(&no_os, tiny.replace("[os]\npolicy = \"base\"", "")).unwrap();
    let run = |c: &str| json_ok(&["sim", "--config", c, "--trace", &data("tiny.din"), "--json"]);
    let (a, b) = (run(no_os.to_str().unwrap()), run(&data("tiny.toml")));
    assert_eq!(a, b);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn random_replacement_is_deterministic_per_seed() {
    let args = [
        "sim",
        "--workload",
        "chase:pages=5000,refs=50000,seed=9",
        "--json",
        "--set",
        "tlb.l2.replacement=random",
        "--set",
        "tlb.l1d.replacement=random",
    ];
    let a = json_ok(&args);
    let b = json_ok(&args);
    assert_eq!(a, b);
    let mut other = args.to_vec();
    other.extend(["--set", "machine.seed=12345"]);
    let c = json_ok(&other);
    assert_ne!(
        a["tlb"]["l2"]["hits"], c["tlb"]["l2"]["hits"],
        "a different seed should change random victims"
    );
}

#[test]
fn running_out_of_simulated_memory_is_a_clear_error_with_partial_results() {
    let e = err_text(&[
        "sim",
        "--workload",
        "seq:size=64MiB,stride=4096",
        "--set",
        "memory.size=8MiB",
        // Loads only: with Linux's zero page they would allocate nothing.
        "--set",
        "os.zero_page=false",
    ]);
    assert!(
        e.contains("out of simulated physical memory") && e.contains("memory.size"),
        "{e}"
    );
    assert!(e.contains("references simulated before the error"), "{e}");
}

#[test]
fn corrupt_text_trace_names_file_and_line() {
    let dir = std::env::temp_dir().join(format!("mmulab-din-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.din");
    std::fs::write(&path, "0 1000\n0 2000\n7 zzz\n").unwrap();
    let e = err_text(&["sim", "--trace", path.to_str().unwrap(), "--format", "din"]);
    assert!(e.contains("bad.din") && e.contains("line 3"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn demo_prints_a_comparison_table() {
    let out = mmulab(&[
        "demo",
        "--workload",
        "gups:table=64MiB,refs=100K",
        "--workload",
        "seq:size=16MiB,refs=100K",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "workload",
        "l1d misses",
        "l2 misses",
        "walks",
        "walk mem refs",
        "translation cycles",
        "4K/2M",
        "gups:table=64MiB",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    // The gups 2M row carries a ratio well above 1 (64 MiB of 4K pages overflow the L2).
    let ratio_line = text.lines().find(|l| l.trim_start().starts_with("2M")).unwrap();
    let ratio: f64 = ratio_line
        .split_whitespace()
        .last()
        .unwrap()
        .trim_end_matches('x')
        .parse()
        .unwrap();
    assert!(ratio > 2.0, "{ratio_line}");
}

/// `base` demand-pages the format's base page: 16 KiB and 64 KiB with those granules.
#[test]
fn base_policy_uses_the_granule_as_its_page() {
    // The 64K granule has two upper levels, so the default's three PWC sizes are an
    // error (checked below) and two are given.
    let e = err_text(&[
        "sim",
        "--workload",
        "seq:size=1MiB",
        "--set",
        "machine.arch=aarch64-64k",
    ]);
    assert!(e.contains("walk.pwc_entries"), "{e}");
    for (arch, pwc, page, pages) in [
        ("aarch64-16k", "[4,8,32]", "16K", 64u64),
        ("aarch64-64k", "[8,32]", "64K", 16),
    ] {
        let v = json_ok(&[
            "sim",
            "--workload",
            "seq:size=1MiB,stride=4096",
            "--json",
            "--set",
            &format!("machine.arch={arch}"),
            "--set",
            &format!("walk.pwc_entries={pwc}"),
            // Loads only: without this each would map the zero page and allocate none.
            "--set",
            "os.zero_page=false",
        ]);
        // 1 MiB touched every 4 KiB: 1 MiB / page pages, one fault each.
        assert_eq!(v["memory"]["pages"][page], pages, "{arch}: {v}");
        assert_eq!(v["faults"], pages, "{arch}");
    }
}

/// A time series does not replace the region of interest's statistics with the whole
/// run's (#51; before, `--timeseries` reported every reference and no `roi`). GUPS on a
/// 64 MiB table with 2 M updates: its initialisation, 64 MiB / 8 B = 8,388,608 stores,
/// is the warm-up (`--warmup auto`), so the measured part is the 2,000,000 updates
/// with or without `--timeseries`, and the series file covers all 10,388,608.
#[test]
fn timeseries_keeps_the_region_of_interest() {
    let dir = std::env::temp_dir().join(format!("mmulab-ts-roi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ts = dir.join("t.jsonl");
    let ts = ts.to_str().unwrap();
    let plain = json_ok(&["sim", "--workload", "gups:table=64MiB,refs=2M", "--json"]);
    let with = json_ok(&[
        "sim",
        "--workload",
        "gups:table=64MiB,refs=2M",
        "--json",
        "--timeseries",
        ts,
        "--interval",
        "1000000",
    ]);
    for v in [&plain, &with] {
        assert_eq!(v["references"], 2_000_000);
        assert_eq!(v["roi"]["warmup"], 8_388_608);
    }
    assert_eq!(plain["tlb"], with["tlb"]);
    let last: Value = serde_json::from_str(std::fs::read_to_string(ts).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(last["refs"], 10_388_608);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Options that would be ignored are refused, never dropped in silence (issue 51):
/// `--format` with a workload, `--refs 0`, and a `--skip` past the end of the source.
#[test]
fn ignored_options_are_refused_not_dropped() {
    let refused = |args: &[&str], want: &str| {
        let o = mmulab(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
    };
    refused(
        &["sim", "-w", "seq:size=1MiB,refs=1000", "--format", "din"],
        "--format din applies to --trace",
    );
    refused(
        &["sim", "-w", "seq:size=1MiB,refs=1000", "--refs", "0"],
        "--refs 0 would measure nothing",
    );
    // 1,000 references, 5,000 to skip: all skipped, nothing simulated.
    refused(
        &["sim", "-w", "seq:size=1MiB,refs=1000", "--skip", "5000"],
        "ended after 1000 references, all skipped",
    );
    // A skip inside the source still runs: 500 skipped, 500 measured.
    let v = json_ok(&["sim", "-w", "seq:size=1MiB,refs=1000", "--skip", "500", "--json"]);
    assert_eq!(
        (v["roi"]["skipped"].as_u64(), v["references"].as_u64()),
        (Some(500), Some(500))
    );
}

/// `sim --bloat` reports bloat at the end and at its peak (JSON and text); without it
/// the figures are null. GUPS writes its 8 MiB table in order first, so under THP
/// `always` each of the 4 huge pages faults in with one 4 KiB piece touched: the peak is
/// 2 MiB − 4 KiB; the whole table is touched by the end: bloat 0 (hand-derived, as
/// crates/sim/tests/it/os_sim.rs derives it for 64 MiB).
#[test]
fn bloat_flag_reports_the_end_and_the_peak() {
    let args = [
        "sim",
        "-w",
        "gups:table=8MiB,updates=10K",
        "--set",
        "os.policy=thp",
        "--set",
        "os.thp.enabled=always",
        "--set",
        "os.zero_page=false",
    ];
    let mut a = args.to_vec();
    a.extend(["--bloat", "--json"]);
    let v = json_ok(&a);
    let m = &v["memory"];
    assert_eq!(m["peak_bloat_bytes"], (2 << 20) - 4096, "{m}");
    assert_eq!(m["bloat_bytes"], 0, "{m}");
    assert_eq!(m["peak_resident_bytes"], 8 << 20, "{m}");
    let mut a = args.to_vec();
    a.push("--json");
    let v = json_ok(&a);
    assert!(v["memory"]["peak_bloat_bytes"].is_null(), "{}", v["memory"]);
    let mut a = args.to_vec();
    a.push("--bloat");
    let out = mmulab(&a);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bloat: 0.0 MiB resident but never touched at the end (8.0 MiB touched), 2.0 MiB at the peak; peak resident 8.0 MiB"), "{text}");
}

/// `--regions`: a workload declares no VMAs, so its one region is the outside entry,
/// which holds every reference and all the run's walk cycles; GUPS maps its 64 MiB table
/// before the run (no faults counted), and the region holds all of it, resident and
/// touched. Without the flag the JSON has no `regions`; the text report prints the table.
#[test]
fn regions_flag_counts_a_workload_outside_every_vma() {
    let args = [
        "sim",
        "--workload",
        "gups:table=64MiB,updates=20K",
        "--set",
        "os.policy=base",
        "--set",
        "os.zero_page=false",
    ];
    let mut a = args.to_vec();
    a.extend(["--regions", "--json"]);
    let v = json_ok(&a);
    let r = v["regions"].as_array().expect("regions");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["outside"], true);
    assert_eq!(r[0]["references"], v["references"]);
    assert_eq!(r[0]["walk_cycles"], v["cycles"]["walk"]);
    assert!(r[0]["walk_cycles"].as_u64().unwrap() > 0, "{r:?}");
    assert_eq!(v["faults"], 0);
    assert_eq!(r[0]["faults"], serde_json::json!({}));
    assert_eq!(r[0]["resident_bytes"], 64 << 20);
    assert_eq!(r[0]["touched_bytes"], 64 << 20);
    let mut a = args.to_vec();
    a.push("--json");
    assert!(json_ok(&a).get("regions").is_none());
    let mut a = args.to_vec();
    a.push("--regions");
    let text = String::from_utf8_lossy(&mmulab(&a).stdout).to_string();
    assert!(text.contains("regions:") && text.contains("outside VMAs"), "{text}");
}

/// References outside the user address space (issue 51, item 7). A din trace with a
/// kernel address (reference 2) and one at 2^48 (reference 4, non-canonical on x86-64 and
/// past AArch64's TTBR0): by default the run stops at reference 2, naming the file and the
/// address, with the two references before it simulated; with `--outside-user drop` both
/// are dropped and counted, and the statistics are exactly those of the trace without
/// them. The bound is the machine's: on a 32-bit Cortex-A15 `0x800000000000` and
/// `0x100000000` are outside, on the 64-bit default machine they are not.
#[test]
fn references_outside_user_space_stop_or_are_dropped_and_counted() {
    let dir = std::env::temp_dir().join(format!("mmulab-outside-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mixed = dir.join("mixed.din");
    let user = dir.join("user.din");
    let wide = dir.join("wide.din");
    std::fs::write(
        &mixed,
        "0 1000\n1 2000\n0 ffffffff81000000\n0 3000\n0 1000000000000\n0 4000\n",
    )
    .unwrap();
    std::fs::write(&user, "0 1000\n1 2000\n0 3000\n0 4000\n").unwrap();
    std::fs::write(&wide, "0 1000\n0 800000000000\n0 100000000\n0 2000\n").unwrap();
    let (m, u, w) = (mixed.to_str().unwrap(), user.to_str().unwrap(), wide.to_str().unwrap());
    let out = mmulab(&["sim", "-t", m, "--format", "din"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(m)
            && e.contains("reference 2 (counted from 0) is at 0xffffffff81000000")
            && e.contains("--outside-user drop"),
        "{e}"
    );
    // The two references before it were simulated: the partial statistics cover them.
    assert!(
        e.contains("statistics of the 2 references simulated before the error"),
        "{e}"
    );
    let mut dropped = json_ok(&["sim", "-t", m, "--format", "din", "--outside-user", "drop", "--json"]);
    assert_eq!(
        dropped["outside_user"],
        serde_json::json!({"dropped": 2, "first_index": 2, "first_addr": "0xffffffff81000000", "touches": 0})
    );
    let mut clean = json_ok(&["sim", "-t", u, "--format", "din", "--json"]);
    for v in [&mut dropped, &mut clean] {
        let o = v.as_object_mut().unwrap();
        o.remove("outside_user");
        o.remove("source");
    }
    assert_eq!(dropped, clean);
    assert_eq!(clean["references"], 4);
    let a15 = json_ok(&[
        "sim",
        "-m",
        "cortex-a15",
        "-t",
        w,
        "--format",
        "din",
        "--outside-user",
        "drop",
        "--json",
    ]);
    assert_eq!(a15["outside_user"]["dropped"], 2, "{a15}");
    assert_eq!(a15["references"], 2);
    let x86 = json_ok(&["sim", "-t", w, "--format", "din", "--outside-user", "drop", "--json"]);
    assert_eq!(x86["outside_user"]["dropped"], 0, "{x86}");
    assert_eq!(x86["references"], 4);
    let _ = std::fs::remove_dir_all(&dir);
}
