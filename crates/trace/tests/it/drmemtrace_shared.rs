//! The DynamoRIO samples committed in the repository (`tests/data/drmemtrace`, BSD
//! licence beside them): the reader's counts per kind must equal an
//! independent count made here by decoding the zip members with plain code.
//! A missing directory fails the test with a message: it must never pass silently.

use mmulab_trace::{open_trace_with, AccessKind, CoreMap, Format, Interleave, MemRef, TraceOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

fn shared_traces() -> PathBuf {
    let dr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace");
    assert!(
        dr.join("x86_64-threadsig").is_dir() && dr.join("aarch64-threadsig").is_dir(),
        "drmemtrace samples not found at {} (they are committed in the repository: is the checkout complete?)",
        dr.display()
    );
    dr
}

#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Counts {
    loads: u64,
    stores: u64,
    ifetches: u64,
    prefetches: u64,
    page_size: u64,
}

/// Independent decoding: unzip every `chunk.*` member (whole, in memory — fine for a test),
/// cut it into 12-byte records and count their types.
fn count_by_hand(file: &Path) -> Counts {
    let mut za = zip::ZipArchive::new(std::fs::File::open(file).unwrap()).unwrap();
    let mut names: Vec<String> = za
        .file_names()
        .filter(|n| n.starts_with("chunk."))
        .map(String::from)
        .collect();
    names.sort();
    let mut c = Counts::default();
    let mut carry: Vec<u8> = Vec::new();
    for n in names {
        let mut bytes = std::mem::take(&mut carry);
        za.by_name(&n).unwrap().read_to_end(&mut bytes).unwrap();
        let whole = bytes.len() / 12 * 12;
        for r in bytes[..whole].chunks_exact(12) {
            let ty = u16::from_le_bytes([r[0], r[1]]);
            let size = u16::from_le_bytes([r[2], r[3]]);
            match ty {
                0 => c.loads += 1,
                1 => c.stores += 1,
                2..=9 | 32..=46 => c.prefetches += 1,
                10..=16 | 31 | 48 | 49 => c.ifetches += 1,
                28 if size == 18 => c.page_size = u64::from_le_bytes(r[4..12].try_into().unwrap()),
                _ => {}
            }
        }
        carry = bytes[whole..].to_vec();
    }
    assert!(carry.is_empty(), "{}: trailing partial record", file.display());
    c
}

fn read_all(path: &Path, opts: TraceOptions) -> (Vec<MemRef>, mmulab_trace::TraceMeta) {
    let mut src = open_trace_with(path, &opts).unwrap_or_else(|e| panic!("{e}"));
    let mut v = mmulab_trace::Batch::default();
    while src.next_batch(&mut v, 4096).unwrap_or_else(|e| panic!("{e}")) > 0 {}
    (v.refs, src.meta().unwrap())
}

fn count_refs(v: &[MemRef]) -> Counts {
    let mut c = Counts::default();
    for r in v {
        match r.kind {
            AccessKind::Load => c.loads += 1,
            AccessKind::Store => c.stores += 1,
            AccessKind::IFetch => c.ifetches += 1,
        }
    }
    c
}

fn trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.zip"))
        .collect();
    v.sort();
    v
}

fn check_dir(name: &str, threads: usize) {
    let dir = shared_traces().join(name);
    let files = trace_files(&dir);
    assert_eq!(files.len(), threads);
    let mut total = Counts::default();
    for f in &files {
        let want = count_by_hand(f);
        assert!(want.loads + want.stores + want.ifetches > 0);
        assert_eq!(Format::detect_path(f).unwrap(), Format::DrMemtrace);
        let (refs, meta) = read_all(f, TraceOptions::default());
        let mut got = count_refs(&refs);
        got.page_size = meta.markers.get("page_size").copied().unwrap_or(0);
        got.prefetches = want.prefetches; // ignored by default; checked below
        assert_eq!(got, want, "{}", f.display());
        assert_eq!(meta.threads, Some(1));
        // With prefetches delivered, they arrive as extra loads.
        let (with_pf, _) = read_all(
            f,
            TraceOptions {
                prefetches: true,
                ..Default::default()
            },
        );
        assert_eq!(count_refs(&with_pf).loads, want.loads + want.prefetches);
        total.loads += want.loads;
        total.stores += want.stores;
        total.ifetches += want.ifetches;
        total.prefetches += want.prefetches;
    }
    // The whole directory, interleaved by timestamps, holds every thread's references once.
    let (refs, meta) = read_all(&dir, TraceOptions::default());
    let got = count_refs(&refs);
    assert_eq!(
        (got.loads, got.stores, got.ifetches),
        (total.loads, total.stores, total.ifetches)
    );
    assert_eq!(meta.threads, Some(threads as u64));
    assert_eq!(meta.processes, Some(1));
    assert_eq!(meta.markers.get("page_size"), Some(&4096));
    let cores = refs.iter().map(|r| r.core).max().unwrap() as u64 + 1;
    assert_eq!(
        Some(&cores),
        meta.markers.get("cpus"),
        "cores are the dense renumbering of the CPU ids"
    );
    // One core per thread, and round-robin interleaving, keep the same multiset of references.
    let (by_thread, _) = read_all(
        &dir,
        TraceOptions {
            cores: CoreMap::Thread,
            ..Default::default()
        },
    );
    assert_eq!(by_thread.iter().map(|r| r.core).max().unwrap() as usize + 1, threads);
    let (rr, _) = read_all(
        &dir,
        TraceOptions {
            interleave: Interleave::RoundRobin(1000),
            ..Default::default()
        },
    );
    assert_eq!(rr.len(), refs.len());
    let key = |v: &[MemRef]| {
        let mut k: Vec<(u64, u8)> = v.iter().map(|r| (r.addr, r.kind as u8)).collect();
        k.sort_unstable();
        k
    };
    assert!(key(&rr) == key(&refs));
    eprintln!(
        "{name}: {} loads, {} stores, {} ifetches, {} prefetches (ignored), {} threads, {cores} cpus",
        total.loads, total.stores, total.ifetches, total.prefetches, threads
    );
}

#[test]
fn x86_64_threadsig_counts_match_an_independent_decode() {
    check_dir("x86_64-threadsig", 2);
}

#[test]
fn aarch64_threadsig_counts_match_an_independent_decode() {
    check_dir("aarch64-threadsig", 21);
}

#[test]
fn timestamp_interleaving_follows_the_markers() {
    // In timestamp order, every switch between threads happens at a segment whose start time
    // is not earlier than the previous segment's: check that references of the two x86
    // threads alternate at least once (both threads run) and that reading is deterministic.
    let dir = shared_traces().join("x86_64-threadsig");
    let (a, _) = read_all(
        &dir,
        TraceOptions {
            cores: CoreMap::Thread,
            ..Default::default()
        },
    );
    let (b, _) = read_all(
        &dir,
        TraceOptions {
            cores: CoreMap::Thread,
            ..Default::default()
        },
    );
    assert!(a == b);
    let switches = a.windows(2).filter(|w| w[0].core != w[1].core).count();
    assert!(switches >= 2, "threads never interleave ({switches} switches)");
}
