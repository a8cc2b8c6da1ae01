//! Reproductions of the source documents' experiments, described as data
//! (experiments/*.toml) and run in one call: each workload on each machine under each
//! policy, compared with `base` on the same machine, and set against the figure the
//! seed reports.
//!
//! Time model (stated so the comparison can be judged): modelled time of a run =
//! references × `access_cycles` (the cost of the data access itself, the same under
//! every policy) + TLB lookup cycles + walk cycles + fault cycles + OS work cycles
//! (copies, compaction, scans). Only translation and OS work differ between policies;
//! caches, DRAM and the CPU pipeline are not modelled, so the share of time spent in
//! translation, set by `access_cycles`, bounds how much any policy can save.

use mmulab_model::addr::PageSize;
use mmulab_plot::{Axis, Color, Figure, Panel, Series, Style};
use mmulab_sim::config::{load_machine, MachineSpec};
use mmulab_sim::pool::Pool;
use mmulab_sim::{Sample, Session, SessionOptions, SimError, Stats};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An experiment file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// The experiment kind: `"os_policies"` ([`KIND`]).
    pub kind: String,
    /// Short name (`freebsd`).
    pub name: String,
    /// One line saying what is reproduced.
    pub title: String,
    /// The seed document.
    pub seed: String,
    /// Workloads.
    pub workload: Vec<WorkloadCase>,
    /// Machines and the policies run on each.
    pub machine: Vec<MachineCase>,
}

/// One workload of an experiment.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadCase {
    /// Id (`gups`).
    pub id: String,
    /// Name in tables.
    pub label: String,
    /// Workload spec for 32-bit machines.
    pub spec32: String,
    /// Workload spec for 64-bit machines.
    pub spec64: String,
    /// Cycles of the data access of one reference (policy-independent).
    pub access_cycles: u64,
    /// What the seed reports, as printed.
    pub seed_figure: String,
    /// The seed's change of time (negative = faster), for the direction check.
    pub seed_time_change: f64,
    /// Report the change of rate (1/time) instead of time (GUPS updates per second).
    #[serde(default)]
    pub rate: bool,
    /// Why mmulab's figure differs from the seed's.
    pub why: String,
}

/// One machine of an experiment.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineCase {
    /// Catalog name.
    pub name: String,
    /// What it stands for.
    pub label: String,
    /// 32 or 64: which workload spec to use.
    pub bits: u32,
    /// Policies; the first must be `base` (the reference).
    pub policies: Vec<String>,
    /// The policy compared with the seed's figure, if any.
    #[serde(default)]
    pub seed_policy: Option<String>,
    /// Extra `--set` overrides for every policy of the machine (keys every policy
    /// takes, such as `memory.size`).
    #[serde(default)]
    pub sets: Vec<String>,
    /// Extra `--set` overrides for one policy (`policy_sets.mthp = ["os.mthp.sizes=…"]`),
    /// applied after `sets`: a key of one policy's section (`os.mthp.*`) goes here,
    /// since another policy refuses it.
    #[serde(default)]
    pub policy_sets: BTreeMap<String, Vec<String>>,
}

impl MachineCase {
    /// The `--set` overrides of a run of `policy`: `sets`, that policy's `policy_sets`,
    /// then `os.policy`.
    pub fn sets_for(&self, policy: &str) -> Vec<String> {
        let mut sets = self.sets.clone();
        sets.extend(self.policy_sets.get(policy).into_iter().flatten().cloned());
        sets.push(format!("os.policy={policy}"));
        sets
    }
}

