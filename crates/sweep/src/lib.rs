//! mmulab's sweep engine (docs/sweep.md): a spec of parameters ([`Spec`]) becomes
//! points ([`Point`]), each keyed by a hash of its resolved config, its trace's content
//! and the mmulab version; a [`Plan`] sets aside the points a journal already holds;
//! an [`Executor`] runs the rest; the rows become a [`Table`] written as Parquet or CSV.
//! The CLI (`mmulab sweep`) and the Python package (`mmulab.sweep`) both call it.
#![deny(missing_docs)]

pub mod exec;
pub mod journal;
pub mod point;
pub mod spec;
pub mod stream;
pub mod table;

pub use exec::{references_reported, references_simulated, Executor, Pool, Ray};
pub use point::{identify, Point, Row, Source};
pub use spec::{Mode, Spec};
pub use stream::ParquetStream;
pub use table::Table;

/// Anything that stops a sweep as a whole (a point's own failure is a row, not this).
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The spec is invalid (names the file and key).
    #[error("{0}")]
    Spec(String),
    /// A point's config is invalid.
    #[error("{0}")]
    Point(String),
    /// The executor failed (names it, and the cluster's address).
    #[error("{0}")]
    Executor(String),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
}

/// What a sweep has to do: its points, the rows a journal already holds for finished
/// points, and the points to run.
pub struct Plan {
    /// Every point of the spec, identified.
    pub points: Vec<Point>,
    /// Rows of finished points found in the journal (skipped).
    pub done: Vec<Row>,
    /// Points to run: new ones and the ones that failed before.
    pub todo: Vec<Point>,
    /// How many of `todo` failed before.
    pub rerun_failed: usize,
}

/// Host bytes a sweep holds for each point until it ends: the point (about 2 KiB,
/// measured: 209 MiB for 10^5 points planned) and its row of statistics, kept for the
/// results file and the summary (about 35 KiB measured at 124 columns on `skylake`: 354 MiB
/// peak for 10^4 points to CSV, 1.02 GiB for 3 x 10^4, 1.07 GiB to Parquet); 40 KiB
/// assumed.
pub const HOST_BYTES_PER_POINT: u64 = 40 << 10;

/// What a sweep of `points` points needs of host memory ([`HOST_BYTES_PER_POINT`]).
pub fn host_need(points: usize) -> mmulab_base::host_memory::Need {
    let mut need = mmulab_base::host_memory::Need::new();
    need.add(
        format!("{points} points × 40 KiB: each point and its row of statistics (assumed)"),
        (points as u64).saturating_mul(HOST_BYTES_PER_POINT),
    );
    need.add("program and buffers (assumed)", 32 << 20);
    need
}

impl Plan {
    /// Expands `spec` into points, identifies them and sets aside the ones `previous`
    /// (a journal's rows by id) holds as finished. Fails when no point has a valid
    /// config (an unknown key in `[params]`, say): the first error names it.
    pub fn new(spec: &Spec, previous: &std::collections::HashMap<String, Row>) -> Result<Plan, SweepError> {
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        Plan::build(spec, previous, jobs, &std::sync::atomic::AtomicUsize::new(0))
    }

    /// [`Plan::new`] identifying the points on `jobs` threads, counting them in
    /// `identified` as it goes (for a progress line). Refuses, before anything is
    /// expanded, a sweep whose points and rows the host cannot hold ([`host_need`]).
    pub fn build(
        spec: &Spec,
        previous: &std::collections::HashMap<String, Row>,
        jobs: usize,
        identified: &std::sync::atomic::AtomicUsize,
    ) -> Result<Plan, SweepError> {
        host_need(spec.len())
            .check(
                &format!("sweep {}", spec.origin),
                "split [params] into smaller sweeps (each its own output)",
            )
            .map_err(SweepError::Spec)?;
        let mut points = spec.points()?;
        let (bad, first) = point::identify_with(&mut points, jobs, identified)?;
        if bad == points.len() {
            return Err(SweepError::Spec(format!(
                "{}: no point has a valid machine config; the first error: {}",
                spec.origin,
                first.unwrap_or_default()
            )));
        }
        let mut done = Vec::new();
        let mut todo = Vec::new();
        let mut rerun_failed = 0;
        for p in &points {
            match previous.get(&p.id) {
                Some(r) if r.error.is_none() && r.complete => {
                    let mut r = r.clone();
                    r.index = p.index;
                    r.params = p.params.clone();
                    done.push(r);
                }
                Some(_) => {
                    rerun_failed += 1;
                    todo.push(p.clone());
                }
                None => todo.push(p.clone()),
            }
        }
        Ok(Plan {
            points,
            done,
            todo,
            rerun_failed,
        })
    }
}

/// Runs `spec` in memory on `executor` (no journal, no file) and returns its rows in
/// point order (what the Python package's `mmulab.sweep` returns as a DataFrame).
pub fn run_in_memory(spec: &Spec, executor: &mut dyn Executor) -> Result<Vec<Row>, SweepError> {
    let plan = Plan::new(spec, &Default::default())?;
    let mut rows = Vec::with_capacity(plan.todo.len());
    executor.run(&plan.todo, &mut |r| rows.push(r))?;
    rows.sort_by_key(|r| r.index);
    Ok(rows)
}
