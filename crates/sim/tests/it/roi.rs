//! Warm-up and region of interest (crate::roi), on tiny hand-made traces whose counts
//! are derived by hand. The default machine: 4 KiB base pages (policy `base`), l1d of 64
//! entries, fully associative, in front of l2; every first touch of a page faults.

use mmulab_sim::config::{from_toml, DEFAULT_TOML};
use mmulab_sim::{catalog, run_roi, Machine, Roi, Stats, Warmup};
use mmulab_trace::{AccessKind, Batch, MemRef, TraceError, TraceSource};

/// A trace held in memory, handed out in batches of at most `max` items.
struct Refs(Vec<MemRef>, usize);

impl TraceSource for Refs {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        let n = (self.0.len() - self.1).min(max);
        buf.refs.extend_from_slice(&self.0[self.1..self.1 + n]);
        self.1 += n;
        Ok(n)
    }
    fn describe(&self) -> String {
        "hand-made".into()
    }
}

const BASE: u64 = 0x4000_0000;

/// Loads of 8 bytes at the start of pages `pages` (page numbers from BASE).
fn pages(pages: &[u64]) -> Refs {
    Refs(
        pages
            .iter()
            .map(|p| MemRef::new(BASE + p * 4096, AccessKind::Load, 8))
            .collect(),
        0,
    )
}

fn go(src: &mut Refs, roi: &Roi) -> Stats {
    let spec = from_toml(DEFAULT_TOML, None, &[]).unwrap();
    let mut m = Machine::new(spec).unwrap();
    run_roi(&mut m, src, roi, None).unwrap()
}

fn l1d(s: &Stats) -> (u64, u64, Option<u64>) {
    let l = s.levels.iter().find(|l| l.name == "l1d").unwrap();
    (l.counts.accesses, l.counts.misses, l.compulsory)
}

/// Pages 0 1 2 0 1 7 9 with skip 1, warm-up 2, refs 3:
/// - skipped: page 0 (never simulated);
/// - warm-up: pages 1, 2 — 2 references, 2 faults, 2 l1d misses, both compulsory;
/// - measured: pages 0, 1, 7 — page 0 was skipped, so it misses and faults
///   (compulsory), page 1 hits (the warm-up filled it), page 7 misses and faults:
///   3 references, 2 misses, 2 faults, 2 compulsory. Page 9 is never simulated.
///
/// Checked: without the skip the warm-up is pages 0, 1 and the measured part 2, 0, 1
/// (1 miss, 1 fault); without the subtraction at the boundary the measured references
/// are 5 and the faults 4; without the stop after `refs` the references are 4.
#[test]
fn skip_warmup_and_refs_bound_the_measured_part() {
    let roi = Roi {
        skip: 1,
        warmup: Warmup::Refs(2),
        refs: Some(3),
        compulsory: true,
        ..Roi::default()
    };
    let s = go(&mut pages(&[0, 1, 2, 0, 1, 7, 9]), &roi);
    let r = s.roi.as_ref().unwrap();
    assert_eq!((r.skipped, r.warmup, r.measured, r.straddle_pieces), (1, 2, 3, 0));
    assert_eq!(s.counters.references, 3);
    assert_eq!(s.counters.faults, 2);
    assert_eq!(l1d(&s), (3, 2, Some(2)));
    let w = s.warmup.as_ref().unwrap();
    assert_eq!(w.counters.references, 2);
    assert_eq!(w.counters.faults, 2);
    assert_eq!(l1d(w), (2, 2, Some(2)));
    let j = s.to_json();
    assert_eq!(j["warmup"]["references"], 2);
    assert_eq!(j["roi"]["measured"], 3);
    assert_eq!(j["tlb"]["l1d"]["compulsory"], 2);
}

