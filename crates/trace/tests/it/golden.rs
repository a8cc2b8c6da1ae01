//! Golden `.mlt` v1 file (tests/data/golden-v1.mlt, 24 references and a markers section):
//! readers must keep decoding files written by earlier mmulab versions. Regenerate only on
//! a deliberate format change (then bump the version): `MMULAB_BLESS=1 cargo test -p
//! mmulab-trace --test it golden::`.

use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::{open_trace, AccessKind, Format, MemRef};
use std::path::Path;

fn expected() -> Vec<MemRef> {
    let mut v = Vec::new();
    for i in 0..24u64 {
        let kind = [AccessKind::IFetch, AccessKind::Load, AccessKind::Store][(i % 3) as usize];
        let addr = match kind {
            AccessKind::IFetch => 0x40_1000 + 3 * i,
            _ if i % 5 == 0 => 0xffff_8000_0000_0000 | (i << 12),
            _ => 0x7ffd_0000_1000 - 8 * i,
        };
        v.push(MemRef {
            addr,
            size: [0, 1, 8, 4096, u16::MAX][(i % 5) as usize],
            kind,
            core: (i / 8) as u16,
            asid: (i / 12) as u16 * 7,
        });
    }
    v
}

/// Reads `path` to its end.
fn read(path: &Path) -> (mmulab_trace::Batch, Box<dyn mmulab_trace::TraceSource + Send>) {
    assert_eq!(Format::detect_path(path).unwrap(), Format::Mlt);
    let mut src = open_trace(path, None).unwrap();
    let mut got = mmulab_trace::Batch::default();
    while src.next_batch(&mut got, 5).unwrap() > 0 {}
    (got, src)
}

/// A file written by mmulab before version 2 (no event frames) still reads: it is never
/// rewritten.
#[test]
fn golden_v1_file_decodes_to_the_expected_references() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden-v1.mlt");
    let (got, src) = read(&path);
    assert_eq!(got.refs, expected());
    assert!(got.events.is_empty());
    assert_eq!(src.meta().unwrap().markers.get("page_size"), Some(&4096));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89MLT\r\n\x1a\n");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 1);
}

/// The version-2 golden file: the same references with an exit event after the third;
/// `MMULAB_BLESS=1` rewrites it (after an intended format change, for review).
#[test]
fn golden_v2_file_decodes_to_the_expected_references_and_event() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/golden-v2.mlt");
    let exit = mmulab_trace::Event::Exit { asid: 5 };
    if std::env::var_os("MMULAB_BLESS").is_some() {
        let mut w = MltWriter::new(Vec::new(), 3).unwrap();
        w.push_all(&expected()[..3]).unwrap();
        w.push_event(&exit).unwrap();
        w.push_all(&expected()[3..]).unwrap();
        w.section("markers", b"page_size 4096\n").unwrap();
        std::fs::write(&path, w.finish().unwrap()).unwrap();
    }
    let (got, src) = read(&path);
    assert_eq!(got.refs, expected());
    assert_eq!(got.events, [mmulab_trace::EventAt { before: 3, event: exit }]);
    assert_eq!(src.meta().unwrap().markers.get("page_size"), Some(&4096));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2);
}
