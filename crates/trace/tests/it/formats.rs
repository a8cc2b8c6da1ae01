//! Each reader on small synthetic files: record semantics, compression layers, detection,
//! thread interleaving and damaged archives.

use crate::common;
use common::*;
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::{open_trace_with, AccessKind, CoreMap, Format, Interleave, MemRef, TraceError, TraceOptions};
use std::path::Path;

fn read(path: &Path, opts: TraceOptions) -> Result<Vec<MemRef>, (Vec<MemRef>, TraceError)> {
    let mut src = open_trace_with(path, &opts).map_err(|e| (Vec::new(), e))?;
    let mut v = mmulab_trace::Batch::default();
    loop {
        match src.next_batch(&mut v, 3) {
            Ok(0) => return Ok(v.refs),
            Ok(n) => assert!(n <= 3),
            Err(e) => return Err((v.refs, e)),
        }
    }
}

fn kinds(v: &[MemRef]) -> (u64, u64, u64) {
    let c = |k| v.iter().filter(|r| r.kind == k).count() as u64;
    (c(AccessKind::Load), c(AccessKind::Store), c(AccessKind::IFetch))
}

#[test]
fn drmemtrace_raw_gz_and_zip_agree() {
    let d = tempdir("dr");
    let (b, l, s, i) = dr_thread(7, 99, &[(100, 3, 50), (300, 5, 20)]);
    let half = b.len() / 24 * 12;
    let raw = write(&d, "t.trace", &b);
    let gzp = write(&d, "t.trace.gz", &gz(&b));
    let zp = write(&d, "t.trace.zip", &zip_chunks(&[&b[..half], &b[half..]]));
    let want = read(&raw, TraceOptions::default()).unwrap();
    assert_eq!(kinds(&want), (l, s, i));
    for p in [&gzp, &zp] {
        assert_eq!(Format::detect_path(p).unwrap(), Format::DrMemtrace, "{}", p.display());
        assert!(read(p, TraceOptions::default()).unwrap() == want, "{}", p.display());
    }
    // cpu 3 then cpu 5 become cores 0 and 1; pid 99 is address space 0.
    assert_eq!(want[0].core, 0);
    assert_eq!(want.last().unwrap().core, 1);
    assert!(want.iter().all(|r| r.asid == 0));
    assert_eq!(
        (want[0].kind, want[0].size, want[0].addr),
        (AccessKind::IFetch, 4, 0x400000 + 7 * 0x10000)
    );
}

#[test]
fn directory_interleaves_by_timestamp_or_round_robin() {
    let d = tempdir("drdir");
    // Thread A runs at t=100 and t=300, thread B at t=200: A1, B, A2.
    let (a, ..) = dr_thread(1, 9, &[(100, 0, 5), (300, 0, 5)]);
    let (b, ..) = dr_thread(2, 9, &[(200, 1, 5)]);
    write(&d, "x.1.trace.zip", &zip_chunks(&[&a]));
    write(&d, "x.2.trace.gz", &gz(&b));
    write(&d, "cpu_schedule.bin.zip", b"not a thread");
    let v = read(
        &d,
        TraceOptions {
            cores: CoreMap::Thread,
            ..Default::default()
        },
    )
    .unwrap();
    let order: Vec<u16> = v.iter().map(|r| r.core).collect();
    let per_seg = 5 + 5 + 3; // ifetches, loads, stores of 5 instructions
    let mut want = vec![0u16; per_seg];
    want.extend(vec![1u16; per_seg]);
    want.extend(vec![0u16; per_seg]);
    assert_eq!(order, want);
    let rr = read(
        &d,
        TraceOptions {
            cores: CoreMap::Thread,
            interleave: Interleave::RoundRobin(4),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        &rr.iter().map(|r| r.core).collect::<Vec<_>>()[..12],
        &[0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]
    );
    assert_eq!(rr.len(), v.len());
}

#[test]
fn drmemtrace_unknown_type_and_partial_record_are_located() {
    let d = tempdir("drbad");
    let (mut b, ..) = dr_thread(1, 1, &[(1, 0, 4)]);
    let good = read(&write(&d, "ok.trace", &b), TraceOptions::default()).unwrap().len() as u64;
    b.extend_from_slice(&[1, 2, 3, 4, 5]);
    let (got, e) = read(&write(&d, "cut.trace", &b), TraceOptions::default()).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("cut.trace") && s.contains("inside a record"), "{s}");
    assert_eq!(e.refs_before(), Some(good));
    assert_eq!(got.len() as u64, good);
    let mut c = Vec::new();
    rec(&mut c, 25, 0, 5);
    rec(&mut c, 28, 12, 5);
    rec(&mut c, 0, 8, 0x1000);
    rec(&mut c, 77, 0, 0);
    let (_, e) = read(&write(&d, "unk.trace", &c), TraceOptions::default()).unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("unk.trace") && s.contains("unknown record type 77") && s.contains("offset 36"),
        "{s}"
    );
    assert_eq!(e.refs_before(), Some(1));
}