/// Compulsory misses are first fills of a key, not every miss: 65 distinct pages then
/// page 0 again on a 64-entry fully associative LRU l1d: 66 misses (page 0 was evicted
/// by page 64), 65 compulsory. Checked: counting every fill would give 66.
#[test]
fn a_capacity_miss_is_not_compulsory() {
    let mut p: Vec<u64> = (0..65).collect();
    p.push(0);
    let s = go(
        &mut pages(&p),
        &Roi {
            compulsory: true,
            ..Roi::default()
        },
    );
    assert_eq!(l1d(&s), (66, 66, Some(65)));
    // Not asked for: not counted, no JSON key.
    let s = go(&mut pages(&p), &Roi::default());
    assert_eq!(l1d(&s).2, None);
    assert!(s.to_json()["tlb"]["l1d"].get("compulsory").is_none());
    assert!(s.to_json().get("roi").is_none());
}

/// The same 65 pages then page 0 on a virtualized core (`epyc-zen4-kvm`: a nested core
/// whose combined TLB is filled at min(guest, host) page size, 4 KiB here): the first
/// fill of each of the 65 keys is compulsory at l1d, page 0's second miss (if any) is
/// not, so 65 again. Checked: before nested cores counted them the level had no figure.
#[test]
fn nested_cores_count_compulsory_misses_too() {
    let mut p: Vec<u64> = (0..65).collect();
    p.push(0);
    let spec = from_toml(catalog::get("epyc-zen4-kvm").unwrap(), None, &[]).unwrap();
    assert!(spec.vm.is_some());
    let mut m = Machine::new(spec).unwrap();
    let roi = Roi {
        compulsory: true,
        ..Roi::default()
    };
    let s = run_roi(&mut m, &mut pages(&p), &roi, None).unwrap();
    assert!(s.nested.is_some());
    assert_eq!(l1d(&s).2, Some(65));
}

/// An 8-byte load at the last 4 bytes of page 0 covers pages 0 and 1: with straddle it
/// is two lookups (two references, two l1d misses, two faults, one extra piece); without,
/// one. Checked: with the split removed the first figures are the second's.
#[test]
fn a_straddling_reference_is_looked_up_twice() {
    let refs = || Refs(vec![MemRef::new(BASE + 4092, AccessKind::Load, 8)], 0);
    let s = go(
        &mut refs(),
        &Roi {
            straddle: true,
            ..Roi::default()
        },
    );
    assert_eq!(s.counters.references, 2);
    assert_eq!(s.counters.faults, 2);
    assert_eq!(l1d(&s).1, 2);
    assert_eq!(s.roi.as_ref().unwrap().straddle_pieces, 1);
    let s = go(&mut refs(), &Roi::default());
    assert_eq!((s.counters.references, s.counters.faults, l1d(&s).1), (1, 1, 1));
}

/// `--warmup auto` takes GUPS's `Table[i] = i` as warm-up: table=64KiB is 8,192 words,
/// 16 pages; with refs=100 the warm-up is the 8,192 initialising stores (16 faults, one
/// per page) and the measured part the 100 update references, with no fault left (the
/// initialisation touched every page). Checked: with `Warmup::Refs(0)` the measured
/// part has 8,292 references and 16 faults.
#[test]
fn gups_initialisation_is_the_automatic_warmup() {
    let spec = from_toml(DEFAULT_TOML, None, &[]).unwrap();
    let mut m = Machine::new(spec).unwrap();
    let mut src = mmulab_trace::workload::parse("gups:table=64KiB,refs=100,init=on").unwrap();
    let s = run_roi(&mut m, &mut src, &Roi::default(), None).unwrap();
    assert_eq!(s.counters.references, 100);
    assert_eq!(s.counters.faults, 0);
    let w = s.warmup.as_ref().unwrap();
    assert_eq!((w.counters.references, w.counters.faults), (8192, 16));
}

