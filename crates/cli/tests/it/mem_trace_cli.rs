//! `mmulab sim --mem-trace`: the request stream of a tiny run in both formats has one
//! line per request the JSON counts (`caches.memory`), and a machine without `[caches]`
//! refuses it and leaves no file.

use serde_json::Value;
use std::process::Command;

fn sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .arg("sim")
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn the_stream_has_a_line_per_memory_request_in_both_formats() {
    let dir = std::env::temp_dir().join(format!("mmulab-mem-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (format, dir_word) in [("dramsim3", ["READ", "WRITE"]), ("ramulator", ["R", "W"])] {
        let path = dir.join(format!("{format}.trace"));
        let out = sim(&[
            "--machine",
            "cortex-a76-pi5",
            "--workload",
            // init=off: the stream holds every request, the JSON the measured part's
            // (the table's initialisation would be warm-up in one and not the other).
            "gups:table=64MiB,updates=20K,init=off",
            "--json",
            "--mem-trace",
            path.to_str().unwrap(),
            "--mem-trace-format",
            format,
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let (reads, writes) = (
            v["caches"]["memory"]["reads"].as_u64().unwrap(),
            v["caches"]["memory"]["writes"].as_u64().unwrap(),
        );
        // GUPS over 64 MiB misses a 2 MiB L3 on most updates and dirties what it reads;
        // its 20K dirty lines mostly still fit the L3's 32,768 lines at the end, so only
        // those pushed out by later fills and walk reads are written back.
        assert!(reads > 10_000 && writes > 0, "{reads} {writes}");
        let text = std::fs::read_to_string(&path).unwrap();
        let (mut r, mut w) = (0u64, 0u64);
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), if format == "dramsim3" { 3 } else { 2 }, "{line}");
            let addr = u64::from_str_radix(f[0].strip_prefix("0x").expect("0x"), 16).unwrap();
            assert_eq!(addr % 64, 0, "{line}");
            if f[1] == dir_word[0] {
                r += 1;
            } else {
                assert_eq!(f[1], dir_word[1], "{line}");
                w += 1;
            }
        }
        assert_eq!((r, w), (reads, writes), "{format}");
    }
    // No caches: an error naming the section, and no file.
    let path = dir.join("none.trace");
    let out = sim(&[
        "--workload",
        "seq:size=1MiB,refs=1K",
        "--mem-trace",
        path.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("[caches]"));
    assert!(!path.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
