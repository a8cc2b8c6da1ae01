//! The run loop's paths: a run of references on a machine with one core and no caches
//! takes `Machine::access_plain`, one with caches `Machine::access_cached_run`, each up
//! to the reference a background tick falls on, which takes `Machine::access` (the tick
//! first). A machine that tracks touched pages takes `Machine::access` for every
//! reference, with the tick tested per reference. Both must tick on the same reference
//! and give the same statistics (tracking adds only the touched and bloat figures).
//!
//! The workloads run under khugepaged with a tick every 997 references (not a divisor
//! of the 8,192-reference batch, so ticks fall at every offset in a batch) and a scan
//! at every tick, so collapses at the ticks change later TLB misses, walks, cache and
//! DRAM traffic: a tick on another reference changes the figures.

use mmulab_sim::config::{from_toml, DEFAULT_TOML};
use mmulab_sim::{catalog, run, Machine};
use mmulab_trace::workload;

/// The statistics of `work` on `toml` with `sets`, as JSON without the figures only
/// touched-page tracking gives; with tracking (every reference through
/// `Machine::access`) if `track`.
fn stats(toml: &str, sets: &[&str], work: &str, track: bool) -> serde_json::Value {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let mut m = Machine::new(from_toml(toml, None, &sets).unwrap()).unwrap();
    if track {
        m.track_touched();
    }
    let mut src = workload::parse(work).unwrap();
    let st = run(&mut m, &mut src, None).unwrap();
    let mut v = st.to_json();
    strip(&mut v);
    v
}

/// Removes the keys only touched-page tracking fills.
fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.retain(|k, _| !k.contains("touched") && !k.contains("bloat") && !k.contains("peak_resident"));
            o.values_mut().for_each(strip);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// khugepaged's collapses in `v` (`os.collapses`).
fn collapses(v: &serde_json::Value) -> u64 {
    v["os"]["collapses"]
        .as_u64()
        .unwrap_or_else(|| panic!("no os.collapses in {v}"))
}

const TICKS: [&str; 4] = [
    "os.policy=khugepaged",
    "os.tick_interval=997",
    "os.khugepaged.scan_period=997",
    "os.zero_page=false",
];

#[test]
fn the_plain_path_ticks_on_the_reference_the_general_path_does() {
    // One load per page, each page touched first by it: a collapse at a tick maps the
    // rest of its region, so whether the reference the tick falls on faults depends on
    // the tick coming first (a tick one reference late: one fault more per collapse).
    for work in [
        "seq:size=256MiB,stride=4KiB,refs=60K",
        "gups:table=64MiB,updates=100K,init=off",
    ] {
        let fast = stats(DEFAULT_TOML, &TICKS, work, false);
        let general = stats(DEFAULT_TOML, &TICKS, work, true);
        assert!(
            collapses(&fast) > 0,
            "{work}: no collapse, the ticks did nothing\n{fast}"
        );
        assert_eq!(fast, general, "{work}");
    }
}

#[test]
fn the_cached_path_ticks_on_the_reference_the_general_path_does() {
    let toml = catalog::get("cortex-a76-pi5").unwrap();
    let mut sets = TICKS.to_vec();
    // The Pi 5 has a clock: khugepaged wakes on simulated time, polled at the ticks.
    sets.extend(["dram.profile=lpddr4x-4267-pi5", "os.khugepaged.scan_sleep_millisecs=1"]);
    let work = "gups:table=64MiB,updates=100K,init=off";
    let fast = stats(toml, &sets, work, false);
    let general = stats(toml, &sets, work, true);
    assert!(collapses(&fast) > 0, "no collapse: the ticks did nothing\n{fast}");
    assert_eq!(fast, general);
}
