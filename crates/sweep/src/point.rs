//! One point of a sweep: what to simulate, its identity (a hash of the resolved config,
//! the trace's content and the mmulab version), and the run itself — the same library
//! calls `mmulab sim` makes (config → `Machine` → `mmulab_sim::run` → `Stats::to_json`).

use crate::table::flatten;
use crate::SweepError;
use mmulab_sim::{config, Session, SessionOptions};
use mmulab_trace::{open_trace_with, workload, TraceOptions};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// What a point reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum Source {
    /// A trace file or drmemtrace directory.
    Trace(PathBuf),
    /// A synthetic workload spec (docs/workloads.md).
    Workload(String),
}

/// Trace reader options (as `mmulab sim`'s `--format`, `--prefetches`, `--cores`,
/// `--interleave`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ReadSpec {
    /// Format name or `auto`.
    pub format: String,
    /// drmemtrace prefetches as loads.
    pub prefetches: bool,
    /// `cpu` or `thread`.
    pub cores: String,
    /// `timestamp` or `rr:N` (`rr` alone: 1000); docs/trace-format.md, "Reader options".
    pub interleave: String,
}

impl ReadSpec {
    /// The library options this spec names, by the trace crate's one parser
    /// ([`TraceOptions::parse`]: the same meaning as `mmulab sim --interleave` and the
    /// other reader flags).
    pub fn options(&self) -> Result<TraceOptions, String> {
        TraceOptions::parse(&self.format, self.prefetches, &self.cores, &self.interleave).map_err(|e| e.to_string())
    }
}

/// One configuration to simulate.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Point {
    /// Position in the spec's order.
    pub index: usize,
    /// Hex blake3 of (resolved config, trace content id, mmulab version); empty until
    /// [`identify`].
    pub id: String,
    /// The hash of the point's fully resolved machine configuration
    /// ([`mmulab_sim::config::resolved::config_hash`]: FNV-1a 64 of its canonical JSON);
    /// empty until [`identify`], and for a point whose config does not resolve.
    #[serde(default)]
    pub config_hash: String,
    /// The parameter values of this point, in spec order.
    pub params: Vec<(String, serde_json::Value)>,
    /// Base machine (catalog name or file), if any.
    pub machine: Option<String>,
    /// Config file laid over the machine, if any.
    pub config: Option<PathBuf>,
    /// Config TOML text laid over the machine, as a config file is (the Python
    /// package's `config=` argument); used instead of `config` when given.
    #[serde(default)]
    pub config_toml: Option<String>,
    /// `--set` overrides, shared ones first.
    pub sets: Vec<String>,
    /// Trace or workload.
    pub source: Source,
    /// Trace reader options.
    pub read: ReadSpec,
}

/// The result of one point: its statistics flattened into columns, or its error.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// The point's id.
    pub id: String,
    /// The hash of the point's resolved configuration ([`Point::config_hash`]); the
    /// sweep's side file `OUTPUT.configs.jsonl` maps it to the configuration.
    #[serde(default)]
    pub config_hash: String,
    /// The point's index.
    pub index: usize,
    /// The parameter values.
    pub params: Vec<(String, serde_json::Value)>,
    /// The error, or `None` when the point finished.
    pub error: Option<String>,
    /// Wall-clock seconds the point took.
    pub seconds: f64,
    /// `mmulab sim --json` statistics, flattened (`tlb.l2.misses`…); empty on an error.
    pub stats: Vec<(String, serde_json::Value)>,
    /// False when the run was stopped (Ctrl-C) before the end: not a result to keep.
    pub complete: bool,
}

impl Point {
    /// The validated machine of this point, exactly as `mmulab sim` builds it.
    pub fn spec(&self) -> Result<config::MachineSpec, SweepError> {
        self.resolved().map(|r| r.spec)
    }

    /// The machine of this point with its fully resolved configuration
    /// ([`config::Resolved`]: what `mmulab sim --print-config` prints for it).
    pub fn resolved(&self) -> Result<config::Resolved, SweepError> {
        let r = match &self.config_toml {
            Some(text) => inline(text, self.machine.as_deref(), &self.sets),
            None => config::resolve(self.machine.as_deref(), self.config.as_deref(), &self.sets),
        };
        r.map_err(|e| SweepError::Point(e.to_string()))
    }

