//! `mmulab reproduce nested` (issue 20, item 6): one run with `--json` and `--plot`; the
//! claims docs/virtualization.md makes hold in its output.

use crate::common;

use common::mmulab_at_root as mmulab;

#[test]
fn reproduce_nested_shows_both_stages_need_large_pages_and_the_probe_result() {
    let dir = std::env::temp_dir().join(format!("mmulab-nested-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("nested.svg");
    let out = mmulab(&["reproduce", "nested", "--json", "--plot", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // 2 workloads × (4 nested cases + 2 native).
    assert_eq!(rows.len(), 12);
    let row = |w: &str, g: &str, h: &str| {
        rows.iter()
            .find(|r| r["workload"] == w && r["guest"] == g && r["host"] == h)
            .unwrap_or_else(|| panic!("no row {w} {g} {h}"))
    };
    for w in ["gups", "chase"] {
        let misses = |g, h| row(w, g, h)["tlb_misses"].as_u64().unwrap();
        let cycles = |g, h| row(w, g, h)["cycles_per_ref"].as_f64().unwrap();
        // A 2 MiB guest page over 4 KiB host pages misses as often as 4 KiB pages (the
        // combined entry is 4 KiB); only 2M over 2M cuts the misses.
        assert!(misses("2M", "4K") * 10 > misses("4K", "4K") * 9, "{w}");
        assert!(misses("2M", "2M") * 100 < misses("4K", "4K"), "{w}");
        // Nested walks cost more than native ones with 4 KiB pages everywhere.
        assert!(cycles("4K", "4K") > cycles("4K", "native"), "{w}");
        assert!(
            2.0 * cycles("2M", "2M") < cycles("2M", "4K").min(cycles("4K", "2M")),
            "{w}"
        );
        // Stage-2 references are zero on the bare core.
        assert_eq!(row(w, "4K", "native")["stage2_refs"], 0);
    }
    assert!(v["both_stages_needed"].as_array().unwrap().iter().all(|x| x[1] == true));
    // The probe: no level caches 2 MiB over 4 KiB host pages; every level does over 2 MiB.
    let probe = v["probe"].as_array().unwrap();
    let caches = |host: &str| -> Vec<serde_json::Value> {
        let p = probe.iter().find(|p| p["host"] == host).unwrap();
        p["levels"].as_array().unwrap().iter().map(|l| l[2].clone()).collect()
    };
    assert_eq!(caches("4K"), vec![serde_json::json!(false); 2]);
    assert_eq!(caches("2M"), vec![serde_json::json!(true); 2]);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("host 4K") && text.contains("no VM"));
    let _ = std::fs::remove_dir_all(&dir);
}
