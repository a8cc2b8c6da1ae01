//! `mmulab probe`: measure this machine's data-TLB levels from behaviour, or — with
//! `--machine` — a simulated core's, with the same probe code.

use std::path::PathBuf;

use anyhow::bail;
use mmulab_probe::probe::{self, HugeChoice, ProbeConfig};

/// Measure the data TLBs of this machine: entries per level (4 KiB pages) and whether each
/// level holds 2 MiB pages, from a randomized pointer chase (see docs/probe.md).
#[derive(clap::Args)]
pub struct Args {
    /// Short run (under 15 s): fewer repeats and shorter chases.
    #[arg(long)]
    quick: bool,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Draw the curves to FILE (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Write the TLB tree found as a machine config (TOML) for `mmulab sim --config`.
    #[arg(long, value_name = "FILE.toml")]
    emit_machine: Option<PathBuf>,
    /// Largest number of pages in the sweep (default 8192).
    #[arg(long, value_name = "N")]
    max_pages: Option<usize>,
    /// Fresh mappings per sweep (default 5, quick 3).
    #[arg(long, value_name = "N")]
    repeats: Option<usize>,
    /// 2 MiB backing to test: auto, thp, hugetlb or none.
    #[arg(long, default_value = "auto", value_parser = ["auto", "thp", "hugetlb", "none"])]
    huge: String,
    /// Do not use perf counters even if available (timing only).
    #[arg(long)]
    no_counters: bool,
    /// Seed of the random chase orders.
    #[arg(long, default_value_t = 0x5EED)]
    seed: u64,
    /// Probe a simulated core instead of this machine: a catalog name (`mmulab
    /// machines`), a machine TOML file, or `all` (every catalog core).
    #[arg(long, short = 'm', value_name = "NAME_OR_FILE|all")]
    machine: Option<String>,
    /// With --machine: print the seed's table (system, L1 data TLB size and huge-page
    /// support, L2 TLB size and huge-page support), recovered next to configured.
    #[arg(long, requires = "machine")]
    table: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    if a.machine.is_some() {
        return super::probe_sim::run(a.machine.as_deref().unwrap_or_default(), &a.sim_options());
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = a;
        bail!("unsupported: `mmulab probe` measures the machine through Linux interfaces (mmap, madvise, smaps, perf_event_open); this OS is not Linux");
    }
    #[cfg(target_os = "linux")]
    {
        run_linux(a)
    }
}

impl Args {
    fn sim_options(&self) -> super::probe_sim::Options {
        let mut cfg = ProbeConfig::simulated();
        if let Some(m) = self.max_pages {
            cfg.max_pages = m;
        }
        if let Some(r) = self.repeats {
            cfg.repeats = r;
        }
        cfg.seed = self.seed;
        cfg.huge = huge_choice(&self.huge);
        super::probe_sim::Options {
            cfg,
            json: self.json,
            table: self.table,
            plot: self.plot.clone(),
            emit_machine: self.emit_machine.clone(),
        }
    }
}

fn huge_choice(s: &str) -> HugeChoice {
    match s {
        "thp" => HugeChoice::Thp,
        "hugetlb" => HugeChoice::Hugetlb,
        "none" => HugeChoice::None,
        _ => HugeChoice::Auto,
    }
}

#[cfg(target_os = "linux")]
fn run_linux(a: Args) -> anyhow::Result<()> {
    let arch = std::env::consts::ARCH;
    if arch != "x86_64" && arch != "aarch64" {
        bail!("unsupported architecture {arch}: the probe supports x86_64 and aarch64 Linux");
    }
    let mut cfg = if a.quick {
        ProbeConfig::quick()
    } else {
        ProbeConfig::standard()
    };
    if let Some(m) = a.max_pages {
        cfg.max_pages = m;
    }
    if let Some(r) = a.repeats {
        cfg.repeats = r;
    }
    cfg.seed = a.seed;
    cfg.huge = huge_choice(&a.huge);
    if let Some(p) = &a.plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    // The probe reports when every phase has run; Ctrl-C ends it, saying so.
    crate::signals::end_on_interrupt(
        "the probe reports only when every phase has run; nothing was measured to report (--quick takes less time)",
    );
    let mut target = mmulab_probe::target::native::NativeTarget::new(!a.no_counters);
    let mut line = crate::progress::ProgressLine::new("probe");
    let report = probe::run(&mut target, &cfg, &mut |phase, f| line.phase(phase, Some(f)));
    line.finish();
    let report = report?;
    if let Some(p) = &a.plot {
        crate::output::write_with(p, |path| probe::plot::write_plot(&report, path))?;
    }
    if let Some(p) = &a.emit_machine {
        if report.levels.is_empty() {
            bail!(
                "no TLB level was found, so there is no machine to write to {}",
                p.display()
            );
        }
        crate::output::write(p, probe::machine::machine_toml(&report).as_bytes())?;
    }
    if a.json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        out!("{}", report.table());
    }
    Ok(())
}
