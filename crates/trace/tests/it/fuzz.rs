//! Seeded mutation fuzzing of every reader, in the normal test suite: each valid sample is
//! truncated, bit-flipped, spliced and padded with junk, then read to the end (by its own
//! format and by detection). Properties: no panic; no hang (inputs are at most a few tens of
//! KiB and the number of references read is bounded); every error names the file.

use crate::common;
use common::*;
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::{open_trace_with, AccessKind, Format, MemRef, TraceOptions};
use std::path::Path;

fn samples() -> Vec<(&'static str, Format, Vec<u8>)> {
    let (dr, ..) = dr_thread(3, 4, &[(10, 1, 40), (20, 2, 40)]);
    let third = dr.len() / 36 * 12;
    let mut cs = Vec::new();
    let mut cl = Vec::new();
    for i in 0..40u64 {
        cs.extend(champsim(
            0x400000 + 4 * i,
            &[0x7000 + i, 0, 0x8000],
            &[0x9000 + i],
            None,
        ));
        cl.extend(champsim(
            0x400000 + 4 * i,
            &[0x7000 + i],
            &[0x9000, 0xa000],
            Some(i as u8),
        ));
    }
    let mut din = String::new();
    let mut lackey = String::from("==12== Lackey, an example Valgrind tool\n");
    for i in 0..300u64 {
        din.push_str(&format!("{} {:x}\n", i % 3, 0x1000 + 8 * i));
        lackey.push_str(&format!(
            "I  {:08X},3\n L {:08X},8\n M {:08X},4\n",
            0x400000 + i,
            0x7ff000 + 8 * i,
            0x7ff800 + i
        ));
    }
    let mut w = MltWriter::new(Vec::new(), 1).unwrap();
    for i in 0..3000u64 {
        let r = MemRef {
            addr: 0x1000 * (i % 77) + i,
            size: (i % 9) as u16,
            kind: AccessKind::from_code((i % 3) as u8).unwrap(),
            core: (i / 1000) as u16,
            asid: 1,
        };
        w.push(&r).unwrap();
    }
    w.section("markers", b"page_size 4096\n").unwrap();
    let mlt = w.finish().unwrap();
    vec![
        ("s.din", Format::Din, din.clone().into_bytes()),
        ("s.din.gz", Format::Din, gz(din.as_bytes())),
        ("s.lackey", Format::Lackey, lackey.clone().into_bytes()),
        ("s.lackey.xz", Format::Lackey, xz(lackey.as_bytes())),
        ("s.mlt", Format::Mlt, mlt),
        ("s.trace", Format::DrMemtrace, dr.clone()),
        ("s.trace.gz", Format::DrMemtrace, gz(&dr)),
        (
            "s.trace.zip",
            Format::DrMemtrace,
            zip_chunks_ordered(&[&dr[..third], &dr[third..2 * third], &dr[2 * third..]], false),
        ),
        ("s.champsim.xz", Format::ChampSim, xz(&cs)),
        ("s.champsim.gz", Format::ChampSim, gz(&cs)),
        ("s.cloudsuite", Format::CloudSuite, cl),
    ]
}

fn mutate(r: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..1 + r.below(3) {
        let len = d.len().max(1) as u64;
        match r.below(6) {
            0 => d.truncate(r.below(len) as usize),
            1 => {
                for _ in 0..1 + r.below(4) {
                    if !d.is_empty() {
                        let i = r.below(d.len() as u64) as usize;
                        d[i] ^= 1 << r.below(8);
                    }
                }
            }
            2 => {
                // splice: copy a segment over another place
                let a = r.below(len) as usize;
                let b = r.below(len) as usize;
                let n = (r.below(64) as usize).min(d.len().saturating_sub(a.max(b)));
                let seg = d[a..a + n].to_vec();
                d[b..b + n].copy_from_slice(&seg);
            }
            3 => {
                let at = r.below(len) as usize;
                let junk: Vec<u8> = (0..r.below(40)).map(|_| r.next() as u8).collect();
                d.splice(at.min(d.len())..at.min(d.len()), junk);
            }
            4 => {
                if !d.is_empty() {
                    let i = r.below(d.len() as u64) as usize;
                    d[i] = [0, 0xff, 0x7f, b'\n', b' '][r.below(5) as usize];
                }
            }
            _ => {
                let a = r.below(len) as usize;
                let n = r.below(200) as usize;
                d.drain(a.min(d.len())..(a + n).min(d.len()));
            }
        }
    }
    d
}

