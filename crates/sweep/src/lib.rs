//! mmulab's sweep engine (docs/sweep.md): a spec of parameters ([`Spec`]) becomes
//! points ([`Point`]), each keyed by a hash of its resolved config, its trace's content
//! and the mmulab version. Run to files ([`Sweep`]), the points are planned a batch at a
//! time, those a journal already holds set aside, the rest run by an [`Executor`], their
//! rows kept in the journal and written, in point order, as Parquet or CSV
//! ([`results`]). Run in memory ([`Plan`], [`run_in_memory`]), the rows become a
//! [`Table`].
//! The CLI (`mmulab sweep`) and the Python package (`mmulab.sweep`) both call it.
#![deny(missing_docs)]

pub mod exec;
pub mod journal;
pub mod point;
pub mod results;
pub mod run;
pub mod spec;
pub mod table;

pub use exec::{references_reported, references_simulated, Executor, Pool, Ray};
pub use point::{identify, Point, Row, Source};
pub use run::Sweep;
pub use spec::{Mode, Spec};
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

/// A sweep planned whole, in memory: every point of the spec, identified (what the
/// Python package's `mmulab.sweep` runs and returns as one DataFrame). `mmulab sweep`
/// plans lazily instead ([`run::Sweep`]).
pub struct Plan {
    /// Every point of the spec, identified.
    pub points: Vec<Point>,
}

/// Host bytes a sweep run in memory holds for each point until it ends: the point (about
/// 2 KiB, measured: 209 MiB for 10^5 points planned) and its row of statistics (about 35
/// KiB measured at 124 columns on `skylake`: 354 MiB peak for 10^4 points held whole, 1.02
/// GiB for 3 x 10^4); 40 KiB assumed.
pub const HOST_BYTES_PER_POINT: u64 = 40 << 10;

/// What a sweep of `points` points run in memory needs of host memory
/// ([`HOST_BYTES_PER_POINT`]).
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
    /// Expands `spec` into points and identifies them on every core. Fails when no point
    /// has a valid config (an unknown key in `[params]`, say): the first error names it.
    pub fn new(spec: &Spec) -> Result<Plan, SweepError> {
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        Plan::build(spec, jobs, &std::sync::atomic::AtomicUsize::new(0))
    }

    /// [`Plan::new`] identifying the points on `jobs` threads, counting them in
    /// `identified` as it goes. Refuses, before anything is expanded, a sweep whose
    /// points and rows the host cannot hold ([`host_need`]).
    pub fn build(spec: &Spec, jobs: usize, identified: &std::sync::atomic::AtomicUsize) -> Result<Plan, SweepError> {
        host_need(spec.len())
            .check(
                &format!("sweep {}", spec.origin),
                "split [params] into smaller sweeps, or run it with `mmulab sweep`, which keeps rows on disk",
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
        Ok(Plan { points })
    }
}

/// Runs `spec` in memory on `executor` (no journal, no file) and returns its rows in
/// point order (what the Python package's `mmulab.sweep` returns as a DataFrame).
pub fn run_in_memory(spec: &Spec, executor: &mut dyn Executor) -> Result<Vec<Row>, SweepError> {
    let plan = Plan::new(spec)?;
    let mut rows = Vec::with_capacity(plan.points.len());
    executor.run(&plan.points, &mut |r| rows.push(r))?;
    rows.sort_by_key(|r| r.index);
    Ok(rows)
}
