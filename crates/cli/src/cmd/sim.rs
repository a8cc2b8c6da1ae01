//! `mmulab sim`: one machine, one trace or workload, statistics out.

use crate::progress::ProgressLine;
use anyhow::{bail, Context, Result};
use mmulab_sim::{config, report, Machine, Stats};
use mmulab_trace::{open_trace, workload, Format, TraceSource};
use std::path::PathBuf;

/// Simulate a trace or a synthetic workload on a machine.
#[derive(clap::Args)]
pub struct Args {
    /// Machine config (TOML; docs/config.md). Default: the built-in machine
    /// (machines/default.toml).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Machine: a catalog name (`mmulab machines`) or a machine TOML file; with
    /// --config, the config's keys are laid over it (docs/catalog.md).
    #[arg(long, short = 'm', value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
    /// Trace file to replay.
    #[arg(long, short, conflicts_with = "workload", required_unless_present = "workload")]
    pub trace: Option<PathBuf>,
    /// Trace format (default: detected from content and name).
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Synthetic workload spec, e.g. `gups:table=1GiB,refs=100M` (docs/workloads.md).
    #[arg(long, short)]
    pub workload: Option<String>,
    /// Print one JSON object on stdout instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Override a config key: `--set os.policy=fixed --set os.page_size=2M`,
    /// `--set tlb.l2.entries=1536`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Write a time series (JSON lines: coverage by page size, bloat, promotions,
    /// faults, TLB misses, walk cycles; docs/output.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub timeseries: Option<PathBuf>,
    /// References between time-series samples.
    #[arg(long, default_value_t = 1_000_000, requires = "timeseries")]
    pub interval: u64,
}

/// Opens the reference stream the arguments name, a workload laid out for a machine
/// whose virtual addresses are `va_bits` wide (defaults it chose are printed as notes).
pub fn source(
    trace: Option<&PathBuf>,
    format: &str,
    workload: Option<&str>,
    va_bits: u32,
) -> Result<Box<dyn TraceSource + Send>> {
    Ok(match (trace, workload) {
        (Some(path), _) => open_trace(path, Format::parse(format)?)?,
        (None, Some(spec)) => {
            let (src, notes) = workload::parse_for(spec, va_bits)?;
            for n in notes {
                eprintln!("mmulab: note: {n}");
            }
            src
        }
        (None, None) => bail!("give --trace FILE or --workload SPEC"),
    })
}

/// Runs `src` on a machine built from `spec`, with progress; returns the statistics,
/// or an error that carries the statistics gathered before it.
pub fn simulate(spec: config::MachineSpec, src: &mut dyn TraceSource, label: &str) -> Result<Stats> {
    simulate_with(spec, src, label, None, &[])
}

/// [`simulate`] with an optional time series (`interval` references, JSON lines to a
/// file) and the VMAs the trace carries (docs/policies.md).
pub fn simulate_with(
    spec: config::MachineSpec,
    src: &mut dyn TraceSource,
    label: &str,
    series: Option<(u64, &std::path::Path)>,
    vmas: &[(u64, u64)],
) -> Result<Stats> {
    let mut m = Machine::new(spec)?;
    if !vmas.is_empty() {
        m.set_trace_vmas(vmas);
    }
    if let Some((interval, path)) = series {
        if interval == 0 {
            bail!("--interval must be positive");
        }
        let f = std::fs::File::create(path).with_context(|| format!("cannot create time series {}", path.display()))?;
        m.set_series(interval, Box::new(f));
    }
    let mut p = ProgressLine::new(label);
    let res = mmulab_sim::run(&mut m, src, Some(&mut |n, f| p.update(n, f)));
    p.finish();
    match res {
        Ok(_) if series.is_some() => {
            m.finish_series()?;
            Ok(Stats::collect(&m))
        }
        Ok(s) => Ok(s),
        Err(e) => {
            let partial = Stats::collect(&m);
            eprintln!(
                "mmulab: the run stopped early; statistics of the {} references simulated before the error:",
                partial.counters.references
            );
            eprintln!("{}", report::single(&partial, "partial results"));
            Err(e.into())
        }
    }
}

pub fn run(a: Args) -> Result<()> {
    let spec = match &a.machine {
        Some(m) => config::load_machine(m, a.config.as_deref(), &a.sets),
        None => config::load(a.config.as_deref(), &a.sets),
    }
    .context("invalid machine config")?;
    let mut src = source(
        a.trace.as_ref(),
        &a.format,
        a.workload.as_deref(),
        spec.format.va_bits(),
    )?;
    let what = src.describe();
    let title = format!(
        "mmulab sim: {what} on {} ({} core{}), OS policy {}",
        match (&a.machine, &a.config) {
            (Some(m), _) => m.clone(),
            (None, Some(p)) => p.display().to_string(),
            (None, None) => "the default machine".into(),
        },
        spec.cores,
        if spec.cores == 1 { "" } else { "s" },
        spec.config.os.policy
    );
    // An .mlt trace may keep its VMA samples anywhere in the file: read them up front so
    // the policies see them from the first fault (other sources: the run loop looks).
    let vmas: Vec<(u64, u64)> = a
        .trace
        .as_ref()
        .and_then(|p| mmulab_trace::format::mlt::read_sections(p).ok())
        .map(|sections| {
            mmulab_trace::TraceMeta {
                sections,
                ..Default::default()
            }
            .vmas()
        })
        .unwrap_or_default()
        .iter()
        .map(|v| (v.start, v.end))
        .collect();
    let stats = simulate_with(
        spec,
        &mut src,
        &what,
        a.timeseries.as_deref().map(|p| (a.interval, p)),
        &vmas,
    )?;
    if a.json {
        let mut v = stats.to_json();
        v["source"] = serde_json::Value::String(what);
        println!("{}", serde_json::to_string(&v)?);
    } else {
        print!("{}", report::single(&stats, &title));
    }
    Ok(())
}
