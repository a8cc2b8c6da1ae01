//! `mmulab trace-info FILE [--format F] [--json]`: what a trace holds — counts by kind,
//! threads, cores and address spaces, address range, footprint in 4 KiB and 2 MiB pages,
//! access sizes, markers and metadata sections.
//!
//! The pass and its summary are the library's (`mmulab_trace::summary`); this command
//! prints it. A damaged trace still gets its report, covering the references read before
//! the damage, plus the error (file, offset, references before it); the command then exits
//! with an error. With `--json`, stdout holds exactly one JSON object in both cases.

use super::convert::ReadOpts;
use crate::progress::ProgressLine;
use anyhow::Result;
use mmulab_trace::summary::summarize_file;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Summarise a trace: counts, footprint, markers.
#[derive(clap::Args)]
pub struct Args {
    /// Trace file (or drmemtrace directory).
    pub file: PathBuf,
    #[command(flatten)]
    pub read: ReadOpts,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

fn print_table(v: &Value) {
    let g = |k: &str| v[k].to_string();
    outln!(
        "trace        {} ({})",
        v["file"].as_str().unwrap_or(""),
        v["format"].as_str().unwrap_or("")
    );
    outln!(
        "references   {}{}",
        g("references"),
        if v["complete"] == json!(false) {
            if v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("interrupted"))
            {
                "  (read before the interruption)"
            } else {
                "  (read before the damage)"
            }
        } else {
            ""
        }
    );
    outln!("  loads      {}", g("loads"));
    outln!("  stores     {}", g("stores"));
    outln!("  ifetches   {}", g("ifetches"));
    outln!(
        "threads      {}   cores {}   address spaces {}",
        g("threads"),
        g("cores"),
        g("address_spaces")
    );
    if let Some(r) = v["address_range"].as_object() {
        outln!(
            "addresses    {} .. {}",
            r["min"].as_str().unwrap_or(""),
            r["max"].as_str().unwrap_or("")
        );
    }
    let f = &v["footprint"];
    outln!(
        "footprint    {} pages of 4 KiB ({:.1} MiB), {} pages of 2 MiB",
        f["pages_4k"],
        f["bytes_4k"].as_u64().unwrap_or(0) as f64 / (1u64 << 20) as f64,
        f["pages_2m"]
    );
    let sizes: Vec<String> = v["sizes"]
        .as_object()
        .map(|m| m.iter().map(|(k, n)| format!("{k}:{n}")).collect())
        .unwrap_or_default();
    outln!(
        "sizes        {}",
        if sizes.len() > 12 {
            format!("{} … ({} distinct)", sizes[..12].join(" "), sizes.len())
        } else {
            sizes.join(" ")
        }
    );
    let c = &v["control"];
    if ["exit", "unmap", "touch", "vma", "dontneed"]
        .iter()
        .any(|k| c[k] != json!(0))
    {
        outln!(
            "control      {} exits, {} unmap markers, {} page touches between sampled windows, {} VMA changes, {} MADV_DONTNEED (OS events: not in the counts or footprint above)",
            c["exit"],
            c["unmap"],
            c["touch"],
            c["vma"],
            c["dontneed"]
        );
    }
    for (key, title) in [("markers", "markers"), ("records_skipped", "not refs")] {
        if let Some(m) = v[key].as_object().filter(|m| !m.is_empty()) {
            outln!(
                "{title:<12} {}",
                m.iter().map(|(k, n)| format!("{k}={n}")).collect::<Vec<_>>().join(" ")
            );
        }
    }
    if let Some(s) = v["sections"].as_array().filter(|s| !s.is_empty()) {
        let names: Vec<String> = s
            .iter()
            .map(|x| format!("{} ({} B)", x["name"].as_str().unwrap_or(""), x["bytes"]))
            .collect();
        outln!(
            "sections     {}   ({} VMAs in the last sample)",
            names.join(", "),
            v["vmas"]
        );
    }
    if let Some(e) = v.get("error") {
        outln!("ERROR        {}", e["message"].as_str().unwrap_or(""));
    }
}

pub fn run(a: Args) -> Result<()> {
    // Ctrl-C stops the pass; the report then covers what was read (`complete: false`).
    crate::signals::stop_on_interrupt();
    let opts = a.read.options()?;
    let mut p = ProgressLine::new(&format!("trace-info {}", a.file.display()));
    let summarized = summarize_file(&a.file, &opts, &mut |refs, frac| {
        if refs > 0 {
            p.update(refs, frac);
        }
        !mmulab_sim::stop_requested()
    });
    p.finish();
    let (mut s, err) = match summarized {
        Ok(x) => x,
        Err(e) => {
            if a.json {
                // Still exactly one JSON object on stdout.
                let v = json!({"file": a.file.display().to_string(), "complete": false, "error": {"message": e.to_string()}});
                outln!("{}", serde_json::to_string(&v)?);
            }
            return Err(e.into());
        }
    };
    if let (None, Some(sig)) = (&err, crate::signals::interrupted()) {
        s.stopped(format!("interrupted by {}", crate::signals::name(sig)));
    }
    if a.json {
        outln!("{}", serde_json::to_string(&s)?);
    } else {
        print_table(&serde_json::to_value(&s)?);
    }
    match err {
        Some(e) => Err(anyhow::Error::new(e)
            .context("the trace is damaged; the counts above cover the references read before the damage")),
        None => Ok(()),
    }
}
