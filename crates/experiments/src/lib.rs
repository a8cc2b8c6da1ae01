//! mmulab-experiments: the reproductions of the source documents (shared/seeds/), each an
//! [`Experiment`], all in one table, [`EXPERIMENTS`].
//!
//! An experiment has a name (`mmulab reproduce NAME`), the source it reproduces (a seed
//! file's id, e.g. `"001"`), the options it takes beyond `--json` and `--plot`, and a run
//! that returns an [`Output`]: a table (text), an optional figure, and one JSON object.
//! Some also run experiment files (`experiments/*.toml`) of a kind they declare
//! (`tlb_test`, `os_policies`). The CLI's `reproduce` command, its `--list` and its help
//! text are generated from the table; [`resolve`] decides what an argument means: a name
//! in the table always means the built-in experiment, and anything else is read only as
//! an experiment file, whatever the working directory holds.
//!
//! Jobs run on the [`Pool`] the caller hands over (`mmulab_sim::pool`), the one sweeps
//! use too. A stop request (`mmulab_sim::request_stop`, Ctrl-C) ends a run at its next
//! batch; an experiment cut short says so in [`Output::incomplete`]. An experiment may
//! say on standard error what it is about to run (how many runs, on how many threads).
//!
//! # Adding an experiment
//!
//! 1. One file, `src/NAME.rs`: the model runs, the result type (serialisable: it is the
//!    JSON), its table and figure, and a unit struct implementing [`Experiment`]
//!    (`name`, `source`, `about`, `options` if it takes any, `run`).
//! 2. One row in [`EXPERIMENTS`] (and its `mod` line here).
//! 3. Its test, beside its code (`#[cfg(test)]` in the file) or in `tests/`: a small
//!    hand-checked case and the shape of the JSON.
//! 4. Its doc: a page or section in docs/ with the `mmulab reproduce NAME` command (the
//!    suite runs every command the docs show).
//!
//! The CLI needs no change: `mmulab reproduce NAME`, `--list` and `--help` follow the
//! table. An option only one experiment takes goes in [`Options`] and in that
//! experiment's [`Experiment::options`]; every other experiment refuses it.
#![deny(missing_docs)]

use std::path::Path;

use anyhow::{bail, Context, Result};
use mmulab_plot::Figure;
pub use mmulab_sim::pool::Pool;

pub mod freebsd;
pub mod kvm_split;
pub mod nested;
pub mod numa_emu;
pub mod tlb_test;
pub mod v3d;

/// Every experiment, in the order `reproduce --list` and `--help` show them.
pub static EXPERIMENTS: &[&dyn Experiment] = &[
    &freebsd::FreebsdExperiment,
    &kvm_split::KvmSplitExperiment,
    &nested::NestedExperiment,
    &numa_emu::NumaEmuExperiment,
    &v3d::V3dCapacityExperiment,
    &v3d::V3dExperiment,
    &tlb_test::TlbTestExperiment,
];

/// A reproduction of a source document.
pub trait Experiment: Sync {
    /// Its name: `mmulab reproduce NAME` (for an experiment that only runs files, the
    /// kind of those files).
    fn name(&self) -> &'static str;
    /// The source it reproduces: a seed file's id (`"001"`), or a short phrase where it
    /// is not a seed.
    fn source(&self) -> &'static str;
    /// What it does, for `--help` (a paragraph, plain lines).
    fn about(&self) -> &'static str;
    /// The options it takes beyond `--json` and `--plot`.
    fn options(&self) -> &'static [Opt] {
        &[]
    }
    /// Whether it draws a figure (takes `--plot`).
    fn draws(&self) -> bool {
        true
    }
    /// Whether `mmulab reproduce NAME` runs it (false: it only runs files).
    fn built_in(&self) -> bool {
        true
    }
    /// The experiment-file kind it runs (`kind = "…"` in experiments/*.toml), if any.
    fn file_kind(&self) -> Option<&'static str> {
        None
    }
    /// The references its runs will simulate, when known before it runs (progress).
    fn planned_refs(&self, _input: &Input) -> Result<Option<u64>> {
        Ok(None)
    }
    /// Runs it.
    fn run(&self, input: &Input) -> Result<Output>;
}

