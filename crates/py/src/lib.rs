//! The Python package `mmulab`'s native module (`mmulab._native`): thin bindings over the
//! same library calls the CLI makes (docs/python.md). Values cross as JSON or TOML text;
//! the Python side (python/mmulab/__init__.py) turns them into dicts and DataFrames.
//! Every simulation runs with the GIL released.

use mmulab_sweep::{Executor, Point, Pool, Source, Spec, Table};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

fn value_err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// One simulation: `config_toml` (or the built-in default machine) with `machine` under
/// it and `sets` applied, on a trace or a workload. Returns the JSON of `mmulab sim --json`.
#[pyfunction]
#[pyo3(signature = (config_toml, machine, sets, workload, trace, format))]
fn sim(
    py: Python<'_>,
    config_toml: Option<String>,
    machine: Option<String>,
    sets: Vec<String>,
    workload: Option<String>,
    trace: Option<String>,
    format: String,
) -> PyResult<String> {
    let point = one_point(config_toml, machine, sets, workload, trace, format)?;
    point.spec().map_err(value_err)?;
    let (v, interrupted) = interruptible(py, || point.simulate())?;
    let v = v.map_err(PyRuntimeError::new_err)?;
    // Ctrl-C: the statistics of what ran travel with the KeyboardInterrupt (the Python
    // side attaches them as `e.stats`).
    with_partial(
        py,
        v.to_string(),
        interrupted,
        "the statistics of the references simulated are attached as .stats (complete: false)",
    )
}

