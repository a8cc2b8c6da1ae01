//! The GPU end to end: `mmulab reproduce v3d-capacity` and `v3d`, `mmulab sim --gpu`
//! with a hand-derived GPU trace, a trace that uses a destroyed BO, the Mali profile.

use std::path::PathBuf;

use crate::common;
use common::{err_at_root as err_text, json_at_root as json_ok};

fn trace(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mmulab-gpu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn capacity_rows_are_the_exact_counts() {
    // Derived in crates/model/tests/it/gpu.rs (capacity_is_exact_arithmetic).
    let v = json_ok(&["reproduce", "v3d-capacity", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    let got: Vec<(String, String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["board"].as_str().unwrap().to_string(),
                r["policy"].as_str().unwrap().to_string(),
                r["bo_bytes"].as_u64().unwrap(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    // The Pi 5 (16 KiB kernel pages): a 4 KiB BO is 4 GPU pages. 128K: starts 32k with
    // 32k + 4 <= 2^20, k = 1..32767. 4K and size-class: starts 1 + 4k <= 2^20 - 4, k =
    // 0..262142. 400 KiB is 25 kernel pages on both boards, so those rows do not change.
    let want = [
        ("pi4", "128K", 4096, 32_767),
        ("pi4", "128K", 409_600, 8_191),
        ("pi4", "4K", 4096, 1_048_575),
        ("pi4", "4K", 409_600, 10_485),
        ("pi4", "size-class", 4096, 1_048_575),
        ("pi4", "size-class", 409_600, 9_362),
        ("pi5", "128K", 4096, 32_767),
        ("pi5", "128K", 409_600, 8_191),
        ("pi5", "4K", 4096, 262_143),
        ("pi5", "4K", 409_600, 10_485),
        ("pi5", "size-class", 4096, 262_143),
        ("pi5", "size-class", 409_600, 9_362),
    ];
    assert_eq!(
        got,
        want.map(|(m, p, b, c)| (m.to_string(), p.to_string(), b, c)).to_vec()
    );
    // The 400 KiB row before the series explains the seed's 3,000 by memory: with
    // 1.25 GiB + 1 MiB of memory (the scratch page and the table sit outside it),
    // floor((1.25 GiB + 1 MiB) / 400 KiB) = 3,279 BOs.
    assert_eq!(rows[1]["count_backed"], 3279);
    assert!(rows[1]["note"].as_str().unwrap().contains("physical memory"));
    assert!(rows[1]["note"].as_str().unwrap().contains("not evidence"));
    // 1.25 GiB + 1 MiB in 16 KiB pages: 81,984 BOs of 4 KiB backed on the Pi 5.
    assert_eq!(rows[8]["count_backed"], ((5u64 << 28) + (1 << 20)) / 16384);
}

#[test]
fn v3d_reproduction_rows() {
    let v = json_ok(&["reproduce", "v3d", "--json"]);
    let rows = v["rows"].as_array().unwrap();
    // 2 profiles x 2 memory states x 4 workloads x 2 page variants.
    assert_eq!(rows.len(), 32);
    for r in rows {
        for k in [
            "profile",
            "workload",
            "memory",
            "pages",
            "tlb_misses",
            "pte_fetches",
            "coverage",
            "gpu_time_change",
        ] {
            assert!(!r[k].is_null(), "row lacks {k}: {r}");
        }
        if r["pages"] == "4K-only" {
            assert_eq!(r["coverage"], 0.0);
            assert_eq!(r["gpu_time_change"], 0.0);
        }
    }
    // Pi 4, fresh memory, vertex buffers: 8 BOs of 4 MiB from gemfs, each two 2 MiB THPs
    // (naturally aligned) at 1 MiB-aligned VAs: every byte in super pages, and far fewer
    // TLB misses than with 4 KiB PTEs.
    let find = |pages: &str| {
        rows.iter()
            .find(|r| {
                r["profile"] == "pi4-v3d"
                    && r["memory"] == "fresh"
                    && r["workload"] == "vertex-buffer"
                    && r["pages"] == pages
            })
            .unwrap()
    };
    assert_eq!(find("big-super")["coverage"], 1.0);
    assert!(find("big-super")["tlb_misses"].as_u64() < find("4K-only")["tlb_misses"].as_u64());
    assert_eq!(v["summary"].as_array().unwrap().len(), 4);
    // VA packing alone (4 KiB pages, size-class placement) is measured beside every
    // big-super row. Small BOs (4-64 KiB) get no large pages, so nearly all their gain is
    // packing (128 KiB -> 4 KiB alignment); vertex buffers (4 MiB BOs, one per 128 KiB
    // slot or not) gain nothing from it.
    for r in rows {
        assert_eq!(r["packing_fps_change"].is_null(), r["pages"] == "4K-only", "{r}");
    }
    let pick = |w: &str| {
        rows.iter()
            .find(|r| {
                r["profile"] == "pi4-v3d" && r["memory"] == "fresh" && r["workload"] == w && r["pages"] == "big-super"
            })
            .unwrap()
    };
    let small = pick("small-bos");
    let (all, packing) = (
        small["fps_change"].as_f64().unwrap(),
        small["packing_fps_change"].as_f64().unwrap(),
    );
    assert!(small["coverage"].as_f64().unwrap() < 0.01, "{small}");
    assert!(all > 0.0 && packing > 0.8 * all, "{small}");
    assert!(pick("vertex-buffer")["packing_fps_change"].as_f64().unwrap().abs() < 0.001);
    let reasons = v["reasons"].as_array().unwrap();
    assert!(reasons
        .iter()
        .any(|r| r.as_str().unwrap().contains("VA packing alone, not from page size")));
}

#[test]
fn sim_runs_a_gpu_trace_derived_by_hand() {
    // A 2 MiB BO on the Pi 4 with big/super pages: gemfs backs it with one THP (order 9,
    // 2 MiB aligned) and the size class aligns its VA to 1 MiB: two super pages. Three
    // accesses: offset 0 misses (TLB fill from a super PTE), 4096 hits that entry,
    // 0x100000 is the second super page: 2 misses; the PTEs of pages 256 and 512 sit in
    // two different 64-byte lines: 2 PTE fetches. One flush (the create).
    let t = trace("two-super.gput", "create 1 2M\nr 1 0\nw 1 4096\nr 1 0x100000\n");
    let t = t.to_str().unwrap();
    let v = json_ok(&[
        "sim",
        "--gpu",
        "pi4-v3d",
        "--gpu-trace",
        t,
        "--json",
        "--set",
        "memory.size=256MiB",
    ]);
    let g = &v["gpu"][0];
    assert_eq!(g["accesses"], 3);
    assert_eq!(g["tlb_misses"], 2);
    assert_eq!(g["pte_fetches"], 2);
    assert_eq!(g["flushes"], 1);
    assert_eq!(g["tlb_fills"], serde_json::json!([0, 0, 2, 0]));
    assert_eq!(g["coverage"], 1.0);
    // 4K-only: 128 KiB alignment puts the BO at page 32; each access misses (3), pages
    // 32 and 33 share PTE line 2, page 288 is in line 18: 2 fetches.
    let v = json_ok(&[
        "sim",
        "--gpu",
        "pi4-v3d",
        "--gpu-pages",
        "4K-only",
        "--gpu-trace",
        t,
        "--json",
        "--set",
        "memory.size=256MiB",
    ]);
    let g = &v["gpu"][0];
    assert_eq!(
        (g["tlb_misses"].as_u64(), g["pte_fetches"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(g["tlb_fills"], serde_json::json!([3, 0, 0, 0]));
}

#[test]
fn a_trace_that_uses_a_destroyed_bo_is_refused_with_its_line() {
    let t = trace("destroyed.gput", "create 3 8K\nr 3 0\ndestroy 3\nr 3 64\n");
    let e = err_text(&[
        "sim",
        "--gpu",
        "pi5-v3d",
        "--gpu-trace",
        t.to_str().unwrap(),
        "--set",
        "memory.size=256MiB",
    ]);
    assert!(
        e.contains("BO 3 is not live") && e.contains("destroyed.gput line 4"),
        "{e}"
    );
    // A BO larger than the GPU's 4 GiB space.
    let t = trace("huge.gput", "create 1 5G\n");
    let e = err_text(&[
        "sim",
        "--gpu",
        "pi4-v3d",
        "--gpu-trace",
        t.to_str().unwrap(),
        "--set",
        "memory.size=256MiB",
    ]);
    assert!(
        e.contains("huge.gput line 1") && e.contains("larger than the GPU address space"),
        "{e}"
    );
    // An unknown profile names the built-in ones.
    let e = err_text(&["sim", "--gpu", "pi3", "--gpu-workload", "texture"]);
    assert!(e.contains("pi4-v3d, pi5-v3d, mali-g57"), "{e}");
}

#[test]
fn mali_profile_maps_2m_blocks_on_the_same_machinery() {
    // Two 4 MiB vertex buffers, THP-backed, 2 MiB aligned by Panfrost's rule: all four
    // 2 MiB parts become AArch64 level-2 blocks.
    let v = json_ok(&[
        "sim",
        "--gpu",
        "mali-g57",
        "--gpu-workload",
        "vertex-buffer:buffers=2,bytes=4M,draws=20,frames=1",
        "--json",
        "--set",
        "memory.size=256MiB",
    ]);
    let g = &v["gpu"][0];
    assert_eq!(g["mapped_bytes"], serde_json::json!([0, 0, 0, 8 << 20]));
    assert!(g["tlb_fills"][3].as_u64().unwrap() > 0);
    assert_eq!(g["tlb_fills"][0], 0);
}
