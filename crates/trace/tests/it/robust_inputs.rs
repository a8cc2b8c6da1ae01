//! No silent defaults and limits that hold in the trace layer: empty archives and data
//! after an end frame are reported, workload specs are bounded and fit the machine's
//! address space (a 32-bit space gets a base that fits, with a note).

use crate::common;
use common::*;
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::workload::{parse, parse_for, BASE_32, MAX_REFS};
use mmulab_trace::{open_trace, AccessKind, MemRef, TraceError, TraceSource};
use std::io::Write;

fn read_all(src: &mut dyn TraceSource) -> Result<Vec<MemRef>, (Vec<MemRef>, TraceError)> {
    let mut v = mmulab_trace::Batch::default();
    loop {
        match src.next_batch(&mut v, 1000) {
            Ok(0) => return Ok(v.refs),
            Ok(_) => {}
            Err(e) => return Err((v.refs, e)),
        }
    }
}

#[test]
fn zip_without_chunks_is_an_error() {
    let d = tempdir("nochunk");
    let mut zw = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zw.start_file("README.txt", zip::write::SimpleFileOptions::default())
        .unwrap();
    zw.write_all(b"not a trace").unwrap();
    let p = d.join("empty.trace.zip");
    std::fs::write(&p, zw.finish().unwrap().into_inner()).unwrap();
    let e = match open_trace(&p, None) {
        Err(e) => e,
        Ok(mut src) => {
            read_all(src.as_mut())
                .expect_err("an archive without chunks read as a clean trace")
                .1
        }
    };
    let msg = e.to_string();
    assert!(msg.contains("empty.trace.zip") && msg.contains("chunk.NNNN"), "{msg}");
    // The same archive with one chunk member reads (the check is about the members).
    let (bytes, ..) = dr_thread(7, 7, &[(1, 0, 3)]);
    let p = d.join("one.trace.zip");
    std::fs::write(&p, zip_chunks(&[&bytes])).unwrap();
    let refs = read_all(open_trace(&p, None).unwrap().as_mut()).unwrap();
    assert!(!refs.is_empty());
}

#[test]
fn mlt_data_after_end_frame_is_reported() {
    let d = tempdir("mltafter");
    let refs: Vec<MemRef> = (0..100u64)
        .map(|i| MemRef::new(0x1000 + 64 * i, AccessKind::Load, 8))
        .collect();
    let mut w = MltWriter::new(Vec::new(), 3).unwrap();
    w.push_all(&refs).unwrap();
    let good = w.finish().unwrap();
    let p = d.join("good.mlt");
    std::fs::write(&p, &good).unwrap();
    assert_eq!(read_all(open_trace(&p, None).unwrap().as_mut()).unwrap(), refs);
    // The same file twice, joined: every reference of the first is delivered, then the
    // error names the offset where the first file ends.
    let mut joined = good.clone();
    joined.extend_from_slice(&good);
    let p = d.join("joined.mlt");
    std::fs::write(&p, &joined).unwrap();
    let (got, e) = read_all(open_trace(&p, None).unwrap().as_mut()).unwrap_err();
    assert_eq!(got, refs);
    let msg = e.to_string();
    assert!(
        msg.contains("joined.mlt") && msg.contains("after the end frame"),
        "{msg}"
    );
    assert!(msg.contains(&format!("offset {}", good.len())), "{msg}");
    // One stray byte is enough.
    let mut one = good.clone();
    one.push(0);
    let p = d.join("one.mlt");
    std::fs::write(&p, &one).unwrap();
    assert!(read_all(open_trace(&p, None).unwrap().as_mut()).is_err());
}

