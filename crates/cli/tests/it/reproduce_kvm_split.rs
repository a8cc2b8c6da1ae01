//! `mmulab reproduce kvm-split` end to end: the JSON object and its rows, the seed
//! comparison, and the plot (read back).

use crate::common;

use common::mmulab_at_root as mmulab;
use serde_json::Value;

#[test]
fn json_has_every_row_and_the_seed_comparison() {
    let out = mmulab(&["reproduce", "kvm-split", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let rows = v["rows"].as_array().expect("rows");
    // 2 slots × 2 scenarios × (3 backings × 3 granules × 3 variants + 3 rows with 1G
    // chunks for hugetlb at 4K) = 120.
    assert_eq!(rows.len(), 120);
    for r in rows {
        for key in [
            "slot_bytes",
            "backing",
            "granule",
            "scenario",
            "variant",
            "visits",
            "time_ns",
            "saving_vs_vanilla",
        ] {
            assert!(!r[key].is_null(), "row lacks {key}: {r}");
        }
        if r["variant"] == "vanilla" {
            assert_eq!(r["saving_vs_vanilla"].as_f64(), Some(0.0));
        } else {
            // Skipping visits never costs more than the flag test: saving ≥ −1 point.
            assert!(r["saving_vs_vanilla"].as_f64().unwrap() > -1.0, "{r}");
        }
    }
    // The 64 GiB 4K-backed enable row at 4K: vanilla visits every page twice (wp and
    // split walks) plus their upper levels; skip-level3 once.
    let find = |variant: &str| {
        rows.iter()
            .find(|r| {
                r["slot_bytes"] == 64u64 << 30
                    && r["backing"] == "4K"
                    && r["granule"] == "4K"
                    && r["scenario"] == "enable"
                    && r["variant"] == variant
            })
            .unwrap()["visits"]
            .as_u64()
            .unwrap()
    };
    let pages = 16u64 << 20;
    // The stage-2 tables are `aarch64-s2` (40-bit IPA): walks start at level 1 on the
    // concatenated root, no level 0. Per 1G apply chunk wp reads L1, 512 L2 and 512×512
    // L3 entries; the split walk in 2M chunks reads L1, L2 and 512 L3 entries per chunk.
    // (With the 48-bit stage-1 layout of before, each of these 64 + 32768 walks read one
    // more entry, at level 0: 33,685,632 vanilla.)
    let wp = 64 * (1 + 512) + pages;
    let chunks = 32 * 1024;
    assert_eq!(find("vanilla"), wp + chunks * 2 + pages);
    assert_eq!(find("vanilla"), 33_652_800);
    assert_eq!(find("skip-level3"), wp + chunks * 2);
    let cmp = v["comparison"].as_array().expect("comparison");
    assert_eq!(cmp.len(), 12);
    assert!(cmp
        .iter()
        .all(|c| c["same_direction"] == true && !c["note"].as_str().unwrap().is_empty()));
    // The fit: six clear-dirty-log figures fitted, six enable and three 1 GB figures
    // predicted, each predicted one with an interval around it and, outside it, a reason.
    let fit = &v["fit"];
    let rows = fit["rows"].as_array().expect("fit.rows");
    let role = |r: &str| rows.iter().filter(|x| x["role"] == r).count();
    assert_eq!((role("fitted"), role("predicted")), (6, 9), "{fit}");
    assert!(rows
        .iter()
        .filter(|r| r["role"] == "fitted")
        .all(|r| r["scenario"] == "clear-dirty-log"));
    for r in rows.iter().filter(|r| r["role"] == "predicted") {
        let (lo, x, hi, seed) = (
            r["low"].as_f64().unwrap(),
            r["mmulab"].as_f64().unwrap(),
            r["high"].as_f64().unwrap(),
            r["seed"].as_f64().unwrap(),
        );
        assert!(lo <= x && x <= hi && hi - lo > 0.5, "{r}");
        assert_eq!(r["inside"] == true, lo <= seed && seed <= hi, "{r}");
        assert_eq!(r["why"].as_str().unwrap().is_empty(), r["inside"] == true, "{r}");
    }
    let alone: Vec<_> = rows.iter().filter(|r| r["timed"] == "split alone").collect();
    assert_eq!(alone.len(), 3);
    assert!(alone.iter().all(|r| r["slot_gib"] == 1 && r["granules"] == "4K"));
    assert!(fit["rms_fit"].as_f64().unwrap() < 5.0, "{fit}");
}

#[test]
fn plot_draws_both_scenarios_beside_the_seed() {
    let dir = std::env::temp_dir().join(format!("mmulab-kvm-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("k.svg");
    let out = mmulab(&["reproduce", "kvm-split", "--plot", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    for needle in [
        "enable (64 GiB slot)",
        "clear-dirty-log (64 GiB slot)",
        "seed (a)",
        "mmulab skip-children",
    ] {
        assert!(text.contains(needle), "the SVG lacks {needle}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("Seed vs mmulab"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--eager-split-chunk-size GRANULE=SIZE`: a size that is not a block size of the granule,
/// an unknown granule and a value without `=` are errors naming the flag, the value and
/// what is allowed; a good one changes the rows' chunk.
#[test]
fn chunk_size_flag_is_validated_against_the_granules_block_sizes() {
    for (value, needles) in [
        (
            "4K=4M",
            &["--eager-split-chunk-size", "4K=4M", "4K granule", "0 (off) or 1G, 2M"][..],
        ),
        ("16K=2M", &["16K=2M", "16K granule", "32M"][..]),
        ("64K=1G", &["64K=1G", "64K granule", "512M"][..]),
        ("8K=2M", &["8K", "4K, 16K or 64K"][..]),
        ("2M", &["GRANULE=SIZE"][..]),
    ] {
        let out = mmulab(&["reproduce", "kvm-split", "--eager-split-chunk-size", value]);
        assert!(!out.status.success(), "{value} accepted");
        let e = String::from_utf8_lossy(&out.stderr);
        for n in needles {
            assert!(e.contains(n), "{value}: no {n:?} in {e}");
        }
        assert!(out.stdout.is_empty(), "{value}: printed a table");
    }
    // Elsewhere the flag is refused rather than ignored.
    let out = mmulab(&["reproduce", "nested", "--eager-split-chunk-size", "4K=1G"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reproduce kvm-split"));
    // 4K=1G: every 4K-granule row uses 1 GiB chunks, so the extra 1G rows are not added:
    // 120 − 2 slots × 2 scenarios × 3 variants = 108 rows; 16K keeps its 32M default.
    let out = mmulab(&["reproduce", "kvm-split", "--json", "--eager-split-chunk-size", "4K=1G"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 108);
    for r in rows {
        let want: u64 = match r["granule"].as_str().unwrap() {
            "4K" => 1 << 30,
            "16K" => 32 << 20,
            _ => 512 << 20,
        };
        assert_eq!(r["chunk_bytes"], want, "{r}");
    }
}