    /// Runs the point; an error is kept in the row, never raised.
    pub fn run(&self) -> Row {
        let start = Instant::now();
        let mut row = Row {
            id: self.id.clone(),
            config_hash: self.config_hash.clone(),
            index: self.index,
            params: self.params.clone(),
            error: None,
            seconds: 0.0,
            stats: Vec::new(),
            complete: true,
        };
        match self.simulate() {
            Ok(v) => {
                row.complete = v.get("complete").is_none();
                row.stats = flatten(&v);
            }
            Err(e) => row.error = Some(e),
        }
        row.seconds = start.elapsed().as_secs_f64();
        row
    }

    /// The point's reference stream for a machine of `spec` (a trace opened as `mmulab
    /// sim` opens it, or the workload), with the trace file's captured metadata if any.
    pub fn open(
        &self,
        spec: &config::MachineSpec,
    ) -> Result<(Box<dyn mmulab_trace::TraceSource>, Option<mmulab_trace::TraceMeta>), String> {
        Ok(match &self.source {
            Source::Trace(path) => {
                let opts = self.read.options()?;
                let src = open_trace_with(path, &opts).map_err(|e| e.to_string())?;
                (src, mmulab_sim::trace_file_meta(path))
            }
            Source::Workload(w) => (
                workload::parse_for(w, spec.format.va_bits())
                    .map_err(|e| e.to_string())?
                    .0,
                None,
            ),
        })
    }

    /// The statistics JSON `mmulab sim --json` prints for this point (without `source`).
    pub fn simulate(&self) -> Result<serde_json::Value, String> {
        let spec = self.spec().map_err(|e| e.to_string())?;
        let (mut src, meta) = self.open(&spec)?;
        let opts = SessionOptions {
            meta: meta.as_ref(),
            ..Default::default()
        };
        let stats = Session::simulate(spec, src.as_mut(), opts).map_err(|e| e.to_string())?;
        Ok(stats.to_json())
    }
}

/// A config given as TOML text, with a machine under it as `--machine` puts one
/// (`config::load_machine`'s rule: the text's own `[machine] name` is replaced).
fn inline(text: &str, machine: Option<&str>, sets: &[String]) -> Result<config::Resolved, mmulab_sim::SimError> {
    let mut table: toml::Table = toml::from_str(text)
        .map_err(|e| mmulab_sim::SimError::Config(format!("config: {}", e.to_string().trim_end())))?;
    if let Some(m) = machine {
        match table
            .entry("machine")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(t) => {
                t.insert("name".into(), toml::Value::String(m.into()));
            }
            _ => return Err(mmulab_sim::SimError::Config("config: `machine` must be a table".into())),
        }
    }
    // `from_table` names a config without a path "built-in default config".
    config::resolve_table(table, None, sets).map_err(|e| {
        mmulab_sim::SimError::Config(e.to_string().replacen("built-in default config", "the config given", 1))
    })
}

/// Gives every point its id: blake3 over the resolved machine (its `Debug` form, which
/// names every resolved field), the trace's content id (blake3 of its bytes; a
/// workload's spec), the reader options and the mmulab version. A point whose config
/// does not resolve is keyed by its parameters instead (it will fail when run, with the
/// same message). Returns the number of points whose config does not resolve and the
/// first such error. Runs on every core ([`identify_with`]).
pub fn identify(points: &mut [Point]) -> Result<(usize, Option<String>), SweepError> {
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    identify_with(points, jobs, &AtomicUsize::new(0))
}

/// [`identify`] on `jobs` threads (resolving a config is the cost: about 0.2 ms a
/// point), adding each identified point to `done` as it goes (a progress line reads it).
/// The ids and the first error are the same for any `jobs`.
pub fn identify_with(
    points: &mut [Point],
    jobs: usize,
    done: &AtomicUsize,
) -> Result<(usize, Option<String>), SweepError> {
    identify_in(points, jobs, done, &mut HashMap::new())
}