fn spec_err(spec: &str, bits: u32) -> String {
    parse_for(spec, bits).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn unbounded_refs_and_procs_are_refused_with_range() {
    let e = spec_err("gups:table=1M,refs=18446744073709551615", 48);
    assert!(e.contains("refs") && e.contains("100000000000"), "{e}");
    let e = spec_err("build:procs=1000000000", 48);
    assert!(e.contains("procs") && e.contains("100000000000"), "{e}");
    // A huge table's default count (8 × words) is out of range too; a given refs= is not.
    let e = spec_err("gups:table=64TiB", 48);
    assert!(e.contains("default"), "{e}");
    assert!(parse("gups:table=64TiB,refs=1000,init=off").is_ok());
    // The initialisation (on by default) counts too: 8 Ti stores are out of range.
    let e = spec_err("gups:table=64TiB,refs=1000", 48);
    assert!(e.contains("init=off") && e.contains("100000000000"), "{e}");
    assert!(parse(&format!("seq:size=1M,refs={MAX_REFS}")).is_ok());
    assert!(parse(&format!("seq:size=1M,refs={}", MAX_REFS + 1)).is_err());
    let e = spec_err("chase:pages=4294967295", 48);
    assert!(e.contains("134217728"), "{e}");
    let e = spec_err("build:jobs=100000", 48);
    assert!(e.contains("jobs") && e.contains("4096"), "{e}");
    let e = spec_err("build:large=64,large_size=16GiB", 48);
    assert!(e.contains("layout"), "{e}");
}

#[test]
fn base_that_wraps_is_an_error() {
    let e = spec_err("chase:pages=10,base=0xffffffffffffff00", 48);
    assert!(e.contains("wrap") && e.contains("48-bit"), "{e}");
    // 10 pages of 4 KiB span 0xa000 bytes: 0xffff6000 + 0xa000 = 2^32 ends exactly at the
    // top of a 32-bit space; one page higher does not fit.
    assert!(parse_for("chase:pages=10,base=0xffff6000", 32).is_ok());
    let e = spec_err("chase:pages=10,base=0xffff7000", 32);
    assert!(e.contains("32-bit") && e.contains("0xffff6000"), "{e}");
    let e = spec_err("seq:size=1M,base=0xfffffffffff00000", 48);
    assert!(e.contains("48-bit"), "{e}");
    let e = spec_err("gups:table=8GiB", 32);
    assert!(e.contains("32-bit"), "{e}");
}

#[test]
fn defaults_fit_a_32_bit_space_with_a_note() {
    for spec in [
        "gups:table=1M,refs=1000",
        "chase:pages=100",
        "stride:pages=100",
        "seq:size=1M",
    ] {
        // 48-bit: the documented default base, no note.
        let (_, notes) = parse_for(spec, 48).unwrap();
        assert!(notes.is_empty(), "{spec}: {notes:?}");
        let (mut src, notes) = parse_for(spec, 32).unwrap();
        assert_eq!(notes.len(), 1, "{spec}");
        assert!(
            notes[0].contains("0x40000000") && notes[0].contains("32-bit"),
            "{}",
            notes[0]
        );
        let refs = read_all(src.as_mut()).unwrap();
        assert!(
            refs.iter().all(|r| r.addr >= BASE_32 && r.addr < BASE_32 + (4 << 20)),
            "{spec}"
        );
        // A given base is the user's: no note.
        let (_, notes) = parse_for(&format!("{spec},base=0x10000000"), 32).unwrap();
        assert!(notes.is_empty());
    }
    // build: bits follows the address space (32 below 4 GiB, with a note); bits=47 on a
    // 32-bit machine is an error.
    let (mut src, notes) = parse_for("build:procs=2,refs=5000", 32).unwrap();
    assert!(notes.len() == 1 && notes[0].contains("bits=32"), "{notes:?}");
    let refs = read_all(src.as_mut()).unwrap();
    assert!(refs.len() == 10_000 && refs.iter().all(|r| r.addr < 1 << 32));
    assert!(spec_err("build:procs=2,bits=47", 32).contains("bits=32"));
    let (_, notes) = parse_for("build:procs=2,refs=5000", 48).unwrap();
    assert!(notes.is_empty());
}
