//! Executors: where points run. [`Pool`] (the default) runs them on threads over every
//! core of this machine; [`Ray`] hands them to the Python package's Ray driver
//! (`python3 -m mmulab.sweep_ray`), which runs each as a Ray task on a cluster and sends
//! the rows back as JSON lines.

use crate::point::{Point, Row};
use crate::SweepError;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// References simulated by points that ran in other processes (Ray tasks), added from
/// each finished row's `references` as the row arrives.
static REPORTED: AtomicU64 = AtomicU64::new(0);

/// References simulated so far for sweeps of this process: those simulated here
/// (`mmulab_sim::references_simulated`, live, once per batch: the [`Pool`]'s points)
/// plus those reported in the rows of points run elsewhere ([`references_reported`]: a
/// [`Ray`] task's count arrives when its point finishes). What a sweep's progress line
/// shows.
pub fn references_simulated() -> u64 {
    mmulab_sim::references_simulated() + references_reported()
}

/// References of the points run in other processes whose rows have arrived (the
/// `references` statistic of each finished row a [`Ray`] executor received).
pub fn references_reported() -> u64 {
    REPORTED.load(Ordering::Relaxed)
}

/// The `references` statistic of a row (0 for a failed point).
fn row_references(row: &Row) -> u64 {
    row.stats
        .iter()
        .find(|(k, _)| k == "references")
        .and_then(|(_, v)| v.as_u64())
        .unwrap_or(0)
}

/// Runs points and hands each finished row to `each`, in the order they finish, on the
/// calling thread. A point's own failure is a row with an error; an `Err` means the
/// executor itself failed (rows handed over before it stand).
pub trait Executor {
    /// Runs `points`.
    fn run(&mut self, points: &[Point], each: &mut dyn FnMut(Row)) -> Result<(), SweepError>;
}

/// A pool of `jobs` threads on this machine: the job pool experiments use too
/// (`mmulab_sim::pool`). A stop request (`mmulab_sim::request_stop`, Ctrl-C) stops every
/// running point at its next batch and starts no new one.
pub struct Pool {
    /// Threads (at least 1).
    pub jobs: usize,
}

impl Pool {
    /// A pool over every core (`available_parallelism`).
    pub fn all_cores() -> Pool {
        Pool {
            jobs: mmulab_sim::pool::Pool::all_cores().threads(),
        }
    }
}

impl Executor for Pool {
    fn run(&mut self, points: &[Point], each: &mut dyn FnMut(Row)) -> Result<(), SweepError> {
        mmulab_sim::pool::Pool::new(self.jobs).each(points, Point::run, |_, row| each(row));
        Ok(())
    }
}

/// Ray: each point a Ray task on the cluster at `address` (or a local cluster started
/// for the sweep when `None`), driven by the Python package.
pub struct Ray {
    /// The Python interpreter that has the `mmulab` package and Ray installed.
    pub python: String,
    /// `HOST:PORT` of an existing cluster's head, or `None`.
    pub address: Option<String>,
}

impl Executor for Ray {
    fn run(&mut self, points: &[Point], each: &mut dyn FnMut(Row)) -> Result<(), SweepError> {
        let whom = match &self.address {
            Some(a) => format!("the Ray cluster at {a}"),
            None => "a local Ray cluster".to_string(),
        };
        let mut cmd = Command::new(&self.python);
        cmd.args(["-m", "mmulab.sweep_ray"]);
        if let Some(a) = &self.address {
            cmd.args(["--address", a]);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                SweepError::Executor(format!(
                    "cannot start {} for {whom}: {e} (install the Python package: docs/python.md)",
                    self.python
                ))
            })?;
        let text = serde_json::to_string(points).map_err(|e| SweepError::Executor(e.to_string()))?;
        let mut stdin = child.stdin.take().expect("piped");
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(text.as_bytes());
        });
        let mut stderr = child.stderr.take().expect("piped");
        // Ray logs a lot on stderr: keep it for the message of a failure.
        let logs = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let mut bad_line = None;
        for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<Row>(&line) {
                Ok(row) => {
                    // The task ran in another process: its references count here only
                    // through its row.
                    REPORTED.fetch_add(row_references(&row), Ordering::Relaxed);
                    each(row)
                }
                Err(e) => {
                    bad_line.get_or_insert(format!("unexpected output line from the Ray driver ({e}): {line}"));
                }
            }
        }
        let status = child.wait().map_err(|e| SweepError::Executor(e.to_string()))?;
        let _ = feeder.join();
        let logs = logs.join().unwrap_or_default();
        if !status.success() {
            // The driver's own message is its last line of the form `mmulab: …`.
            let own = logs.lines().rev().find(|l| l.starts_with("mmulab: "));
            let msg = match own {
                Some(l) if l.contains("Ray cluster") => l.trim_start_matches("mmulab: ").to_string(),
                Some(l) => format!("{whom}: {}", l.trim_start_matches("mmulab: ")),
                None => {
                    let tail: Vec<&str> = logs.lines().rev().take(15).collect();
                    format!(
                        "{whom}: the Ray driver ({} -m mmulab.sweep_ray) failed ({status}):\n{}",
                        self.python,
                        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                    )
                }
            };
            return Err(SweepError::Executor(msg));
        }
        match bad_line {
            Some(m) => Err(SweepError::Executor(m)),
            None => Ok(()),
        }
    }
}