/// [`identify_with`] with the content ids of traces hashed before (`content`, by path;
/// the traces new to it are hashed and added): a sweep identified batch by batch hashes
/// each trace once.
pub fn identify_in(
    points: &mut [Point],
    jobs: usize,
    done: &AtomicUsize,
    content: &mut HashMap<PathBuf, String>,
) -> Result<(usize, Option<String>), SweepError> {
    // Each trace is hashed once, before the points are shared out.
    for p in points.iter() {
        if let Source::Trace(path) = &p.source {
            if !content.contains_key(path) {
                content.insert(path.clone(), content_id(path)?);
            }
        }
    }
    let chunk = points.len().div_ceil(jobs.max(1)).max(1);
    let results: Vec<(usize, Option<(usize, String)>)> = std::thread::scope(|s| {
        let handles: Vec<_> = points
            .chunks_mut(chunk)
            .map(|part| {
                let content = &*content;
                s.spawn(move || {
                    let mut bad = 0;
                    let mut first = None;
                    for p in part.iter_mut() {
                        if let Err(e) = identify_one(p, content) {
                            bad += 1;
                            first.get_or_insert((p.index, e));
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    (bad, first)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("identify thread"))
            .collect()
    });
    let bad = results.iter().map(|r| r.0).sum();
    let first = results.into_iter().filter_map(|r| r.1).min_by_key(|f| f.0).map(|f| f.1);
    Ok((bad, first))
}

/// Sets `p.id` (and `p.config_hash` when its config resolves); the resolution error, if
/// any.
fn identify_one(p: &mut Point, content: &HashMap<PathBuf, String>) -> Result<(), String> {
    let source = match &p.source {
        Source::Trace(path) => format!("trace:{}", content[path]),
        Source::Workload(w) => format!("workload:{w}"),
    };
    let mut error = None;
    let resolved = match p.resolved() {
        Ok(r) => {
            p.config_hash = r.hash();
            format!("{:?}", r.spec)
        }
        Err(e) => {
            error = Some(e.to_string());
            format!(
                "unresolved:{:?}|{:?}|{:?}|{:?}",
                p.machine, p.config, p.config_toml, p.sets
            )
        }
    };
    let mut h = blake3::Hasher::new();
    for part in [
        resolved.as_str(),
        source.as_str(),
        &format!("{:?}", p.read),
        env!("CARGO_PKG_VERSION"),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    p.id = h.finalize().to_hex()[..32].to_string();
    error.map_or(Ok(()), Err)
}

/// The side file of a sweep's results (`OUTPUT.configs.jsonl`, docs/sweep.md): one JSON
/// line `{"config_hash": "…", "config": {…}}` per distinct resolved configuration of
/// `points` (identified) not in `seen`, in the order of the first point that has it; each
/// one's hash is added to `seen`, so a sweep written batch by batch names each
/// configuration once. A results row's `config_hash` names its line. Points whose config
/// does not resolve have none.
pub fn configs_jsonl(points: &[Point], seen: &mut std::collections::HashSet<String>) -> String {
    let mut out = String::new();
    for p in points {
        // Only a configuration not seen yet is resolved again (about 0.2 ms).
        if p.config_hash.is_empty() || seen.contains(&p.config_hash) {
            continue;
        }
        let Ok(r) = p.resolved() else { continue };
        seen.insert(p.config_hash.clone());
        let line = serde_json::json!({ "config_hash": p.config_hash, "config": r.to_json() });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// blake3 of a file's bytes, or of a directory's files (names and bytes, in name order).
fn content_id(path: &Path) -> Result<String, SweepError> {
    let mut h = blake3::Hasher::new();
    hash_path(path, Path::new(""), &mut h)
        .map_err(|e| SweepError::Spec(format!("cannot read trace {}: {e}", path.display())))?;
    Ok(h.finalize().to_hex().to_string())
}

fn hash_path(path: &Path, rel: &Path, h: &mut blake3::Hasher) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            hash_path(&e.path(), &rel.join(e.file_name()), h)?;
        }
        return Ok(());
    }
    let name = rel.to_string_lossy();
    h.update(&(name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(())
}
