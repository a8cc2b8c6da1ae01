//! `mmulab bench`: native benchmarks under a chosen page size.

/// Native benchmarks.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_a: Args) -> anyhow::Result<()> {
    anyhow::bail!("not implemented yet")
}
