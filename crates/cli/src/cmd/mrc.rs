//! `mmulab mrc`: one-pass miss-ratio curves of a TLB level (docs/mrc.md).

use super::convert::ReadOpts;
use anyhow::{Context, Result};
use mmulab_model::addr::PageSize;
use mmulab_mrc::MrcOptions;
use mmulab_sim::config;
use mmulab_trace::{open_trace_with, workload};
use std::path::PathBuf;

/// Miss ratio of LRU TLBs of every size 1..N in one pass over a trace or workload.
#[derive(clap::Args)]
#[command(
    after_help = "Every reference is translated at one page size: --page-size, else the one \
size the OS policy maps (base: 4K; fixed: os.page_size). The level (default: the one data \
references enter) stands alone: it sees every reference of the kinds it serves. Exact for \
LRU; docs/mrc.md."
)]
pub struct Args {
    /// Trace file to read.
    #[arg(long, short, conflicts_with = "workload", required_unless_present = "workload")]
    pub trace: Option<PathBuf>,
    /// Trace format: din, lackey, mlt, drmemtrace, champsim, cloudsuite or auto.
    #[arg(long, visible_alias = "from", default_value = "auto")]
    pub format: String,
    /// Synthetic workload spec, e.g. `gups:table=64MiB,refs=10M` (docs/workloads.md).
    #[arg(long, short)]
    pub workload: Option<String>,
    /// Machine: a catalog name or a machine TOML file (the level, its page sizes, the OS
    /// policy and the cores come from it). Default: the built-in machine.
    #[arg(long, short = 'm', value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
    /// Machine config (TOML; docs/config.md), laid over --machine if both are given.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Override a config key, as in `sim` (`--set os.policy=fixed`). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// The TLB level (by name) the curve stands for. Default: the data entry level.
    #[arg(long)]
    pub level: Option<String>,
    /// The page size of every translation (default: from the OS policy).
    #[arg(long, value_name = "SIZE")]
    pub page_size: Option<String>,
    /// The largest fully associative size, in entries.
    #[arg(long, default_value_t = 4096)]
    pub max_entries: usize,
    /// Set counts (powers of two) for set-associative curves, comma-separated: `--sets
    /// 4,16,64` gives ways 1..max-entries/sets for each.
    #[arg(long, value_delimiter = ',', value_name = "S,S,...")]
    pub sets: Vec<usize>,
    /// SHARDS spatial sampling rate in (0, 1], computed beside the exact curve, with its
    /// error against it.
    #[arg(long, value_name = "RATE")]
    pub sample: Option<f64>,
    /// Print one JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write every point as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Draw the curves to FILE (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    if let Some(p) = &a.plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    crate::signals::stop_on_interrupt();
    let spec = match &a.machine {
        Some(m) => config::load_machine(m, a.config.as_deref(), &a.overrides),
        None => config::load(a.config.as_deref(), &a.overrides),
    }
    .context("invalid machine config")?;
    let page = a
        .page_size
        .as_deref()
        .map(|s| PageSize::parse(s).map_err(|e| anyhow::anyhow!("--page-size {s}: {e}")))
        .transpose()?;
    let mut o = MrcOptions::for_level(&spec, a.level.as_deref(), page, a.max_entries)?;
    o.sets = a.sets.clone();
    o.sample = a.sample;
    let mut src = match &a.trace {
        Some(path) => open_trace_with(
            path,
            &ReadOpts {
                from: a.format.clone(),
                prefetches: false,
                cores: "cpu".into(),
                interleave: "timestamp".into(),
            }
            .options()?,
        )?,
        None => {
            let spec_w = a.workload.as_deref().unwrap_or_default();
            let (src, notes) = workload::parse_for(spec_w, spec.format.va_bits())?;
            for n in notes {
                errln!("mmulab: note: {n}");
            }
            src
        }
    };
    let what = src.describe();
    let ticker = crate::progress::Ticker::start(&format!("mrc {what}"), Box::new(|| None));
    let c = mmulab_mrc::curve(&mut src, &o);
    drop(ticker);
    let c = c?;
    if let Some(p) = &a.csv {
        crate::output::write_stream(p, |w| c.write_csv(w))?;
    }
    if let Some(p) = &a.plot {
        let f = mmulab_mrc::figure(&c, &format!("mmulab mrc: {what}"));
        crate::output::write_with(p, |path| f.write(path))?;
    }
    if a.json {
        // Serialized straight to stdout: a 16 M-point curve as a JSON value tree took
        // 24 GB.
        #[derive(serde::Serialize)]
        struct Out<'a> {
            #[serde(flatten)]
            curve: &'a mmulab_mrc::Curve,
            source: &'a str,
        }
        let out = Out {
            curve: &c,
            source: &what,
        };
        crate::console::out_with(|w| {
            serde_json::to_writer(&mut *w, &out)?;
            w.write_all(b"\n")
        });
        return Ok(());
    }
    outln!(
        "mmulab mrc: {what}, level {} ({} pages), {} references",
        c.level,
        c.page_size,
        c.references
    );
    if c.events > 0 {
        outln!(
            "note: {} trace events (unmaps, exits) are not modelled: sim would shoot entries down",
            c.events
        );
    }
    outln!("{:>10} {:>14} {:>10}", "entries", "misses", "miss ratio");
    // Powers of two and the largest size: the whole curve is in --json / --csv.
    for p in c
        .curve
        .iter()
        .filter(|p| p.entries.is_power_of_two() || p.entries as usize == c.curve.len())
    {
        outln!("{:>10} {:>14} {:>10.6}", p.entries, p.misses, p.miss_ratio);
    }
    for s in &c.set_associative {
        outln!(
            "\n{} sets:\n{:>10} {:>10} {:>14} {:>10}",
            s.sets,
            "ways",
            "entries",
            "misses",
            "miss ratio"
        );
        for p in s
            .curve
            .iter()
            .filter(|p| p.ways.is_power_of_two() || p.ways as usize == s.curve.len())
        {
            outln!(
                "{:>10} {:>10} {:>14} {:>10.6}",
                p.ways,
                p.entries,
                p.misses,
                p.miss_ratio
            );
        }
    }
    if let Some(s) = &c.sampled {
        outln!(
            "\nSHARDS rate {}: {} sampled references; miss-ratio error against the exact curve: mean {:.6}, max {:.6}",
            s.rate,
            s.sampled_references,
            s.mean_abs_error,
            s.max_abs_error
        );
    }
    if !c.complete {
        outln!("{}", crate::signals::incomplete_line(c.references));
    }
    Ok(())
}
