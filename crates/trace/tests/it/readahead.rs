//! Read-ahead (`open_trace_with`) against the reader on the calling thread
//! (`open_inline`): the same references, events and batch boundaries, and a damaged
//! file's error with the same message, offset and count, after the same references.

use mmulab_trace::{open_inline, open_trace_with, Batch, TraceOptions, TraceSource};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Every call's (items returned, batch) until the end or an error.
fn drain(src: &mut dyn TraceSource, max: usize) -> (Vec<(usize, Batch)>, Option<String>) {
    let mut calls = Vec::new();
    loop {
        let mut b = Batch::default();
        match src.next_batch(&mut b, max) {
            Ok(0) => return (calls, None),
            Ok(n) => calls.push((n, b)),
            Err(e) => {
                calls.push((0, b));
                return (calls, Some(e.to_string()));
            }
        }
    }
}

fn same(path: &Path, max: usize) -> (usize, Option<String>) {
    let o = TraceOptions::default();
    let (a, ea) = drain(&mut *open_inline(path, &o).unwrap(), max);
    let (b, eb) = drain(&mut *open_trace_with(path, &o).unwrap(), max);
    assert_eq!(a.len(), b.len(), "{}: calls", path.display());
    for (i, ((na, ba), (nb, bb))) in a.iter().zip(&b).enumerate() {
        assert_eq!(na, nb, "call {i}");
        assert_eq!(ba.refs, bb.refs, "call {i}: references");
        assert_eq!(ba.events, bb.events, "call {i}: events");
    }
    assert_eq!(ea, eb);
    (a.iter().map(|c| c.1.refs.len()).sum(), ea)
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace/x86_64-threadsig")
}

#[test]
fn same_batches_as_inline() {
    // The 2-thread x86-64 sample: 2,528,461 references (docs/bench-readers.md), read in
    // the run loop's batches and in odd small ones (each read-ahead batch then goes out
    // in pieces).
    let (n, e) = same(&sample(), 8192);
    assert_eq!((n, e), (2_528_461, None));
    let file = std::fs::read_dir(sample()).unwrap().next().unwrap().unwrap().path();
    let (m, _) = same(&file, 8192);
    assert!(m > 0 && m < n);
    let (m3, _) = same(&file, 997);
    assert_eq!(m3, m);
}

#[test]
fn damaged_gzip_error_is_the_same() {
    // A drmemtrace stream of header records and 100,000 loads, gzipped, cut in the
    // middle: both read the same references, then fail with the same message.
    let dir = std::env::temp_dir().join(format!("mmulab-readahead-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut.trace.gz");
    let mut raw = Vec::new();
    for (ty, size, addr) in [(25u16, 0u16, 5u64), (28, 12, 5), (22, 4, 1), (24, 4, 1)] {
        raw.extend_from_slice(&ty.to_le_bytes());
        raw.extend_from_slice(&size.to_le_bytes());
        raw.extend_from_slice(&addr.to_le_bytes());
    }
    for i in 0..100_000u64 {
        raw.extend_from_slice(&0u16.to_le_bytes());
        raw.extend_from_slice(&8u16.to_le_bytes());
        raw.extend_from_slice(&(0x10_0000 + i * 4096).to_le_bytes());
    }
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&raw).unwrap();
    let gz = e.finish().unwrap();
    std::fs::write(&path, &gz[..gz.len() / 2]).unwrap();
    let (n, err) = same(&path, 8192);
    let _ = std::fs::remove_dir_all(&dir);
    let err = err.expect("a cut file is an error");
    assert!(n > 0 && n < 100_000, "{n}");
    assert!(err.contains("cut.trace.gz"), "{err}");
}
