//! `mmulab demo`: the main job on built-in defaults — built-in workloads under 4 KiB and
//! 2 MiB pages on the default machine, compared side by side.

use super::sim::{simulate, source};
use anyhow::Result;
use mmulab_sim::config;
use mmulab_sim::report::{thousands, Table};
use mmulab_sim::Stats;
use std::path::PathBuf;

/// The built-in workloads.
pub const WORKLOADS: [&str; 4] = [
    "gups:table=1GiB,refs=10M",
    "chase:pages=262144,refs=4M",
    "seq:size=1GiB,refs=20M",
    "stride:pages=4096,offset=16,refs=10M",
];

/// Compare 4 KiB and 2 MiB pages on built-in workloads.
#[derive(clap::Args)]
pub struct Args {
    /// Machine config (default: the built-in machine).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Workloads to run instead of the built-in set (repeatable).
    #[arg(long, short)]
    pub workload: Vec<String>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> Result<()> {
    crate::signals::stop_on_interrupt();
    let workloads: Vec<String> = if a.workload.is_empty() {
        WORKLOADS.iter().map(|s| s.to_string()).collect()
    } else {
        a.workload.clone()
    };
    let sizes = [
        ("4K", vec!["os.policy=base".to_string()]),
        ("2M", vec!["os.policy=fixed".into(), "os.page_size=2M".into()]),
    ];
    let mut results: Vec<(String, &str, Stats)> = Vec::new();
    // Ctrl-C stops the current run; the runs done so far and that one are reported.
    'all: for w in &workloads {
        for (label, sets) in &sizes {
            let spec = config::load(a.config.as_deref(), sets)?;
            let mut src = source(None, "auto", Some(w), spec.format.va_bits())?;
            errln!("mmulab demo: {w} with {label} pages");
            let stats = simulate(spec, &mut src, &format!("{w} ({label})"))?;
            let stopped = !stats.complete;
            results.push((w.clone(), label, stats));
            if stopped {
                break 'all;
            }
        }
    }
    let interrupted = results.last().is_some_and(|r| !r.2.complete);
    if a.json {
        let rows: Vec<_> = results
            .iter()
            .map(|(w, p, s)| serde_json::json!({"workload": w, "pages": p, "stats": s.to_json()}))
            .collect();
        let mut v = serde_json::json!({ "runs": rows });
        if interrupted {
            v["complete"] = serde_json::Value::Bool(false);
        }
        outln!("{}", serde_json::to_string(&v)?);
        return Ok(());
    }
    let level_names: Vec<String> = results
        .first()
        .map(|r| r.2.levels.iter().map(|l| l.name.clone()).collect())
        .unwrap_or_default();
    let mut header = vec!["workload".to_string(), "pages".into(), "references".into()];
    header.extend(level_names.iter().map(|n| format!("{n} misses")));
    header.extend(["walks", "walk mem refs", "translation cycles", "cycles/ref", "4K/2M"].map(String::from));
    let mut t = Table::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for pair in results.chunks(2) {
        let base_cycles = pair[0].2.translation_cycles();
        for (w, p, s) in pair {
            let c = &s.counters;
            let mut row = vec![
                if *p == "4K" { w.clone() } else { String::new() },
                p.to_string(),
                thousands(c.references),
            ];
            row.extend(s.levels.iter().map(|l| thousands(l.counts.misses)));
            row.push(thousands(c.walks));
            row.push(thousands(c.walk_reads));
            row.push(thousands(s.translation_cycles()));
            row.push(format!(
                "{:.2}",
                s.translation_cycles() as f64 / c.references.max(1) as f64
            ));
            row.push(if *p == "4K" {
                String::new()
            } else {
                format!("{:.2}x", base_cycles as f64 / s.translation_cycles().max(1) as f64)
            });
            t.row(row);
        }
    }
    outln!("mmulab demo: translation on the default machine (machines/default.toml), 4 KiB vs 2 MiB pages");
    outln!("(4K/2M = translation cycles with 4 KiB pages / with 2 MiB pages; higher means huge pages help more)\n");
    out!("{}", t.render());
    if interrupted {
        let refs: u64 = results.iter().map(|r| r.2.counters.references).sum();
        outln!("\n{}", crate::signals::incomplete_line(refs));
    }
    Ok(())
}
