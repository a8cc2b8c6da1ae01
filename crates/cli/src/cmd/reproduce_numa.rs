//! `mmulab reproduce numa-emu`: seed 003's NUMA emulation on the Raspberry Pi 5 model
//! (default allocation against `numa=fake=8` with interleave; docs/numa.md).

use std::path::Path;

use anyhow::Result;
use mmulab_sim::reproduce_numa::{figure, run_all, table, Options};

pub fn run(plot: Option<&Path>, json: bool, quick: bool) -> Result<()> {
    let ticker = crate::progress::Ticker::start("reproduce numa-emu", Box::new(|| None));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    let r = run_all(Options { quick }, threads);
    drop(ticker);
    let r = r?;
    if let Some(p) = plot {
        crate::output::write_with(p, |path| figure(&r).write(path))?;
    }
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{}", table(&r));
    }
    Ok(())
}
