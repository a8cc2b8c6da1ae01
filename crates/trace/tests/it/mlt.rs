//! The `.mlt` format: lossless round trips, metadata sections, and damage reported with
//! the file, the offset and the references read before it.

use mmulab_trace::format::mlt::{read_sections, MltReader, MltWriter, BLOCK_REFS};
use mmulab_trace::{AccessKind, Batch, Event, MemRef, TraceError, TraceSource};
use std::path::Path;

/// A small deterministic generator (xorshift64*), so tests need no extra crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn random_refs(n: usize, seed: u64) -> Vec<MemRef> {
    let mut r = Rng(seed | 1);
    let mut addr = 0x7fff_0000_0000u64;
    (0..n)
        .map(|i| {
            let x = r.next();
            addr = match x % 5 {
                0 => r.next(),                   // anywhere, including the top bit
                1 => addr.wrapping_sub(x >> 40), // small backwards step
                _ => addr.wrapping_add((x >> 50) & 0xfff),
            };
            MemRef {
                addr,
                size: if x % 7 == 0 { (x >> 16) as u16 } else { 8 },
                kind: AccessKind::from_code((x >> 8) as u8 % 3).unwrap(),
                core: if i % 1000 < 3 { (x >> 24) as u16 } else { 1 },
                asid: if i % 5000 == 0 { (x >> 32) as u16 } else { 2 },
            }
        })
        .collect()
}

fn encode(refs: &[MemRef], sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = MltWriter::new(Vec::new(), 3).unwrap();
    w.push_all(refs).unwrap();
    for (n, b) in sections {
        w.section(n, b).unwrap();
    }
    w.finish().unwrap()
}

fn decode(bytes: &[u8]) -> (Vec<MemRef>, Result<(), TraceError>) {
    let (b, res) = decode_batch(bytes);
    assert!(b.events.is_empty());
    (b.refs, res)
}

fn decode_batch(bytes: &[u8]) -> (Batch, Result<(), TraceError>) {
    let mut v = Batch::default();
    let mut r = match MltReader::new(bytes, Path::new("t.mlt"), None) {
        Ok(r) => r,
        Err(e) => return (v, Err(e)),
    };
    loop {
        match r.next_batch(&mut v, 10_000) {
            Ok(0) => return (v, Ok(())),
            Ok(_) => {}
            Err(e) => return (v, Err(e)),
        }
    }
}

#[test]
fn round_trip_is_lossless_across_blocks() {
    let refs = random_refs(BLOCK_REFS * 2 + 1234, 7);
    let bytes = encode(&refs, &[]);
    let (back, res) = decode(&bytes);
    res.unwrap();
    assert_eq!(back.len(), refs.len());
    assert!(back == refs, "decoded references differ");
}

#[test]
fn extreme_values_round_trip() {
    let refs: Vec<MemRef> = [0u64, u64::MAX, 1, u64::MAX - 1, 1 << 63, 0]
        .iter()
        .enumerate()
        .map(|(i, &a)| MemRef {
            addr: a,
            size: [0, u16::MAX][i % 2],
            kind: AccessKind::Store,
            core: u16::MAX,
            asid: u16::MAX,
        })
        .collect();
    let (back, res) = decode(&encode(&refs, &[]));
    res.unwrap();
    assert_eq!(back, refs);
}

#[test]
fn empty_trace_and_sections() {
    let bytes = encode(&[], &[("markers", b"page_size 4096\n"), ("vmas", &[b'x'; 1000])]);
    let mut r = MltReader::new(bytes.as_slice(), Path::new("e.mlt"), None).unwrap();
    let mut v = Batch::default();
    assert_eq!(r.next_batch(&mut v, 10).unwrap(), 0);
    let m = r.meta().unwrap();
    assert_eq!(m.markers.get("page_size"), Some(&4096));
    assert_eq!(m.section("vmas").map(|b| b.len()), Some(1000));
}

