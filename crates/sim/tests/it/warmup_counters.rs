//! Warm-up subtraction covers every counter: for each of several machines (software
//! accessed/dirty bits with a clock and khugepaged; data caches, DRAM and fake NUMA
//! nodes; a nested `[vm]` machine), a run of W + M references with the first W as
//! warm-up must report, for every integer counter of its JSON, exactly what a run of
//! all W + M references reports less what a run of the first W alone reports. The
//! machines are deterministic, so the run of W alone ends in the state the warm-up left.
//! A counter that `Stats::since` forgets shows up here as the whole run's value (before
//! #46 item 5: `ad_faults`, `kernel`, the NUMA nodes' numastat counters); a gauge (the
//! state at the end) is named in `GAUGES` with why.

use mmulab_sim::config::load_machine;
use mmulab_sim::{Roi, Session, SessionOptions, Warmup};
use mmulab_trace::workload::SplitMix64;
use mmulab_trace::{AccessKind, Batch, MemRef, TraceError, TraceSource};
use serde_json::Value;

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

/// Loads and stores (one in three) at random lines of a 24 MiB region: pages are first
/// loaded, then stored to (clean-then-dirty), and the region spans several 2 MiB ranges.
fn trace(n: usize) -> Vec<MemRef> {
    let mut rng = SplitMix64::new(46);
    (0..n)
        .map(|_| {
            let line = rng.next_u64() % ((24 << 20) / 64);
            let kind = if rng.next_u64() % 3 == 0 {
                AccessKind::Store
            } else {
                AccessKind::Load
            };
            MemRef::new(0x4000_0000 + line * 64, kind, 8)
        })
        .collect()
}

/// JSON paths (prefixes) whose integers are the state at the end, not counters.
const GAUGES: &[&str] = &[
    // The memory at the end (docs/output.md: `memory` is not split by the warm-up).
    "memory.",
    // The host's backing at the end.
    "vm.host_pages.",
    "vm.host_resident_bytes",
    // The nodes' geometry and allocated pages now; their numastat counters are split.
    "numa.fake",
    "numa.allocated_pages",
    "numa.policy_nodes",
    "numa.cpus",
    "numa.nodes.*.id",
    "numa.nodes.*.start",
    "numa.nodes.*.end",
    "numa.nodes.*.pages",
    "numa.nodes.*.allocated_pages",
    "numa.nodes.*.fallback",
    // Settings.
    "time.clock_mhz",
];

fn leaves(v: &Value, path: String, out: &mut Vec<(String, u64)>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| leaves(x, format!("{path}{k}."), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| leaves(x, format!("{path}{i}."), out)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push((path.trim_end_matches('.').to_string(), u));
            }
        }
        _ => {}
    }
}

fn gauge(path: &str) -> bool {
    GAUGES.iter().any(|g| {
        let g = g.split('.').collect::<Vec<_>>();
        let p = path.split('.').collect::<Vec<_>>();
        g.iter()
            .enumerate()
            .all(|(i, s)| s.is_empty() || p.get(i).is_some_and(|x| *s == "*" || x == s))
    })
}

fn run(machine: &str, sets: &[&str], refs: &[MemRef], warmup: u64) -> Value {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = load_machine(machine, None, &sets).unwrap();
    let opts = SessionOptions {
        roi: Roi {
            warmup: Warmup::Refs(warmup),
            ..Default::default()
        },
        ..Default::default()
    };
    Session::simulate(spec, &mut Refs(refs.to_vec(), 0), opts)
        .unwrap()
        .to_json()
}

#[test]
fn every_counter_is_split_at_the_warm_up() {
    let (w, m) = (60_000, 40_000);
    let all = trace(w + m);
    let cases: &[(&str, &[&str])] = &[
        (
            "cortex-a53",
            &[
                "os.policy=\"khugepaged\"",
                "os.zero_page=false",
                "os.tick_interval=2000",
                "os.khugepaged.scan_sleep_millisecs=1",
            ],
        ),
        (
            "cortex-a76-pi5",
            &["os.zero_page=false", "numa.fake=2", "numa.policy=\"interleave\""],
        ),
        ("epyc-zen4-kvm", &[]),
    ];
    for (machine, sets) in cases {
        let whole = run(machine, sets, &all, 0);
        let first = run(machine, sets, &all[..w], 0);
        let split = run(machine, sets, &all, w as u64);
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        leaves(&whole, String::new(), &mut a);
        leaves(&first, String::new(), &mut b);
        leaves(&split, String::new(), &mut c);
        let b: std::collections::HashMap<_, _> = b.into_iter().collect();
        let c: std::collections::HashMap<_, _> = c.into_iter().collect();
        let mut checked = 0;
        let mut wrong = Vec::new();
        for (path, x) in &a {
            if gauge(path) || path.starts_with("warmup.") || path.starts_with("roi.") {
                continue;
            }
            let want = x - b.get(path).copied().unwrap_or(0);
            match c.get(path) {
                Some(&got) if got == want => checked += 1,
                // A per-size map leaves out its zero entries.
                None if want == 0 => checked += 1,
                got => wrong.push(format!(
                    "{path}: whole {x} - warm-up {} = {want}, measured {got:?}",
                    b.get(path).copied().unwrap_or(0)
                )),
            }
        }
        assert!(
            wrong.is_empty(),
            "{machine}: counters not split at the warm-up:\n{}",
            wrong.join("\n")
        );
        assert!(checked > 40, "{machine}: only {checked} counters compared");
    }
}
