//! Start-up costs that must not change what is read (docs/benchmarks-log.md, "Start-up"):
//! the drmemtrace reader's skipped-record counts kept in fixed slots, and read-ahead's
//! first batches read on the caller's thread.

use mmulab_trace::{open_inline, Batch, ReadAhead, TraceOptions, TraceSource};
use std::path::{Path, PathBuf};

fn rec(out: &mut Vec<u8>, ty: u16, size: u16, addr: u64) {
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&addr.to_le_bytes());
}

fn drain(src: &mut dyn TraceSource, max: usize) -> u64 {
    let mut n = 0;
    loop {
        let mut b = Batch::default();
        match src.next_batch(&mut b, max).unwrap() {
            0 => return n,
            k => n += k as u64,
        }
    }
}

#[test]
fn skipped_records_are_counted_by_name() {
    // A header, version marker, thread and pid, then: 3 encoding records (47), 2
    // timestamps (marker 2), 1 cpu id (marker 3), marker 25 twice, marker 100 once (a
    // subtype past the fixed slots), 1 prefetch (type 2), 1 instr_no_fetch (29), and
    // 5 loads among them.
    let dir = std::env::temp_dir().join(format!("mmulab-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("counts.trace");
    let mut raw = Vec::new();
    for (ty, size, addr) in [(25u16, 0u16, 5u64), (28, 12, 5), (22, 4, 1), (24, 4, 1)] {
        rec(&mut raw, ty, size, addr);
    }
    let load = |raw: &mut Vec<u8>, i: u64| rec(raw, 0, 8, 0x1000 + i * 64);
    rec(&mut raw, 47, 4, 0);
    load(&mut raw, 0);
    rec(&mut raw, 28, 2, 1000);
    rec(&mut raw, 28, 3, 7);
    load(&mut raw, 1);
    rec(&mut raw, 47, 4, 0);
    rec(&mut raw, 28, 25, 1);
    rec(&mut raw, 28, 25, 2);
    rec(&mut raw, 28, 100, 3);
    load(&mut raw, 2);
    rec(&mut raw, 2, 8, 0x9000);
    rec(&mut raw, 29, 4, 0);
    rec(&mut raw, 47, 4, 0);
    load(&mut raw, 3);
    rec(&mut raw, 28, 2, 2000);
    load(&mut raw, 4);
    std::fs::write(&path, &raw).unwrap();
    let mut src = open_inline(&path, &TraceOptions::default()).unwrap();
    // The metadata as far as read: after the first two loads (one per call), one
    // encoding record, one timestamp and the cpu id were read.
    let mut b = Batch::default();
    assert_eq!(src.next_batch(&mut b, 2).unwrap(), 2);
    let early = src.meta().unwrap().counts;
    let n = 2 + drain(&mut *src, 8192);
    let counts = src.meta().unwrap().counts;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(n, 5);
    let want = |pairs: &[(&str, u64)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Vec<_>>();
    assert_eq!(
        early.into_iter().collect::<Vec<_>>(),
        want(&[("cpu_id", 1), ("encoding", 1), ("timestamp", 1)])
    );
    assert_eq!(
        counts.into_iter().collect::<Vec<_>>(),
        want(&[
            ("cpu_id", 1),
            ("encoding", 3),
            ("instr_no_fetch", 1),
            ("marker_100", 1),
            ("marker_25", 2),
            ("prefetch", 1),
            ("timestamp", 2),
        ])
    );
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace/x86_64-threadsig")
}

#[test]
fn a_short_trace_starts_no_reading_thread() {
    // Thread 2765542: 107,905 references, 14 batches of 8,192 (13 full), fewer than
    // INLINE_BATCHES (16): read on this thread alone. The directory (2,528,461
    // references, 309 batches) starts the thread after its 16th batch; the references
    // are the same either way (tests/it/readahead.rs compares every batch).
    let o = TraceOptions::default();
    let file = sample().join("drmemtrace.threadsig.2765542.2328.trace.zip");
    let mut short = ReadAhead::new(open_inline(&file, &o).unwrap());
    assert_eq!(drain(&mut short, 8192), 107_905);
    assert!(!short.threaded());
    let mut long = ReadAhead::new(open_inline(&sample(), &o).unwrap());
    let mut b = Batch::default();
    for _ in 0..16 {
        b.clear();
        assert_eq!(long.next_batch(&mut b, 8192).unwrap(), 8192);
        assert!(!long.threaded());
    }
    assert_eq!(16 * 8192 + drain(&mut long, 8192), 2_528_461);
    assert!(long.threaded());
}