/// An option an experiment takes.
#[derive(Clone, Copy, Debug)]
pub struct Opt {
    /// The flag (`--quick`).
    pub flag: &'static str,
    /// Its value's name, if it takes one (`GRANULE=SIZE`).
    pub value: Option<&'static str>,
}

/// The experiment-specific options as given (each belongs to the experiments whose
/// [`Experiment::options`] name it).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--sensitivity` (freebsd).
    pub sensitivity: bool,
    /// `--quick` (numa-emu).
    pub quick: bool,
    /// `--eager-split-chunk-size GRANULE=SIZE`, repeatable (kvm-split).
    pub eager_split_chunk_size: Vec<String>,
}

impl Options {
    /// The flags given.
    pub fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.sensitivity {
            v.push("--sensitivity");
        }
        if self.quick {
            v.push("--quick");
        }
        if !self.eager_split_chunk_size.is_empty() {
            v.push("--eager-split-chunk-size");
        }
        v
    }
}

/// The JSON object `mmulab reproduce --json` prints: the experiment's own `json` with,
/// at its top level, `mmulab` (`provenance`: the version and git commit of the binary)
/// and `experiment`: its `name`, the `source` document it reproduces, the experiment
/// `file` (null when built in), the `options` given, and `config`, the experiment file's
/// parameters as JSON (null when built in: the built-in parameters are those of the
/// version and commit in `mmulab`). An experiment whose JSON is an array (freebsd) has
/// it under `rows`.
pub fn with_provenance(
    json: serde_json::Value,
    e: &dyn Experiment,
    input: &Input,
    provenance: serde_json::Value,
) -> serde_json::Value {
    let (file, config) = match input.source {
        Source::BuiltIn => (serde_json::Value::Null, serde_json::Value::Null),
        Source::File { path, text } => (
            path.display().to_string().into(),
            toml::from_str::<toml::Table>(text)
                .ok()
                .and_then(|t| serde_json::to_value(t).ok())
                .unwrap_or(serde_json::Value::Null),
        ),
    };
    let o = input.options;
    let experiment = serde_json::json!({
        "name": e.name(),
        "source": e.source(),
        "file": file,
        "options": {
            "sensitivity": o.sensitivity,
            "quick": o.quick,
            "eager_split_chunk_size": o.eager_split_chunk_size,
            "plot": input.figure,
        },
        "config": config,
    });
    let mut v = match json {
        serde_json::Value::Object(m) => serde_json::Value::Object(m),
        other => serde_json::json!({ "rows": other }),
    };
    v["mmulab"] = provenance;
    v["experiment"] = experiment;
    v
}

/// Where an experiment's parameters come from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// Its built-in parameters.
    BuiltIn,
    /// An experiment file: its path and text.
    File {
        /// The path as given.
        path: &'a Path,
        /// Its text.
        text: &'a str,
    },
}

/// What a run gets.
#[derive(Clone, Debug)]
pub struct Input<'a> {
    /// Built in or a file.
    pub source: Source<'a>,
    /// The options (checked against [`Experiment::options`] by [`check_options`]).
    pub options: &'a Options,
    /// Whether a figure is wanted (`--plot`); an experiment may skip drawing otherwise.
    pub figure: bool,
    /// Where jobs run.
    pub pool: Pool,
}

/// What a run returns.
pub struct Output {
    /// The table `mmulab reproduce` prints.
    pub table: String,
    /// The figure `--plot` draws (when the experiment draws and one was wanted).
    pub figure: Option<Figure>,
    /// The one JSON object `--json` prints.
    pub json: serde_json::Value,
    /// `Some(references simulated)` when a stop request cut the run short.
    pub incomplete: Option<u64>,
}

impl Output {
    /// An output of `table` and `json`, complete, without figure or notes.
    pub fn new(table: String, json: serde_json::Value) -> Output {
        Output {
            table,
            figure: None,
            json,
            incomplete: None,
        }
    }
}

