//! `mmulab reproduce nested`: nested translation on the model of this machine (an AMD
//! EPYC Zen 4 core in a KVM guest): the guest 4K/2M × host 4K/2M table, the "both stages
//! need large pages" check, and a simulated probe of the virtualized core
//! (`mmulab_probe::nested`; docs/virtualization.md).

use std::path::Path;

use anyhow::Result;
use mmulab_probe::nested;

pub fn run(plot: Option<&Path>, json: bool) -> Result<()> {
    let ticker = crate::progress::Ticker::start("reproduce nested", Box::new(|| None));
    let r = nested::run_all();
    drop(ticker);
    let r = r?;
    if let Some(p) = plot {
        crate::output::write_with(p, |path| nested::figure(&r).write(path))?;
    }
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{}", nested::table(&r));
    }
    Ok(())
}
