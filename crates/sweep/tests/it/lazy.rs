//! A sweep run to files (`Sweep`): planned a batch at a time, its rows kept in the
//! journal and read back in point order. Stopped after some batches and resumed from its
//! journal, it ends with the results a sweep run whole in memory gives (but for the
//! `seconds` column); a point not planned yet is `pending` with no id in the manifest;
//! a row the journal cannot take is still in the results.

use mmulab_sweep::journal::Journal;
use mmulab_sweep::{results, run_in_memory, Executor, Pool, Spec, Sweep, Table};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-lazy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SPEC: &str = r#"[sweep]
machine = "skylake"
workload = "chase:pages=40,refs=400"
[params]
"os.fault_latency" = [100, 200]
"tlb.l1d.entries" = [16, 32, 64, 48, 24]
"#;

/// Runs up to `batches` batches of `batch` points of `spec` with `journal`; the counts.
fn run(spec: &Spec, journal: &Path, batch: usize, batches: usize) -> mmulab_sweep::run::Counts {
    let mut sweep = Sweep::new(spec, journal, 2).unwrap().with_batch(batch);
    let mut j = Journal::new(journal);
    for _ in 0..batches {
        let Some(b) = sweep.plan_next(&AtomicUsize::new(0)).unwrap() else {
            break;
        };
        Pool { jobs: 2 }
            .run(&b.todo, &mut |r| sweep.record(r, &mut j).unwrap())
            .unwrap();
    }
    sweep.counts()
}

/// CSV text without its `seconds` column (wall-clock time differs from run to run).
fn without_seconds(csv: &str) -> Vec<Vec<String>> {
    let rows: Vec<Vec<String>> = csv.lines().map(|l| l.split(',').map(String::from).collect()).collect();
    let s = rows[0].iter().position(|c| c == "seconds").unwrap();
    rows.into_iter()
        .map(|mut r| {
            r.remove(s);
            r
        })
        .collect()
}

fn csv_of(spec: &Spec, journal: &Path, batch: usize) -> String {
    let sweep = Sweep::new(spec, journal, 2).unwrap().with_batch(batch);
    // A sweep that plans nothing new reads back what the journal holds of its points.
    let mut sweep = sweep;
    while let Some(b) = sweep.plan_next(&AtomicUsize::new(0)).unwrap() {
        assert!(b.todo.is_empty(), "every point is in the journal");
    }
    let mut out = Vec::new();
    results::write_csv(&sweep, &mut out, "test").unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn stopped_after_two_batches_and_resumed_it_ends_as_a_sweep_run_whole() {
    let d = dir("resume");
    let spec = Spec::parse(SPEC, "test.toml", &d).unwrap();
    let journal = d.join("out.csv.journal");
    // 10 points in batches of 3: two batches run (6 points), then it stops.
    let c = run(&spec, &journal, 3, 2);
    assert_eq!(
        (c.points, c.planned, c.new, c.skipped, c.ok, c.failed),
        (10, 6, 6, 0, 6, 0)
    );
    // Its manifest: six points with ids and rows, four pending without ids.
    let mut sweep = Sweep::new(&spec, &journal, 2).unwrap().with_batch(3);
    let b = sweep.plan_next(&AtomicUsize::new(0)).unwrap().unwrap();
    assert_eq!((b.skipped, b.new, b.todo.len()), (3, 0, 0));
    let mut m = Vec::new();
    results::write_manifest(&sweep, &mut m, &serde_json::json!({}), Some("c"), "test").unwrap();
    let m: serde_json::Value = serde_json::from_slice(&m).unwrap();
    let points = m["points"].as_array().unwrap();
    assert_eq!(points.len(), 10);
    let status: Vec<&str> = points.iter().map(|p| p["status"].as_str().unwrap()).collect();
    assert_eq!(
        status,
        ["ok", "ok", "ok", "pending", "pending", "pending", "pending", "pending", "pending", "pending"]
    );
    assert!(points[2]["id"].is_string() && points[3]["id"].is_null());
    assert_eq!(points[9]["params"]["tlb.l1d.entries"], 24);
    // Resumed: the six are skipped, four run.
    let c = run(&spec, &journal, 3, usize::MAX);
    assert_eq!((c.planned, c.skipped, c.new, c.ok), (10, 6, 4, 10));
    // The results, read back from the journal, are those of the sweep run in memory.
    let resumed = csv_of(&spec, &journal, 3);
    let whole = run_in_memory(&spec, &mut Pool { jobs: 2 }).unwrap();
    let refs: Vec<_> = whole.iter().collect();
    let mut w = Vec::new();
    Table::of(&refs).write_csv(&mut w).unwrap();
    let whole = String::from_utf8(w).unwrap();
    assert_eq!(resumed.lines().count(), 11);
    assert_eq!(without_seconds(&resumed), without_seconds(&whole));
    // Parquet, a row group of at most ROWS_PER_GROUP rows at a time: 10 rows, 1 group.
    let mut sweep = Sweep::new(&spec, &journal, 2).unwrap();
    while sweep.plan_next(&AtomicUsize::new(0)).unwrap().is_some() {}
    let pq = d.join("out.parquet");
    results::write_parquet(&sweep, std::fs::File::create(&pq).unwrap(), "test").unwrap();
    use parquet::file::reader::FileReader;
    let r = parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    assert_eq!(r.metadata().file_metadata().num_rows(), 10);
}

#[test]
fn a_row_the_journal_cannot_take_is_still_in_the_results() {
    let d = dir("full");
    let spec = Spec::parse(SPEC, "test.toml", &d).unwrap();
    // The sweep's journal is a file; the one it appends to is /dev/full, which opens for
    // appending and refuses every write.
    let mut sweep = Sweep::new(&spec, &d.join("j"), 2).unwrap().with_batch(2);
    let mut j = Journal::new(Path::new("/dev/full"));
    let b = sweep.plan_next(&AtomicUsize::new(0)).unwrap().unwrap();
    let mut errors = Vec::new();
    Pool { jobs: 1 }
        .run(&b.todo, &mut |r| {
            if let Err(e) = sweep.record(r, &mut j) {
                errors.push(e.to_string());
            }
        })
        .unwrap();
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].contains("cannot write the journal /dev/full"),
        "{}",
        errors[0]
    );
    let mut out = Vec::new();
    results::write_csv(&sweep, &mut out, "test").unwrap();
    let csv = String::from_utf8(out).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert_eq!(sweep.counts().ok, 2);
    // A journal that is not a regular file is refused, not read (/dev/zero never ends).
    let e = Sweep::new(&spec, Path::new("/dev/zero"), 2).err().unwrap().to_string();
    assert!(e.contains("the journal /dev/zero is not a regular file"), "{e}");
}