#[test]
fn truncated_zip_delivers_the_chunks_before_the_damage() {
    let d = tempdir("drzip");
    let (a, ..) = dr_thread(1, 1, &[(1, 0, 3000)]);
    let third = a.len() / 36 * 12;
    let z = zip_chunks_ordered(&[&a[..third], &a[third..2 * third], &a[2 * third..]], false);
    let full = read(&write(&d, "full.trace.zip", &z), TraceOptions::default()).unwrap();
    // Cut in the middle of the archive: the central directory is lost.
    let p = write(&d, "cut.trace.zip", &z[..z.len() * 2 / 3]);
    let (got, e) = read(
        &p,
        TraceOptions {
            format: Some(Format::DrMemtrace),
            ..Default::default()
        },
    )
    .unwrap_err();
    let s = e.to_string();
    assert!(s.contains("cut.trace.zip") && s.contains("offset"), "{s}");
    assert!(
        !got.is_empty() && got.len() < full.len(),
        "{} of {}",
        got.len(),
        full.len()
    );
    assert_eq!(e.refs_before(), Some(got.len() as u64));
    assert!(full[..got.len()] == got[..]);
    // Members written backwards and cut: chunk.0000 is (partly) lost, so nothing can be
    // delivered in order — an error, never chunks 1 and 2 passed off as the trace.
    let z = zip_chunks_ordered(&[&a[..third], &a[third..2 * third], &a[2 * third..]], true);
    let p = write(&d, "rev.trace.zip", &z[..z.len() * 2 / 3]);
    let (got, e) = read(&p, TraceOptions::default()).unwrap_err();
    assert!(got.is_empty() && e.to_string().contains("rev.trace.zip"), "{e}");
    // A whole member missing in the middle is a gap, reported after the members before it.
    let z = zip_chunks_ordered(&[&a[..third], &a[third..2 * third], &a[2 * third..]], false);
    let mut za = zip::ZipArchive::new(std::io::Cursor::new(&z)).unwrap();
    let mut zw = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for name in ["chunk.0000", "chunk.0002"] {
        zw.raw_copy_file(za.by_name(name).unwrap()).unwrap();
    }
    let p = write(&d, "gap.trace.zip", &zw.finish().unwrap().into_inner());
    let (got, e) = read(&p, TraceOptions::default()).unwrap_err();
    assert!(e.to_string().contains("missing chunk"), "{e}");
    assert!(!got.is_empty() && full[..got.len()] == got[..]);
}

