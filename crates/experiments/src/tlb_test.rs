//! The seed's tlb_test (shared/seeds/002_…) on a simulated core: N pages read in
//! sequence, load i at `buf + i·(4096 + offset)` wrapping at N, once with 4 KiB pages and
//! once with huge pages (`-huge`: the format's 2 MiB leaf, or the 1 MiB section on ARMv7
//! short descriptors), reporting what the readme's `perf stat` shows: time (here cycles)
//! per load and data-TLB misses per load. An experiment file (experiments/*.toml) names
//! the machine and the page counts; [`figure`] draws the result as the readme's runs read.

use std::path::Path;

use mmulab_model::addr::PageSize;
use mmulab_plot::{Axis, Figure, Panel, Series, Style, PALETTE};
use mmulab_sim::config::{self, OsSpec};
use mmulab_sim::{Machine, Session, Stats};
use mmulab_trace::{AccessKind, MemRef};
use serde::{Deserialize, Serialize};

use mmulab_probe::target::sim::{huge_size, DATA_CYCLES};
use mmulab_probe::{ProbeError, Result};

/// `[experiment]` of an experiment file.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlbTest {
    /// Must be `"tlb_test"`.
    pub kind: String,
    /// Plot title.
    pub title: String,
    /// Catalog machine or machine TOML path.
    pub machine: String,
    /// Page counts (N) to run.
    pub pages: Vec<usize>,
    /// Bytes added per page to the 4 KiB stride.
    pub offset: u64,
    /// Timed loads per run.
    pub loads: usize,
    /// `"4K"` and/or `"huge"`.
    pub backings: Vec<String>,
    /// `--set` overrides of the machine (`["tlb.l1d.replacement=random"]`); none by
    /// default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    experiment: TlbTest,
}

/// One run: N pages on one backing.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// `"4K"` or `"huge"`.
    pub backing: String,
    /// Page size the backing got.
    pub page_size: PageSize,
    /// N.
    pub pages: usize,
    /// Cycles per load: the data access plus translation.
    pub cycles_per_load: f64,
    /// L1 data-TLB misses per load (perf's dTLB-load-misses on the A15).
    pub l1_misses_per_load: f64,
    /// Page walks per load (misses of every TLB level).
    pub walks_per_load: f64,
}

/// The experiment's result.
#[derive(Clone, Debug, Serialize)]
pub struct TlbTestResult {
    /// The experiment as read.
    pub experiment: TlbTest,
    /// Every run, backing by backing, in page order.
    pub runs: Vec<Run>,
    /// False when a stop request (`mmulab_sim::request_stop`, Ctrl-C) ended the
    /// experiment between runs: `runs` holds the runs finished before it. Serialized
    /// only when false.
    #[serde(skip_serializing_if = "is_true")]
    pub complete: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

impl TlbTestResult {
    /// The run of `backing` at `pages`.
    pub fn get(&self, backing: &str, pages: usize) -> Option<&Run> {
        self.runs.iter().find(|r| r.backing == backing && r.pages == pages)
    }
}

/// Reads an experiment file.
pub fn load(path: &Path) -> Result<TlbTest> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ProbeError::Invalid(format!("cannot read {}: {e}", path.display())))?;
    parse(&text, path)
}

/// Parses an experiment file's text (`path` names it in errors).
pub fn parse(text: &str, path: &Path) -> Result<TlbTest> {
    let f: File = toml::from_str(text)
        .map_err(|e| ProbeError::Invalid(format!("{}: {}", path.display(), e.to_string().trim_end())))?;
    let x = f.experiment;
    if x.kind != "tlb_test" {
        return Err(ProbeError::Invalid(format!(
            "{}: experiment.kind = \"{}\"; only \"tlb_test\" is known",
            path.display(),
            x.kind
        )));
    }
    if x.pages.is_empty()
        || x.pages.iter().any(|&n| n == 0 || n > 1 << 16)
        || x.loads == 0
        || x.offset % 8 != 0
        || x.offset >= 4096
    {
        return Err(ProbeError::Invalid(format!(
            "{}: experiment.pages must be 1..=65536, loads positive, offset a multiple of 8 below 4096",
            path.display()
        )));
    }
    if let Some(b) = x.backings.iter().find(|b| *b != "4K" && *b != "huge") {
        return Err(ProbeError::Invalid(format!(
            "{}: experiment.backings: \"{b}\" is not \"4K\" or \"huge\"",
            path.display()
        )));
    }
    Ok(x)
}

