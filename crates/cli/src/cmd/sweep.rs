//! `mmulab sweep SPEC.toml`: many configurations, each point one `mmulab sim` run, on a
//! local pool or Ray; results in a Parquet or CSV file, resumable (docs/sweep.md).

use crate::output::OutputFile;
use crate::progress::Ticker;
use anyhow::{bail, Context, Result};
use mmulab_sweep::{journal, Executor, ParquetStream, Plan, Pool, Ray, Row, Spec, Table};
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
    /// Print one JSON object (counts and the rows) instead of the summary table.
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
    let previous = journal::read(&journal_path)?;
    let jobs = match a.jobs {
        Some(0) => bail!("--jobs must be at least 1"),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    // The count comes from the spec before anything is resolved; identifying the points
    // (resolving each config: about 0.2 ms a point) runs on the pool's threads with a
    // progress line.
    let total = spec.len();
    errln!(
        "mmulab: sweep {}: {total} point{} to plan ({} in its journal)",
        a.spec.display(),
        if total == 1 { "" } else { "s" },
        previous.len()
    );
    let identified = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = identified.clone();
    let ticker = Ticker::phase(
        &format!("sweep {}", a.spec.display()),
        "planning: points identified",
        Box::new(move || (seen.load(Ordering::Relaxed) as u64, total as u64)),
    );
    let plan = Plan::build(&spec, &previous, jobs, &identified);
    drop(ticker);
    let plan = plan?;
    errln!(
        "mmulab: sweep {}: {total} point{}: {} finished before (skipped), {} failed before (re-run), {} new",
        a.spec.display(),
        if total == 1 { "" } else { "s" },
        plan.done.len(),
        plan.rerun_failed,
        plan.todo.len() - plan.rerun_failed
    );
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
    if !plan.todo.is_empty() {
        preflight(&output, &journal_path)?;
    }
    crate::signals::stop_on_interrupt();
    let finished = Arc::new(AtomicU64::new(plan.done.len() as u64));
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
    let mut rows: Vec<Row> = plan.done.clone();
    let mut journal_error = None;
    let mut failed_fast: Option<String> = None;
    // Parquet to a regular file: row groups written as points finish (stream.rs).
    let mut stream = (matches!(kind, Kind::Parquet) && (!output.exists() || output.is_file())).then(|| {
        let order = plan.points.iter().map(|p| p.index).collect();
        ParquetStream::new(
            &output,
            order,
            &plan.done,
            mmulab_sweep::stream::ROWS_PER_GROUP,
            mmulab_sweep::stream::FLUSH_INTERVAL,
        )
    });
    let res = executor.run(&plan.todo, &mut |row| {
        // A point stopped by Ctrl-C is not a result: it runs again next time.
        if !row.complete {
            return;
        }
        if a.fail_fast && row.error.is_some() {
            failed_fast.get_or_insert_with(|| row.id.clone());
            mmulab_sim::request_stop();
        }
        if let Err(e) = journal.append(&row) {
            journal_error.get_or_insert(e);
        }
        finished.fetch_add(1, Ordering::Relaxed);
        // A stream that cannot write falls back to the whole write at the end.
        if stream.as_mut().is_some_and(|s| s.push(row.clone()).is_err()) {
            if let Some(s) = stream.take() {
                s.abandon();
            }
        }
        rows.push(row);
    });
    drop(ticker);
    rows.sort_by_key(|r| r.index);
    let new = rows.len() - plan.done.len();
    // Whatever finished is written, whole, even when the executor failed after it; and a
    // sweep whose every point was journaled before still writes its own rows (the file
    // may hold an older spec's).
    if new > 0 || res.is_ok() {
        let streamed = match stream {
            Some(s) => s.finish(&rows).unwrap_or(false),
            None => false,
        };
        if !streamed {
            write_results(&output, kind, &rows)?;
        }
        write_manifest(&output, &plan, &rows)?;
    } else if let Some(s) = stream {
        s.abandon();
    }
    if let Some(e) = journal_error {
        return Err(e.into());
    }
    res.with_context(|| match new {
        0 => "no point ran; no results file was written".to_string(),
        n => format!(
            "{n} points finished before the failure; they are in {}",
            output.display()
        ),
    })?;
    print_summary(&a, &rows, &plan, total, &output)?;
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    if let Some(id) = failed_fast {
        bail!(
            "--fail-fast: point {id} failed; the sweep stopped there ({} of {total} points have results in {}; run again without --fail-fast to go on)",
            rows.len(),
            output.display()
        );
    }
    if failed > 0 && !a.keep_going {
        bail!(
            "{failed} of {total} points failed; their errors are in {} and {}.manifest.json (--keep-going exits 0 when points fail)",
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
    drop(OutputFile::new(&configs_path(output))?);
    let existed = std::fs::symlink_metadata(journal_path).is_ok();
    journal::Journal::new(journal_path)
        .open()
        .map_err(|e| anyhow::anyhow!("{e} (checked before the first point)"))?;
    if !existed {
        let _ = std::fs::remove_file(journal_path);
    }
    Ok(())
}

/// Writes the table as one file, through a temporary file renamed over the target.
fn write_results(output: &Path, kind: Kind, rows: &[Row]) -> Result<()> {
    let refs: Vec<&Row> = rows.iter().collect();
    let table = Table::of(&refs);
    let out = OutputFile::new(output)?;
    let f = out.open()?;
    match kind {
        Kind::Csv => {
            let mut w = std::io::BufWriter::new(f);
            table
                .write_csv(&mut w)
                .and_then(|_| w.flush())
                .with_context(|| format!("writing {}", output.display()))?;
        }
        Kind::Parquet => table
            .write_parquet(f)
            .with_context(|| format!("writing {}", output.display()))?,
    }
    out.commit()
}

/// The side file beside the results: OUTPUT.configs.jsonl.
fn configs_path(output: &Path) -> PathBuf {
    PathBuf::from(format!("{}.configs.jsonl", output.display()))
}

/// Writes OUTPUT.manifest.json: which mmulab wrote it (`mmulab`: version, git commit)
/// and every point of the spec with its id, configuration hash, parameters and status
/// (`ok`, `error` or `pending`); and OUTPUT.configs.jsonl, each resolved configuration
/// by its hash (mmulab_sweep::point::configs_jsonl).
fn write_manifest(output: &Path, plan: &Plan, rows: &[Row]) -> Result<()> {
    let configs = configs_path(output);
    crate::output::write(&configs, mmulab_sweep::point::configs_jsonl(&plan.points).as_bytes())?;
    let by_id: std::collections::HashMap<&str, &Row> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let points: Vec<serde_json::Value> = plan
        .points
        .iter()
        .map(|p| {
            let status = match by_id.get(p.id.as_str()) {
                Some(r) if r.error.is_some() => "error",
                Some(_) => "ok",
                None => "pending",
            };
            serde_json::json!({
                "id": p.id,
                "config_hash": if p.config_hash.is_empty() { serde_json::Value::Null } else { p.config_hash.clone().into() },
                "index": p.index,
                "params": p.params.iter().cloned().collect::<serde_json::Map<_, _>>(),
                "status": status,
            })
        })
        .collect();
    let configs_name = configs.file_name().map(|n| n.to_string_lossy().to_string());
    let v = serde_json::json!({ "mmulab": crate::provenance::json(), "configs": configs_name, "points": points });
    let path = PathBuf::from(format!("{}.manifest.json", output.display()));
    crate::output::write(&path, format!("{}\n", serde_json::to_string_pretty(&v)?).as_bytes())
}

/// The summary: counts, then one line per point (its parameters and a few statistics).
fn print_summary(a: &Args, rows: &[Row], plan: &Plan, total: usize, output: &Path) -> Result<()> {
    let failed = rows.iter().filter(|r| r.error.is_some()).count();
    let pending = total - rows.len();
    if a.json {
        let v = serde_json::json!({
            "points": total,
            "ok": rows.len() - failed,
            "failed": failed,
            "pending": pending,
            "skipped": plan.done.len(),
            "rerun_failed": plan.rerun_failed,
            "output": output.display().to_string(),
        });
        outln!("{}", serde_json::to_string(&v)?);
        return Ok(());
    }
    let names: Vec<&str> = plan
        .points
        .first()
        .map_or(Vec::new(), |p| p.params.iter().map(|(k, _)| k.as_str()).collect());
    let stat = |r: &Row, k: &str| {
        r.stats
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| mmulab_sweep::table::text(v))
    };
    let mut lines = vec![names
        .iter()
        .map(|s| s.to_string())
        .chain(["references", "walks", "cycles/ref", "status"].map(String::from))
        .collect::<Vec<_>>()];
    for r in rows {
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
    }
    let cols = lines[0].len();
    let width: Vec<usize> = (0..cols - 1)
        .map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    out += &format!(
        "sweep {}: {total} points, {} ok, {failed} failed, {pending} not run; {} skipped (finished before), {} failed before and re-run\nresults: {}\n\n",
        a.spec.display(),
        rows.len() - failed,
        plan.done.len(),
        plan.rerun_failed,
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
    out!("{out}");
    if mmulab_sim::stop_requested() {
        outln!("the sweep was stopped: {pending} points not run; run the same command again to finish them");
    }
    Ok(())
}
