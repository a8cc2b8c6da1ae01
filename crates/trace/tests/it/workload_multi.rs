//! `stream` and the multi-core keys `copies=` / `threads=` / `interleave=`: references
//! derived by hand from the specs.

use mmulab_trace::workload::{hpcc_starts, hpcc_step, parse};
use mmulab_trace::{AccessKind, Batch, MemRef, TraceSource};

fn all(spec: &str) -> Vec<MemRef> {
    let mut src = parse(spec).unwrap();
    let mut b = Batch::with_capacity(1000);
    // Small batches: the interleave must carry over batch boundaries.
    while src.next_batch(&mut b, 5).unwrap() > 0 {}
    b.refs
}

const SB: u64 = 0x4000_0000_0000;

#[test]
fn stream_triad_loads_b_and_c_then_stores_a() {
    // size=64: 8 elements; a at SB, b at SB+64, c at SB+128. Triad a[i] = b[i] + s·c[i].
    let r = all("stream:size=64");
    assert_eq!(r.len(), 24, "one pass: 8 elements × 3 references");
    let want = [
        (SB + 64, AccessKind::Load),
        (SB + 128, AccessKind::Load),
        (SB, AccessKind::Store),
    ];
    for (i, (addr, kind)) in want.iter().enumerate() {
        assert_eq!((r[i].addr, r[i].kind), (*addr, *kind), "reference {i}");
    }
    // Element 7 is the last: b[7], c[7], a[7].
    assert_eq!(r[21].addr, SB + 64 + 56);
    assert_eq!(r[23].addr, SB + 56);
    assert_eq!(r[23].kind, AccessKind::Store);
    // copy c = a: 2 references per element, load a then store c.
    let c = all("stream:size=64,kernel=copy,refs=4");
    let got: Vec<_> = c.iter().map(|r| (r.addr, r.kind)).collect();
    assert_eq!(
        got,
        [
            (SB, AccessKind::Load),
            (SB + 128, AccessKind::Store),
            (SB + 8, AccessKind::Load),
            (SB + 136, AccessKind::Store)
        ]
    );
}

#[test]
fn threads_split_stream_into_slices_on_their_own_cores() {
    // threads=2: thread 0 sweeps elements 0..4, thread 1 elements 4..8, 12 references
    // each, interleaved one by one.
    let r = all("stream:size=64,threads=2");
    assert_eq!(r.len(), 24);
    assert_eq!((r[0].addr, r[0].core, r[0].asid), (SB + 64, 0, 0));
    assert_eq!((r[1].addr, r[1].core, r[1].asid), (SB + 64 + 32, 1, 0));
    assert_eq!((r[2].addr, r[2].core), (SB + 128, 0));
    assert_eq!((r[3].addr, r[3].core), (SB + 128 + 32, 1));
    // The last pair: thread 0's store a[3], thread 1's store a[7].
    assert_eq!((r[22].addr, r[22].kind, r[22].core), (SB + 24, AccessKind::Store, 0));
    assert_eq!((r[23].addr, r[23].kind, r[23].core), (SB + 56, AccessKind::Store, 1));
}

#[test]
fn copies_repeat_the_program_in_their_own_address_spaces() {
    let one = all("seq:size=4K,refs=12");
    let r = all("seq:size=4K,refs=12,copies=3,interleave=4");
    assert_eq!(r.len(), 36);
    // Turns of 4: copy 0 refs 0-3, copy 1 refs 0-3, copy 2 refs 0-3, copy 0 refs 4-7, …
    for (k, m) in r.iter().enumerate() {
        let (turn, within) = (k / 4, k % 4);
        let copy = turn % 3;
        let idx = (turn / 3) * 4 + within;
        assert_eq!((m.core as usize, m.asid as usize), (copy, copy), "ref {k}");
        assert_eq!(m.addr, one[idx].addr, "ref {k}");
    }
    // Parts of unequal length: a part that ends leaves the others to finish.
    let r = all("seq:size=4K,refs=3,copies=2,interleave=2");
    let got: Vec<_> = r.iter().map(|m| (m.core, m.addr - SB)).collect();
    assert_eq!(got, [(0, 0), (0, 64), (1, 0), (1, 64), (0, 128), (1, 128)]);
}

