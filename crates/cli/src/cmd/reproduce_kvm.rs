//! `mmulab reproduce kvm-split`: KVM's eager stage-2 page splitting and the "Optimize S2
//! page splitting" RFC (seed 004), modelled in `mmulab_model::kvm` and tabulated by
//! `mmulab_sim::kvm_split`; printed as tables or JSON, optionally drawn (SVG or PNG).

use anyhow::{Context, Result};
use mmulab_sim::kvm_split;
use std::path::Path;

/// Runs the reproduction and prints it.
pub fn run(plot: Option<&Path>, json: bool) -> Result<()> {
    if let Some(p) = plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    let r = kvm_split::run(threads).context("reproduce kvm-split")?;
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
