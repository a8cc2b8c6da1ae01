//! `mmulab reproduce freebsd` (or an experiments/*.toml file of the same kind): the
//! superpage-policy experiments of seed 001 (crates/sim/src/reproduce.rs), printed as
//! tables and optionally drawn as coverage over time (SVG or PNG).

use anyhow::{Context, Result};
use mmulab_sim::reproduce::{self, Experiment, RunResult};
use std::path::Path;

/// The built-in copy of experiments/freebsd.toml (used when no such file is found).
const FREEBSD: &str = include_str!("../../../../experiments/freebsd.toml");

/// Runs `freebsd`: experiments/freebsd.toml in the current directory if there is one,
/// else the built-in copy.
pub fn run_freebsd(plot: Option<&Path>, json: bool) -> Result<()> {
    let local = Path::new("experiments/freebsd.toml");
    match std::fs::read_to_string(local) {
        Ok(t) => run(&t, &local.display().to_string(), plot, json),
        Err(_) => run(FREEBSD, "built-in experiments/freebsd.toml", plot, json),
    }
}

/// `reproduce freebsd --sensitivity`: the seed policy's change against base with each
/// parameter that sets its magnitude moved ×½ and ×2 (mmulab_sim::reproduce_sens).
pub fn run_freebsd_sensitivity(json: bool) -> Result<()> {
    let local = Path::new("experiments/freebsd.toml");
    let (text, origin) = match std::fs::read_to_string(local) {
        Ok(t) => (t, local.display().to_string()),
        Err(_) => (FREEBSD.to_string(), "built-in experiments/freebsd.toml".to_string()),
    };
    let e = reproduce::parse(&text, &origin)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    eprintln!("mmulab reproduce {} --sensitivity: on {threads} threads…", e.name);
    let rows = mmulab_sim::reproduce_sens::sensitivity(&e, threads).with_context(|| format!("running {origin}"))?;
    if json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        print!("{}", mmulab_sim::reproduce_sens::sensitivity_table(&e, &rows));
    }
    Ok(())
}

/// Runs a policy experiment (`kind = "os_policies"`) from its file's text.
pub fn run_text(text: &str, origin: &str, plot: Option<&Path>, json: bool) -> Result<()> {
    run(text, origin, plot, json)
}

fn run(text: &str, origin: &str, plot: Option<&Path>, json: bool) -> Result<()> {
    if let Some(p) = plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let e = reproduce::parse(text, origin)?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(4);
    eprintln!(
        "mmulab reproduce {}: {} runs on {threads} threads…",
        e.name,
        e.machine.iter().map(|m| m.policies.len()).sum::<usize>() * e.workload.len()
    );
    // Ctrl-C stops every run at its next batch; the tables then cover what ran.
    crate::signals::stop_on_interrupt();
    let totals = planned_refs(&e);
    let total: u64 = totals.iter().map(|(_, _, n)| n).sum();
    let start = mmulab_sim::references_simulated();
    let ticker = crate::progress::Ticker::start(
        &format!("reproduce {}", e.name),
        Box::new(move || {
            let done = mmulab_sim::references_simulated() - start;
            Some((done, (total > 0).then_some((done.min(total), total))))
        }),
    );
    let results = reproduce::run_all(&e, threads).with_context(|| format!("running {origin}"));
    drop(ticker);
    let results = results?;
    // A run is complete when it simulated every reference its workload has.
    let complete = |r: &RunResult| {
        !mmulab_sim::stop_requested()
            || totals
                .iter()
                .any(|(m, w, n)| *m == r.machine && *w == r.workload && r.refs >= *n)
    };
    let interrupted = results.iter().any(|r| !complete(r));
    if let Some(p) = plot {
        let figure = reproduce::coverage_figure(&e, &results);
        crate::output::write_with(p, |path| figure.write(path))?;
    }
    if json {
        let mut v = serde_json::to_value(&results)?;
        if let Some(rows) = v.as_array_mut() {
            for (row, r) in rows.iter_mut().zip(&results) {
                if !complete(r) {
                    row["complete"] = serde_json::Value::Bool(false);
                }
            }
        }
        println!("{}", serde_json::to_string(&v)?);
    } else {
        print!("{}", reproduce::tables(&e, &results));
        if interrupted {
            let refs = results.iter().map(|r| r.refs).sum();
            println!("\n{}", crate::signals::incomplete_line(refs));
        }
    }
    Ok(())
}

/// (machine, workload, references) of every run of `e`: its workload's length.
fn planned_refs(e: &Experiment) -> Vec<(String, String, u64)> {
    let mut v = Vec::new();
    for m in &e.machine {
        for w in &e.workload {
            let spec = if m.bits == 32 { &w.spec32 } else { &w.spec64 };
            // The measured references: the workload's own warm-up is not in `refs`.
            let n = mmulab_trace::workload::parse(spec)
                .ok()
                .and_then(|s| s.progress().map(|p| p.1 - s.warmup_refs()))
                .unwrap_or(0);
            for _ in &m.policies {
                v.push((m.name.clone(), w.id.clone(), n));
            }
        }
    }
    v
}
