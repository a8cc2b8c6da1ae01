//! `mmulab sweep SPEC.toml`: many configurations, each point one `mmulab sim` run, on a
//! local pool or Ray; results in a Parquet or CSV file, resumable (docs/sweep.md).

use crate::output::OutputFile;
use crate::progress::Ticker;
use anyhow::{bail, Context, Result};
use mmulab_sweep::{journal, results, Executor, Pool, Ray, Row, Spec, Sweep};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Run a sweep: parameters crossed into points, each simulated like `mmulab sim`.
#[derive(clap::Args)]
#[command(after_help = "The spec (docs/sweep.md):
  [sweep]
  machine = \"skylake\"                  # shared by every point (or config, set, trace, workload…)
  workload = \"gups:table=256MiB,refs=2M\"
  [params]
  \"tlb.l2.entries\" = [512, 1024, 1536]  # any config key, or machine, config, trace, workload
  \"os.policy\" = [\"fixed\", \"linux-thp\"]

A re-run with the same output skips the points its journal (OUTPUT.journal) holds as
finished and re-runs the failed ones.")]
pub struct Args {
    /// The sweep spec (TOML; docs/sweep.md).
    #[arg(value_name = "SPEC.toml")]
    pub spec: PathBuf,
    /// Results file: .parquet (default) or .csv. Default: the spec's `output`, else the
    /// spec's name with .parquet.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Where points run: `local` (threads on this machine) or `ray`.
    #[arg(long, default_value = "local", value_parser = ["local", "ray"])]
    pub executor: String,
    /// Local pool: threads (default: every core).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Ray: the head of an existing cluster (HOST:PORT); default: start a local one.
    #[arg(long)]
    pub address: Option<String>,
    /// Ray: the Python interpreter with the `mmulab` package and Ray (docs/python.md).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Print one JSON object of counts (`points`, `ok`, `failed`, `pending`, `skipped`,
    /// `rerun_failed`, `output`) instead of the summary table; the rows are in the
    /// results file.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when points failed (their errors are in the results file and the
    /// manifest). Default: a sweep in which a point failed exits 1, after writing every
    /// result.
    #[arg(long, conflicts_with = "fail_fast")]
    pub keep_going: bool,
    /// Stop at the first failed point: points still running stop at their next batch and
    /// run again next time (as after Ctrl-C); what finished is written; exit 1.
    #[arg(long)]
    pub fail_fast: bool,
}

/// The results file's format.
enum Kind {
    Parquet,
    Csv,
}

fn kind_of(path: &Path) -> Result<Kind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("parquet") => Ok(Kind::Parquet),
        Some("csv") => Ok(Kind::Csv),
        _ => bail!("{}: the results file must end in .parquet or .csv", path.display()),
    }
}

