//! Planning a sweep: the points' ids do not depend on how many threads identify them,
//! the first error named is the first point's in spec order, and a sweep whose points
//! the host cannot hold is refused (the CLI's test runs it through `mmulab sweep`).

use mmulab_sweep::point::identify_with;
use mmulab_sweep::Spec;
use std::sync::atomic::{AtomicUsize, Ordering};

fn spec(text: &str) -> Spec {
    Spec::parse(text, "test.toml", std::path::Path::new(".")).unwrap()
}

#[test]
fn ids_and_first_error_do_not_depend_on_the_threads() {
    // 3 x 4 points; "tlb.l2.ways" = 7 does not divide 1536 entries: the points with it
    // (indices 1, 5, 9: the last parameter varies fastest) fail to resolve.
    let s = spec(
        r#"[sweep]
machine = "skylake"
workload = "chase:pages=10,refs=100"
[params]
"os.fault_latency" = [100, 200, 300]
"machine.seed" = [1, 2, 3, 4]
"#,
    );
    let bad = spec(
        r#"[sweep]
machine = "skylake"
workload = "chase:pages=10,refs=100"
[params]
"os.fault_latency" = [100, 200, 300]
"tlb.stlb.ways" = [6, 7, 12, 3]
"#,
    );
    for (s, failing) in [(s, 0), (bad, 3)] {
        let mut one = s.points().unwrap();
        let count = AtomicUsize::new(0);
        let r1 = identify_with(&mut one, 1, &count).unwrap();
        assert_eq!(count.load(Ordering::Relaxed), 12);
        let mut many = s.points().unwrap();
        let r5 = identify_with(&mut many, 5, &AtomicUsize::new(0)).unwrap();
        assert_eq!(r1, r5);
        let ids1: Vec<_> = one.iter().map(|p| (p.id.clone(), p.config_hash.clone())).collect();
        let ids5: Vec<_> = many.iter().map(|p| (p.id.clone(), p.config_hash.clone())).collect();
        assert_eq!(ids1, ids5);
        // Twelve distinct points, twelve distinct ids.
        let distinct: std::collections::HashSet<_> = ids1.iter().map(|p| &p.0).collect();
        assert_eq!(distinct.len(), 12);
        assert_eq!(r1.0, failing, "{r1:?}");
        if failing > 0 {
            // 7 ways: three points (one a fault latency) fail; the first error is the
            // first of them in spec order, whichever thread met it.
            let first = one.iter().find(|p| p.config_hash.is_empty()).unwrap();
            assert_eq!(first.index, 1);
            let e = first.resolved().err().unwrap().to_string();
            assert_eq!(r1.1.as_deref(), Some(e.as_str()));
        }
    }
}

#[test]
fn a_sweep_beyond_the_host_is_refused_before_it_is_expanded() {
    // 1000 x 1000 points x 40 KiB = 38.1 GiB (at 0.2 ms a point it would have planned
    // for minutes before failing).
    let values: Vec<String> = (1..=1000).map(|v| v.to_string()).collect();
    let s = spec(&format!(
        "[sweep]\nmachine = \"skylake\"\nworkload = \"chase:pages=10\"\n[params]\n\"os.fault_latency\" = [{0}]\n\"machine.seed\" = [{0}]\n",
        values.join(",")
    ));
    let need = mmulab_sweep::host_need(s.len());
    assert_eq!(need.total(), 1_000_000 * 40 * 1024 + (32 << 20));
    let host = mmulab_base::host_memory::Available {
        bytes: 1 << 30,
        source: "stated".into(),
    };
    let e = match need.check_against(&host, "sweep test.toml", "split") {
        Err(e) => e,
        Ok(()) => panic!("38 GiB fits in 1 GiB"),
    };
    assert!(e.contains("38.1 GiB for 1000000 points"), "{e}");
    // A thousand points (39 MiB) fit.
    assert!(mmulab_sweep::host_need(1000).check_against(&host, "s", "split").is_ok());
}