/// Runs `f` with the GIL released on a thread of its own while this thread looks for
/// Python signals every 100 ms. A signal handler that raises (Ctrl-C's
/// `KeyboardInterrupt`) asks the run to stop at its next batch
/// (`mmulab_sim::request_stop`); `f`'s result, the statistics of what ran, comes back with
/// that error, and the stop request is withdrawn for later runs. Without this a run held
/// Ctrl-C until it ended and then lost its result.
fn interruptible<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<(T, Option<PyErr>)> {
    std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("mmulab-sim".into())
            .stack_size(64 << 20)
            .spawn_scoped(s, f)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the simulation thread: {e}")))?;
        let mut raised = None;
        while !h.is_finished() {
            py.allow_threads(|| {
                let t0 = std::time::Instant::now();
                while !h.is_finished() && t0.elapsed() < std::time::Duration::from_millis(100) {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
            if raised.is_none() {
                if let Err(e) = py.check_signals() {
                    raised = Some(e);
                    mmulab_sim::request_stop();
                }
            }
        }
        let v = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        if raised.is_some() {
            mmulab_sim::clear_stop();
        }
        Ok((v, raised))
    })
}

/// A point for one run: `config_toml` (or the built-in default machine) with `machine`
/// under it and `sets` applied, on a trace or a workload.
fn one_point(
    config_toml: Option<String>,
    machine: Option<String>,
    sets: Vec<String>,
    workload: Option<String>,
    trace: Option<String>,
    format: String,
) -> PyResult<Point> {
    let source = match (workload, trace) {
        (Some(w), None) => Source::Workload(w),
        (None, Some(t)) => Source::Trace(PathBuf::from(t)),
        _ => return Err(value_err("give exactly one of workload= and trace=")),
    };
    if let Source::Trace(t) = &source {
        if !t.exists() {
            return Err(value_err(format!("trace {} does not exist", t.display())));
        }
    }
    Ok(Point {
        index: 0,
        id: String::new(),
        config_hash: String::new(),
        params: Vec::new(),
        machine,
        config: None,
        config_toml,
        sets,
        source,
        read: mmulab_sweep::point::ReadSpec {
            format,
            prefetches: false,
            cores: "cpu".into(),
            interleave: "timestamp".into(),
        },
    })
}

/// Miss-ratio curves of one TLB level in one pass (the library call `mmulab mrc` makes,
/// docs/mrc.md): returns the JSON of `mmulab mrc --json` (without `source`).
#[pyfunction]
#[pyo3(signature = (config_toml, machine, sets, workload, trace, format, level, page_size, max_entries, set_counts, sample))]
#[allow(clippy::too_many_arguments)]
fn mrc(
    py: Python<'_>,
    config_toml: Option<String>,
    machine: Option<String>,
    sets: Vec<String>,
    workload: Option<String>,
    trace: Option<String>,
    format: String,
    level: Option<String>,
    page_size: Option<String>,
    max_entries: usize,
    set_counts: Vec<usize>,
    sample: Option<f64>,
) -> PyResult<String> {
    let point = one_point(config_toml, machine, sets, workload, trace, format)?;
    let spec = point.spec().map_err(value_err)?;
    let page = page_size
        .as_deref()
        .map(|s| mmulab_model::addr::PageSize::parse(s).map_err(|e| value_err(format!("page_size {s}: {e}"))))
        .transpose()?;
    let mut o = mmulab_mrc::MrcOptions::for_level(&spec, level.as_deref(), page, max_entries).map_err(value_err)?;
    o.sets = set_counts;
    o.sample = sample;
    // Opened and read on the run's thread (a trace source is not `Send`: it lives and
    // ends inside the closure); Ctrl-C stops it at its next batch.
    let (c, interrupted) = interruptible(py, || {
        let (mut src, _) = point.open(&spec)?;
        mmulab_mrc::curve(src.as_mut(), &o).map_err(|e| e.to_string())
    })?;
    let c = c.map_err(PyRuntimeError::new_err)?;
    let json = serde_json::to_string(&c).map_err(value_err)?;
    with_partial(
        py,
        json,
        interrupted,
        "the curves of the references read are attached as .curves (complete: false)",
    )
}

/// The result of a run `interruptible` gave back: `json`, or, after Ctrl-C, a
/// `KeyboardInterrupt` carrying it (`(message, json)`; the Python side attaches it).
fn with_partial(py: Python<'_>, json: String, interrupted: Option<PyErr>, what: &str) -> PyResult<String> {
    match interrupted {
        None => Ok(json),
        Some(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => {
            Err(PyKeyboardInterrupt::new_err((format!("interrupted; {what}"), json)))
        }
        Some(e) => Err(e),
    }
}

/// Parses a spec (TOML text; relative paths from `base_dir`) into its points, identified.
fn plan(spec_toml: &str, base_dir: &str) -> PyResult<Vec<Point>> {
    let spec = Spec::parse(spec_toml, "sweep spec", Path::new(base_dir)).map_err(value_err)?;
    let plan = mmulab_sweep::Plan::new(&spec).map_err(value_err)?;
    Ok(plan.points)
}

/// The points of a spec as a JSON array (what the Ray driver distributes).
#[pyfunction]
fn expand(spec_toml: &str, base_dir: &str) -> PyResult<String> {
    serde_json::to_string(&plan(spec_toml, base_dir)?).map_err(value_err)
}

/// Runs one point (JSON, from [`expand`]) and returns its row as JSON (a Ray task's body).
#[pyfunction]
fn run_point(py: Python<'_>, point_json: &str) -> PyResult<String> {
    let p: Point = serde_json::from_str(point_json).map_err(value_err)?;
    let row = py.allow_threads(|| p.run());
    serde_json::to_string(&row).map_err(value_err)
}

/// Lays rows (a JSON array of rows) out as a table: JSON `{"columns": [...], "rows": [[...]]}`.
#[pyfunction]
fn table(rows_json: &str) -> PyResult<String> {
    let mut rows: Vec<mmulab_sweep::Row> = serde_json::from_str(rows_json).map_err(value_err)?;
    rows.sort_by_key(|r| r.index);
    let refs: Vec<&mmulab_sweep::Row> = rows.iter().collect();
    let t = Table::of(&refs);
    Ok(serde_json::json!({ "columns": t.names, "rows": t.cells }).to_string())
}

/// Runs a whole spec on the local pool (`jobs` threads, default every core) and returns
/// its rows as JSON, in point order.
#[pyfunction]
#[pyo3(signature = (spec_toml, base_dir, jobs=None))]
fn sweep(py: Python<'_>, spec_toml: &str, base_dir: &str, jobs: Option<usize>) -> PyResult<String> {
    let points = plan(spec_toml, base_dir)?;
    let mut pool = match jobs {
        Some(0) => return Err(value_err("jobs must be at least 1")),
        Some(n) => Pool { jobs: n },
        None => Pool::all_cores(),
    };
    let mut rows = Vec::with_capacity(points.len());
    // Ctrl-C stops the running points at their next batch; the finished ones come back
    // with the KeyboardInterrupt (a stopped point is not a result: it is left out).
    let (res, interrupted) = interruptible(py, || pool.run(&points, &mut |r| rows.push(r)))?;
    res.map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    rows.retain(|r| r.complete);
    let json = serde_json::to_string(&rows).map_err(value_err)?;
    with_partial(
        py,
        json,
        interrupted,
        "the rows of the points that finished are attached as .rows (a DataFrame)",
    )
}

/// The machine catalog: JSON `[{"name", "description"}]`.
#[pyfunction]
fn machines() -> String {
    let list: Vec<_> = mmulab_sim::catalog::names()
        .into_iter()
        .map(|n| {
            let text = mmulab_sim::catalog::get(n).unwrap_or_default();
            serde_json::json!({ "name": n, "description": mmulab_sim::catalog::description(text) })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

/// Converts a JSON object (a Python dict, serialised) into TOML text.
#[pyfunction]
fn toml_of_json(json: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(value_err)?;
    let t: toml::Table = toml::Table::try_from(&v).map_err(|e| {
        value_err(format!(
            "cannot express the dict as TOML ({e}); use tables, lists, strings, numbers, booleans (no None)"
        ))
    })?;
    toml::to_string(&t).map_err(value_err)
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sim, m)?)?;
    m.add_function(wrap_pyfunction!(mrc, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(table, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(machines, m)?)?;
    m.add_function(wrap_pyfunction!(toml_of_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
