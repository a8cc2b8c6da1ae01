//! Pinned results: the complete `--json` statistics of 14 runs — six machines, the five
//! OS policies, all four replacement policies, odd geometries and both shared drmemtrace
//! samples — must equal the files under `tests/data/pinned/` byte for byte (a failure
//! names the fields that differ), with the checkout's paths written as `{config}` and
//! `{dr}`.
//!
//! The hand-derived golden tests (sim_cli.rs) and the differential tests check that the
//! models are right on small cases; these pin every figure of larger runs, so a change
//! meant only to make the simulator faster cannot change a result unnoticed (and a
//! change that means to is seen in review as a changed file).
//!
//! After an intended change of results, rewrite the files and review their diff:
//! `MMULAB_BLESS=1 cargo test -p mmulab-cli --test it pinned_results::`.

use crate::common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (file name, `mmulab sim` arguments); `{config}` is the example config and
/// `{dr}` the shared drmemtrace directory.
const RUNS: &[(&str, &str)] = &[
    ("01-gups-base", "--config {config} --workload gups:table=1GiB,updates=200K"),
    ("02-gups-fixed-2m", "--config {config} --workload gups:table=1GiB,updates=100K --set os.policy=fixed --set os.page_size=2M"),
    ("03-seq", "--config {config} --workload seq:size=1GiB,refs=500K"),
    ("04-chase-plru-fifo", "--config {config} --workload chase:pages=5000,refs=200K --set tlb.l2.replacement=plru --set tlb.l1d.replacement=fifo"),
    ("05-chase-random-4way", "--config {config} --workload chase:pages=5000,refs=200K --set tlb.l2.replacement=random --set tlb.l1d.ways=4"),
    ("06-stride-odd-l2", "--config {config} --workload stride:pages=3000,offset=16,refs=200K --set tlb.l2.entries=1536 --set tlb.l2.ways=12"),
    ("07-cortex-a15-gups", "--machine cortex-a15 --workload gups:table=256MiB,updates=100K,base=0x40000000"),
    ("08-cortex-a9-chase", "--machine cortex-a9 --workload chase:pages=3000,refs=100K,base=0x40000000"),
    ("09-neoverse-n1-mthp", "--machine neoverse-n1 --workload gups:table=256MiB,updates=100K --set os.policy=mthp"),
    ("10-armada-xp-reservation", "--machine armada-xp --workload gups:table=256MiB,updates=100K,base=0x40000000 --set os.policy=reservation"),
    ("11-skylake-thp", "--machine skylake --workload gups:table=256MiB,updates=100K --set os.policy=thp"),
    ("12-thp-small-memory", "--machine default --workload gups:table=64MiB,updates=100K --set os.policy=thp --set memory.size=128MiB"),
    ("13-drmemtrace-x86_64", "--trace {dr}/x86_64-threadsig"),
    ("14-drmemtrace-aarch64", "--machine cortex-a57 --trace {dr}/aarch64-threadsig"),
];

/// The paths at which two JSON values differ (at most `limit`), for a readable failure.
fn differences(path: &str, want: &Value, got: &Value, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || want == got {
        return;
    }
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(&format!("{path}.{k}"), x, y, out, limit),
                    // A key added or dropped, even one whose value is null.
                    (x, y) if out.len() < limit => out.push(format!(
                        "{path}.{k}: pinned {}, now {}",
                        x.map_or("(absent)".to_string(), Value::to_string),
                        y.map_or("(absent)".to_string(), Value::to_string)
                    )),
                    _ => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), x, y, out, limit);
            }
        }
        _ => out.push(format!("{path}: pinned {want}, now {got}")),
    }
}

#[test]
fn statistics_equal_the_pinned_files() {
    let config = root().join("tests/data/issue2-example.toml").display().to_string();
    let dr = common::shared_drmemtrace().display().to_string();
    let dir = root().join("tests/data/pinned");
    let bless = std::env::var_os("MMULAB_BLESS").is_some();
    let mut failures = Vec::new();
    for (name, args) in RUNS {
        let args: Vec<String> = args
            .replace("{config}", &config)
            .replace("{dr}", &dr)
            .split(' ')
            .map(String::from)
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_mmulab"))
            .arg("sim")
            .args(&args)
            .arg("--json")
            .output()
            .expect("run mmulab");
        assert!(
            out.status.success(),
            "{name}: mmulab sim {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Paths in the output (a trace's "source") in the checkout-independent form.
        let text = String::from_utf8(out.stdout)
            .expect("UTF-8 stdout")
            .replace(&dr, "{dr}")
            .replace(&config, "{config}");
        // What made the run (`mmulab`: version, git commit) and its resolved
        // configuration (`config`) close the object; they are not pinned here (the
        // commit changes with every commit; provenance_cli checks both): only the
        // statistics before them are.
        let text = match text.rfind(",\"mmulab\":{") {
            Some(i) => format!("{}}}\n", &text[..i]),
            None => text,
        };
        let got: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: stdout is not one JSON object: {e}"));
        let file = dir.join(format!("{name}.json"));
        if bless {
            // The output as printed, byte for byte (a parse and re-print could change
            // the last digit of a float).
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&file, &text).unwrap();
            continue;
        }
        let pinned = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (write the pinned files with MMULAB_BLESS=1, then review them)",
                file.display()
            )
        });
        if pinned != text {
            let want: Value =
                serde_json::from_str(&pinned).unwrap_or_else(|e| panic!("{}: not JSON: {e}", file.display()));
            let mut diffs = Vec::new();
            differences("", &want, &got, &mut diffs, 8);
            if diffs.is_empty() {
                diffs.push(format!(
                    "the text differs: pinned {}, now {}",
                    pinned.trim(),
                    text.trim()
                ));
            }
            failures.push(format!(
                "{name} (mmulab sim {}):\n  {}",
                args.join(" "),
                diffs.join("\n  ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "results differ from tests/data/pinned/ — if the change is meant to change them, rerun with MMULAB_BLESS=1 and review the diff:\n{}",
        failures.join("\n")
    );
}
