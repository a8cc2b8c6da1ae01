//! The seed's experiment (shared/seeds/002_…, "Example") on the Cortex-A15 model, as
//! experiments/cortex-a15-tlb-test.toml runs it: knees at 32 and 512 pages with 4 KiB
//! pages; with huge pages 40 pages gain nothing (the L1 splinters) and 520 pages gain
//! (the L2 holds huge pages).

use std::path::Path;

use mmulab_experiments::tlb_test::{self, TlbTestResult};

fn result() -> TlbTestResult {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/cortex-a15-tlb-test.toml");
    let x = tlb_test::load(&file).unwrap();
    assert_eq!(x.machine, "cortex-a15");
    tlb_test::run(&x, file.parent()).unwrap()
}

#[test]
fn cortex_a15_reproduces_the_readme() {
    let r = result();
    let c = |b: &str, n: usize| r.get(b, n).unwrap_or_else(|| panic!("no run {b} {n}")).cycles_per_load;
    let miss = |b: &str, n: usize| r.get(b, n).unwrap().l1_misses_per_load;
    // 4 KiB: flat to 32 pages, a knee from 32 to 33 (the L1 data TLB), flat to 512, a
    // knee after 512 (the L2), and 1024 pages far slower.
    assert_eq!(c("4K", 16), c("4K", 32));
    assert_eq!((miss("4K", 32), miss("4K", 33)), (0.0, 1.0));
    assert!(c("4K", 33) > c("4K", 32));
    assert_eq!(c("4K", 40), c("4K", 512));
    assert!(c("4K", 513) > c("4K", 512));
    assert!(c("4K", 520) > c("4K", 513));
    assert!(c("4K", 1024) > 2.0 * c("4K", 512));
    // Huge pages, 40 pages: no gain — the L1 keeps only the 4 KiB piece (splinters), so
    // every load still misses it and hits the L2, exactly as with 4 KiB pages.
    assert_eq!(c("huge", 40), c("4K", 40));
    assert_eq!(miss("huge", 40), 1.0);
    assert_eq!(r.get("huge", 40).unwrap().page_size.to_string(), "2M");
    // Huge pages, 520 and 1024 pages: a gain — the L2 holds the two 2 MiB pages, no walks.
    assert!(c("huge", 520) < c("4K", 520));
    assert_eq!(r.get("huge", 520).unwrap().walks_per_load, 0.0);
    assert_eq!(c("huge", 520), c("4K", 512));
    assert!(c("huge", 1024) < c("4K", 1024));
}

#[test]
fn the_tlb_test_picture_has_a_bar_per_run_and_metric() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/cortex-a15-tlb-test.toml");
    let mut x = tlb_test::load(&file).unwrap();
    x.pages = vec![16, 40, 520];
    let r = tlb_test::run(&x, file.parent()).unwrap();
    let d = std::env::temp_dir().join(format!("mmulab-exp-plot-tlb-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("t.svg");
    tlb_test::figure(&r).write(&p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    for needle in [
        "tlb_test on the Cortex-A15 model", // (the apostrophe after it is escaped)
        "cycles per load",
        "L1 data-TLB misses per load",
        "pages touched (tlb_test N)",
        "4K pages",
        "-huge (2M pages)",
        ">\n520\n<",
    ] {
        assert!(svg.contains(needle), "{needle} missing");
    }
    // Per backing: a bar per run in each of the two panels, and a legend sample.
    for colour in ["#1F77B4", "#D62728"] {
        let bars = svg.matches(&format!("fill=\"{colour}\" stroke=\"none\"")).count();
        assert_eq!(bars, 2 * (3 + 1), "{colour}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
