//! `mmulab reproduce NAME|FILE.toml`: runs an experiment of `mmulab_experiments`' table,
//! built in or from an experiment file (experiments/*.toml), and prints its table or JSON,
//! optionally drawing its figure. The names, `--list` and the help come from the table.

use std::path::PathBuf;

use anyhow::{bail, Result};
use mmulab_experiments::{self as experiments, Input, Options, Pool, Source, Target};

/// Reproduce an experiment of the source documents (experiments/*.toml).
#[derive(clap::Args)]
#[command(after_help = experiments::help())]
pub struct Args {
    /// A built-in experiment (the forms below; `mmulab reproduce --list`), or an
    /// experiment file (experiments/*.toml). A name always means the built-in experiment,
    /// whatever the current directory holds.
    #[arg(value_name = "NAME|FILE", required_unless_present = "list")]
    pub file: Option<PathBuf>,
    /// List the experiments: name, source, options.
    #[arg(long, conflicts_with_all = ["plot", "json"])]
    pub list: bool,
    /// Draw the result to FILE (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print one JSON object instead of the table. It carries `mmulab` (the version and
    /// git commit of this binary) and `experiment` (name, source, file, options, the
    /// file's parameters); an experiment whose results are a list has them under `rows`
    /// (docs/output.md, "Provenance").
    #[arg(long)]
    pub json: bool,
    /// `freebsd` only: vary each parameter that sets the seed rows' magnitude ×½ and ×2
    /// and print the change (docs/policies.md).
    #[arg(long, conflicts_with = "plot")]
    pub sensitivity: bool,
    /// `kvm-split` only: KVM's eager-split chunk size for a granule, GRANULE=SIZE (e.g.
    /// 4K=1G; 0 = off); SIZE must be a block size of the granule. Repeatable. Default: each
    /// granule's level-2 block (2M, 32M, 512M).
    #[arg(long, value_name = "GRANULE=SIZE")]
    pub eager_split_chunk_size: Vec<String>,
    /// `numa-emu` only: an eighth of the data and references (the test suite's size).
    #[arg(long)]
    pub quick: bool,
}

pub fn run(a: Args) -> Result<()> {
    if a.list {
        out!("{}", experiments::list());
        return Ok(());
    }
    let Some(arg) = a.file else {
        bail!("name an experiment (`mmulab reproduce --list`) or an experiment file");
    };
    if let Some(p) = &a.plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let options = Options {
        sensitivity: a.sensitivity,
        quick: a.quick,
        eager_split_chunk_size: a.eager_split_chunk_size,
    };
    let target = experiments::resolve(&arg)?;
    let (e, source) = match &target {
        Target::Named(e) => (*e, Source::BuiltIn),
        Target::File { experiment, kind, text } => {
            errln!(
                "mmulab reproduce: running the experiment file {} (kind {kind})",
                arg.display()
            );
            (*experiment, Source::File { path: &arg, text })
        }
    };
    experiments::check_options(e, &options, a.plot.is_some())?;
    let input = Input {
        source,
        options: &options,
        figure: a.plot.is_some(),
        pool: Pool::up_to(4),
    };
    // Ctrl-C stops every run at its next batch; the result then covers what ran.
    crate::signals::stop_on_interrupt();
    let label = format!("reproduce {}", arg.display());
    let ticker = match e.planned_refs(&input)? {
        Some(total) => {
            let start = mmulab_sim::references_simulated();
            crate::progress::Ticker::start(
                &label,
                Box::new(move || {
                    let done = mmulab_sim::references_simulated() - start;
                    Some((done, (total > 0).then_some((done.min(total), total))))
                }),
            )
        }
        None => crate::progress::Ticker::start(&label, Box::new(|| None)),
    };
    let start = mmulab_sim::references_simulated();
    let out = e.run(&input);
    drop(ticker);
    let out = out?;
    // A stop cut the run short and the experiment does not mark which of its rows that
    // left partial (only `tlb_test` and `freebsd` do): its table, prose and JSON would
    // state the missing runs' zeros as results. Nothing is printed, and it says so.
    if mmulab_sim::stop_requested() && out.incomplete.is_none() {
        errln!(
            "mmulab reproduce {}: {}; this experiment's figures need every one of its runs, so none is printed (run it again to the end)",
            arg.display(),
            crate::signals::incomplete_line(mmulab_sim::references_simulated() - start)
                .trim_end_matches("; the figures above cover those only")
        );
        return Ok(());
    }
    if let (Some(p), Some(f)) = (&a.plot, &out.figure) {
        crate::output::write_with(p, |path| f.write(path))?;
    }
    if a.json {
        let v = experiments::with_provenance(out.json, e, &input, crate::provenance::json());
        outln!("{}", serde_json::to_string(&v)?);
    } else {
        out!("{}", out.table);
        if let Some(refs) = out.incomplete {
            outln!("\n{}", crate::signals::incomplete_line(refs));
        }
    }
    Ok(())
}
