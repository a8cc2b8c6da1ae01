//! The stage-1 translator with data caches (`[caches]`): a walk whose descriptor reads
//! hit in L1D costs the L1D latency per read (derived by hand), the request stream's
//! lines, and `[caches]` config errors.
//!
//! The machine: x86-64 (4 levels), no page-walk caches, one 1-entry data TLB, an L1D of
//! 4 cycles over a flat memory of 30 cycles (`walk.mem_latency`). Loads of `A`, then `B`
//! (4 KiB above `A`: the same tables, the next leaf descriptor, in the same 64-byte
//! line), then `A` again: the first two fault and map; the third misses the TLB (`B`
//! took its one entry) and walks with everything mapped and every line it reads already
//! in L1D.

use mmulab_sim::config::from_toml;
use mmulab_sim::{Machine, MemTraceFormat, Stats};
use mmulab_trace::{AccessKind, MemRef};
use std::io::Write;
use std::sync::{Arc, Mutex};

const A: u64 = 0x4000_0000;
const B: u64 = A + 0x1000;

fn toml(caches: bool) -> String {
    format!(
        r#"
[machine]
arch = "x86_64"
[memory]
size = "1GiB"
[walk]
pwc_entries = [0, 0, 0]
mem_latency = 30
[[tlb]]
name = "l1d"
serves = "data"
entries = 1
ways = 1
page_sizes = ["4K"]
[os]
policy = "base"
{}
"#,
        if caches {
            "[caches]\n[caches.l1d]\nsize = \"32KiB\"\nways = 8\nlatency = 4\n"
        } else {
            ""
        }
    )
}

fn load(m: &mut Machine, va: u64) -> Stats {
    m.access(&MemRef::new(va, AccessKind::Load, 8)).unwrap();
    m.stats()
}

#[test]
fn a_walk_whose_reads_hit_in_l1d_costs_the_l1d_latency_per_read() {
    let mut m = Machine::new(from_toml(&toml(true), None, &[]).unwrap()).unwrap();
    load(&mut m, A);
    let before = load(&mut m, B);
    let after = load(&mut m, A);
    let (c0, c1) = (&before.counters, &after.counters);
    // One walk of 4 descriptor reads (root, then 3 tables down to the leaf), no fault.
    assert_eq!(c1.walks - c0.walks, 1);
    assert_eq!(c1.walk_reads - c0.walk_reads, 4);
    let l1 = |s: &Stats| s.caches.as_ref().unwrap().stats.levels[0].1;
    assert_eq!(l1(&after).walk_hits - l1(&before).walk_hits, 4);
    assert_eq!(l1(&after).walk_misses, l1(&before).walk_misses);
    // Each read hit in L1D: 4 × 4 cycles (without caches: 4 × 30 = 120).
    assert_eq!(c1.walk_cycles - c0.walk_cycles, 16);
    // The load itself hits A's line, read by the first load: 4 cycles.
    let data = |s: &Stats| s.caches.as_ref().unwrap().data_cycles;
    assert_eq!(data(&after) - data(&before), 4);
    assert_eq!(l1(&after).data_hits - l1(&before).data_hits, 1);
}

#[test]
fn without_caches_the_same_walk_costs_mem_latency_per_read() {
    let mut m = Machine::new(from_toml(&toml(false), None, &[]).unwrap()).unwrap();
    load(&mut m, A);
    let before = load(&mut m, B);
    let after = load(&mut m, A);
    assert_eq!(after.counters.walk_cycles - before.counters.walk_cycles, 4 * 30);
    assert!(after.caches.is_none());
    assert!(after.to_json().get("caches").is_none());
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_request_stream_has_a_line_per_memory_request() {
    let mut m = Machine::new(from_toml(&toml(true), None, &[]).unwrap()).unwrap();
    let buf = Shared::default();
    m.set_mem_trace(MemTraceFormat::Dramsim3, Box::new(buf.clone()))
        .unwrap();
    load(&mut m, A);
    let s = load(&mut m, B);
    m.finish_mem_trace().unwrap();
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<(u64, &str, u64)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_eq!(f.len(), 3, "{l}");
            (
                u64::from_str_radix(f[0].trim_start_matches("0x"), 16).unwrap(),
                f[1],
                f[2].parse().unwrap(),
            )
        })
        .collect();
    let mem = &s.caches.as_ref().unwrap().stats;
    // Nothing was dirty yet: reads only, one per line that missed L1D.
    assert_eq!(mem.mem_writes, 0);
    assert_eq!(lines.len() as u64, mem.mem_reads);
    assert!(lines.iter().all(|l| l.1 == "READ" && l.0 % 64 == 0));
    // Times never decrease on one core. The first request is the first walk's root read:
    // the reference's base cycle (1) + its L1 TLB lookup (1) + the L1D lookup (4).
    assert!(lines.windows(2).all(|w| w[0].2 <= w[1].2));
    assert_eq!(lines[0].2, 6);
    // A machine without caches refuses a stream.
    let mut plain = Machine::new(from_toml(&toml(false), None, &[]).unwrap()).unwrap();
    let e = plain
        .set_mem_trace(MemTraceFormat::Ramulator, Box::new(std::io::sink()))
        .unwrap_err();
    assert!(e.to_string().contains("[caches]"), "{e}");
}

#[test]
fn bad_cache_keys_are_named() {
    for (set, want) in [
        (
            "caches.l1d.size=1000",
            "caches.l1d.size = 1000 is not a positive multiple",
        ),
        ("caches.l1d.line=48", "caches.l1d.line = 48 must be a power of two"),
        ("caches.l1d.ways=0", "caches.l1d.ways = 0 must be from 1 to 64"),
        ("caches.l1d.colour=1", "unknown field `colour`"),
    ] {
        let e = from_toml(&toml(true), None, &[set.to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{set}: {e}");
    }
    // --set works on the section's keys.
    let s = from_toml(&toml(true), None, &["caches.l1d.size=64KiB".into()]).unwrap();
    assert_eq!(s.caches.unwrap().levels[0].size, 65536);
}
