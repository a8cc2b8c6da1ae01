//! Regression (issue 18, item 3): a stop request (Ctrl-C in `mmulab reproduce`) ends a
//! tlb_test experiment between runs and the result says it is incomplete. Its own test
//! binary: the stop flag is process-wide.

use mmulab_experiments::tlb_test;
use std::path::Path;

#[test]
fn a_stop_request_ends_a_tlb_test_between_runs() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/cortex-a15-tlb-test.toml");
    let x = tlb_test::load(&file).unwrap();
    let whole = tlb_test::run(&x, file.parent()).unwrap();
    assert!(whole.complete);
    assert_eq!(whole.runs.len(), x.pages.len() * x.backings.len());
    assert!(!serde_json::to_string(&whole).unwrap().contains("complete"));
    mmulab_sim::request_stop();
    let cut = tlb_test::run(&x, file.parent()).unwrap();
    assert!(!cut.complete);
    assert!(cut.runs.is_empty(), "stopped before its first run");
    assert!(serde_json::to_string(&cut).unwrap().contains("\"complete\":false"));
}
