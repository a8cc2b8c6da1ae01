//! How sensitive a reproduction's figures are to the parameters that set their
//! magnitude (`mmulab reproduce freebsd --sensitivity`; docs/policies.md): for every
//! machine with a `seed_policy` and every workload, the seed policy's change against
//! `base` at the experiment's values, then with each parameter moved one step down and
//! one step up, all else equal:
//!
//! - `access_cycles` (the policy-independent cost of a reference's data access: the
//!   share of time translation can save) ×½ and ×2 — the runs are reused, only the time
//!   model changes;
//! - `walk.mem_latency` (cycles per descriptor read) ×½ and ×2;
//! - `os.fault_latency` (cycles per fault) ×½ and ×2;
//! - the last-level TLB's `entries` ×½ and ×2 (its reach).
//!
//! A step is a factor of 2 each way (assumed: wide enough to show which parameter
//! matters, small enough to stay plausible for the seed's board).

use super::policies::{change, one, Experiment, MachineCase, RunResult, WorkloadCase};
use mmulab_sim::config::load_machine;
use mmulab_sim::pool::Pool;
use mmulab_sim::SimError;

/// One line of the sensitivity table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SensRow {
    /// Machine name.
    pub machine: String,
    /// Workload id.
    pub workload: String,
    /// Parameter varied (`nominal` for the experiment's values).
    pub parameter: String,
    /// Its value in this row.
    pub value: String,
    /// The seed policy's change against base (time, or rate for `rate` workloads).
    pub change: f64,
}

/// A variant: a name, a value and the `--set` overrides it adds (none: the time model's
/// `access_cycles` factor instead).
struct Variant {
    parameter: String,
    value: String,
    sets: Vec<String>,
    access_factor: f64,
}

fn variants(m: &MachineCase) -> Result<Vec<Variant>, SimError> {
    let spec = load_machine(&m.name, None, &m.sets).map_err(|e| SimError::Config(e.to_string()))?;
    let mut v = vec![Variant {
        parameter: "nominal".into(),
        value: "as the experiment".into(),
        sets: vec![],
        access_factor: 1.0,
    }];
    for f in [0.5, 2.0] {
        v.push(Variant {
            parameter: "access_cycles".into(),
            value: format!("×{f}"),
            sets: vec![],
            access_factor: f,
        });
    }
    let c = spec.cost;
    for (key, now) in [
        ("walk.mem_latency", c.mem_latency),
        ("os.fault_latency", c.fault_latency),
    ] {
        for x in [now / 2, now * 2] {
            v.push(Variant {
                parameter: key.into(),
                value: format!("{x} (from {now})"),
                sets: vec![format!("{key}={x}")],
                access_factor: 1.0,
            });
        }
    }
    if let Some(last) = spec.tlbs.iter().find(|t| t.next.is_none()) {
        for x in [last.entries / 2, last.entries * 2] {
            if x >= last.ways && x % last.ways == 0 {
                v.push(Variant {
                    parameter: format!("tlb.{}.entries", last.name),
                    value: format!("{x} (from {})", last.entries),
                    sets: vec![format!("tlb.{}.entries={x}", last.name)],
                    access_factor: 1.0,
                });
            }
        }
    }
    Ok(v)
}

/// Runs the sensitivity study of `e` on `pool`.
pub fn sensitivity(e: &Experiment, pool: Pool) -> Result<Vec<SensRow>, SimError> {
    type Job<'a> = (&'a MachineCase, &'a WorkloadCase, usize, String);
    let mut jobs: Vec<Job> = Vec::new();
    let mut plan = Vec::new();
    for m in e.machine.iter().filter(|m| m.seed_policy.is_some()) {
        let vs = variants(m)?;
        for w in &e.workload {
            for (i, v) in vs.iter().enumerate() {
                plan.push((m, w, i, v.parameter.clone(), v.value.clone(), v.access_factor));
                for p in ["base", m.seed_policy.as_deref().expect("filtered")] {
                    jobs.push((m, w, i, p.to_string()));
                }
            }
        }
    }
    let results = parallel(&jobs, pool, |(m, w, i, p)| {
        let vs = variants(m)?;
        let mut sets = m.sets_for(p);
        sets.extend(vs[*i].sets.iter().cloned());
        let spec = load_machine(&m.name, None, &sets).map_err(|err| SimError::Config(err.to_string()))?;
        one(m, w, p, spec)
    })?;
    let mut rows = Vec::new();
    for (k, (m, w, _, parameter, value, f)) in plan.into_iter().enumerate() {
        let (base, pol) = (&results[2 * k], &results[2 * k + 1]);
        let w2 = WorkloadCase {
            access_cycles: ((w.access_cycles as f64) * f).round().max(1.0) as u64,
            ..w.clone()
        };
        let retime = |r: &RunResult| RunResult {
            time: r.refs * w2.access_cycles + r.translation + r.os,
            ..r.clone()
        };
        rows.push(SensRow {
            machine: m.name.clone(),
            workload: w.id.clone(),
            parameter,
            value,
            change: change(&w2, &retime(base), &retime(pol)),
        });
    }
    Ok(rows)
}

/// `f` over `jobs` on `pool`, results in job order; the first error, if any.
pub(crate) fn parallel<J: Sync, R: Send>(
    jobs: &[J],
    pool: Pool,
    f: impl Fn(&J) -> Result<R, SimError> + Sync,
) -> Result<Vec<R>, SimError> {
    pool.map(jobs, f).into_iter().collect()
}

/// The table: per machine and workload, the seed's figure, then one line per parameter
/// value with the change and its distance from the nominal change in percentage points.
pub fn sensitivity_table(e: &Experiment, rows: &[SensRow]) -> String {
    let mut out =
        String::from("Sensitivity: the seed policy's change against base when one parameter moves (×½, ×2)\n");
    let mut nominal = 0.0;
    let mut last = (String::new(), String::new());
    for r in rows {
        if (r.machine.clone(), r.workload.clone()) != last {
            last = (r.machine.clone(), r.workload.clone());
            let w = e.workload.iter().find(|w| w.id == r.workload);
            out += &format!(
                "\n{} on {} (seed: {})\n{:<22} {:<22} {:>9} {:>10}\n",
                w.map_or(r.workload.as_str(), |w| w.label.as_str()),
                r.machine,
                w.map_or("-", |w| w.seed_figure.as_str()),
                "parameter",
                "value",
                "change",
                "Δ (points)"
            );
        }
        if r.parameter == "nominal" {
            nominal = r.change;
        }
        out += &format!(
            "{:<22} {:<22} {:>+8.1}% {:>+10.1}\n",
            r.parameter,
            r.value,
            r.change * 100.0,
            (r.change - nominal) * 100.0
        );
    }
    out
}