/// Runs the experiment (`dir`: where relative machine paths start).
pub fn run(x: &TlbTest, dir: Option<&Path>) -> Result<TlbTestResult> {
    let cfg_path = dir.map(|d| d.join("experiment.toml"));
    let mut table = toml::Table::new();
    let mut m = toml::Table::new();
    m.insert("name".into(), toml::Value::String(x.machine.clone()));
    table.insert("machine".into(), toml::Value::Table(m));
    let spec =
        config::from_table(table, cfg_path.as_deref(), &x.sets).map_err(|e| ProbeError::Invalid(e.to_string()))?;
    let mut runs = Vec::new();
    let mut complete = true;
    'all: for backing in &x.backings {
        let size = if backing == "huge" {
            huge_size(&spec).ok_or_else(|| {
                ProbeError::Unavailable(format!("{} has no huge page of 1 or 2 MiB", spec.format.arch_name()))
            })?
        } else {
            spec.format.page_sizes()[0]
        };
        for &n in &x.pages {
            // A stop request (Ctrl-C) ends the experiment between runs, keeping the
            // runs done.
            if mmulab_sim::stop_requested() {
                complete = false;
                break 'all;
            }
            let mut s = spec.clone();
            s.os = OsSpec::Fixed(size);
            let mut machine = Session::new(s)
                .map_err(|e| ProbeError::Invalid(e.to_string()))?
                .into_machine();
            let base = 1u64 << 30;
            let refs: Vec<MemRef> = (0..n as u64)
                .map(|i| MemRef::new(base + i * (4096 + x.offset), AccessKind::Load, 4))
                .collect();
            let step = |m: &mut Machine, k: usize| -> Result<()> {
                for r in refs.iter().cycle().take(k) {
                    m.access(r).map_err(|e| ProbeError::Invalid(e.to_string()))?;
                }
                Ok(())
            };
            step(&mut machine, 2 * n)?;
            let before = Stats::collect(&machine);
            step(&mut machine, x.loads)?;
            let after = Stats::collect(&machine);
            let d = |f: &dyn Fn(&Stats) -> u64| (f(&after) - f(&before)) as f64 / x.loads as f64;
            let l1 = machine.spec().data_entry;
            runs.push(Run {
                backing: backing.clone(),
                page_size: size,
                pages: n,
                cycles_per_load: DATA_CYCLES + d(&|s| s.counters.tlb_cycles + s.counters.walk_cycles),
                l1_misses_per_load: d(&|s| s.levels[l1].counts.misses),
                walks_per_load: d(&|s| s.counters.walks),
            });
        }
    }
    Ok(TlbTestResult {
        experiment: x.clone(),
        runs,
        complete,
    })
}

/// The result as a table: one row per page count, a column pair per backing.
pub fn table(r: &TlbTestResult) -> String {
    let mut s = format!("{}\n\n{:>6}", r.experiment.title, "pages");
    for b in &r.experiment.backings {
        s += &format!(
            "  {:>16} {:>14} {:>12}",
            format!("{b} cycles/load"),
            "dTLB miss/load",
            "walks/load"
        );
    }
    s.push('\n');
    for &n in &r.experiment.pages {
        s += &format!("{n:>6}");
        for b in &r.experiment.backings {
            if let Some(x) = r.get(b, n) {
                s += &format!(
                    "  {:>16.2} {:>14.3} {:>12.3}",
                    x.cycles_per_load, x.l1_misses_per_load, x.walks_per_load
                );
            }
        }
        s.push('\n');
    }
    s
}

