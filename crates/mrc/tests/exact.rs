//! The one-pass curves against separate `sim` runs: every point of the fully associative
//! curve for sizes 1..=N, and set-associative geometries, on workloads whose reuse
//! distances fall inside that range. LRU is a stack algorithm, so the counts must be
//! equal, not close.

use mmulab_mrc::{curve, MrcOptions};
use mmulab_sim::{config, Machine};
use mmulab_trace::workload;
use std::path::PathBuf;

fn one_level() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/one-level.toml")
}

/// Misses of the one-level machine's `l1d` with `entries` and `ways`, after `sets`.
fn sim_misses(wl: &str, entries: usize, ways: usize, extra: &[&str]) -> u64 {
    let mut sets = vec![format!("tlb.l1d.entries={entries}"), format!("tlb.l1d.ways={ways}")];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let spec = config::load(Some(&one_level()), &sets).expect("config");
    let mut m = Machine::new(spec).expect("machine");
    let mut src = workload::parse(wl).expect("workload");
    let s = mmulab_sim::run(&mut m, &mut src, None).expect("run");
    s.levels[0].counts.misses
}

fn mrc(wl: &str, n: usize, sets: &[usize], extra: &[&str]) -> mmulab_mrc::Curve {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let spec = config::load(Some(&one_level()), &extra).expect("config");
    let mut o = MrcOptions::for_level(&spec, None, None, n).expect("options");
    o.sets = sets.to_vec();
    let mut src = workload::parse(wl).expect("workload");
    curve(&mut src, &o).expect("curve")
}

#[test]
fn fully_associative_every_size_equals_sim() {
    // GUPS over a 1 MiB table: 256 pages of 4 KiB, random, so reuse distances spread over
    // 0..256 and every size 1..=300 has a different miss count until the whole table
    // fits (from 256 entries on, only the 256 cold misses remain).
    let wl = "gups:table=1MiB,refs=60K,init=off";
    let c = mrc(wl, 300, &[], &[]);
    assert_eq!(c.references, 60_000);
    for p in &c.curve {
        let e = p.entries as usize;
        assert_eq!(p.misses, sim_misses(wl, e, e, &[]), "{} entries", e);
    }
    assert_eq!(c.curve[255].misses, 256);
    assert!(c.curve[254].misses > 256, "255 entries cannot hold 256 pages");
}

#[test]
fn chase_knee_is_sharp() {
    // A pointer chase over one random cycle of 200 pages: every reuse is at distance 199,
    // so sizes below 200 miss on every reference and sizes from 200 miss only the first
    // 200 times (cold). refs = 1000.
    let wl = "chase:pages=200,refs=1000";
    let c = mrc(wl, 256, &[], &[]);
    assert_eq!(c.curve[198].misses, 1000);
    assert_eq!(c.curve[199].misses, 200);
    for e in [1, 150, 199, 200, 256] {
        assert_eq!(c.curve[e - 1].misses, sim_misses(wl, e, e, &[]), "{e} entries");
    }
}

#[test]
fn set_associative_geometries_equal_sim() {
    // 4 and 16 sets (the set is vpn mod sets, as in the TLB), ways 1..=N/sets; a sample of
    // ways per set count against sim, including the full depth.
    let wl = "gups:table=2MiB,refs=40K,init=off";
    let c = mrc(wl, 256, &[4, 16], &[]);
    assert_eq!(c.set_associative.len(), 2);
    for sc in &c.set_associative {
        let s = sc.sets as usize;
        assert_eq!(sc.curve.len(), 256 / s);
        for w in [1, 2, 3, 8, 256 / s] {
            let p = &sc.curve[w - 1];
            assert_eq!(p.entries as usize, s * w);
            assert_eq!(p.misses, sim_misses(wl, s * w, w, &[]), "{s} sets x {w} ways");
        }
    }
    // Fewer ways at the same size cannot be better here: 16 sets x 4 ways vs 64 fully
    // associative entries differ (random pages collide in sets).
    assert!(c.set_associative[1].curve[3].misses > c.curve[63].misses);
}

#[test]
fn two_megabyte_pages_from_the_fixed_policy() {
    // os.policy = fixed, 2M: the key is the 2 MiB page number. GUPS over 64 MiB = 32 huge
    // pages: from 32 entries on only the 32 cold misses remain.
    let wl = "gups:table=64MiB,refs=20K,init=off";
    let extra = ["os.policy=fixed", "os.page_size=2M"];
    let c = mrc(wl, 40, &[2], &extra);
    assert_eq!(c.page_size, mmulab_model::addr::PageSize::M2);
    assert_eq!(c.curve[31].misses, 32);
    for e in [1, 8, 31, 32] {
        assert_eq!(c.curve[e - 1].misses, sim_misses(wl, e, e, &extra), "{e} entries");
    }
    assert_eq!(c.set_associative[0].curve[3].misses, sim_misses(wl, 8, 4, &extra));
}

#[test]
fn sampling_reports_its_error() {
    // SHARDS at rate 0.5 over 256 random pages: about half the pages are sampled; the
    // estimate must be near the exact curve but is computed from different references,
    // so the error is reported, positive, and below 0.1 on this uniform workload.
    let extra: Vec<String> = Vec::new();
    let spec = config::load(Some(&one_level()), &extra).unwrap();
    let mut o = MrcOptions::for_level(&spec, None, None, 300).unwrap();
    o.sample = Some(0.5);
    let mut src = workload::parse("gups:table=1MiB,refs=60K,init=off").unwrap();
    let c = curve(&mut src, &o).unwrap();
    let s = c.sampled.as_ref().expect("sampled");
    assert!(s.sampled_references > 15_000 && s.sampled_references < 45_000);
    assert!(s.max_abs_error > 0.0 && s.max_abs_error < 0.1, "{}", s.max_abs_error);
    assert!(s.mean_abs_error <= s.max_abs_error);
}

#[test]
fn bad_options_are_clear_errors() {
    let spec = config::load(Some(&one_level()), &[]).unwrap();
    let e = MrcOptions::for_level(&spec, Some("l2"), None, 8)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--level l2") && e.contains("l1d"), "{e}");
    let thp = config::load(Some(&one_level()), &["os.policy=thp".to_string()]).unwrap();
    let e = MrcOptions::for_level(&thp, None, None, 8).unwrap_err().to_string();
    assert!(e.contains("--page-size") && e.contains("thp"), "{e}");
    let mut o = MrcOptions::for_level(&spec, None, None, 8).unwrap();
    o.sets = vec![3];
    let mut src = workload::parse("seq:size=4K").unwrap();
    let e = curve(&mut src, &o).unwrap_err().to_string();
    assert!(e.contains("--sets 3") && e.contains("power of two"), "{e}");
}