/// The data caches split at the boundary too. On `cortex-a76-pi5` with its LPDDR4X
/// (private pages), loads to the first line of pages 0..8, then the same 8 lines 50 times
/// more, with a warm-up of 8 references:
/// - warm-up: 8 new lines, 8 l1d data misses, each filled from DRAM;
/// - measured: the 8 lines are still in the 64 KiB 4-way l1d (line 0 of each frame, the
///   page tables' 4 walk lines beside them: at most 3 lines in any set), and the TLB
///   holds the 8 pages, so 400 data hits, no miss, no memory read, no DRAM request;
/// - the core's clock: the measured part's is the whole run's less the warm-up's (one
///   core), from the same run made without a warm-up.
///
/// Checked: without the split (`CacheReport::since`) the measured part shows the
/// warm-up's 8 misses, its DRAM reads, and the whole run's clock.
#[test]
fn cache_and_dram_counters_split_at_the_warmup() {
    let mut p: Vec<u64> = Vec::new();
    for _ in 0..51 {
        p.extend(0..8);
    }
    let sets = [
        "os.zero_page=false".to_string(),
        "dram.profile=lpddr4x-4267-pi5".to_string(),
    ];
    let run = |warmup: u64| {
        let spec = from_toml(catalog::get("cortex-a76-pi5").unwrap(), None, &sets).unwrap();
        let mut m = Machine::new(spec).unwrap();
        let roi = Roi {
            warmup: Warmup::Refs(warmup),
            ..Roi::default()
        };
        run_roi(&mut m, &mut pages(&p), &roi, None).unwrap()
    };
    let s = run(8);
    let l1 = |s: &Stats| {
        let c = s.caches.as_ref().unwrap();
        let n = &c.stats.levels[0].1;
        (n.data_hits, n.data_misses, c.stats.mem_reads)
    };
    let w = s.warmup.as_ref().unwrap();
    assert_eq!((l1(w).0, l1(w).1), (0, 8));
    assert!(l1(w).2 >= 8, "{:?}", l1(w));
    assert_eq!(l1(&s), (400, 0, 0));
    let j = s.to_json();
    assert_eq!(j["dram"]["reads"], 0, "{}", j["dram"]);
    assert_eq!(j["dram"]["span_cycles"], 0);
    let cycles = |s: &Stats| s.caches.as_ref().unwrap().elapsed_cycles();
    let whole = cycles(&run(0));
    assert!(cycles(w) > 0 && cycles(w) < whole);
    assert_eq!(cycles(&s), whole - cycles(w));
}

/// Software dirty-bit faults are split at the warm-up (#46 item 5; before, `ad_faults`
/// covered the whole run). On the Cortex-A53 (ARMv8.0, `machine.ad = "software"`) under
/// FreeBSD's reservations (a read fault maps the page clean, a write fault dirty):
/// pages 0 0 | 1 1 2 as load store | load store store, warm-up 2:
/// - warm-up: load p0 faults (mapped clean), store p0 is a dirty fault: 1 fault, 1 dirty;
/// - measured: load p1 faults, store p1 is a dirty fault, store p2 faults and is mapped
///   dirty: 2 faults, 1 dirty fault.
///
/// Checked: without the subtraction of `dirty_faults` the measured part reports 2.
#[test]
fn software_dirty_faults_are_split_at_the_warm_up() {
    let refs = [
        (0, AccessKind::Load),
        (0, AccessKind::Store),
        (1, AccessKind::Load),
        (1, AccessKind::Store),
        (2, AccessKind::Store),
    ];
    let mut src = Refs(
        refs.iter().map(|&(p, k)| MemRef::new(BASE + p * 4096, k, 8)).collect(),
        0,
    );
    let spec = mmulab_sim::config::load_machine("cortex-a53", None, &["os.policy=\"reservation\"".into()]).unwrap();
    let roi = Roi {
        warmup: Warmup::Refs(2),
        ..Default::default()
    };
    let mut m = Machine::new(spec).unwrap();
    let s = run_roi(&mut m, &mut src, &roi, None).unwrap();
    assert_eq!(
        (s.counters.references, s.counters.faults, s.counters.dirty_faults),
        (3, 2, 1)
    );
    let w = s.warmup.as_ref().unwrap();
    assert_eq!(
        (w.counters.references, w.counters.faults, w.counters.dirty_faults),
        (2, 1, 1)
    );
    assert_eq!(s.to_json()["ad_faults"]["dirty"], 1);
}