/// The experiment `name` names (built-in ones only).
pub fn find(name: &str) -> Option<&'static dyn Experiment> {
    EXPERIMENTS.iter().copied().find(|e| e.built_in() && e.name() == name)
}

/// The experiment that runs files of `kind`.
pub fn for_kind(kind: &str) -> Option<&'static dyn Experiment> {
    EXPERIMENTS.iter().copied().find(|e| e.file_kind() == Some(kind))
}

/// The experiment-file kinds, for messages.
pub fn kinds() -> Vec<&'static str> {
    EXPERIMENTS.iter().filter_map(|e| e.file_kind()).collect()
}

/// The names `mmulab reproduce NAME` takes.
pub fn names() -> Vec<&'static str> {
    EXPERIMENTS.iter().filter(|e| e.built_in()).map(|e| e.name()).collect()
}

/// What `mmulab reproduce ARG` runs.
pub enum Target {
    /// A built-in experiment.
    Named(&'static dyn Experiment),
    /// An experiment file, run by the experiment of its kind.
    File {
        /// The experiment.
        experiment: &'static dyn Experiment,
        /// The kind the file declares.
        kind: String,
        /// The file's text.
        text: String,
    },
}

/// Resolves an argument: a name in the table is that experiment, always; anything else
/// is read as an experiment file and run by the experiment of the kind it declares.
pub fn resolve(arg: &Path) -> Result<Target> {
    if let Some(e) = arg.to_str().and_then(find) {
        return Ok(Target::Named(e));
    }
    let origin = arg.display().to_string();
    if !arg.exists() {
        bail!(
            "`{origin}` is neither an experiment ({}) nor an experiment file (FILE.toml); `mmulab reproduce --list` lists them",
            names().join(", ")
        );
    }
    let text = std::fs::read_to_string(arg).with_context(|| format!("cannot read experiment file {origin}"))?;
    let kind = file_kind(&text, &origin)?;
    let Some(experiment) = for_kind(&kind) else {
        bail!(
            "{origin}: experiment kind \"{kind}\" is not known; use one of {}",
            kinds().join(", ")
        );
    };
    Ok(Target::File { experiment, kind, text })
}

/// The kind an experiment file declares: a top-level `kind` (policy experiments) or
/// `[experiment] kind` (tlb_test). A file that declares none, or one that is not TOML,
/// is an error naming `origin` and what to add.
pub fn file_kind(text: &str, origin: &str) -> Result<String> {
    let t: toml::Table = toml::from_str(text).map_err(|e| anyhow::anyhow!("{origin}: {}", e.to_string().trim_end()))?;
    let kind = t
        .get("kind")
        .or_else(|| t.get("experiment").and_then(|e| e.get("kind")))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{origin}: the experiment declares no kind: add `kind = \"{}\"` (a [[workload]] × [[machine]] policy experiment, like experiments/freebsd.toml) or `[experiment] kind = \"tlb_test\"` (like experiments/cortex-a15-tlb-test.toml)",
                freebsd::KIND
            )
        })?;
    kind.as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("{origin}: kind must be a string, one of {}", kinds().join(", ")))
}

/// Refuses an option `e` does not take, and `--plot` for one that draws nothing, with a
/// message naming the experiments that take it.
pub fn check_options(e: &dyn Experiment, options: &Options, plot: bool) -> Result<()> {
    for flag in options.given() {
        if !e.options().iter().any(|o| o.flag == flag) {
            let takers: Vec<String> = EXPERIMENTS
                .iter()
                .filter(|x| x.options().iter().any(|o| o.flag == flag))
                .map(|x| format!("`mmulab reproduce {}`", x.name()))
                .collect();
            bail!("{flag} belongs to {}; drop it here", takers.join(" and "));
        }
    }
    if plot && !e.draws() {
        bail!("{} draws no picture; drop --plot", e.name());
    }
    Ok(())
}