#[test]
fn gups_threads_take_consecutive_segments_of_one_stream() {
    // table=64 bytes: 8 words, updates default 4 × 8 = 32 per thread; thread 1 starts at
    // stream position 32, HPCC_starts(32).
    let r = all("gups:table=64,threads=2,refs=4,init=off");
    let base = 0x7f00_0000_0000u64;
    let mut ran0 = hpcc_starts(0);
    let mut ran1 = hpcc_starts(32);
    ran0 = hpcc_step(ran0);
    ran1 = hpcc_step(ran1);
    assert_eq!(r[0].addr, base + (ran0 & 7) * 8);
    assert_eq!(r[1].addr, base + (ran1 & 7) * 8);
    assert_eq!((r[1].core, r[1].asid), (1, 0));
    assert_eq!(r[2].kind, AccessKind::Store);
    assert_eq!(r[2].addr, r[0].addr);
}

/// HPCC's `Table[i] = i` split over threads (on by default): table=64 is 8 words;
/// thread 0 stores words 0–3 (offsets 0, 8, 16, 24), thread 1 words 4–7 (32 … 56),
/// interleaved one by one, then the updates; the 8 stores are the warm-up (2 × 4).
/// Fails if each thread initialised the whole table (16 stores) or none.
#[test]
fn gups_threads_initialise_their_slices_of_the_table_first() {
    assert_eq!(parse("gups:table=64,threads=2,refs=2").unwrap().warmup_refs(), 8);
    let r = all("gups:table=64,threads=2,refs=2");
    let base = 0x7f00_0000_0000u64;
    let init: Vec<_> = r[..8].iter().map(|m| (m.core, m.addr - base, m.kind)).collect();
    let s = AccessKind::Store;
    assert_eq!(
        init,
        [
            (0, 0, s),
            (1, 32, s),
            (0, 8, s),
            (1, 40, s),
            (0, 16, s),
            (1, 48, s),
            (0, 24, s),
            (1, 56, s)
        ]
    );
    assert_eq!(r.len(), 8 + 2 * 2);
    assert_eq!(r[8].kind, AccessKind::Load);
    // Copies each initialise their own table.
    assert_eq!(parse("gups:table=64,copies=2,refs=2").unwrap().warmup_refs(), 16);
}

#[test]
fn chase_threads_share_one_cycle_from_spread_points() {
    let one = all("chase:pages=8,refs=8");
    let r = all("chase:pages=8,refs=2,threads=2");
    // Thread 0 starts where the single chase does; thread 1 half-way round the cycle.
    assert_eq!(r[0].addr, one[0].addr);
    assert_eq!(r[1].addr, one[4].addr);
    assert_eq!(r[2].addr, one[1].addr);
    assert_eq!(r[3].addr, one[5].addr);
}

#[test]
fn bad_multi_specs_are_clear_errors() {
    let err = |s: &str| parse(s).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err("seq:size=4K,copies=2,threads=2").contains("not both"));
    assert!(err("seq:size=4K,copies=0").contains("copies = 0"));
    assert!(err("seq:size=4K,threads=5000").contains("1 to 4096"));
    assert!(err("seq:size=4K,interleave=2").contains("needs copies= or threads="));
    assert!(err("stream:size=64,kernel=fma").contains("kernel 'fma'"));
    // A workload with events cannot be split: the first batch says so.
    let mut b = Batch::with_capacity(100);
    let mut src = parse("build:procs=2,refs=100,copies=2").unwrap();
    let mut e = String::new();
    while e.is_empty() {
        match src.next_batch(&mut b, 100) {
            Ok(0) => break,
            Ok(_) => {}
            Err(x) => e = x.to_string(),
        }
    }
    assert!(e.contains("emits events"), "{e}");
}