#[test]
fn champsim_order_and_compression() {
    let d = tempdir("cs");
    let mut b = Vec::new();
    b.extend(champsim(0x1000, &[0xa0, 0, 0xa8], &[0xb0], None));
    b.extend(champsim(0x1004, &[], &[], None));
    b.extend(champsim(0x1008, &[0xc0], &[0xd0, 0xd8], None));
    let want = [
        (AccessKind::IFetch, 0x1000),
        (AccessKind::Load, 0xa0),
        (AccessKind::Load, 0xa8),
        (AccessKind::Store, 0xb0),
        (AccessKind::IFetch, 0x1004),
        (AccessKind::IFetch, 0x1008),
        (AccessKind::Load, 0xc0),
        (AccessKind::Store, 0xd0),
        (AccessKind::Store, 0xd8),
    ];
    for (name, bytes) in [
        ("a.champsimtrace.xz", xz(&b)),
        ("a.champsimtrace.gz", gz(&b)),
        ("a.champsim", b.clone()),
    ] {
        let p = write(&d, name, &bytes);
        assert_eq!(Format::detect_path(&p).unwrap(), Format::ChampSim, "{name}");
        let v = read(&p, TraceOptions::default()).unwrap();
        assert_eq!(v.iter().map(|r| (r.kind, r.addr)).collect::<Vec<_>>(), want, "{name}");
    }
    // Without a telling name, the record stride is guessed from the branch-flag bytes.
    let p = write(&d, "noname.xz", &xz(&b.repeat(4)));
    assert_eq!(Format::detect_path(&p).unwrap(), Format::ChampSim);
    // A wrong record size: 64-byte records read as 96-byte cloudsuite ones end mid-record.
    let mut w = b.clone();
    w.extend(champsim(0x100c, &[], &[], None)); // 4 × 64 = 2 × 96 + 64 bytes
    let p = write(&d, "wrong.bin", &w);
    let (_, e) = read(
        &p,
        TraceOptions {
            format: Some(Format::CloudSuite),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("wrong.bin") && e.to_string().contains("inside a record"),
        "{e}"
    );
    let mut c = champsim(0x2000, &[0xe0], &[0xf0], Some(5));
    c.extend(champsim(0x2004, &[], &[], Some(6)));
    let p = write(&d, "b.cloudsuite.xz", &xz(&c));
    let v = read(&p, TraceOptions::default()).unwrap();
    assert_eq!(
        v.iter().map(|r| (r.kind, r.addr, r.asid)).collect::<Vec<_>>(),
        [
            (AccessKind::IFetch, 0x2000, 5),
            (AccessKind::Load, 0xe0, 5),
            (AccessKind::Store, 0xf0, 5),
            (AccessKind::IFetch, 0x2004, 6)
        ]
    );
}

#[test]
fn text_formats_through_gzip_and_detection() {
    let d = tempdir("txt");
    let din = b"0 1000\n1 2000\n2 3000\n";
    let lackey = b"==1== Lackey\nI  00400000,3\n L 7ff000,8\n M 7ff008,4\n";
    for (name, bytes, fmt) in [
        ("a.din.gz", gz(din), Format::Din),
        ("plain", din.to_vec(), Format::Din),
        ("a.out.gz", gz(lackey), Format::Lackey),
        ("b.xz", xz(lackey), Format::Lackey),
    ] {
        let p = write(&d, name, &bytes);
        assert_eq!(Format::detect_path(&p).unwrap(), fmt, "{name}");
        assert_eq!(read(&p, TraceOptions::default()).unwrap().len(), 3, "{name}");
    }
    let p = write(&d, "garbage.gz", &gz(b"\x00\x01\x02\x03garbage\xff"));
    assert!(Format::detect_path(&p).is_err());
    let p = write(&d, "g.din", b"0 1000\nnonsense here\n");
    let (got, e) = read(&p, TraceOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("g.din") && e.to_string().contains("offset 7"),
        "{e}"
    );
    assert_eq!(got.len(), 1);
}

#[test]
fn mlt_detected_by_magic_whatever_its_name() {
    let d = tempdir("mltmagic");
    let mut w = MltWriter::new(Vec::new(), 1).unwrap();
    w.push(&MemRef::new(0x1234, AccessKind::Load, 8)).unwrap();
    let p = write(&d, "trace.din", &w.finish().unwrap());
    assert_eq!(Format::detect_path(&p).unwrap(), Format::Mlt);
    assert_eq!(
        read(&p, TraceOptions::default()).unwrap(),
        vec![MemRef::new(0x1234, AccessKind::Load, 8)]
    );
}
