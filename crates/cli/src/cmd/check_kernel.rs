//! `mmulab check-kernel [--json] [--print-os] [SCENARIO…]`: mmulab's Linux THP/mTHP
//! model checked against this machine's kernel (docs/kernel-check.md). Each scenario
//! (crates/kernel-check/scenarios/*.kc, or a path to a .kc file) runs natively and on
//! the model; the table gives per scenario and counter the kernel's value, mmulab's and
//! whether they are equal. The work is the library's (`mmulab_kernel_check`).

use anyhow::{bail, Result};

/// Check mmulab's THP/mTHP model against this machine's kernel, scenario by scenario.
#[derive(clap::Args)]
pub struct Args {
    /// Scenario names (all built-in ones if none) or paths to .kc files.
    pub scenarios: Vec<String>,
    /// Print one JSON object: {"scenarios": [{"name", "equal", "counters": [{"name", "kernel", "mmulab"}…]}…]}.
    #[arg(long)]
    pub json: bool,
    /// Print the `[os]` config section that models this kernel's live THP settings
    /// (for `mmulab sim --config FILE`) and exit.
    #[arg(long)]
    pub print_os: bool,
}

pub fn run(a: Args) -> Result<()> {
    if a.print_os {
        let h = mmulab_kernel_check::host::HostThp::read().map_err(anyhow::Error::msg)?;
        out!("{}", h.os_toml());
        return Ok(());
    }
    mmulab_kernel_check::catch_interrupts();
    let exe = std::env::current_exe()?;
    let out = mmulab_kernel_check::check_all(&a.scenarios, &exe).map_err(anyhow::Error::msg)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&mmulab_kernel_check::json(&out))?);
    } else {
        out!("{}", mmulab_kernel_check::table(&out));
    }
    if mmulab_kernel_check::native::interrupted() {
        bail!("interrupted; the settings changed were restored");
    }
    if out.iter().any(|o| o.skipped.is_none() && !o.equal()) {
        bail!("the kernel and mmulab differ (table above)");
    }
    Ok(())
}
