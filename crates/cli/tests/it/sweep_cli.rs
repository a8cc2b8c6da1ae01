//! `mmulab sweep` end to end: every point equals a `mmulab sim` run, product and zip
//! orders, resume counts, and the errors of bad specs (docs/sweep.md).

use crate::common;

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mmulab_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(dir)
        .env("MMULAB_PROGRESS", "off")
        .args(args)
        .output()
        .expect("run mmulab")
}

/// A fresh directory holding `spec.toml` with `text`.
fn spec_dir(name: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("spec.toml"), text).unwrap();
    d
}

fn ok(dir: &Path, args: &[&str]) -> (String, String) {
    let out = mmulab_in(dir, args);
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "{args:?} failed:\n{e}");
    (o, e)
}

fn fails(dir: &Path, args: &[&str]) -> String {
    let out = mmulab_in(dir, args);
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(!e.contains("panicked"), "{e}");
    e
}

/// A CSV file as rows of column → text (the files here hold no quoted commas).
fn csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| head.iter().cloned().zip(l.split(',').map(String::from)).collect())
        .collect()
}

fn flatten(v: &Value, key: String, out: &mut HashMap<String, String>) {
    let join = |k: &str| {
        if key.is_empty() {
            k.to_string()
        } else {
            format!("{key}.{k}")
        }
    };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| flatten(x, join(k), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| flatten(x, join(&i.to_string()), out)),
        Value::String(s) => drop(out.insert(key, s.clone())),
        Value::Null => drop(out.insert(key, String::new())),
        x => drop(out.insert(key, x.to_string())),
    }
}

#[test]
fn every_point_equals_a_sim_run_on_the_shared_traces() {
    let dr = common::shared_drmemtrace();
    let (x86, arm) = (dr.join("x86_64-threadsig"), dr.join("aarch64-threadsig"));
    let d = spec_dir(
        "sim",
        &format!(
            "[params]\ntrace = [{:?}, {:?}]\n\"tlb.l2.entries\" = [64, 1536]\n",
            x86.display().to_string(),
            arm.display().to_string()
        ),
    );
    ok(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    let rows = csv(&d.join("r.csv"));
    // 2 traces × 2 sizes = 4 points, the last parameter varying fastest.
    assert_eq!(rows.len(), 4);
    let order: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["param.trace"].as_str(), r["param.tlb.l2.entries"].as_str()))
        .collect();
    let (xs, ys) = (x86.display().to_string(), arm.display().to_string());
    assert_eq!(
        order,
        [
            (xs.as_str(), "64"),
            (xs.as_str(), "1536"),
            (ys.as_str(), "64"),
            (ys.as_str(), "1536")
        ]
    );
    for r in &rows {
        assert_eq!(r["status"], "ok", "{r:?}");
        let set = format!("tlb.l2.entries={}", r["param.tlb.l2.entries"]);
        let (o, _) = ok(&d, &["sim", "--trace", &r["param.trace"], "--set", &set, "--json"]);
        let mut sim = HashMap::new();
        flatten(&serde_json::from_str(o.trim()).unwrap(), String::new(), &mut sim);
        sim.remove("source");
        // Provenance and the resolved configuration are not columns: a row names its
        // configuration by `config_hash` (the side file holds it) and the manifest says
        // which mmulab wrote it.
        sim.retain(|k, _| !k.starts_with("config.") && !k.starts_with("mmulab."));
        // Every statistic of the sim run is a column of the point with the same text.
        for (k, v) in &sim {
            assert_eq!(r.get(k), Some(v), "column {k} of point {set} on {}", r["param.trace"]);
        }
    }
    // The two sizes differ on at least one trace: the parameter reached the machine.
    assert_ne!(rows[0]["tlb.l2.misses"], rows[1]["tlb.l2.misses"]);
    let _ = std::fs::remove_dir_all(&d);
}

const SMALL: &str =
    "[sweep]\nworkload = \"gups:table=16MiB,refs=20k\"\nset = [\"os.policy=fixed\", \"os.page_size=4K\"]\n";

