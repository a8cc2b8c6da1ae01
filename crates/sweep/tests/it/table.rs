//! The results table: flattening, column kinds, and a Parquet file read back with the
//! parquet crate's own reader.

use mmulab_sweep::table::{flatten, Kind};
use mmulab_sweep::{Row, Table};
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::json;

fn row(index: usize, error: Option<&str>, stats: serde_json::Value) -> Row {
    Row {
        id: format!("id{index}"),
        index,
        params: vec![("tlb.l2.entries".into(), json!(512 * (index + 1)))],
        error: error.map(String::from),
        seconds: 0.5,
        stats: flatten(&stats),
        config_hash: String::new(),
        complete: true,
    }
}

#[test]
fn columns_are_the_union_typed_by_their_values() {
    let a = row(
        0,
        None,
        json!({"references": 10, "tlb": {"l2": {"misses": 3}}, "cycles": {"per_reference": 1.5}, "walks": {"start_level": [4, 0]}}),
    );
    let b = row(1, Some("bad config"), json!({}));
    let c = row(
        2,
        None,
        json!({"references": 12, "tlb": {"l2": {"misses": 4}}, "cycles": {"per_reference": 2}, "extra": true}),
    );
    let t = Table::of(&[&a, &b, &c]);
    let col = |n: &str| {
        t.names
            .iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("no column {n}: {:?}", t.names))
    };
    assert_eq!(
        &t.names[..7],
        [
            "point",
            "index",
            "config_hash",
            "param.tlb.l2.entries",
            "status",
            "error",
            "seconds"
        ]
    );
    assert_eq!(t.kinds[col("references")], Kind::Int);
    // 1.5 and 2: the integer is widened, not the column cut to text.
    assert_eq!(t.kinds[col("cycles.per_reference")], Kind::Float);
    assert_eq!(t.kinds[col("walks.start_level.1")], Kind::Int);
    assert_eq!(t.kinds[col("extra")], Kind::Bool);
    assert_eq!(t.kinds[col("error")], Kind::Text);
    // The failed point has nulls where the others have statistics.
    assert!(t.cells[1][col("references")].is_null());
    assert_eq!(t.cells[1][col("status")], json!("error"));
    let mut csv = Vec::new();
    t.write_csv(&mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let second = csv.lines().nth(2).unwrap();
    assert!(second.starts_with("id1,1,,1024,error,bad config,0.5,,"), "{second}");
}

#[test]
fn parquet_reads_back_value_for_value() {
    let mut a = row(
        0,
        None,
        json!({"references": 10, "cycles": {"per_reference": 1.5}, "name": "l2"}),
    );
    a.config_hash = "0123456789abcdef".into();
    let b = row(1, Some("x, \"quoted\""), json!({}));
    let t = Table::of(&[&a, &b]);
    let path = std::env::temp_dir().join(format!("mmulab-sweep-table-{}.parquet", std::process::id()));
    t.write_parquet(std::fs::File::create(&path).unwrap()).unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(reader.metadata().file_metadata().num_rows(), 2);
    let rows: Vec<String> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap().to_string())
        .collect();
    assert_eq!(
        rows[0],
        "{point: \"id0\", index: 0, config_hash: \"0123456789abcdef\", param.tlb.l2.entries: 512, status: \"ok\", error: null, seconds: 0.5, references: 10, cycles.per_reference: 1.5, name: \"l2\"}"
    );
    assert_eq!(
        rows[1],
        "{point: \"id1\", index: 1, config_hash: null, param.tlb.l2.entries: 1024, status: \"error\", error: \"x, \"quoted\"\", seconds: 0.5, references: null, cycles.per_reference: null, name: null}"
    );
    let _ = std::fs::remove_file(&path);
}