#[test]
fn sections_are_found_without_decoding_blocks() {
    let refs = random_refs(BLOCK_REFS + 10, 3);
    let dir = std::env::temp_dir().join(format!("mmulab-mlt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("s.mlt");
    std::fs::write(
        &p,
        encode(
            &refs,
            &[
                ("source", b"test"),
                ("vmas", b"00400000-00401000 r-xp 0 0:0 0 /bin/x\n"),
            ],
        ),
    )
    .unwrap();
    let s = read_sections(&p).unwrap();
    assert_eq!(
        s.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["source", "vmas"]
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncation_reports_refs_of_intact_blocks() {
    let refs = random_refs(BLOCK_REFS * 3, 11);
    let bytes = encode(&refs, &[]);
    // Cut inside the third block, and exactly at the end of the last block (no end frame).
    for cut in [bytes.len() - 100, bytes.len() - 36] {
        let (got, res) = decode(&bytes[..cut]);
        let e = res.unwrap_err();
        let s = e.to_string();
        assert!(s.contains("t.mlt") && s.contains("offset"), "{s}");
        let before = e.refs_before().unwrap();
        assert_eq!(before as usize, got.len());
        assert!(before >= 2 * BLOCK_REFS as u64, "{before}");
        assert_eq!(&refs[..got.len()], &got[..]);
    }
}

#[test]
fn a_flipped_byte_is_caught_by_the_checksum() {
    let refs = random_refs(BLOCK_REFS * 2, 5);
    let bytes = encode(&refs, &[]);
    let mut bad = bytes.clone();
    let at = bytes.len() / 2;
    bad[at] ^= 0x10;
    let (got, res) = decode(&bad);
    let e = res.unwrap_err();
    assert!(matches!(e, TraceError::Corrupt { .. }), "{e}");
    assert!(got.len() < refs.len());
    assert_eq!(&refs[..got.len()], &got[..]);
}

#[test]
fn not_an_mlt_file() {
    let e = decode(b"0 1000\n1 2000\n").1.unwrap_err();
    assert!(e.to_string().contains("bad magic"), "{e}");
}

/// Every item of `src`, in trace order.
fn items(b: &Batch) -> Vec<Result<MemRef, Event>> {
    b.items().map(|x| x.copied().map_err(|e| *e)).collect()
}

#[test]
fn events_of_the_build_workload_survive_a_round_trip_in_place() {
    let mut src = mmulab_trace::workload::parse("build:procs=3,refs=5000,large=2,large_size=1MiB,unmap=2").unwrap();
    let mut b = Batch::default();
    while src.next_batch(&mut b, 1000).unwrap() > 0 {}
    let mut w = MltWriter::new(Vec::new(), 3).unwrap();
    w.push_batch(&b).unwrap();
    assert_eq!(w.events(), 3 + 6);
    let (back, res) = decode_batch(&w.finish().unwrap());
    res.unwrap();
    assert_eq!(items(&back), items(&b));
    let unmaps = back
        .events
        .iter()
        .filter(|e| matches!(e.event, Event::Unmap { .. }))
        .count();
    assert_eq!(unmaps, 6, "two arrays freed by each of three processes");
    assert_eq!(back.events.len(), 9, "and three exits");
}

#[test]
fn a_version_1_file_with_marker_references_reads_as_events() {
    // What an older mmulab wrote for: two references, unmap [0x4000_0000, 0x4020_0000) of
    // asid 2, one more reference, exit of asid 2. A version-1 file is a version-2 file
    // without event frames, whose end frame has no event count.
    let r = |addr| MemRef {
        addr,
        size: 8,
        kind: AccessKind::Load,
        core: 0,
        asid: 2,
    };
    let refs = [
        r(0x1000),
        r(0x2000),
        r(0xfffe_0000_4000_0000),
        r(0xfffe_0000_4020_0001),
        r(0x3000),
        r(0x7fff_ffff_f000),
    ];
    let mut w = MltWriter::new(Vec::new(), 3).unwrap();
    w.push_all(&refs).unwrap();
    let mut bytes = w.finish().unwrap();
    bytes[8] = 1; // version 1
    let end = bytes.len() - 44; // the end frame: a 20-byte header, a 24-byte body
    assert_eq!(&bytes[end..end + 2], b"EN");
    bytes.truncate(end + 20 + 16);
    bytes[end + 8..end + 12].copy_from_slice(&16u32.to_le_bytes()); // raw length
    bytes[end + 12..end + 16].copy_from_slice(&16u32.to_le_bytes()); // stored length
    let crc = {
        let mut h = crc32fast::Hasher::new();
        h.update(&bytes[end..end + 16]);
        h.update(&bytes[end + 20..]);
        h.finalize()
    };
    bytes[end + 16..end + 20].copy_from_slice(&crc.to_le_bytes());
    let dir = std::env::temp_dir().join(format!("mmulab-mlt-v1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("old.mlt");
    std::fs::write(&p, &bytes).unwrap();
    let mut src = mmulab_trace::open_trace(&p, None).unwrap();
    let mut b = Batch::default();
    while src.next_batch(&mut b, 2).unwrap() > 0 {}
    assert_eq!(
        items(&b),
        vec![
            Ok(r(0x1000)),
            Ok(r(0x2000)),
            Err(Event::Unmap {
                asid: 2,
                start: 0x4000_0000,
                end: 0x4020_0000
            }),
            Ok(r(0x3000)),
            Err(Event::Exit { asid: 2 }),
        ]
    );
    assert_eq!(src.meta().unwrap().markers.get("mlt_version"), Some(&1));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_damaged_event_frame_is_reported_with_its_offset() {
    let mut w = MltWriter::new(Vec::new(), 3).unwrap();
    w.push_all(&random_refs(10, 1)).unwrap();
    w.push_event(&Event::Exit { asid: 1 }).unwrap();
    w.push_all(&random_refs(10, 2)).unwrap();
    let mut bytes = w.finish().unwrap();
    let at = bytes.windows(2).position(|x| x == b"EV").unwrap();
    bytes[at + 20] = 7; // the record's type
    let (b, res) = decode_batch(&bytes);
    let e = res.unwrap_err().to_string();
    assert!(e.contains(&format!("offset {at}")) && e.contains("checksum"), "{e}");
    assert_eq!(b.refs.len(), 10, "the references before the damage are delivered");
    assert!(w_rejects_bad_range());
}

fn w_rejects_bad_range() -> bool {
    let mut w = MltWriter::new(Vec::new(), 3).unwrap();
    w.push_event(&Event::Unmap {
        asid: 0,
        start: 0x3000,
        end: 0x1000,
    })
    .is_err()
}