#[test]
fn zip_pairs_values_and_product_crosses_them() {
    let d = spec_dir(
        "zip",
        &format!("{SMALL}mode = \"zip\"\n[params]\n\"tlb.l2.entries\" = [512, 1024, 2048]\n\"os.page_size\" = [\"4K\", \"2M\", \"4K\"]\n"),
    );
    ok(&d, &["sweep", "spec.toml", "-o", "z.csv"]);
    let rows = csv(&d.join("z.csv"));
    // Zipped: three points, the i-th values together (a product would have 6).
    let got: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["param.tlb.l2.entries"].as_str(), r["param.os.page_size"].as_str()))
        .collect();
    assert_eq!(got, [("512", "4K"), ("1024", "2M"), ("2048", "4K")]);
    let text = std::fs::read_to_string(d.join("spec.toml"))
        .unwrap()
        .replace("mode = \"zip\"\n", "");
    std::fs::write(d.join("spec.toml"), text).unwrap();
    ok(&d, &["sweep", "spec.toml", "-o", "p.csv"]);
    // Crossed: 3 × 3 points.
    assert_eq!(csv(&d.join("p.csv")).len(), 9);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_rerun_skips_finished_points_and_reruns_failed_ones() {
    let d = spec_dir(
        "resume",
        &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [256, 512, 1024, 2048]\n"),
    );
    let (_, e) = ok(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    assert!(
        e.contains("4 points: 0 finished before (skipped), 0 failed before (re-run), 4 new"),
        "{e}"
    );
    // The journal holds one line per finished point. Keep two as they are, mark one
    // failed and drop one: the re-run skips 2, re-runs 1 failed, runs 1 new.
    let journal = d.join("r.csv.journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    lines[2]["error"] = Value::String("made to fail by the test".into());
    lines.pop();
    let kept: Vec<String> = lines.iter().map(|v| v.to_string()).collect();
    // A torn last line (a crash mid-write) is ignored.
    std::fs::write(&journal, format!("{}\n{{\"id\":\"to", kept.join("\n"))).unwrap();
    let before = csv(&d.join("r.csv"));
    let (o, e) = ok(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    assert!(
        e.contains("4 points: 2 finished before (skipped), 1 failed before (re-run), 1 new"),
        "{e}"
    );
    assert!(o.contains("4 points, 4 ok, 0 failed"), "{o}");
    let after = csv(&d.join("r.csv"));
    // The kept rows (read back from the journal) and the re-run ones equal the first
    // run's, every column but the time taken.
    assert_eq!(before.len(), after.len());
    for (a, b) in before.iter().zip(&after) {
        let strip = |r: &HashMap<String, String>| {
            let mut r = r.clone();
            r.remove("seconds");
            r
        };
        assert_eq!(strip(a), strip(b));
    }
    // Everything finished now: a third run runs nothing.
    let (_, e) = ok(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    assert!(
        e.contains("4 finished before (skipped), 0 failed before (re-run), 0 new"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_point_that_fails_is_recorded_with_its_error() {
    // 0 entries is no TLB: that point's config is invalid; the other runs.
    let d = spec_dir("fail", &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [0, 512]\n"));
    // By default a failed point makes the sweep exit 1, after every result is written.
    let e = fails(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    assert!(e.contains("1 of 2 points failed") && e.contains("--keep-going"), "{e}");
    assert_eq!(csv(&d.join("r.csv")).len(), 2);
    let (o, _) = ok(&d, &["sweep", "spec.toml", "-o", "r.csv", "--keep-going"]);
    assert!(o.contains("2 points, 1 ok, 1 failed"), "{o}");
    let rows = csv(&d.join("r.csv"));
    assert_eq!(rows[0]["status"], "error");
    assert!(rows[0]["error"].contains("entries"), "{:?}", rows[0]["error"]);
    assert_eq!(rows[0]["references"], "", "a failed point has no statistics");
    assert_eq!(rows[1]["status"], "ok");
    assert_eq!(rows[1]["references"], "20000");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_specs_are_refused_with_the_key_and_file() {
    let cases: &[(&str, &str)] = &[
        ("[sweep]\nworklaod = \"gups\"\n", "unknown key 'sweep.worklaod'"),
        ("[sweep]\nworkload = \"gups\"\n[param]\n", "unknown key 'param'"),
        (
            &format!("{SMALL}[params]\n\"tlb.l2.entires\" = [512]\n"),
            "no point has a valid machine config; the first error",
        ),
        (
            &format!("{SMALL}[params]\n\"tlb.l2.entries\" = []\n"),
            "params.tlb.l2.entries is an empty list",
        ),
        (
            "[params]\ntrace = [\"no-such.trace.gz\"]\n",
            "no-such.trace.gz does not exist",
        ),
        ("[params]\n\"tlb.l2.entries\" = [512]\n", "no input"),
        (
            &format!("{SMALL}mode = \"zip\"\n[params]\n\"tlb.l2.entries\" = [1, 2]\n\"os.page_size\" = [\"4K\"]\n"),
            "needs lists of one length",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let d = spec_dir(&format!("bad{i}"), text);
        let e = fails(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
        assert!(e.contains(want), "case {i}: want {want:?} in:\n{e}");
        assert!(e.contains("spec.toml"), "case {i}: the message names the file:\n{e}");
        assert!(
            !d.join("r.csv").exists() && !d.join("r.csv.journal").exists(),
            "case {i}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
    // The unknown config key is named.
    let d = spec_dir("badkey", &format!("{SMALL}[params]\n\"tlb.l2.entires\" = [512]\n"));
    assert!(fails(&d, &["sweep", "spec.toml", "-o", "r.csv"]).contains("entires"));
    let e = fails(&d, &["sweep", "spec.toml", "-o", "r.txt"]);
    assert!(e.contains("must end in .parquet or .csv"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_executor_that_cannot_start_writes_no_results_file() {
    let d = spec_dir("noray", &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [512]\n"));
    let e = fails(
        &d,
        &[
            "sweep",
            "spec.toml",
            "-o",
            "r.parquet",
            "--executor",
            "ray",
            "--python",
            "/nonexistent/python3",
        ],
    );
    assert!(e.contains("cannot start /nonexistent/python3"), "{e}");
    assert!(e.contains("no results file was written"), "{e}");
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["spec.toml"], "nothing but the spec is left");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn parquet_is_the_default_output_beside_the_spec() {
    let d = spec_dir(
        "parquet",
        &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [512, 1024]\n"),
    );
    ok(&d, &["sweep", "spec.toml"]);
    let bytes = std::fs::read(d.join("spec.parquet")).unwrap();
    // A Parquet file starts and ends with its magic.
    assert_eq!(&bytes[..4], b"PAR1");
    assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
    // Written as points finished into spec.parquet.partial, renamed at the end.
    assert!(!d.join("spec.parquet.partial").exists());
    let m: Value = serde_json::from_slice(&std::fs::read(d.join("spec.parquet.manifest.json")).unwrap()).unwrap();
    let points = m["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert!(points
        .iter()
        .all(|p| p["status"] == "ok" && p["id"].as_str().unwrap().len() == 32));
    assert_ne!(points[0]["id"], points[1]["id"]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn fail_fast_stops_at_the_first_failed_point() {
    // One job: the points run in order, so the failing first point stops the other three
    // before they run; they are pending, not failed, and run on the next call.
    let d = spec_dir(
        "failfast",
        &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [0, 256, 512, 1024]\n"),
    );
    let e = fails(&d, &["sweep", "spec.toml", "-o", "r.csv", "--fail-fast", "-j", "1"]);
    assert!(e.contains("--fail-fast: point") && e.contains("stopped there"), "{e}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.csv.manifest.json")).unwrap()).unwrap();
    let status: Vec<&str> = m["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(status[0], "error", "{status:?}");
    assert!(status[1..].iter().all(|s| *s == "pending"), "{status:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn output_paths_are_checked_before_the_first_point() {
    let d = spec_dir("preflight", &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [256]\n"));
    let e = fails(&d, &["sweep", "spec.toml", "-o", "no-such-dir/r.csv"]);
    assert!(e.contains("no-such-dir") && e.contains("does not exist"), "{e}");
    // Nothing ran: no journal was written anywhere.
    assert!(!d.join("no-such-dir").exists());
    assert!(!e.contains("points finished"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fully_journaled_sweep_still_writes_its_own_results() {
    // A first spec of three points writes r.csv; a second spec of one of those points
    // (all journaled: nothing runs) must not leave the three-row file in place.
    let d = spec_dir(
        "stale",
        &format!("{SMALL}[params]\n\"tlb.l2.entries\" = [256, 512, 1024]\n"),
    );
    ok(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    assert_eq!(csv(&d.join("r.csv")).len(), 3);
    std::fs::write(
        d.join("spec.toml"),
        format!("{SMALL}[params]\n\"tlb.l2.entries\" = [512]\n"),
    )
    .unwrap();
    let (_, e) = ok(&d, &["sweep", "spec.toml", "-o", "r.csv"]);
    assert!(
        e.contains("1 finished before (skipped), 0 failed before (re-run), 0 new"),
        "{e}"
    );
    let rows = csv(&d.join("r.csv"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let m: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.csv.manifest.json")).unwrap()).unwrap();
    assert_eq!(m["points"].as_array().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_sweep_says_its_count_first_and_is_refused_when_the_host_cannot_hold_it() {
    // 1000 × 1000 points: a slot each (192 bytes assumed: 183.1 MiB), one batch of 4096
    // points and rows at 40 KiB (160 MiB) and 32 MiB: 375.1 MiB, refused at once on a host
    // stated to have 256 MiB, the count said first, nothing written.
    let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let d = spec_dir(
        "huge",
        &format!(
            "{SMALL}[params]\n\"os.fault_latency\" = [{0}]\n\"machine.seed\" = [{0}]\n",
            values.join(",")
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(&d)
        .env("MMULAB_PROGRESS", "off")
        .env("MMULAB_HOST_MEMORY", "256MiB")
        .args(["sweep", "spec.toml", "-o", "h.csv"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    let first = e.lines().next().unwrap_or_default();
    assert!(first.contains("1000000 points to plan (0 in its journal)"), "{e}");
    assert!(e.contains("375.1 MiB") && e.contains("256.0 MiB available"), "{e}");
    assert!(!d.join("h.csv").exists() && !d.join("h.csv.journal").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_large_sweep_plans_a_batch_at_a_time_and_a_stopped_one_lists_its_pending_points() {
    // 1000 × 100 points: planned 4096 at a time, so the first runs without the other
    // 95,904 identified (whole planning took 12.7 s and 209 MiB for 10^5 points). Stopped
    // with SIGINT after the first batch is planned: exit 130, the finished rows written, and
    // the manifest lists all 10^5 points, the unplanned ones pending with no id.
    let a: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let b: Vec<String> = (1..=100).map(|v| v.to_string()).collect();
    let d = spec_dir(
        "lazy",
        &format!(
            "{SMALL}[params]\n\"os.fault_latency\" = [{}]\n\"machine.seed\" = [{}]\n",
            a.join(","),
            b.join(",")
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(&d)
        .env("MMULAB_PROGRESS", "off")
        .args(["sweep", "spec.toml", "-o", "l.csv", "-j", "2"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut err, &mut line).unwrap() == 0 {
            panic!("mmulab ended before planning its first batch: {seen}");
        }
        seen += &line;
        if line.contains("planned 4096 at a time as they run; the first 4096: 0 finished before (skipped), 0 failed before (re-run), 4096 new") {
            break;
        }
    }
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("l.csv.manifest.json")).unwrap()).unwrap();
    let points = manifest["points"].as_array().unwrap();
    assert_eq!(points.len(), 100_000);
    let ok = points.iter().filter(|p| p["status"] == "ok").count();
    assert!(
        points[4095]["id"].is_string() && points[4096]["id"].is_null(),
        "{}",
        points[4096]
    );
    assert_eq!(points[99_999]["status"], "pending");
    assert_eq!(points[99_999]["params"]["machine.seed"], 100);
    let csv = std::fs::read_to_string(d.join("l.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        ok + 1,
        "a row for each point the manifest calls ok"
    );
    let _ = std::fs::remove_dir_all(&d);
}
