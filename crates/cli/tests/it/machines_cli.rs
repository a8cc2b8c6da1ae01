//! `mmulab machines`, `--machine` in sim and probe, and the simulated probe's table.

use std::process::Command;

fn mmulab(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .args(args)
        .output()
        .expect("run mmulab");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn machines_lists_the_catalog() {
    let (ok, out, _) = mmulab(&["machines", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // One object (issue 51 item 8), its list under "machines".
    assert!(v.is_object(), "{v}");
    let names: Vec<&str> = v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for core in [
        "cortex-a5",
        "cortex-a7",
        "cortex-a8",
        "cortex-a9",
        "armada-xp",
        "cortex-a15",
        "cortex-a17",
        "cortex-a53",
        "cortex-a57",
        "cortex-a72",
        "cortex-a73",
        "cortex-a76",
        "neoverse-n1",
        "skylake",
    ] {
        assert!(names.contains(&core), "{core} missing from {names:?}");
    }
    let a9 = v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "cortex-a9")
        .unwrap();
    assert_eq!(a9["l2"], "128 + 4");
    assert_eq!(a9["stage2"], serde_json::Value::Null);
    // The virtualized cores (machines/vm/) with their stage-2 formats.
    for (vm, stage2) in [
        ("cortex-a53-kvm", "aarch64-s2-64k"),
        ("cortex-a76-kvm", "aarch64-s2"),
        ("epyc-zen4-kvm", "x86_64"),
    ] {
        let m = v["machines"].as_array().unwrap().iter().find(|m| m["name"] == vm);
        assert_eq!(m.map(|m| &m["stage2"]), Some(&serde_json::json!(stage2)), "{vm}");
    }
}

#[test]
fn sim_takes_a_catalog_name_or_a_file_and_rejects_unknown_names() {
    // The A15 model has a 32-bit virtual address space (LPAE): the chase goes at 1 GiB.
    let w = "chase:pages=100,refs=20000,base=0x40000000";
    let (ok, by_name, err) = mmulab(&["sim", "--machine", "cortex-a15", "--workload", w, "--json"]);
    assert!(ok, "{err}");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/cortex-a15.toml");
    let (ok, by_file, _) = mmulab(&["sim", "--machine", file, "--workload", w, "--json"]);
    assert!(ok);
    let a: serde_json::Value = serde_json::from_str(&by_name).unwrap();
    let b: serde_json::Value = serde_json::from_str(&by_file).unwrap();
    assert_eq!(a["tlb"], b["tlb"]);
    // 100 pages: beyond the 32-entry L1 (every reference misses), within the 512-entry
    // L2 (only the 100 first touches miss).
    assert_eq!(a["tlb"]["l1d"]["hits"], 0, "{}", a["tlb"]);
    assert_eq!(a["tlb"]["l2"]["misses"], 100, "{}", a["tlb"]);
    let (ok, _, err) = mmulab(&["sim", "--machine", "cortex-z1", "--workload", w]);
    assert!(!ok && err.contains("cortex-z1") && err.contains("cortex-a15"), "{err}");
}

#[test]
fn probe_recovers_a_simulated_core() {
    let (ok, out, err) = mmulab(&["probe", "--machine", "cortex-a8", "--json"]);
    assert!(ok, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 1, "{out}");
    assert_eq!(levels[0]["entries"], 32);
    assert_eq!(levels[0]["caches_2m"], true);
    assert_eq!(r["target"]["unit"], "cycles");
}

#[test]
fn addresses_beyond_the_format_are_refused_not_aliased() {
    let (ok, _, err) = mmulab(&[
        "sim",
        "--machine",
        "cortex-a15",
        "--workload",
        "chase:pages=10,refs=100,base=0x600000000000",
    ]);
    assert!(!ok);
    // (A default base is moved to fit, with a note; a given one is refused.)
    assert!(err.contains("32-bit") && err.contains("address space"), "{err}");
    // A trace's addresses are checked by the machine.
    let p = std::env::temp_dir().join(format!("mmulab-beyond-{}.lackey", std::process::id()));
    std::fs::write(&p, " L 600000000000,8\n").unwrap();
    let (ok, _, err) = mmulab(&["sim", "--machine", "cortex-a15", "--trace", p.to_str().unwrap()]);
    std::fs::remove_file(&p).ok();
    assert!(!ok);
    assert!(err.contains("32-bit virtual address space"), "{err}");
}

#[test]
fn fixed_policy_maps_contiguous_and_supersection_pages_that_tlbs_hold_whole() {
    // 256 pages of 4 KiB = 1 MiB. Mapped as 64 KiB contiguous groups on a Cortex-A57
    // (whose L1 holds 64K): 16 groups, so the L1 misses only on the first touch of each.
    let w = "chase:pages=256,refs=100000,base=0x40000000";
    let (ok, out, err) = mmulab(&[
        "sim",
        "--machine",
        "cortex-a57",
        "--set",
        "os.policy=fixed",
        "--set",
        "os.page_size=64K",
        "--workload",
        w,
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tlb"]["l1d"]["misses"], 16, "{}", v["tlb"]);
    // The same on a Cortex-A15, whose L1 holds only 4K: it splinters, and 256 pages
    // overflow its 32 entries, while the L2 holds the 16 groups.
    let (ok, out, err) = mmulab(&[
        "sim",
        "--machine",
        "cortex-a15",
        "--set",
        "os.policy=fixed",
        "--set",
        "os.page_size=64K",
        "--workload",
        w,
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tlb"]["l1d"]["hits"], 0, "{}", v["tlb"]);
    assert_eq!(v["tlb"]["l2"]["misses"], 16, "{}", v["tlb"]);
    // ARMv7 short descriptors: a 16 MiB supersection (16 first-level entries) is one
    // L2 entry on the Cortex-A9 model.
    let w = "chase:pages=4096,refs=100000,base=0x40000000";
    let (ok, out, err) = mmulab(&[
        "sim",
        "--machine",
        "cortex-a9",
        "--set",
        "os.policy=fixed",
        "--set",
        "os.page_size=16M",
        "--workload",
        w,
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // One L2 miss for 4096 pages (16 MiB); the splintering L1 misses on every load.
    assert_eq!(v["tlb"]["l2"]["misses"], 1, "{v}");
    assert_eq!(v["tlb"]["l1d"]["splinters"], v["tlb"]["l1d"]["misses"], "{v}");
}

#[test]
fn a_config_laid_over_a_machine_changes_only_its_keys() {
    // --machine cortex-a15 --config FILE: FILE's l2.entries replaces the A15's 512.
    let dir = std::env::temp_dir().join(format!("mmulab-machines-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bigger-l2.toml");
    std::fs::write(&cfg, "[[tlb]]\nname = \"l2\"\nentries = 1024\n").unwrap();
    // 700 pages: beyond a 512-entry L2, within a 1024-entry one.
    let w = "chase:pages=700,refs=70000,base=0x40000000";
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["sim", "--machine", "cortex-a15", "--workload", w, "--json"];
        args.extend_from_slice(extra);
        let (ok, out, err) = mmulab(&args);
        assert!(ok, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let base = run(&[]);
    let over = run(&["--config", cfg.to_str().unwrap()]);
    assert!(
        base["tlb"]["l2"]["misses"].as_u64().unwrap() > 60_000,
        "{}",
        base["tlb"]
    );
    assert_eq!(over["tlb"]["l2"]["misses"], 700, "{}", over["tlb"]);
    // The rest of the A15 is kept: its 32-entry splintering L1 misses every load.
    assert_eq!(over["tlb"]["l1d"]["hits"], 0);
    std::fs::remove_dir_all(&dir).ok();
}
