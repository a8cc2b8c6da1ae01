//! `mmulab reproduce freebsd` (seed 001, FreeBSD transparent superpages on ARM), and every
//! experiment file of kind `os_policies` (experiments/freebsd.toml): each workload on each
//! machine under each OS policy, set against the seed's figures ([`policies`]); with
//! `--sensitivity`, the seed rows' change when each parameter that sets their magnitude
//! moves ×½ and ×2 ([`sensitivity`]).

pub mod policies;
pub mod sensitivity;

pub use policies::KIND;
use policies::{Experiment as Policies, RunResult};
use std::io::Write;

use crate::{Experiment, Input, Opt, Output, Source};
use anyhow::{Context, Result};

/// The built-in copy of experiments/freebsd.toml: what `mmulab reproduce freebsd` runs.
pub const FREEBSD: &str = include_str!("../../../../experiments/freebsd.toml");

/// The table row.
pub struct FreebsdExperiment;

impl FreebsdExperiment {
    /// The experiment's text and its name in messages.
    fn text<'a>(input: &Input<'a>) -> (&'a str, String) {
        match input.source {
            Source::BuiltIn => (FREEBSD, "built-in experiments/freebsd.toml".to_string()),
            Source::File { path, text } => (text, path.display().to_string()),
        }
    }
}

impl Experiment for FreebsdExperiment {
    fn name(&self) -> &'static str {
        "freebsd"
    }
    fn source(&self) -> &'static str {
        "001"
    }
    fn about(&self) -> &'static str {
        "seed 001's superpage-policy experiments (the built-in copy of experiments/freebsd.toml;
a file of kind os_policies, such as that file's path, runs the same way): tables of
the seed's figures against mmulab's; --plot draws huge-page coverage over time.
--sensitivity: the seed rows' sensitivity: each parameter that sets the magnitude
(access_cycles, walk.mem_latency, os.fault_latency, the last-level TLB's entries) x1/2
and x2 (no --plot)."
    }
    fn options(&self) -> &'static [Opt] {
        &[Opt {
            flag: "--sensitivity",
            value: None,
        }]
    }
    fn file_kind(&self) -> Option<&'static str> {
        Some(KIND)
    }
    fn planned_refs(&self, input: &Input) -> Result<Option<u64>> {
        if input.options.sensitivity {
            return Ok(None);
        }
        let (text, origin) = Self::text(input);
        let e = policies::parse(text, &origin)?;
        Ok(Some(planned_refs(&e).iter().map(|(_, _, n)| n).sum()))
    }
    fn run(&self, input: &Input) -> Result<Output> {
        let (text, origin) = Self::text(input);
        let e = policies::parse(text, &origin)?;
        let threads = input.pool.threads();
        if input.options.sensitivity {
            if input.figure {
                anyhow::bail!("--sensitivity draws no picture; drop --plot");
            }
            // Progress is best effort: a full stderr is no reason to panic (issue 51).
            let _ = writeln!(
                std::io::stderr(),
                "mmulab reproduce {} --sensitivity: on {threads} threads…",
                e.name
            );
            let rows = sensitivity::sensitivity(&e, input.pool).with_context(|| format!("running {origin}"))?;
            return Ok(Output::new(
                sensitivity::sensitivity_table(&e, &rows),
                serde_json::to_value(&rows)?,
            ));
        }
        let _ = writeln!(
            std::io::stderr(),
            "mmulab reproduce {}: {} runs on {threads} threads…",
            e.name,
            e.machine.iter().map(|m| m.policies.len()).sum::<usize>() * e.workload.len()
        );
        let totals = planned_refs(&e);
        let results = policies::run_all(&e, input.pool).with_context(|| format!("running {origin}"))?;
        // A run is complete when it simulated every reference its workload has.
        let complete = |r: &RunResult| {
            !mmulab_sim::stop_requested()
                || totals
                    .iter()
                    .any(|(m, w, n)| *m == r.machine && *w == r.workload && r.refs >= *n)
        };
        let mut json = serde_json::to_value(&results)?;
        if let Some(rows) = json.as_array_mut() {
            for (row, r) in rows.iter_mut().zip(&results) {
                if !complete(r) {
                    row["complete"] = serde_json::Value::Bool(false);
                }
            }
        }
        let mut out = Output::new(policies::tables(&e, &results), json);
        out.figure = input.figure.then(|| policies::coverage_figure(&e, &results));
        if results.iter().any(|r| !complete(r)) {
            out.incomplete = Some(results.iter().map(|r| r.refs).sum());
        }
        Ok(out)
    }
}

/// (machine, workload, references) of every run of `e`: its workload's length.
fn planned_refs(e: &Policies) -> Vec<(String, String, u64)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, Pool};
    use std::path::Path;

    /// A policy experiment of one workload (1 MiB read in sequence) on one machine under
    /// two policies.
    const TINY: &str = "kind = \"os_policies\"\nname = \"tiny\"\ntitle = \"tiny\"\nseed = \"t\"\n[[workload]]\nid = \"seq\"\nlabel = \"seq\"\nspec32 = \"seq:size=1MiB\"\nspec64 = \"seq:size=1MiB\"\naccess_cycles = 1\nseed_figure = \"x\"\nseed_time_change = -0.1\nwhy = \"t\"\n[[machine]]\nname = \"skylake\"\nlabel = \"x\"\nbits = 64\npolicies = [\"base\", \"thp\"]\n";

    fn input<'a>(text: &'a str, options: &'a Options, figure: bool) -> Input<'a> {
        Input {
            source: Source::File {
                path: Path::new("tiny.toml"),
                text,
            },
            options,
            figure,
            pool: Pool::new(2),
        }
    }

    #[test]
    fn a_policy_file_runs_each_policy_once_in_order() {
        let options = Options::default();
        let out = FreebsdExperiment.run(&input(TINY, &options, true)).unwrap();
        let rows = out.json.as_array().unwrap();
        let policies: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
        assert_eq!(policies, ["base", "thp"]);
        // 1 MiB in 64-byte steps: 16384 references each.
        assert!(rows.iter().all(|r| r["refs"] == 16384 && r["machine"] == "skylake"));
        assert!(out.figure.is_some() && out.incomplete.is_none());
        assert!(out.table.contains("seq"), "{}", out.table);
        let planned = FreebsdExperiment.planned_refs(&input(TINY, &options, false)).unwrap();
        assert_eq!(planned, Some(2 * 16384));
    }

    #[test]
    fn the_built_in_copy_parses_and_plans_its_runs() {
        let options = Options::default();
        let i = Input {
            source: Source::BuiltIn,
            options: &options,
            figure: false,
            pool: Pool::new(1),
        };
        assert!(FreebsdExperiment.planned_refs(&i).unwrap().unwrap() > 0);
        assert_eq!(crate::file_kind(FREEBSD, "freebsd.toml").unwrap(), KIND);
    }

    #[test]
    fn sensitivity_refuses_a_picture() {
        let options = Options {
            sensitivity: true,
            ..Options::default()
        };
        let e = FreebsdExperiment.run(&input(TINY, &options, true)).err().unwrap();
        assert!(e.to_string().contains("--sensitivity draws no picture"), "{e}");
    }
}
