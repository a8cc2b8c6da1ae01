//! `mmulab sim --gpu PROFILE --gpu-workload SPEC | --gpu-trace FILE`: a GPU beside the
//! CPU machine, driven by a GPU workload or trace (docs/gpu.md).

use super::sim::Args;
use anyhow::{Context, Result};
use mmulab_sim::config::gpu::load_profile;
use mmulab_sim::stats::gpu::GpuStats;
use mmulab_sim::{config, Session};
use mmulab_trace::gpu::workload::GpuWorkload;
use mmulab_trace::gpu::{GpuSource, TextReader};

pub fn run(a: &Args) -> Result<()> {
    let gpu = a.gpu.as_deref().context("give --gpu PROFILE")?;
    let profile = load_profile(gpu, a.gpu_pages.as_deref())?;
    let machine = a.machine.clone().unwrap_or_else(|| profile.cpu.clone());
    let resolved = config::resolve(Some(&machine), a.config.as_deref(), &a.sets).context("invalid machine config")?;
    let config_json = resolved.to_json();
    let spec = resolved.spec;
    let mut src: Box<dyn GpuSource> = match (&a.gpu_workload, &a.gpu_trace) {
        (Some(w), _) => Box::new(GpuWorkload::parse(w)?),
        (None, Some(p)) => Box::new(TextReader::open(p)?),
        (None, None) => unreachable!("checked by the caller"),
    };
    let mut session = Session::new(spec)?;
    let what = src.describe();
    let (g, _) = session.run_gpu(&profile, src.as_mut())?;
    let m = session.machine();
    if a.json {
        let mut v = m.stats().to_json();
        v["source"] = serde_json::Value::String(what);
        super::sim::add_provenance(&mut v, Some(&config_json));
        outln!("{}", serde_json::to_string(&v)?);
        return Ok(());
    }
    let s = m.gpu_stats(g);
    outln!(
        "mmulab sim: {what} on GPU {} ({}, {} pages) beside {machine}\n",
        profile.name,
        profile.description,
        s.pages
    );
    out!("{}", table(&s));
    Ok(())
}

fn table(s: &GpuStats) -> String {
    let mut out = String::new();
    let mut row = |k: &str, v: String| out.push_str(&format!("  {k:<28} {v}\n"));
    row("accesses", s.accesses.to_string());
    row(
        "TLB misses",
        format!("{} ({:.2} per 1,000 accesses)", s.tlb_misses, s.tlb_misses_per_1k),
    );
    row("TLB fills 4K/64K/1M/2M", format!("{:?}", s.tlb_fills));
    row("PTE-cache lookups", s.ptec_lookups.to_string());
    row("PTE fetches (memory)", s.pte_fetches.to_string());
    row("scratch-page accesses", s.scratch.to_string());
    row("MMU flushes", format!("{} ({} cycles)", s.flushes, s.flush_cycles));
    row("estimated GPU cycles", s.gpu_cycles.to_string());
    let mb = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
    row(
        "BO bytes in 4K/64K/1M/2M",
        s.mapped_bytes.iter().map(|&b| mb(b)).collect::<Vec<_>>().join(" / "),
    );
    row("coverage (> 4 KiB pages)", format!("{:.1} %", s.coverage * 100.0));
    row(
        "BOs created/destroyed/live",
        format!("{} / {} / {}", s.bos_created, s.bos_destroyed, s.bos_live),
    );
    row("scatterlist segments", s.segments.to_string());
    row("THPs (fallbacks)", format!("{} ({})", s.thp, s.thp_fallbacks));
    out
}
