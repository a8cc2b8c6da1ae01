//! The live kernel as the oracle (issue 48, docs/kernel-check.md): scripted scenarios
//! (scenarios/*.kc, script.rs) run natively in a child process while the kernel's own
//! counters are read (native.rs, host.rs), and replayed on mmulab's Linux THP/mTHP model
//! configured from the same live settings (replay.rs); the two are compared counter by
//! counter.
//!
//! Compared exactly: `thp_fault_alloc`, `thp_fault_fallback`, `thp_split_pmd`,
//! `thp_collapse_alloc`, `thp_deferred_split_page`, the per-size mTHP
//! `anon_fault_alloc`, `anon_fault_fallback` and `split_deferred` of every size either
//! side counted, whether each mapping of a whole number of PMDs was PMD-aligned
//! (`thp_get_unmapped_area`), and per region at every marked point smaps' `Rss`,
//! `AnonHugePages` and VMA count. Shown, not compared: `thp_zero_page_alloc` (the huge
//! zero page is shared system-wide: whether a scenario allocates it depends on whether
//! another process holds it).

pub mod host;
pub mod native;
pub mod program;
pub mod replay;
pub mod script;

pub use native::{catch_interrupts, child_entry};

use script::{Op, Script};
use std::path::{Path, PathBuf};

/// The scenarios shipped with mmulab: (file name, text).
pub fn builtin() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "kc") {
                if let Ok(t) = std::fs::read_to_string(&p) {
                    v.push((p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), t));
                }
            }
        }
    }
    v.sort();
    v
}

/// One compared (or shown) value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The counter's name (`thp_fault_alloc`, `mark1.A.AnonHugePages_kB`, …).
    pub name: String,
    /// The kernel's value.
    pub kernel: u64,
    /// mmulab's value.
    pub mmulab: u64,
    /// False for a value shown but not compared.
    pub compared: bool,
}

/// One scenario's outcome.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The rows (empty if skipped).
    pub rows: Vec<Row>,
    /// Why it was skipped or failed, if it was.
    pub skipped: Option<String>,
    /// Native runs it took (repeated when another process moved a counter).
    pub runs: u32,
}

/// Native runs at most per scenario.
pub const MAX_RUNS: u32 = 6;

impl Outcome {
    /// True if it ran and every compared row is equal.
    pub fn equal(&self) -> bool {
        self.skipped.is_none() && self.rows.iter().all(|r| !r.compared || r.kernel == r.mmulab)
    }
}

const COUNTERS: [&str; 7] = [
    "thp_fault_alloc",
    "thp_fault_fallback",
    "thp_split_pmd",
    "thp_collapse_alloc",
    "thp_deferred_split_page",
    "thp_split_page",
    "thp_underused_split_page",
];

fn rows(script: &Script, nat: &native::NativeRun, sim: &replay::ModelRun) -> Vec<Row> {
    let get = |m: &std::collections::BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let mut v: Vec<Row> = COUNTERS
        .iter()
        .map(|&k| Row {
            name: k.into(),
            kernel: get(&nat.counters, k),
            mmulab: get(&sim.counters, k),
            compared: true,
        })
        .collect();
    let mut per_size: Vec<&String> = nat
        .counters
        .iter()
        .chain(sim.counters.iter())
        .filter(|(k, n)| k.starts_with("hugepages-") && **n > 0)
        .map(|(k, _)| k)
        .collect();
    per_size.sort_by_key(|k| {
        let kb: u64 = k[10..].split("kB").next().and_then(|x| x.parse().ok()).unwrap_or(0);
        (kb, (*k).clone())
    });
    per_size.dedup();
    for k in per_size {
        v.push(Row {
            name: k.clone(),
            kernel: get(&nat.counters, k),
            mmulab: get(&sim.counters, k),
            compared: true,
        });
    }
    v.push(Row {
        name: "thp_zero_page_alloc".into(),
        kernel: get(&nat.counters, "thp_zero_page_alloc"),
        mmulab: get(&sim.counters, "thp_zero_page_alloc"),
        compared: false,
    });
    for op in &script.ops {
        if let Op::Map { r, len, at: None } = *op {
            if len % (2 << 20) == 0 {
                v.push(Row {
                    name: format!("{}.pmd_aligned", script.regions[r]),
                    kernel: (nat.bases[r] % (2 << 20) == 0) as u64,
                    mmulab: 1,
                    compared: true,
                });
            }
        }
    }
    let n = nat.marks.len();
    for (i, (k, m)) in nat.marks.iter().zip(&sim.marks).enumerate() {
        let mark = if i + 1 == n {
            "end".to_string()
        } else {
            format!("mark{}", i + 1)
        };
        for (r, name) in script.regions.iter().enumerate() {
            let (k, m) = (k[r], m[r]);
            for (what, a, b, compared) in [
                ("Rss_kB", k.rss_kb, m.rss_kb, !k.merged),
                ("AnonHugePages_kB", k.anon_huge_kb, m.anon_huge_kb, true),
                ("vmas", k.vmas, m.vmas, !k.merged),
            ] {
                v.push(Row {
                    name: format!("{mark}.{name}.{what}"),
                    kernel: a,
                    mmulab: b,
                    compared,
                });
            }
        }
    }
    v
}

