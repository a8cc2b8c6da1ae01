//! `mmulab reproduce freebsd` (or an experiments/*.toml file of the same kind): the
//! superpage-policy experiments of seed 001 (crates/sim/src/reproduce.rs), printed as
//! tables and optionally drawn as coverage over time (SVG).

use anyhow::{bail, Context, Result};
use mmulab_sim::reproduce::{self, Experiment, RunResult};
use std::fmt::Write as _;
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

/// Runs a policy experiment (`kind = "os_policies"`) from its file's text.
pub fn run_text(text: &str, origin: &str, plot: Option<&Path>, json: bool) -> Result<()> {
    run(text, origin, plot, json)
}

fn run(text: &str, origin: &str, plot: Option<&Path>, json: bool) -> Result<()> {
    if let Some(p) = plot {
        if p.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
            != Some("svg")
        {
            bail!(
                "--plot {}: this experiment draws SVG; give a file name ending in .svg",
                p.display()
            );
        }
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
        crate::output::write(p, svg(&e, &results).as_bytes())?;
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
            let n = mmulab_trace::workload::parse(spec)
                .ok()
                .and_then(|s| s.progress())
                .map_or(0, |p| p.1);
            for _ in &m.policies {
                v.push((m.name.clone(), w.id.clone(), n));
            }
        }
    }
    v
}

/// Coverage (share of resident memory in pages above 4 KiB) over references, one panel
/// per (machine, workload), one line per policy.
fn svg(e: &Experiment, results: &[RunResult]) -> String {
    let colours = ["#444444", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"];
    let (pw, ph) = (300.0, 180.0);
    let cols = e.workload.len();
    let rows = e.machine.len();
    let (w, h) = (cols as f64 * (pw + 60.0) + 40.0, rows as f64 * (ph + 70.0) + 60.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="20" y="20" font-size="14">{}: huge-page coverage over references</text>"#,
        e.name
    );
    for (ri, m) in e.machine.iter().enumerate() {
        for (ci, wl) in e.workload.iter().enumerate() {
            let (x0, y0) = (50.0 + ci as f64 * (pw + 60.0), 50.0 + ri as f64 * (ph + 70.0));
            let _ = writeln!(s, r#"<text x="{x0}" y="{}">{} · {}</text>"#, y0 - 6.0, m.name, wl.id);
            let _ = writeln!(
                s,
                r#"<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">100%</text><text x="{}" y="{}" text-anchor="end">0%</text>"#,
                x0 - 4.0,
                y0 + 10.0,
                x0 - 4.0,
                y0 + ph
            );
            let runs: Vec<&RunResult> = results
                .iter()
                .filter(|r| r.machine == m.name && r.workload == wl.id)
                .collect();
            let xmax = runs.iter().map(|r| r.refs).max().unwrap_or(1).max(1) as f64;
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{:.1}M refs</text>"#,
                x0 + pw,
                y0 + ph + 14.0,
                xmax / 1e6
            );
            for (pi, r) in runs.iter().enumerate() {
                let c = colours[pi % colours.len()];
                let pts: Vec<String> = r
                    .samples
                    .iter()
                    .map(|p| {
                        format!(
                            "{:.1},{:.1}",
                            x0 + pw * p.refs as f64 / xmax,
                            y0 + ph * (1.0 - p.huge_coverage)
                        )
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    r#"<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{}"/>"#,
                    pts.join(" ")
                );
                let _ = writeln!(
                    s,
                    r#"<text x="{}" y="{}" fill="{c}">{}</text>"#,
                    x0 + 6.0,
                    y0 + 14.0 + 12.0 * pi as f64,
                    r.policy
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}
