//! Parquet results written as points finish (`ParquetStream`): a sweep killed halfway
//! leaves only `OUTPUT.partial`, never `OUTPUT`; resumed with the journal's rows it ends
//! with the same rows and columns, in point order, as the whole-table write; a change of
//! columns on the way falls back to the whole write.

use mmulab_sweep::{ParquetStream, Row, Table};
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn row(index: usize, extra: bool) -> Row {
    let mut stats = vec![
        ("references".to_string(), json!(1000 + index as u64)),
        ("cycles.per_reference".to_string(), json!(1.5 + index as f64)),
    ];
    if extra {
        stats.push(("tlb.l3.misses".to_string(), json!(7)));
    }
    Row {
        id: format!("{index:032x}"),
        index,
        params: vec![("tlb.l2.entries".to_string(), json!(512 * (index + 1)))],
        error: None,
        seconds: 0.25,
        stats,
        config_hash: String::new(),
        complete: true,
    }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-stream-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// (row groups, every row as text) of a Parquet file.
fn read(path: &Path) -> (usize, Vec<String>) {
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let groups = r.metadata().num_row_groups();
    let rows = r.get_row_iter(None).unwrap().map(|x| x.unwrap().to_string()).collect();
    (groups, rows)
}

#[test]
fn an_interrupted_stream_leaves_no_results_file_and_a_resumed_one_equals_the_whole_write() {
    let d = dir("resume");
    let out = d.join("r.parquet");
    let order: Vec<usize> = (0..10).collect();
    // First run: 3 rows per group. Points 1, 0, 2 finish (a group of 0..2 is written),
    // then 4 (waits for 3), then the process dies (the stream is dropped unfinished).
    let mut s = ParquetStream::new(&out, order.clone(), &[], 3, Duration::from_secs(3600));
    let temp = s.temp_path().to_path_buf();
    for i in [1, 0, 2, 4] {
        s.push(row(i, false)).unwrap();
    }
    assert_eq!(s.row_groups(), 1);
    drop(s);
    assert!(!out.exists(), "a half-written results file under the final name");
    assert!(temp.exists());
    assert!(SerializedFileReader::new(std::fs::File::open(&temp).unwrap()).is_err());
    // Resume: the journal held 0, 1, 2 and 4; 3 and 5..9 run now, out of order.
    let done: Vec<Row> = [0, 1, 2, 4].map(|i| row(i, false)).to_vec();
    let mut s = ParquetStream::new(&out, order, &done, 3, Duration::from_secs(3600));
    for i in [6, 3, 5, 9, 7, 8] {
        s.push(row(i, false)).unwrap();
    }
    let all: Vec<Row> = (0..10).map(|i| row(i, false)).collect();
    assert!(s.finish(&all).unwrap(), "the stream fell back");
    assert!(out.exists() && !temp.exists());
    // By hand: 0, 1, 2 and 4 are ready from the journal. 6 arrives: the rows ready in
    // point order from 0 are 0..2 (3 is missing): 3 rows → group 1. 3 makes 3, 4 (2 rows:
    // wait); 5 makes 3..6 (4 rows) → group 2. 9 waits for 7; 7 makes 7 (1 row); 8 makes
    // 7..9 (3 rows) → group 3. Nothing is left for finish.
    let (groups, rows) = read(&out);
    assert_eq!(groups, 3);
    let whole_path = d.join("whole.parquet");
    let refs: Vec<&Row> = all.iter().collect();
    Table::of(&refs)
        .write_parquet(std::fs::File::create(&whole_path).unwrap())
        .unwrap();
    let (whole_groups, whole_rows) = read(&whole_path);
    assert_eq!(whole_groups, 1);
    assert_eq!(rows, whole_rows, "same rows, columns and order as the whole write");
    assert_eq!(rows.len(), 10);
    assert!(rows[3].contains("references: 1003"), "{}", rows[3]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_change_of_columns_falls_back_to_the_whole_write() {
    let d = dir("columns");
    let out = d.join("r.parquet");
    let mut s = ParquetStream::new(&out, (0..4).collect(), &[], 2, Duration::from_secs(3600));
    let temp = s.temp_path().to_path_buf();
    s.push(row(0, false)).unwrap();
    s.push(row(1, false)).unwrap();
    assert!(temp.exists());
    // Points 2 and 3 ran on a machine with an L3 TLB: a column the file does not have.
    s.push(row(2, true)).unwrap();
    s.push(row(3, true)).unwrap();
    let all: Vec<Row> = (0..4).map(|i| row(i, i >= 2)).collect();
    assert!(!s.finish(&all).unwrap());
    assert!(!temp.exists() && !out.exists(), "the caller writes the whole table");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn rows_are_cells_of_the_right_columns() {
    // The text form the tests above compare: every column by name.
    let d = dir("cells");
    let out = d.join("r.parquet");
    let mut s = ParquetStream::new(&out, vec![0], &[], 1, Duration::from_secs(3600));
    s.push(row(0, false)).unwrap();
    assert!(s.finish(&[row(0, false)]).unwrap());
    let (_, rows) = read(&out);
    let want = Value::String(format!("{:032x}", 0)).to_string();
    assert!(rows[0].contains(&format!("point: {want}")), "{}", rows[0]);
    assert!(rows[0].contains("param.tlb.l2.entries: 512"), "{}", rows[0]);
    let _ = std::fs::remove_dir_all(&d);
}