/// Reads `path` to the end or the first error; panics (fails) if the error does not name
/// the file or the reader produces an absurd number of references.
fn read_checked(path: &Path, opts: TraceOptions, name: &str) {
    let mut src = match open_trace_with(path, &opts) {
        Ok(s) => s,
        Err(e) => {
            assert!(e.to_string().contains(name), "open error without the file name: {e}");
            return;
        }
    };
    let mut buf = mmulab_trace::Batch::default();
    let mut total = 0usize;
    loop {
        buf.clear();
        match src.next_batch(&mut buf, 997) {
            Ok(0) => break,
            Ok(n) => {
                assert_eq!(n, buf.refs.len() + buf.events.len());
                assert!(n <= 997);
                total += n;
                assert!(total < 5_000_000, "{name}: reader does not stop");
            }
            Err(e) => {
                // References appended by the failing call stay in the buffer and count.
                total += buf.refs.len();
                let s = e.to_string();
                assert!(s.contains(name), "error without the file name: {s}");
                assert!(
                    !matches!(e.refs_before(), Some(b) if b as usize != total),
                    "{s}: refs_before != {total}"
                );
                break;
            }
        }
    }
    let _ = src.meta();
    let _ = src.progress();
}

#[test]
fn mutated_inputs_never_panic_and_errors_name_the_file() {
    let d = tempdir("fuzz");
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let rounds: u64 = std::env::var("MMULAB_FUZZ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    for (name, fmt, data) in samples() {
        // The unmutated sample reads cleanly.
        let p = write(&d, name, &data);
        let mut src = open_trace_with(&p, &TraceOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut v = mmulab_trace::Batch::default();
        while src.next_batch(&mut v, 1000).unwrap_or_else(|e| panic!("{name}: {e}")) > 0 {}
        assert!(!v.refs.is_empty(), "{name}");
        for round in 0..rounds {
            let m = mutate(&mut r, &data);
            let fname = format!("m{round}-{name}");
            let p = write(&d, &fname, &m);
            read_checked(
                &p,
                TraceOptions {
                    format: Some(fmt),
                    ..Default::default()
                },
                &fname,
            );
            read_checked(&p, TraceOptions::default(), &fname);
            std::fs::remove_file(&p).ok();
        }
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn mutated_thread_files_in_a_directory_never_panic() {
    let d = tempdir("fuzzdir");
    let mut r = Rng(0x1234_5678_9abc_def1);
    let (a, ..) = dr_thread(1, 5, &[(10, 0, 30), (30, 1, 30)]);
    let (b, ..) = dr_thread(2, 5, &[(20, 1, 30)]);
    let za = zip_chunks_ordered(&[&a], false);
    for round in 0..200 {
        let sub = d.join(format!("r{round}"));
        std::fs::create_dir_all(&sub).unwrap();
        let (ma, mb) = if round % 2 == 0 {
            (mutate(&mut r, &za), gz(&b))
        } else {
            (za.clone(), mutate(&mut r, &gz(&b)))
        };
        write(&sub, "t.1.trace.zip", &ma);
        write(&sub, "t.2.trace.gz", &mb);
        let name = format!("r{round}");
        read_checked(&sub, TraceOptions::default(), &name);
        read_checked(
            &sub,
            TraceOptions {
                interleave: mmulab_trace::Interleave::RoundRobin(7),
                ..Default::default()
            },
            &name,
        );
        std::fs::remove_dir_all(&sub).ok();
    }
    std::fs::remove_dir_all(&d).ok();
}