/// The outcome of one run.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// Machine name.
    pub machine: String,
    /// Workload id.
    pub workload: String,
    /// Policy.
    pub policy: String,
    /// References.
    pub refs: u64,
    /// Modelled time in cycles.
    pub time: u64,
    /// Translation cycles (TLB + walks).
    pub translation: u64,
    /// Fault + OS-work cycles.
    pub os: u64,
    /// Last-level TLB misses.
    pub tlb_misses: u64,
    /// Share of resident memory in pages above 4 KiB at the end (before exits).
    pub huge_coverage: f64,
    /// Promotions + collapses + huge faults.
    pub promotions: u64,
    /// Demotions.
    pub demotions: u64,
    /// Peak memory bloat (resident − touched bytes) over the run.
    pub peak_bloat: i64,
    /// Coverage over time.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

/// The kind this module runs, as experiment files declare it (`kind = "os_policies"`).
pub const KIND: &str = "os_policies";

/// Parses an experiment file's text (`origin` names it in errors).
pub fn parse(text: &str, origin: &str) -> Result<Experiment, SimError> {
    let e: Experiment =
        toml::from_str(text).map_err(|e| SimError::Config(format!("{origin}: {}", e.to_string().trim_end())))?;
    if e.kind != KIND {
        return Err(SimError::Config(format!(
            "{origin}: kind = \"{}\" is not a policy experiment (kind = \"{KIND}\")",
            e.kind
        )));
    }
    for m in &e.machine {
        if m.policies.first().map(String::as_str) != Some("base") {
            return Err(SimError::Config(format!(
                "{origin}: machine '{}': policies must start with \"base\"",
                m.name
            )));
        }
        if m.bits != 32 && m.bits != 64 {
            return Err(SimError::Config(format!(
                "{origin}: machine '{}': bits = {} (use 32 or 64)",
                m.name, m.bits
            )));
        }
        check_sets(m).map_err(|msg| SimError::Config(format!("{origin}: machine '{}': {msg}", m.name)))?;
    }
    Ok(e)
}

