//! `mmulab reproduce` for superpage-policy experiments and `mmulab sim --timeseries`,
//! end to end through the binary (small workloads; the full experiment is
//! experiments/freebsd.toml).

use std::process::Command;

fn mmulab(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .args(args)
        .output()
        .expect("run mmulab");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

const SMALL: &str = r#"
kind = "os_policies"
name = "small"
title = "small reproduction"
seed = "test"

[[workload]]
id = "latency"
label = "chase latency"
spec32 = "chase:pages=2048,refs=50K,base=0x10000000"
spec64 = "chase:pages=2048,refs=50K"
access_cycles = 100
seed_figure = "-37.85%"
seed_time_change = -0.3785
why = "test"

[[machine]]
name = "armada-xp"
label = "ARMv7"
bits = 32
policies = ["base", "reservation"]
seed_policy = "reservation"

[[machine]]
name = "skylake"
label = "x86-64"
bits = 64
policies = ["base", "thp"]
sets = ["memory.size=1GiB"]
"#;

#[test]
fn reproduce_prints_the_seed_table_and_draws_coverage() {
    let dir = std::env::temp_dir().join(format!("mmulab-repro-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("small.toml");
    std::fs::write(&file, SMALL).unwrap();
    let svg = dir.join("cov.svg");
    let (ok, out, err) = mmulab(&["reproduce", file.to_str().unwrap(), "--plot", svg.to_str().unwrap()]);
    assert!(ok, "{err}");
    // A page-per-step chase over 8 MiB: 1 MiB reservations cut TLB misses, so time drops.
    let row = out
        .lines()
        .find(|l| l.contains("chase latency (reservation vs base, armada-xp)"))
        .expect(&out);
    assert!(row.contains("| yes"), "{row}");
    assert!(out.lines().any(|l| l.contains("skylake") && l.contains("thp")), "{out}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains("polyline") && text.contains("reservation"));
    // One panel per (machine, workload), one line per policy (each with a legend sample).
    for needle in [
        "small: huge-page coverage over references",
        "armada-xp · latency",
        "skylake · latency",
        "huge-page coverage",
        "thp",
    ] {
        assert!(text.contains(needle), "{needle} missing from the plot");
    }
    assert_eq!(text.matches("stroke-width=\"2\" points=").count(), 4 * 2);
    // The same picture as PNG.
    let png = dir.join("cov.png");
    let (ok, _, err) = mmulab(&["reproduce", file.to_str().unwrap(), "--plot", png.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let (ok, out, _) = mmulab(&["reproduce", file.to_str().unwrap(), "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 4);
    // Which mmulab and which experiment file made it (issue 51, item 6).
    assert_eq!(v["mmulab"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["experiment"]["name"], "freebsd");
    assert!(v["experiment"]["config"].is_object(), "{}", v["experiment"]);
    // Bad experiment files name the file.
    std::fs::write(
        &file,
        SMALL.replace("policies = [\"base\", \"thp\"]", "policies = [\"thp\"]"),
    )
    .unwrap();
    let (ok, _, err) = mmulab(&["reproduce", file.to_str().unwrap()]);
    assert!(!ok && err.contains("small.toml") && err.contains("base"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sim_writes_a_time_series() {
    let f = std::env::temp_dir().join(format!("mmulab-ts-{}.jsonl", std::process::id()));
    let (ok, _, err) = mmulab(&[
        "sim",
        "-w",
        // init=off: 200K references from an untouched table (the initialisation would
        // add 2 M warm-up stores to the series).
        "gups:table=16MiB,updates=100K,init=off",
        "--set",
        "os.policy=reservation",
        "--timeseries",
        f.to_str().unwrap(),
        "--interval",
        "50000",
    ]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&f).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4, "200K references / 50K");
    let last = &rows[3];
    assert_eq!(last["refs"], 200_000);
    // Reservations map only touched pages and promote only full ones: no bloat.
    assert_eq!(last["resident_bytes"], last["touched_bytes"], "{last}");
    assert_eq!(last["bloat_bytes"], 0);
    let p = last["promotions"].as_u64().unwrap();
    assert!((7..=8).contains(&p), "16 MiB = 8 reservations of 2 MiB: {last}");
    assert!(last["resident_by_size"]["2M"].as_u64().unwrap() > 0);
    std::fs::remove_file(&f).ok();
    let (ok, _, err) = mmulab(&["sim", "-w", "seq:size=1MiB", "--timeseries", "/nonexistent-dir/x.jsonl"]);
    assert!(!ok && err.contains("/nonexistent-dir/x.jsonl"), "{err}");
}

#[test]
fn vmas_recorded_in_an_mlt_trace_limit_huge_pages() {
    use mmulab_trace::format::mlt::MltWriter;
    use mmulab_trace::{AccessKind, MemRef};
    // 4 MiB touched page by page at 0x40000000; a VMA sample (written after the
    // references, as `mmulab record` may) says only the first 3 MiB are one VMA.
    let p = std::env::temp_dir().join(format!("mmulab-vma-{}.mlt", std::process::id()));
    let mut w = MltWriter::new(std::fs::File::create(&p).unwrap(), 1).unwrap();
    for i in 0..1024u64 {
        w.push(&MemRef::new(0x4000_0000 + i * 4096, AccessKind::Store, 8))
            .unwrap();
    }
    w.section(
        "vmas",
        b"# sample 0 t_ms=0\n40000000-40300000 rw-p 00000000 00:00 0 [heap]\n",
    )
    .unwrap();
    w.finish().unwrap();
    let (ok, out, err) = mmulab(&["sim", "-t", p.to_str().unwrap(), "--set", "os.policy=thp", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // First 2 MiB: one huge page. 2–3 MiB: crosses the VMA end, 4K. 3–4 MiB: outside the
    // recorded VMA, whose inferred VMA starts at 3 MiB, so that range is cut too.
    assert_eq!(v["memory"]["resident_by_size"]["2M"], 2 << 20, "{}", v["memory"]);
    assert_eq!(v["memory"]["resident_by_size"]["4K"], 2 << 20, "{}", v["memory"]);
    std::fs::remove_file(&p).ok();
}

/// Experiment files declare their kind instead of being sniffed: a file without one, or
/// with an unknown one, is refused naming the file and the kinds there are.
#[test]
fn experiment_files_declare_their_kind() {
    let dir = std::env::temp_dir().join(format!("mmulab-kind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let none = dir.join("none.toml");
    std::fs::write(&none, SMALL.replace("kind = \"os_policies\"\n", "")).unwrap();
    let (ok, _, err) = mmulab(&["reproduce", none.to_str().unwrap()]);
    assert!(
        !ok && err.contains("none.toml") && err.contains("declares no kind"),
        "{err}"
    );
    let odd = dir.join("odd.toml");
    std::fs::write(&odd, SMALL.replace("kind = \"os_policies\"", "kind = \"gpu\"")).unwrap();
    let (ok, _, err) = mmulab(&["reproduce", odd.to_str().unwrap()]);
    assert!(
        !ok && err.contains("\"gpu\"") && err.contains("os_policies, tlb_test"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
