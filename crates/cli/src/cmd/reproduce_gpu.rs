//! `mmulab reproduce v3d-capacity` and `mmulab reproduce v3d`: seed 000 (super pages on
//! the Raspberry Pi 4/5 GPU) on the GPU model (crates/sim/src/reproduce_gpu.rs).

use anyhow::Result;
use mmulab_sim::reproduce_gpu;
use std::path::Path;

fn about(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| format!("~{n}"))
}

/// `v3d-capacity`: a table (or one JSON object `{"rows": [...]}`).
pub fn run_capacity(json: bool) -> Result<()> {
    let rows = reproduce_gpu::capacity()?;
    if json {
        println!("{}", serde_json::to_string(&serde_json::json!({ "rows": rows }))?);
        return Ok(());
    }
    println!("V3D GPU address space (4 GiB, page 0 reserved): BOs that fit, by VA alignment policy (seed 000)\n");
    println!(
        "{:<11} {:>8} {:>10} {:>12} {:>12}  bytes",
        "policy", "BO", "fit (VA)", "seed", "backed*"
    );
    for r in &rows {
        println!(
            "{:<11} {:>8} {:>10} {:>12} {:>12}  {}",
            r.policy,
            mmulab_trace::units::format_size(r.bo_bytes),
            r.count,
            about(r.seed_count),
            r.count_backed,
            mmulab_trace::units::format_size(r.total_bytes)
        );
    }
    println!("\n* backed: each BO also backed by memory, 1.25 GiB free (assumed)\n");
    for r in &rows {
        println!(
            "{} x {}: {}",
            r.policy,
            mmulab_trace::units::format_size(r.bo_bytes),
            r.note
        );
    }
    Ok(())
}

/// `v3d`: tables of every run and the summary beside the seed (or one JSON object).
pub fn run_v3d(plot: Option<&Path>, json: bool) -> Result<()> {
    let r = reproduce_gpu::v3d()?;
    if let Some(p) = plot {
        let f = reproduce_gpu::figure(&r);
        crate::output::write_with(p, |path| f.write(path))?;
    }
    if json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    println!("V3D big/super pages (seed 000): 4K-only PTEs against big/super pages; cost model assumed\n");
    println!(
        "{:<8} {:<14} {:<10} {:<9} {:>9} {:>9} {:>10} {:>9} {:>7} {:>9} {:>8}",
        "profile",
        "workload",
        "memory",
        "pages",
        "accesses",
        "miss/1k",
        "PTE fetch",
        "coverage",
        "flushes",
        "GPU time",
        "fps"
    );
    for x in &r.rows {
        println!(
            "{:<8} {:<14} {:<10} {:<9} {:>9} {:>9.2} {:>10} {:>8.1}% {:>7} {:>8.2}% {:>7.2}%",
            x.profile.trim_end_matches("-v3d"),
            x.workload,
            x.memory,
            x.pages,
            x.accesses,
            x.tlb_misses_per_1k,
            x.pte_fetches,
            x.coverage * 100.0,
            x.flushes,
            x.gpu_time_change * 100.0,
            x.fps_change * 100.0
        );
    }
    println!("\nMean fps change of big/super pages over the workloads, beside the seed:");
    for s in &r.summary {
        println!(
            "  {:<8} {:<10} model {:+.2} % (best {} {:+.2} %)   seed {:+.2} % (best {})",
            s.profile,
            s.memory,
            s.mean_fps_change * 100.0,
            s.best_workload,
            s.best_fps_change * 100.0,
            s.seed_mean_fps_change * 100.0,
            s.seed_best
        );
    }
    println!("\nWhere the gains come from (model):");
    for line in &r.reasons {
        println!("  - {line}");
    }
    Ok(())
}
