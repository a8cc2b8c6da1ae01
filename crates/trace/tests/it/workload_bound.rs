//! Every built-in workload says where its addresses end (`TraceSource::addr_end`), and
//! none of its references reaches that bound: the simulator skips its user-space check of
//! a source whose bound lies inside the user space, so a bound too low would let a
//! kernel or non-canonical address through unchecked.

use mmulab_trace::workload::{parse, parse_for, NAMES};
use mmulab_trace::{Batch, TraceSource};

/// The largest address of up to `limit` references, and the source's bound.
fn max_and_bound(spec: &str, va_bits: u32) -> (u64, Option<u64>) {
    let (mut src, _) = parse_for(spec, va_bits).unwrap();
    let bound = src.addr_end();
    let mut b = Batch::with_capacity(4096);
    let mut max = 0;
    while src.next_batch(&mut b, 4096).unwrap() > 0 {
        max = b.refs.iter().map(|r| r.addr + r.size as u64 - 1).fold(max, u64::max);
        b.refs.clear();
        b.events.clear();
    }
    (max, bound)
}

#[test]
fn every_workload_stays_under_its_bound() {
    let specs = [
        "seq:size=1MiB,refs=200000",
        "seq:size=1MiB,stride=4096,refs=1000",
        "gups:table=1MiB,refs=100000",
        "chase:pages=256,refs=100000",
        "lat_mem_rd:size=1MiB,refs=100000",
        "lat_mem_rd:size=1MiB,order=random,refs=100000",
        "stride:pages=64,offset=16,refs=10000",
        "stream:size=1MiB,refs=100000",
        "gups:table=1MiB,refs=100000,copies=3",
        "seq:size=64KiB,refs=10000,base=0x10000",
    ];
    let mut named: Vec<&str> = specs.iter().map(|s| s.split(':').next().unwrap()).collect();
    for (spec, bits) in specs
        .iter()
        .map(|s| (*s, 48))
        .chain([("gups:table=1MiB,refs=1000", 32)])
    {
        let (max, bound) = max_and_bound(spec, bits);
        let bound = bound.unwrap_or_else(|| panic!("{spec}: no bound"));
        assert!(max < bound, "{spec}: address {max:#x} at or above its bound {bound:#x}");
    }
    // Every workload that places its addresses with a base is covered above (`build`
    // lays out a program's own segments and declares no bound: the check stays on).
    named.push("build");
    for n in NAMES {
        assert!(named.contains(n), "workload {n} is not checked here");
    }
    assert_eq!(parse("build:refs=1000").unwrap().addr_end(), None);
}

#[test]
fn seq_bound_is_its_base_plus_its_size() {
    // size=1MiB, the default stride 64: 16,384 slots; the last reference is at base +
    // 1 MiB - 64, 8 bytes long: the bound is base + 1 MiB - 56.
    let src = parse("seq:size=1MiB").unwrap();
    assert_eq!(src.addr_end(), Some(0x4000_0000_0000 + (1 << 20) - 56));
}
