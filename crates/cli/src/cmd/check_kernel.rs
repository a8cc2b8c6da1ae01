//! `mmulab check-kernel [--json] [--print-os] [SCENARIO…]` or `mmulab check-kernel
//! [--json] [--keep-trace FILE] -- PROGRAM ARGS…`: mmulab's Linux THP/mTHP
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
    /// Keep the exact recording of the program (`-- PROGRAM`) in this file (.mlt).
    #[arg(long, value_name = "FILE")]
    pub keep_trace: Option<std::path::PathBuf>,
    /// A program (after `--`) to check instead of the scenarios: run natively while the
    /// kernel's counters are read, recorded with every instruction stepped, simulated on
    /// the live settings; its THP fault counters compared (docs/kernel-check.md § A program).
    #[arg(last = true, value_name = "PROGRAM")]
    pub command: Vec<String>,
}

pub fn run(a: Args) -> Result<()> {
    if a.print_os {
        let h = mmulab_kernel_check::host::HostThp::read().map_err(anyhow::Error::msg)?;
        out!("{}", h.os_toml());
        return Ok(());
    }
    if !a.command.is_empty() && !a.scenarios.is_empty() {
        bail!("give scenarios or a program after `--`, not both");
    }
    if a.keep_trace.is_some() && a.command.is_empty() {
        bail!("--keep-trace keeps a program's recording: give the program after `--`");
    }
    mmulab_kernel_check::catch_interrupts();
    let out = if a.command.is_empty() {
        let exe = std::env::current_exe()?;
        mmulab_kernel_check::check_all(&a.scenarios, &exe).map_err(anyhow::Error::msg)?
    } else {
        let mut progress = |m: &str| eprintln!("mmulab check-kernel: {m}");
        vec![mmulab_kernel_check::program::check_program(
            &a.command,
            a.keep_trace.as_deref(),
            &mut progress,
        )]
    };
    if !a.command.is_empty() {
        if let Some(why) = out.first().and_then(|o| o.skipped.as_ref()) {
            bail!("{why}");
        }
    }
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