pub fn run(a: Args) -> Result<()> {
    let spec = Spec::read(&a.spec)?;
    let output = a
        .output
        .clone()
        .or_else(|| spec.output.clone())
        .unwrap_or_else(|| a.spec.with_extension("parquet"));
    let kind = kind_of(&output)?;
    if a.address.is_some() && a.executor != "ray" {
        bail!("--address is for --executor ray");
    }
    let journal_path = PathBuf::from(format!("{}.journal", output.display()));
    let jobs = match a.jobs {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut sweep = Sweep::new(&spec, &journal_path, jobs)?;
    // The count comes from the spec before anything is resolved; the points are planned
    // (expanded and identified: about 0.2 ms a point) a batch at a time, each just
    // before it runs.
    let total = spec.len();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    errln!(
        "mmulab: sweep {}: {total} point{} to plan ({} in its journal)",
        a.spec.display(),
        plural(total),
        sweep.journal_rows()
    );
    sweep.check()?;
    let mut executor: Box<dyn Executor> = match a.executor.as_str() {
        "ray" => Box::new(Ray {
            python: a.python.clone(),
            address: a.address.clone(),
        }),
        _ => Box::new(match a.jobs {
            Some(n) => Pool { jobs: n },
            None => Pool::all_cores(),
        }),
    };
    // Every output path is checked before the first point runs: a missing or read-only
    // directory is an error now, not after hours of points.
    preflight(&output, &journal_path)?;
    let configs_out = OutputFile::new(&configs_path(&output))?;
    let mut configs = std::io::BufWriter::new(configs_out.open()?);
    crate::signals::stop_on_interrupt();
    let finished = Arc::new(AtomicU64::new(0));
    let seen = finished.clone();
    let ticker = Ticker::start(
        &format!("sweep {}", a.spec.display()),
        Box::new(move || {
            Some((
                mmulab_sweep::references_simulated(),
                Some((seen.load(Ordering::Relaxed), total as u64)),
            ))
        }),
    );
    let mut journal = journal::Journal::new(&journal_path);
    let mut journal_error = None;
    let mut failed_fast: Option<String> = None;
    let mut res = Ok(());
    let identified = std::sync::atomic::AtomicUsize::new(0);
    while !mmulab_sim::stop_requested() {
        let Some(batch) = sweep.plan_next(&identified)? else {
            break;
        };
        configs
            .write_all(batch.configs.as_bytes())
            .with_context(|| format!("writing {}", configs_path(&output).display()))?;
        finished.fetch_add(batch.skipped as u64, Ordering::Relaxed);
        let c = sweep.counts();
        if c.planned == c.points && c.planned <= mmulab_sweep::run::BATCH {
            errln!(
                "mmulab: sweep {}: {total} point{}: {} finished before (skipped), {} failed before (re-run), {} new",
                a.spec.display(),
                plural(total),
                c.skipped,
                c.rerun_failed,
                c.new
            );
        } else if c.planned <= mmulab_sweep::run::BATCH {
            errln!(
                "mmulab: sweep {}: {total} points, planned {} at a time as they run; the first {}: {} finished before (skipped), {} failed before (re-run), {} new",
                a.spec.display(),
                mmulab_sweep::run::BATCH,
                c.planned,
                c.skipped,
                c.rerun_failed,
                c.new
            );
        }
        res = executor.run(&batch.todo, &mut |row| {
            // A point stopped by Ctrl-C is not a result: it runs again next time.
            if !row.complete {
                return;
            }
            if a.fail_fast && row.error.is_some() {
                failed_fast.get_or_insert_with(|| row.id.clone());
                mmulab_sim::request_stop();
            }
            if let Err(e) = sweep.record(row, &mut journal) {
                // The row is kept for the results; a sweep that cannot journal stops.
                journal_error.get_or_insert(e);
                mmulab_sim::request_stop();
            }
            finished.fetch_add(1, Ordering::Relaxed);
        });
        if res.is_err() {
            break;
        }
    }
    drop(ticker);
    let c = sweep.counts();
    let new = c.rows() - c.skipped;
    // Whatever finished is written, even when the executor failed after it; and a sweep
    // whose every point was journaled before still writes its own rows (the file may
    // hold an older spec's).
    if new > 0 || res.is_ok() {
        errln!(
            "mmulab: sweep {}: writing {} row{} to {}",
            a.spec.display(),
            c.rows(),
            plural(c.rows()),
            output.display()
        );
        write_results(&output, kind, &sweep)?;
        configs
            .flush()
            .with_context(|| format!("writing {}", configs_path(&output).display()))?;
        drop(configs);
        configs_out.commit()?;
        write_manifest(&output, &sweep)?;
    }
    if let Some(e) = journal_error {
        return Err(anyhow::Error::new(e).context(format!(
            "the sweep stopped; the {} points that finished are in {}",
            c.rows(),
            output.display()
        )));
    }
    res.with_context(|| match new {
        0 => "no point ran; no results file was written".to_string(),
        n => format!(
            "{n} points finished before the failure; they are in {}",
            output.display()
        ),
    })?;
    print_summary(&a, &sweep, &output)?;
    if let Some(id) = failed_fast {
        bail!(
            "--fail-fast: point {id} failed; the sweep stopped there ({} of {total} points have results in {}; run again without --fail-fast to go on)",
            c.rows(),
            output.display()
        );
    }
    if c.failed > 0 && !a.keep_going {
        bail!(
            "{} of {total} points failed; their errors are in {} and {}.manifest.json (--keep-going exits 0 when points fail)",
            c.failed,
            output.display(),
            output.display()
        );
    }
    Ok(())
}

/// Checks, before any point runs, that the results file, its manifest and the journal
/// can be written: creates (and drops) the results' and manifest's temporary files and
/// opens the journal for appending (a journal this check created is removed again: it
/// appears with the first finished point).
fn preflight(output: &Path, journal_path: &Path) -> Result<()> {
    drop(OutputFile::new(output)?);
    drop(OutputFile::new(&PathBuf::from(format!(
        "{}.manifest.json",
        output.display()
    )))?);
    let existed = std::fs::symlink_metadata(journal_path).is_ok();
    journal::Journal::new(journal_path)
        .open()
        .map_err(|e| anyhow::anyhow!("{e} (checked before the first point)"))?;
    if !existed {
        let _ = std::fs::remove_file(journal_path);
    }
    Ok(())
}

/// Writes the results, read back from the journal in point order, through a temporary
/// file renamed over the target.
fn write_results(output: &Path, kind: Kind, sweep: &Sweep) -> Result<()> {
    let out = OutputFile::new(output)?;
    let f = out.open()?;
    let what = output.display().to_string();
    match kind {
        Kind::Csv => {
            let mut w = std::io::BufWriter::new(f);
            results::write_csv(sweep, &mut w, &what)?;
            w.flush().with_context(|| format!("writing {what}"))?;
        }
        Kind::Parquet => results::write_parquet(sweep, std::io::BufWriter::new(f), &what)?,
    }
    out.commit()
}

/// The side file beside the results: OUTPUT.configs.jsonl.
fn configs_path(output: &Path) -> PathBuf {
    PathBuf::from(format!("{}.configs.jsonl", output.display()))
}

/// Writes OUTPUT.manifest.json (mmulab_sweep::results::write_manifest): which mmulab
/// wrote it (`mmulab`: version, git commit) and every point of the spec with its id,
/// configuration hash, parameters and status (`ok`, `error` or `pending`).
fn write_manifest(output: &Path, sweep: &Sweep) -> Result<()> {
    let path = PathBuf::from(format!("{}.manifest.json", output.display()));
    let configs = configs_path(output);
    let configs_name = configs.file_name().map(|n| n.to_string_lossy().to_string());
    let out = OutputFile::new(&path)?;
    let mut w = std::io::BufWriter::new(out.open()?);
    let what = path.display().to_string();
    results::write_manifest(
        sweep,
        &mut w,
        &crate::provenance::json(),
        configs_name.as_deref(),
        &what,
    )?;
    w.flush().with_context(|| format!("writing {what}"))?;
    drop(w);
    out.commit()
}

/// Points whose lines the summary prints (assumed: a terminal's worth many times over;
/// the results file holds every row).
const SUMMARY_POINTS: usize = 1000;

/// The summary: counts, then one line per point of the first [`SUMMARY_POINTS`] (its
/// parameters and a few statistics).
fn print_summary(a: &Args, sweep: &Sweep, output: &Path) -> Result<()> {
    let c = sweep.counts();
    let pending = c.points - c.rows();
    if a.json {
        let v = serde_json::json!({
            "points": c.points,
            "ok": c.ok,
            "failed": c.failed,
            "pending": pending,
            "skipped": c.skipped,
            "rerun_failed": c.rerun_failed,
            "output": output.display().to_string(),
        });
        outln!("{}", serde_json::to_string(&v)?);
        return Ok(());
    }
    let names: Vec<String> = sweep.spec().params.iter().map(|(k, _)| k.clone()).collect();
    let stat = |r: &Row, k: &str| {
        r.stats
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| mmulab_sweep::table::text(v))
    };
    let mut lines = vec![names
        .iter()
        .cloned()
        .chain(["references", "walks", "cycles/ref", "status"].map(String::from))
        .collect::<Vec<_>>()];
    sweep.each_of(SUMMARY_POINTS, |_, row| {
        let Some(r) = row else { return Ok(()) };
        let mut l: Vec<String> = r.params.iter().map(|(_, v)| mmulab_sweep::table::text(v)).collect();
        for k in ["references", "walks.count", "cycles.per_reference"] {
            l.push(stat(r, k).map_or("-".into(), |s| match s.parse::<f64>() {
                Ok(f) if s.contains('.') => format!("{f:.3}"),
                _ => s,
            }));
        }
        l.push(match &r.error {
            Some(e) => format!("error: {e}"),
            None => "ok".into(),
        });
        lines.push(l);
        Ok(())
    })?;
    let cols = lines[0].len();
    let width: Vec<usize> = (0..cols - 1)
        .map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    out += &format!(
        "sweep {}: {} points, {} ok, {} failed, {pending} not run; {} skipped (finished before), {} failed before and re-run\nresults: {}\n\n",
        a.spec.display(),
        c.points,
        c.ok,
        c.failed,
        c.skipped,
        c.rerun_failed,
        output.display()
    );
    for l in &lines {
        let mut s = String::new();
        for (c, cell) in l.iter().enumerate() {
            if c + 1 < cols {
                s += &format!("{cell:<w$}  ", w = width[c]);
            } else {
                s += cell;
            }
        }
        out += s.trim_end();
        out += "\n";
    }
    if c.points > SUMMARY_POINTS {
        out += &format!(
            "… the first {SUMMARY_POINTS} points are shown; all {} rows are in {}\n",
            c.rows(),
            output.display()
        );
    }
    out!("{out}");
    if mmulab_sim::stop_requested() {
        outln!("the sweep was stopped: {pending} points not run; run the same command again to finish them");
    }
    Ok(())
}