/// Runs one scenario both ways; `exe` is an executable whose `main` calls
/// [`child_entry`]. Skips (with the reason) what this kernel or user cannot run.
pub fn check(name: &str, text: &str, exe: &Path) -> Outcome {
    let mut out = Outcome {
        name: name.to_string(),
        ..Default::default()
    };
    let script = match Script::parse(name, text) {
        Ok(s) => s,
        Err(e) => {
            out.skipped = Some(format!("bad script: {e}"));
            return out;
        }
    };
    out.description = script.description.clone();
    let settings = match host::Settings::apply(&script.settings) {
        Ok(s) => s,
        Err(e) => {
            out.skipped = Some(format!("skipped: {e}"));
            return out;
        }
    };
    let r = check_with(&script, text, exe, &mut out);
    drop(settings);
    if let Err(e) = r {
        out.rows.clear();
        out.skipped = Some(e);
    }
    out
}

fn check_with(script: &Script, text: &str, exe: &Path, out: &mut Outcome) -> Result<(), String> {
    let host = host::HostThp::read()?;
    let mut disturbed = false;
    for attempt in 1..=MAX_RUNS {
        out.runs = attempt;
        let nat = native::run(script, text, exe)?;
        if native::interrupted() {
            return Err("interrupted".into());
        }
        let sim = replay::run(script, &host, &nat.bases).map_err(|e| format!("model: {e}"))?;
        out.rows = rows(script, &nat, &sim);
        disturbed = nat.disturbed;
        // Another process moved a counter (seen in the quiet windows), or the result
        // differs (perhaps for the same reason, unseen): run it again.
        if !nat.disturbed && out.rows.iter().all(|r| !r.compared || r.kernel == r.mmulab) {
            return Ok(());
        }
    }
    if disturbed && out.rows.iter().any(|r| r.compared && r.kernel != r.mmulab) {
        return Err(format!(
            "not compared: other processes moved THP counters around each of {MAX_RUNS} runs (a busy machine; with a size `always`, every process's faults count)"
        ));
    }
    Ok(())
}

/// Runs `names` (all built-in scenarios if empty; a name may be a path to a .kc file).
pub fn check_all(names: &[String], exe: &Path) -> Result<Vec<Outcome>, String> {
    let all = builtin();
    let mut picked: Vec<(String, String)> = Vec::new();
    if names.is_empty() {
        picked = all;
    } else {
        for n in names {
            if let Some(s) = all.iter().find(|(a, _)| a == n) {
                picked.push(s.clone());
            } else {
                let p = PathBuf::from(n);
                let t = std::fs::read_to_string(&p)
                    .map_err(|e| format!("{n}: no built-in scenario of that name, and as a file: {e}"))?;
                picked.push((p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), t));
            }
        }
    }
    let mut out = Vec::new();
    for (n, t) in picked {
        if native::interrupted() {
            break;
        }
        out.push(check(&n, &t, exe));
    }
    Ok(out)
}

/// The table: per scenario and row, kernel, mmulab, equal or not; then a summary line.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        let verdict = match &o.skipped {
            Some(r) => format!("SKIPPED ({r})"),
            None if o.equal() => "equal".into(),
            None => "DIFFERENT".into(),
        };
        s += &format!("{}  [{}]  {}\n", o.name, verdict, o.description);
        for r in &o.rows {
            let eq = if !r.compared {
                "(shown, not compared)"
            } else if r.kernel == r.mmulab {
                "equal"
            } else {
                "DIFFERENT"
            };
            s += &format!("    {:<40} {:>10} {:>10}  {eq}\n", r.name, r.kernel, r.mmulab);
        }
    }
    let ran = outcomes.iter().filter(|o| o.skipped.is_none()).count();
    let eq = outcomes.iter().filter(|o| o.equal()).count();
    s += &format!(
        "{} scenarios: {ran} ran, {eq} exactly equal, {} different, {} skipped\n",
        outcomes.len(),
        ran - eq,
        outcomes.len() - ran
    );
    s
}

/// `{"scenarios": [{"name", "equal", "counters": [{"name", "kernel", "mmulab"}…]}…]}`.
pub fn json(outcomes: &[Outcome]) -> serde_json::Value {
    let sc: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            let rows: Vec<serde_json::Value> = o
                .rows
                .iter()
                .map(|r| serde_json::json!({"name": r.name, "kernel": r.kernel, "mmulab": r.mmulab, "compared": r.compared}))
                .collect();
            serde_json::json!({"name": o.name, "equal": o.equal(), "skipped": o.skipped, "runs": o.runs, "counters": rows})
        })
        .collect();
    serde_json::json!({ "scenarios": sc })
}