/// The form line of `e` in the help: `mmulab reproduce NAME [--plot F.png|F.svg] [--json] …`.
pub fn form(e: &dyn Experiment) -> String {
    let mut s = format!("mmulab reproduce {}", if e.built_in() { e.name() } else { "FILE.toml" });
    if e.draws() {
        s += " [--plot F.png|F.svg]";
    }
    s += " [--json]";
    for o in e.options() {
        match o.value {
            Some(v) => s += &format!(" [{} {v}]...", o.flag),
            None => s += &format!(" [{}]", o.flag),
        }
    }
    s
}

/// The help's list of forms, generated from the table.
pub fn help() -> String {
    let mut s = format!(
        "Forms (a NAME always means the built-in experiment; anything else is read as an
experiment file, experiments/*.toml, run by the experiment of the kind it declares: {}):\n",
        kinds().join(", ")
    );
    for e in EXPERIMENTS {
        s += &format!("  {}\n", form(*e));
        for line in e.about().lines() {
            s += &format!("      {line}\n");
        }
    }
    s += "  mmulab reproduce --list\n      the experiments, one a line: name, source, options.";
    s
}

/// `reproduce --list`: one line per experiment.
pub fn list() -> String {
    let mut s = String::new();
    for e in EXPERIMENTS {
        let name = if e.built_in() {
            e.name().to_string()
        } else {
            format!("FILE.toml ({})", e.file_kind().unwrap_or(e.name()))
        };
        let src = e.source();
        let src = if src.chars().all(|c| c.is_ascii_digit()) {
            format!("seed {src}")
        } else {
            src.to_string()
        };
        let mut opts: Vec<&str> = e.options().iter().map(|o| o.flag).collect();
        if !e.draws() {
            opts.push("(no --plot)");
        }
        let also = match (e.built_in(), e.file_kind()) {
            (true, Some(k)) => format!("  (also files of kind {k})"),
            _ => String::new(),
        };
        s += format!("{name:<20} {src:<24} {}{also}", opts.join(" ")).trim_end();
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_row_is_found_by_its_name_or_kind() {
        let mut seen = std::collections::BTreeSet::new();
        for e in EXPERIMENTS {
            assert!(seen.insert(e.name()), "{} twice", e.name());
            if e.built_in() {
                assert!(std::ptr::eq(
                    find(e.name()).unwrap() as *const _ as *const u8,
                    *e as *const _ as *const u8
                ));
            } else {
                assert!(e.file_kind().is_some(), "{} runs neither by name nor by file", e.name());
            }
        }
        for k in kinds() {
            assert!(for_kind(k).is_some());
        }
    }

    #[test]
    fn a_name_in_the_table_is_the_built_in_experiment_before_any_file() {
        // `resolve` looks the name up before it looks at the file system, so a file of
        // that name in the working directory changes nothing (the CLI's test
        // reproduce_help.rs runs this in a directory holding such a file).
        for name in names() {
            assert!(matches!(resolve(Path::new(name)).unwrap(), Target::Named(e) if e.name() == name));
        }
    }

    #[test]
    fn an_unknown_name_is_an_error_naming_the_experiments() {
        let e = resolve(Path::new("no-such-experiment")).err().unwrap().to_string();
        assert!(
            e.contains("freebsd") && e.contains("v3d-capacity") && e.contains("--list"),
            "{e}"
        );
    }

    #[test]
    fn options_are_refused_by_experiments_that_do_not_take_them() {
        let quick = Options {
            quick: true,
            ..Options::default()
        };
        let e = check_options(find("v3d").unwrap(), &quick, false)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--quick belongs to `mmulab reproduce numa-emu`; drop it here");
        check_options(find("numa-emu").unwrap(), &quick, false).unwrap();
        let e = check_options(find("v3d-capacity").unwrap(), &Options::default(), true).unwrap_err();
        assert_eq!(e.to_string(), "v3d-capacity draws no picture; drop --plot");
    }

    #[test]
    fn help_and_list_name_every_experiment() {
        let (h, l) = (help(), list());
        for e in EXPERIMENTS {
            assert!(h.contains(&form(*e)), "{}", form(*e));
            assert!(l.contains(e.name()) || l.contains(e.file_kind().unwrap()));
        }
    }
}
