//! `mmulab mrc` end to end: one JSON object with the whole curve, CSV and SVG files, and
//! clear errors for a bad level or set count.

use std::process::{Command, Output};

fn mmulab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .args(args)
        .output()
        .expect("run mmulab")
}

#[test]
fn json_csv_and_plot() {
    let dir = std::env::temp_dir().join(format!("mmulab-mrc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (csv, svg) = (dir.join("c.csv"), dir.join("c.svg"));
    // chase over 200 pages, 1000 references: sizes below 200 miss all 1000, from 200 on
    // the 200 first references only.
    let o = mmulab(&[
        "mrc",
        "-w",
        "chase:pages=200,refs=1000",
        "--max-entries",
        "256",
        "--sets",
        "4",
        "--json",
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let c = v["curve"].as_array().unwrap();
    assert_eq!(c.len(), 256);
    assert_eq!(c[198]["misses"], 1000);
    assert_eq!(c[199]["entries"], 200);
    assert_eq!(c[199]["misses"], 200);
    assert_eq!(c[199]["miss_ratio"], 0.2);
    assert_eq!(v["set_associative"][0]["sets"], 4);
    assert_eq!(v["set_associative"][0]["curve"].as_array().unwrap().len(), 64);
    let text = std::fs::read_to_string(&csv).unwrap();
    // A header, 256 fully associative rows and 64 set-associative rows.
    assert_eq!(text.lines().count(), 1 + 256 + 64);
    assert!(text.starts_with("kind,sets,ways,entries,misses,miss_ratio\nfully_associative,1,1,1,1000,1\n"));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_page_size_the_page_tables_cannot_map_is_refused() {
    // x86-64 maps 4K, 2M and 1G pages: a 16K curve was drawn for 4K pages, silently.
    let o = mmulab(&["mrc", "-w", "seq:size=1MiB", "--page-size", "16K"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--page-size 16K") && e.contains("4K, 2M, 1G"), "{e}");
    // 2M is mappable, and the default machine's L1 holds it.
    assert_eq!(
        mmulab(&["mrc", "-w", "seq:size=1MiB", "--page-size", "2M"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn bad_level_and_sets_are_clear_errors() {
    let o = mmulab(&["mrc", "-w", "seq:size=1MiB", "--level", "l3"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--level l3") && e.contains("l1d, l1i, l2"), "{e}");
    let o = mmulab(&["mrc", "-w", "seq:size=1MiB", "--sets", "6"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--sets 6") && e.contains("power of two"), "{e}");
}