/// The runs drawn as the readme's perf runs read: per page count, a bar per backing of
/// cycles per load (top) and of data-TLB misses per load (bottom).
pub fn figure(r: &TlbTestResult) -> Figure {
    let pages = &r.experiment.pages;
    let names: Vec<String> = pages.iter().map(|p| p.to_string()).collect();
    let panels = [
        ("cycles per load", (|x: &Run| x.cycles_per_load) as fn(&Run) -> f64),
        ("L1 data-TLB misses per load", |x: &Run| x.l1_misses_per_load),
    ]
    .into_iter()
    .map(|(ylabel, val)| {
        let ymax = r.runs.iter().map(val).fold(0.0, f64::max).max(1e-9) * 1.15;
        let mut p = Panel::new(
            "",
            Axis::categories("pages touched (tlb_test N)", names.clone()),
            Axis::linear(ylabel).range(0.0, ymax),
        );
        for (k, b) in r.experiment.backings.iter().enumerate() {
            let size = r
                .runs
                .iter()
                .find(|x| &x.backing == b)
                .map(|x| x.page_size.to_string())
                .unwrap_or_default();
            let label = if b == "huge" {
                format!("-huge ({size} pages)")
            } else {
                format!("{size} pages")
            };
            // Group i is centred on x = i, where the axis names page count i.
            let points = pages
                .iter()
                .enumerate()
                .filter_map(|(i, &n)| Some((i as f64, val(r.get(b, n)?))))
                .collect();
            p.series.push(Series::new(label, Style::Bars, PALETTE[k % 2], points));
        }
        p
    })
    .collect();
    let mut f = Figure::new(r.experiment.title.clone(), (1100, 800), panels);
    f.row_heights = vec![460, 340];
    f
}

/// The table row: experiment files of kind `tlb_test` (experiments/cortex-a15-tlb-test.toml).
pub struct TlbTestExperiment;

impl crate::Experiment for TlbTestExperiment {
    fn name(&self) -> &'static str {
        "tlb_test"
    }
    fn source(&self) -> &'static str {
        "002"
    }
    fn about(&self) -> &'static str {
        "an experiment file of kind tlb_test (experiments/cortex-a15-tlb-test.toml): seed
002's tlb_test on a simulated core; prints its table, --plot draws PNG or SVG."
    }
    fn built_in(&self) -> bool {
        false
    }
    fn file_kind(&self) -> Option<&'static str> {
        Some("tlb_test")
    }
    fn run(&self, input: &crate::Input) -> anyhow::Result<crate::Output> {
        use anyhow::Context as _;
        let crate::Source::File { path, text } = input.source else {
            anyhow::bail!("tlb_test runs an experiment file (experiments/cortex-a15-tlb-test.toml)");
        };
        let x = parse(text, path)?;
        let r = run(&x, path.parent()).with_context(|| format!("running {}", path.display()))?;
        let mut out = crate::Output::new(table(&r), serde_json::to_value(&r)?);
        out.figure = input.figure.then(|| figure(&r));
        if !r.complete {
            // Each run: a warm-up lap of twice its pages, then the timed loads.
            out.incomplete = Some(r.runs.iter().map(|run| 2 * run.pages as u64 + x.loads as u64).sum());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Experiment as _;

    const FILE: &str = "[experiment]\nkind = \"tlb_test\"\ntitle = \"t\"\nmachine = \"cortex-a15\"\npages = [16, 40]\noffset = 16\nloads = 4000\nbackings = [\"4K\", \"huge\"]\n";

    #[test]
    fn a_file_runs_each_page_count_on_each_backing() {
        let options = crate::Options::default();
        let out = TlbTestExperiment
            .run(&crate::Input {
                source: crate::Source::File {
                    path: Path::new("t.toml"),
                    text: FILE,
                },
                options: &options,
                figure: false,
                pool: crate::Pool::new(1),
            })
            .unwrap();
        let runs = out.json["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4);
        // 16 pages fit the A15's 32-entry L1 data TLB: no misses after the warm-up.
        assert_eq!(runs[0]["l1_misses_per_load"], 0.0);
        assert!(out.incomplete.is_none() && out.figure.is_none());
        assert_eq!(out.table.lines().count(), 5, "{}", out.table);
    }

    #[test]
    fn bad_files_are_refused_with_the_key() {
        let e = parse(&FILE.replace("pages = [16, 40]", "pages = [0]"), Path::new("t.toml")).unwrap_err();
        assert!(e.to_string().contains("t.toml: experiment.pages"), "{e}");
        let e = parse(&FILE.replace("\"huge\"", "\"1G\""), Path::new("t.toml")).unwrap_err();
        assert!(e.to_string().contains("experiment.backings"), "{e}");
        let built_in = crate::Input {
            source: crate::Source::BuiltIn,
            options: &crate::Options::default(),
            figure: false,
            pool: crate::Pool::new(1),
        };
        assert!(TlbTestExperiment.run(&built_in).is_err());
    }
}
