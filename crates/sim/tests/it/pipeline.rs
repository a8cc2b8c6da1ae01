//! The cache thread (`Machine::set_pipeline`, crate::pipeline): a machine with data
//! caches whose caches and DRAM run on a second thread gives the statistics of the same
//! machine on one thread, byte for byte as JSON: with one core and with four (a 4-thread
//! workload), with DRAM and NUMA interleaving, with khugepaged ticks every 997
//! references (each takes the cache side back: collapses then change later traffic),
//! with trace events (exits, unmaps), and after an error in the middle of a run (the
//! statistics the machine keeps of what ran before it).

use mmulab_sim::config::from_toml;
use mmulab_sim::{catalog, run, Machine};
use mmulab_trace::{open_trace, workload, TraceSource};
use std::path::Path;

/// A machine from catalog entry `name` with `sets`, the pipeline on if `piped`.
fn machine(name: &str, sets: &[&str], piped: bool) -> Machine {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let toml = catalog::get(name).unwrap_or_else(|| panic!("no catalog machine {name}"));
    let mut m = Machine::new(from_toml(toml, None, &sets).unwrap()).unwrap();
    m.set_pipeline(piped);
    assert_eq!(m.pipeline_ok(), piped, "{name}: the pipeline is not used as asked");
    m
}

/// The statistics of `src()` on `name` with `sets`, with the cache thread if `piped`,
/// as JSON (after an error too: what the machine kept), and whether the run failed.
fn stats(name: &str, sets: &[&str], src: &dyn Fn() -> Box<dyn TraceSource>, piped: bool) -> (serde_json::Value, bool) {
    let mut m = machine(name, sets, piped);
    let mut s = src();
    match run(&mut m, &mut *s, None) {
        Ok(st) => (st.to_json(), false),
        Err(_) => (m.stats().to_json(), true),
    }
}

/// Asserts that both ways give the same statistics; returns them.
fn same(name: &str, sets: &[&str], src: &dyn Fn() -> Box<dyn TraceSource>) -> (serde_json::Value, bool) {
    let one = stats(name, sets, src, false);
    let two = stats(name, sets, src, true);
    assert_eq!(one, two, "{name} {sets:?}: the cache thread changed the results");
    one
}

fn work(spec: &'static str) -> impl Fn() -> Box<dyn TraceSource> {
    move || Box::new(workload::parse(spec).unwrap()) as Box<dyn TraceSource>
}

const PI5: [&str; 2] = ["os.zero_page=false", "dram.profile=lpddr4x-4267-pi5"];

#[test]
fn one_core_and_four_with_dram_give_the_same_statistics() {
    let (v, _) = same("cortex-a76-pi5", &PI5, &work("gups:table=256MiB,refs=300K,init=off"));
    // The caches saw every data reference (the test would pass vacuously without them).
    assert_eq!(
        v["caches"]["l1d"]["data_hits"].as_u64().unwrap() + v["caches"]["l1d"]["data_misses"].as_u64().unwrap(),
        300_000
    );
    assert!(v["dram"].is_object(), "no DRAM statistics: {v}");
    same("cortex-a76-pi5", &PI5, &work("stream:size=8MiB,threads=4"));
    let mut numa = PI5.to_vec();
    numa.extend(["numa.fake=8", "numa.policy=interleave"]);
    same("cortex-a76-pi5", &numa, &work("chase:pages=16384,refs=200K"));
}

#[test]
fn ticks_take_the_caches_back_at_the_reference_they_fall_on() {
    // One core (the run loop also has a path for one core without caches, which a
    // machine whose caches are with the cache thread must not take).
    let sets = [
        "os.policy=khugepaged",
        "os.tick_interval=997",
        "os.khugepaged.scan_period=997",
        "os.zero_page=false",
    ];
    let (v, _) = same("skylake-caches", &sets, &work("gups:table=64MiB,updates=100K,init=off"));
    assert!(
        v["os"]["collapses"].as_u64().unwrap() > 0,
        "no collapse: the ticks did nothing\n{v}"
    );
    // The Pi 5: khugepaged wakes on simulated time, read from the cores' clocks.
    let mut pi5 = sets.to_vec();
    pi5.extend(["dram.profile=lpddr4x-4267-pi5", "os.khugepaged.scan_sleep_millisecs=1"]);
    let (v, _) = same("cortex-a76-pi5", &pi5, &work("gups:table=64MiB,updates=100K,init=off"));
    assert!(
        v["os"]["collapses"].as_u64().unwrap() > 0,
        "no collapse on the Pi 5\n{v}"
    );
}

#[test]
fn trace_events_take_the_caches_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace/x86_64-threadsig");
    let src = || open_trace(&dir, None).unwrap() as Box<dyn TraceSource>;
    let (v, _) = same("skylake-caches", &[], &src);
    assert!(
        v["shootdowns"].as_u64().unwrap() > 0,
        "the trace's events did nothing: {v}"
    );
}

#[test]
fn an_error_keeps_what_ran_before_it() {
    // 64 MiB of memory for a 256 MiB table: the OS runs out part way.
    let mut sets = PI5.to_vec();
    sets.push("memory.size=64MiB");
    let (v, failed) = same("cortex-a76-pi5", &sets, &work("gups:table=256MiB,refs=400K,init=off"));
    assert!(failed, "the run did not fail: {v}");
    assert!(
        v["caches"]["l1d"]["data_misses"].as_u64().unwrap() > 0,
        "nothing reached the caches: {v}"
    );
}