/// `sets` holds only keys every policy of the machine takes; `policy_sets` names
/// policies the machine runs, each with keys that policy takes.
fn check_sets(m: &MachineCase) -> Result<(), String> {
    let key = |s: &str| s.split_once('=').map_or(s, |(k, _)| k).trim().to_string();
    for s in &m.sets {
        if let Some(takes) = mmulab_sim::config::key_policies(&key(s)) {
            if let Some(p) = m.policies.iter().find(|p| !takes.contains(&p.as_str())) {
                let first = takes
                    .iter()
                    .find(|t| m.policies.iter().any(|p| p == *t))
                    .unwrap_or(&takes[0]);
                return Err(format!(
                    "sets has \"{s}\", which policy \"{p}\" does not take ({} applies only to {}): put it in policy_sets, e.g. policy_sets.{first} = [\"{s}\"]",
                    key(s),
                    takes.join(", ")
                ));
            }
        }
    }
    for (p, sets) in &m.policy_sets {
        if !m.policies.contains(p) {
            return Err(format!(
                "policy_sets.{p}: \"{p}\" is not one of the machine's policies ({})",
                m.policies.join(", ")
            ));
        }
        for s in sets {
            if let Some(takes) = mmulab_sim::config::key_policies(&key(s)) {
                if !takes.contains(&p.as_str()) {
                    return Err(format!(
                        "policy_sets.{p} has \"{s}\", which applies only to {}",
                        takes.join(", ")
                    ));
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn one(m: &MachineCase, w: &WorkloadCase, policy: &str, spec: MachineSpec) -> Result<RunResult, SimError> {
    let mut session = Session::new(spec)?;
    let text = if m.bits == 32 { &w.spec32 } else { &w.spec64 };
    let mut src = mmulab_trace::workload::parse(text)?;
    let total = src.progress().map_or(1_000_000, |p| p.1);
    let mut peak = 0.0f64;
    let mut bloat = 0i64;
    // The workload's own warm-up (gups and lat_mem_rd initialise their memory before the
    // timed part, `init=on`) is simulated and left out of the time: the seeds time only
    // the updates and the loads.
    let opts = SessionOptions {
        series: Some(((total / 40).max(1), Box::new(std::io::sink()))),
        ..Default::default()
    };
    let s: Stats = session.run(&mut src, opts)?;
    let samples = session.machine().samples().to_vec();
    for smp in &samples {
        peak = peak.max(smp.huge_coverage);
        bloat = bloat.max(smp.bloat_bytes);
    }
    let os = s.counters.fault_cycles + s.os.os_cycles;
    let translation = s.translation_cycles();
    let huge_faults: u64 = PageSize::ALL
        .iter()
        .filter(|p| **p > PageSize::K4)
        .map(|p| s.os.mapped[p.index()])
        .sum();
    Ok(RunResult {
        machine: m.name.clone(),
        workload: w.id.clone(),
        policy: policy.to_string(),
        refs: s.counters.references,
        time: s.counters.references * w.access_cycles + translation + os,
        translation,
        os,
        tlb_misses: s.stlb_misses(),
        huge_coverage: peak,
        promotions: huge_faults.max(s.os.promotions.iter().sum::<u64>() + s.os.collapses),
        demotions: s.os.demotions.iter().sum(),
        peak_bloat: bloat,
        samples,
    })
}

/// Runs every (machine, workload, policy) of `e` on `pool`; results in a fixed order
/// (machine, workload, policy) whatever the thread timing.
pub fn run_all(e: &Experiment, pool: Pool) -> Result<Vec<RunResult>, SimError> {
    let mut jobs = Vec::new();
    for m in &e.machine {
        for w in &e.workload {
            for p in &m.policies {
                let spec = load_machine(&m.name, None, &m.sets_for(p)).map_err(|err| {
                    SimError::Config(format!("experiment {}: machine {}, policy {p}: {err}", e.name, m.name))
                })?;
                jobs.push((m, w, p.as_str(), spec));
            }
        }
    }
    pool.map(&jobs, |(m, w, p, spec)| one(m, w, p, spec.clone()))
        .into_iter()
        .collect()
}

/// The relative change of `r` against `base` in the workload's metric (time, or rate).
pub fn change(w: &WorkloadCase, base: &RunResult, r: &RunResult) -> f64 {
    if w.rate {
        base.time as f64 / r.time as f64 - 1.0
    } else {
        r.time as f64 / base.time as f64 - 1.0
    }
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// The two tables: the seed's figures against mmulab's, and every machine and policy.
pub fn tables(e: &Experiment, results: &[RunResult]) -> String {
    let find = |m: &str, w: &str, p: &str| {
        results
            .iter()
            .find(|r| r.machine == m && r.workload == w && r.policy == p)
    };
    let mut out = format!("{}\nseed: {}\n\n", e.title, e.seed);
    out += "The seed's figures against mmulab's (time model: references × access cycles + translation + faults + OS work)\n\n";
    out += &format!(
        "| {:<50} | {:<26} | {:>9} | {:<14} | {}\n",
        "experiment", "seed", "mmulab", "same direction", "why they differ"
    );
    out += &format!(
        "|{}|{}|{}|{}|---\n",
        "-".repeat(52),
        "-".repeat(28),
        "-".repeat(11),
        "-".repeat(16)
    );
    for m in e.machine.iter().filter(|m| m.seed_policy.is_some()) {
        let sp = m.seed_policy.as_deref().expect("filtered");
        for w in &e.workload {
            let (Some(b), Some(r)) = (find(&m.name, &w.id, "base"), find(&m.name, &w.id, sp)) else {
                continue;
            };
            let c = change(w, b, r);
            let mine = if w.rate {
                -w.seed_time_change / (1.0 + w.seed_time_change)
            } else {
                w.seed_time_change
            };
            let same = (c < 0.0) == (mine < 0.0) && c != 0.0;
            let share = (b.translation + b.os) as f64 / b.time as f64;
            out += &format!(
                "| {:<50} | {:<26} | {:>9} | {:<14} | {} (translation+OS = {:.0}% of base time here.)\n",
                format!("{} ({sp} vs base, {})", w.label, m.name),
                w.seed_figure,
                pct(c),
                if same { "yes" } else { "no" },
                w.why,
                share * 100.0
            );
        }
    }
    out += "\nEvery machine and policy (change of modelled time vs base on the same machine; coverage = peak share of resident memory in pages above 4 KiB; huge/promo = huge pages mapped at fault + promotions + collapses; bloat = peak resident − touched bytes)\n\n";
    out += &format!(
        "| {:<11} | {:<10} | {:<11} | {:>8} | {:>12} | {:>9} | {:>10} | {:>9} | {:>10}\n",
        "machine", "workload", "policy", "time", "TLB misses", "coverage", "huge/promo", "demotions", "bloat MiB"
    );
    out += &format!(
        "|{}|{}|{}|{}|{}|{}|{}|{}|{}\n",
        "-".repeat(13),
        "-".repeat(12),
        "-".repeat(13),
        "-".repeat(10),
        "-".repeat(14),
        "-".repeat(11),
        "-".repeat(12),
        "-".repeat(11),
        "-".repeat(11)
    );
    for m in &e.machine {
        for w in &e.workload {
            let Some(b) = find(&m.name, &w.id, "base") else {
                continue;
            };
            for p in &m.policies {
                let Some(r) = find(&m.name, &w.id, p) else { continue };
                out += &format!(
                    "| {:<11} | {:<10} | {:<11} | {:>8} | {:>12} | {:>8.0}% | {:>10} | {:>9} | {:>10.1}\n",
                    m.name,
                    w.id,
                    p,
                    if p == "base" {
                        "—".to_string()
                    } else {
                        pct(r.time as f64 / b.time as f64 - 1.0)
                    },
                    r.tlb_misses,
                    r.huge_coverage * 100.0,
                    r.promotions,
                    r.demotions,
                    r.peak_bloat as f64 / (1 << 20) as f64
                );
            }
        }
    }
    out += "\nMachines: ";
    out += &e
        .machine
        .iter()
        .map(|m| format!("{} = {}", m.name, m.label))
        .collect::<Vec<_>>()
        .join("; ");
    out.push('\n');
    out
}

/// Huge-page coverage (share of resident memory in pages above 4 KiB) over references:
/// one panel per (machine, workload), one line per policy (`base` first, in grey).
pub fn coverage_figure(e: &Experiment, results: &[RunResult]) -> Figure {
    const COLOURS: [Color; 6] = [
        Color(0x44, 0x44, 0x44),
        Color(0xd6, 0x27, 0x28),
        Color(0x1f, 0x77, 0xb4),
        Color(0x2c, 0xa0, 0x2c),
        Color(0x94, 0x67, 0xbd),
        Color(0xff, 0x7f, 0x0e),
    ];
    let mut panels = Vec::new();
    for m in &e.machine {
        for wl in &e.workload {
            let runs: Vec<&RunResult> = results
                .iter()
                .filter(|r| r.machine == m.name && r.workload == wl.id)
                .collect();
            let xmax = runs.iter().map(|r| r.refs).max().unwrap_or(1).max(1) as f64;
            let mut p = Panel::new(
                format!("{} · {}", m.name, wl.id),
                Axis::linear("references").range(0.0, xmax),
                Axis::linear("huge-page coverage").range(0.0, 1.0).percent(),
            );
            for (i, r) in runs.iter().enumerate() {
                let points = r.samples.iter().map(|s| (s.refs as f64, s.huge_coverage)).collect();
                p.series.push(Series::new(
                    r.policy.clone(),
                    Style::Line,
                    COLOURS[i % COLOURS.len()],
                    points,
                ));
            }
            panels.push(p);
        }
    }
    let cols = e.workload.len().max(1);
    let rows = e.machine.len().max(1) as u32;
    let mut f = Figure::new(
        format!("{}: huge-page coverage over references", e.name),
        (cols as u32 * 420, rows * 300 + 40),
        panels,
    );
    f.columns = cols;
    f
}
