//! `mmulab reproduce kvm-split`: KVM's eager stage-2 page splitting and the "Optimize S2
//! page splitting" RFC (seed 004), modelled in `mmulab_model::kvm` and tabulated by
//! `mmulab_sim::kvm_split`; printed as tables or JSON, optionally drawn (SVG or PNG).

use anyhow::{Context, Result};
use mmulab_sim::kvm_split;
use std::path::Path;

/// Runs the reproduction with the chunk sizes `chunks` (`GRANULE=SIZE` values of
/// `--eager-split-chunk-size`) and prints it.
pub fn run(plot: Option<&Path>, json: bool, chunks: &[String]) -> Result<()> {
    if let Some(p) = plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let chunks = kvm_split::Chunks::parse(chunks).map_err(anyhow::Error::msg)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    let r = kvm_split::run_with(threads, &chunks).context("reproduce kvm-split")?;
    if let Some(p) = plot {
        let figure = kvm_split::figure(&r);
        crate::output::write_with(p, |path| figure.write(path))?;
    }
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{}", kvm_split::table(&r));
    }
    Ok(())
}
