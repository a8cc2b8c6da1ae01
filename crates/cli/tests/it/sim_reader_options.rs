//! Regression (issue 18, item 7): `mmulab sim --trace` takes the drmemtrace reader options
//! that docs/trace-format.md documents (`--prefetches`, `--cores`, `--interleave`) with the
//! meaning `convert` and `trace-info` give them, and rejects them with `--workload`.

use crate::common;
use serde_json::Value;

use common::mmulab_at_root as mmulab;

const TRACE: &str = "tests/data/drmemtrace/x86_64-threadsig";

fn sim_json(extra: &[&str]) -> Value {
    let mut args = vec!["sim", "--trace", TRACE, "--set", "machine.cores=4", "--json"];
    args.extend_from_slice(extra);
    let out = mmulab(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn sim_accepts_drmemtrace_reader_options() {
    let cpu = sim_json(&[]);
    let explicit_cpu = sim_json(&["--cores", "cpu", "--interleave", "timestamp"]);
    let thread = sim_json(&["--cores", "thread"]);
    let rr = sim_json(&["--interleave", "rr:100", "--prefetches"]);
    // Defaults are the documented ones.
    assert_eq!(cpu["walks"], explicit_cpu["walks"]);
    // Every option reads the whole trace ...
    for v in [&thread, &rr] {
        assert_eq!(v["references"], cpu["references"]);
    }
    // ... and the core map reaches the simulator: threads on their own cores walk differently
    // from the five CPUs folded onto four cores.
    assert_ne!(
        thread["walks"]["count"], cpu["walks"]["count"],
        "--cores thread had no effect"
    );
}

#[test]
fn sim_reader_options_are_checked() {
    let bad = mmulab(&["sim", "--trace", TRACE, "--interleave", "rr:0"]);
    assert_eq!(bad.status.code(), Some(2));
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(e.contains("--interleave takes"), "{e}");
    for opt in [&["--cores", "thread"][..], &["--prefetches"], &["--interleave", "rr:5"]] {
        let mut args = vec!["sim", "--workload", "seq:size=1M"];
        args.extend_from_slice(opt);
        let out = mmulab(&args);
        assert!(!out.status.success(), "{args:?} should be rejected");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("cannot be used with"), "{args:?}: {e}");
    }
}
