//! Reproducible results (issue 51, item 6): every JSON result says which mmulab made it
//! (`mmulab`: version, git commit) and the fully resolved configuration it ran (`config`);
//! `sim --print-config` prints that configuration, which given back builds the same
//! machine; a workload written as a trace (`convert --workload`) simulates to the same
//! statistics.

use super::common::{err_at_root, json_at_root, mmulab_at_root};
use serde_json::Value;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-prov-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The statistics of a `sim --json` object: without what names the run rather than
/// its results (provenance, configuration, the source's name).
fn stats_only(mut v: Value) -> Value {
    let m = v.as_object_mut().expect("an object");
    for k in ["mmulab", "config", "source"] {
        m.remove(k);
    }
    v
}

const WORKLOAD: &str = "gups:table=4MiB,refs=30k";

/// `--print-config`'s TOML, given back with `--config` (no --machine), simulates to the
/// same statistics, on a machine with data caches, one in a VM, one with NUMA nodes,
/// one with a level removed and one with --set overrides.
#[test]
fn printed_config_given_back_simulates_to_identical_statistics() {
    let dir = tmp("print");
    let cases: [&[&str]; 5] = [
        &["-m", "cortex-a76-pi5", "--set", "os.policy=thp"],
        &["-m", "cortex-a53-kvm"],
        &[
            "-m",
            "cortex-a72-pi4",
            "--set",
            "numa.fake=2",
            "--set",
            "numa.policy=interleave",
        ],
        &[
            "-m",
            "cortex-a15",
            "--set",
            "tlb.l2.entries=1024",
            "--set",
            "os.policy=reservation",
        ],
        &["--set", "os.policy=mthp", "--set", "machine.seed=7"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let out = mmulab_at_root(&[&["sim", "--print-config"], *args].concat());
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.contains("name = \"cortex"),
            "{args:?}: the machine is merged in, not named\n{text}"
        );
        let file = dir.join(format!("{i}.toml"));
        std::fs::write(&file, &text).unwrap();
        let f = file.to_str().unwrap();
        let direct = json_at_root(&[&["sim", "--json", "-w", WORKLOAD], *args].concat());
        let back = json_at_root(&["sim", "--json", "-w", WORKLOAD, "--config", f]);
        assert!(direct["references"].as_u64().unwrap() > 0);
        assert_eq!(
            direct["config"], back["config"],
            "{args:?}: the configuration read back differs"
        );
        assert_eq!(stats_only(direct), stats_only(back), "{args:?}\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sim --json` says which mmulab made it and the configuration it ran, `--set`
/// overrides included; so does the object of a failed run.
#[test]
fn sim_json_carries_version_commit_and_the_resolved_config() {
    let v = json_at_root(&[
        "sim",
        "--json",
        "-m",
        "cortex-a53",
        "-w",
        WORKLOAD,
        "--set",
        "tlb.l2.entries=768",
        "--set",
        "tlb.l2.ways=3",
    ]);
    assert_eq!(v["mmulab"]["version"], env!("CARGO_PKG_VERSION"));
    let commit = &v["mmulab"]["commit"];
    assert!(
        commit.is_null()
            || commit
                .as_str()
                .is_some_and(|c| c.len() == 40 && c.chars().all(|x| x.is_ascii_hexdigit())),
        "{commit}"
    );
    assert!(v["mmulab"]["dirty"].is_boolean());
    let tlb = v["config"]["tlb"].as_array().expect("config.tlb");
    let l2 = tlb.iter().find(|t| t["name"] == "l2").expect("l2");
    assert_eq!(l2["entries"], 768);
    assert_eq!(l2["ways"], 3);
    assert_eq!(v["config"]["machine"]["arch"], "aarch64");
    assert_eq!(v["config"]["os"]["policy"], "base");
    assert!(v["config"]["machine"].get("name").is_none());
    // A run that fails still prints one object with the provenance and configuration.
    let out = mmulab_at_root(&["sim", "--json", "-m", "cortex-a53", "-t", "no/such/trace.mlt"]);
    assert!(!out.status.success());
    let e: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(e["complete"], false);
    assert_eq!(e["mmulab"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(e["config"]["machine"]["arch"], "aarch64");
    // --print-config --json: the same two keys and nothing simulated.
    let p = json_at_root(&[
        "sim",
        "--print-config",
        "--json",
        "-m",
        "cortex-a53",
        "--set",
        "tlb.l2.entries=768",
        "--set",
        "tlb.l2.ways=3",
    ]);
    assert_eq!(p["config"], v["config"]);
    assert!(p.get("counters").is_none());
    // --print-config with a source would ignore it: refused.
    err_at_root(&["sim", "--print-config", "-w", WORKLOAD]);
}

/// A workload written as a trace (`convert --workload SPEC OUT`) simulates to the
/// statistics of the workload itself: its warm-up (GUPS's table initialisation) and
/// VMAs travel in the .mlt.
#[test]
fn a_workload_written_as_a_trace_simulates_to_the_same_statistics() {
    let dir = tmp("convert");
    for (i, w) in ["gups:table=8MiB,refs=200k", "seq:size=4MiB"].iter().enumerate() {
        // The workload is laid out for the machine's address width (cortex-a15: 32 bits).
        for (j, machine) in [
            &["-m", "cortex-a76", "--set", "os.policy=thp"][..],
            &["-m", "cortex-a15"][..],
        ]
        .iter()
        .enumerate()
        {
            let out = dir.join(format!("{i}-{j}.mlt"));
            let o = out.to_str().unwrap();
            let c = mmulab_at_root(&["convert", "--workload", w, o, "-m", machine[1]]);
            assert!(c.status.success(), "{w}: {}", String::from_utf8_lossy(&c.stderr));
            let direct = json_at_root(&[&["sim", "--json", "-w", w], *machine].concat());
            let traced = json_at_root(&[&["sim", "--json", "-t", o], *machine].concat());
            assert!(direct["references"].as_u64().unwrap() > 0);
            assert_eq!(stats_only(direct), stats_only(traced), "{w} on {machine:?}");
        }
    }
    // The GUPS trace keeps its warm-up apart, as the workload does.
    let traced = json_at_root(&["sim", "--json", "-t", dir.join("0-0.mlt").to_str().unwrap()]);
    assert_eq!(traced["roi"]["warmup"], 1 << 20, "{}", traced["roi"]);
    assert_eq!(traced["references"], 200_000);
    // A text output cannot carry the warm-up: the note says which --warmup to give.
    let din = dir.join("g.din");
    let c = mmulab_at_root(&[
        "convert",
        "--workload",
        "gups:table=8MiB,refs=1k",
        din.to_str().unwrap(),
    ]);
    assert!(c.status.success());
    assert!(String::from_utf8_lossy(&c.stderr).contains("--warmup 1048576"));
    // An input beside --workload is refused, naming the usage.
    let e = err_at_root(&["convert", "--workload", "seq:size=1MiB", "a.mlt", "b.mlt"]);
    assert!(e.contains("--workload SPEC OUT"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every sweep row names its resolved configuration by `config_hash`, which the side
/// file OUTPUT.configs.jsonl maps to the configuration `sim --print-config` prints for
/// that point; the manifest says which mmulab wrote it.
#[test]
fn sweep_rows_hash_resolves_in_the_side_file() {
    let dir = tmp("sweep");
    std::fs::write(
        dir.join("spec.toml"),
        "[sweep]\nworkload = \"gups:table=4MiB,refs=5k\"\nmachine = \"cortex-a53\"\n[params]\n\"tlb.l2.entries\" = [256, 1024]\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(&dir)
        .args(["sweep", "spec.toml", "-o", "r.csv", "--jobs", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| *h == n)
            .unwrap_or_else(|| panic!("no {n}: {header:?}"))
    };
    let side: Vec<Value> = std::fs::read_to_string(dir.join("r.csv.configs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(side.len(), 2);
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let (hash, entries) = (cells[col("config_hash")], cells[col("param.tlb.l2.entries")]);
        assert_eq!(hash.len(), 16, "{line}");
        let config = &side
            .iter()
            .find(|s| s["config_hash"] == hash)
            .unwrap_or_else(|| panic!("{hash} is not in the side file"))["config"];
        let printed = json_at_root(&[
            "sim",
            "--print-config",
            "--json",
            "-m",
            "cortex-a53",
            "--set",
            &format!("tlb.l2.entries={entries}"),
        ]);
        assert_eq!(&printed["config"], config, "point with {entries} entries");
    }
    let manifest: Value = serde_json::from_slice(&std::fs::read(dir.join("r.csv.manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["mmulab"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["configs"], "r.csv.configs.jsonl");
    assert_eq!(manifest["points"][0]["config_hash"].as_str().map(str::len), Some(16));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `reproduce --json` says which mmulab made it and which experiment, with its options
/// and, for an experiment file, its parameters.
#[test]
fn reproduce_json_carries_provenance_and_the_experiment() {
    let v = json_at_root(&["reproduce", "v3d-capacity", "--json"]);
    assert_eq!(v["mmulab"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(v["mmulab"]["dirty"].is_boolean());
    assert_eq!(v["experiment"]["name"], "v3d-capacity");
    assert_eq!(v["experiment"]["source"], "000");
    assert!(v["experiment"]["file"].is_null());
    assert_eq!(v["experiment"]["options"]["quick"], false);
    assert!(v["rows"].is_array(), "the experiment's own keys stay");
}
