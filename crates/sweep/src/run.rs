//! A sweep run to files (`mmulab sweep`; docs/sweep.md, "Planning"): planned lazily, a
//! batch of points at a time, each batch identified just before it runs; its rows kept
//! in the journal, not in memory. What the sweep holds for each point is a [`Slot`]: its
//! id, its configuration hash and where its row is. The results file, the manifest and
//! the summary read the rows back from the journal in point order ([`Sweep::each_row`]),
//! so a sweep's memory grows by a slot a point, not by a row of statistics (about 35 KiB).

use crate::journal::{self, Entry, Index, Journal};
use crate::point::{configs_jsonl, identify_in, Point, Row};
use crate::spec::Spec;
use crate::SweepError;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

/// Points planned (expanded and identified) at a time (assumed: large enough that the
/// pool's threads wait for the slowest point of a batch rarely, small enough that a batch
/// of points, about 2 KiB each, is a few MiB).
pub const BATCH: usize = 4096;

/// Host bytes a sweep run to files holds for each point of its spec: its [`Slot`] (64
/// bytes) with its id and hash (48 bytes and their allocations); 192 bytes assumed.
pub const HOST_BYTES_PER_SLOT: u64 = 192;

/// Host bytes for each row of the journal a sweep indexes (its id, 32 bytes, and its
/// [`Entry`] in a hash map); 128 bytes assumed.
pub const HOST_BYTES_PER_JOURNAL_ROW: u64 = 128;

/// Where a point's row is.
#[derive(Clone, Copy, Debug)]
enum Held {
    /// In the journal.
    Journal(Entry),
    /// In memory: the journal could not take it (a full disk); position in the spill.
    Memory(usize),
}

/// What a sweep keeps of one planned point.
#[derive(Debug)]
pub struct Slot {
    /// The point's id.
    id: Box<str>,
    /// Its configuration hash (empty when its config does not resolve).
    config_hash: Box<str>,
    /// Its row, once it has one.
    row: Option<Held>,
    /// The row is a failed point's.
    failed: bool,
}

/// How many points are where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Points of the spec.
    pub points: usize,
    /// Points planned so far (expanded and identified).
    pub planned: usize,
    /// Planned points the journal held as finished (not run).
    pub skipped: usize,
    /// Planned points the journal held as failed (run again).
    pub rerun_failed: usize,
    /// Planned points new to the journal.
    pub new: usize,
    /// Points with a row that finished without error (skipped ones included).
    pub ok: usize,
    /// Points with a row that holds an error.
    pub failed: usize,
}

impl Counts {
    /// Points with a row.
    pub fn rows(&self) -> usize {
        self.ok + self.failed
    }
}

/// A batch of points planned: those to run, and the configurations first seen in it.
pub struct Batch {
    /// Points to run: new ones and the ones that failed before.
    pub todo: Vec<Point>,
    /// Lines of `OUTPUT.configs.jsonl` for the configurations new in this batch
    /// ([`configs_jsonl`]).
    pub configs: String,
    /// Of the batch: points skipped, failed before, new.
    pub skipped: usize,
    /// See `skipped`.
    pub rerun_failed: usize,
    /// See `skipped`.
    pub new: usize,
}

/// What a sweep of `points` points run to files needs of host memory, with a journal of
/// `journal_rows` rows: a slot a point, the journal's index, one batch of points and
/// rows, and the program.
pub fn host_need(points: usize, journal_rows: usize) -> mmulab_base::host_memory::Need {
    let mut need = mmulab_base::host_memory::Need::new();
    need.add(
        format!("{points} points × {HOST_BYTES_PER_SLOT} bytes: where each point's row is (assumed)"),
        (points as u64).saturating_mul(HOST_BYTES_PER_SLOT),
    );
    need.add(
        format!("{journal_rows} journal rows × {HOST_BYTES_PER_JOURNAL_ROW} bytes: the journal's index (assumed)"),
        (journal_rows as u64).saturating_mul(HOST_BYTES_PER_JOURNAL_ROW),
    );
    need.add(
        format!("a batch of {BATCH} points and rows × 40 KiB (assumed)"),
        (BATCH as u64) * crate::HOST_BYTES_PER_POINT,
    );
    need.add("program and buffers (assumed)", 32 << 20);
    need
}

/// A sweep being run to files.
pub struct Sweep<'s> {
    spec: &'s Spec,
    journal_path: PathBuf,
    index: Index,
    slots: Vec<Slot>,
    spill: Vec<Row>,
    content: HashMap<PathBuf, String>,
    configs: HashSet<String>,
    counts: Counts,
    jobs: usize,
    batch: usize,
}

impl<'s> Sweep<'s> {
    /// A sweep of `spec` whose journal is `journal_path` (indexed now), identifying
    /// points on `jobs` threads. [`Sweep::check`] then refuses what cannot run.
    pub fn new(spec: &'s Spec, journal_path: &Path, jobs: usize) -> Result<Sweep<'s>, SweepError> {
        let index = journal::index(journal_path)?;
        Ok(Sweep {
            spec,
            journal_path: journal_path.to_path_buf(),
            index,
            slots: Vec::new(),
            spill: Vec::new(),
            content: HashMap::new(),
            configs: HashSet::new(),
            counts: Counts {
                points: spec.len(),
                ..Counts::default()
            },
            jobs: jobs.max(1),
            batch: BATCH,
        })
    }

    /// Refuses, before anything is expanded, a sweep the host cannot hold ([`host_need`])
    /// and one that names a missing trace or config ([`Spec::check_inputs`]).
    pub fn check(&self) -> Result<(), SweepError> {
        host_need(self.spec.len(), self.index.len())
            .check(
                &format!("sweep {}", self.spec.origin),
                "split [params] into smaller sweeps (each its own output)",
            )
            .map_err(SweepError::Spec)?;
        self.spec.check_inputs()
    }

    /// Plans `n` points at a time instead of [`BATCH`] (tests use small batches).
    pub fn with_batch(mut self, n: usize) -> Sweep<'s> {
        self.batch = n.max(1);
        self
    }

    /// The spec.
    pub fn spec(&self) -> &Spec {
        self.spec
    }

    /// Rows in the journal (of any spec), by distinct point id.
    pub fn journal_rows(&self) -> usize {
        self.index.len()
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Plans the next batch of points ([`BATCH`]) (`None` when every point is planned): expands
    /// and identifies them (adding each to `identified`), sets aside those the journal
    /// holds as finished. Fails when the first batch has no point with a valid config
    /// (an unknown key in `[params]`, say): the first error names it.
    pub fn plan_next(&mut self, identified: &AtomicUsize) -> Result<Option<Batch>, SweepError> {
        let start = self.counts.planned;
        if start >= self.counts.points {
            return Ok(None);
        }
        let mut points = self.spec.points_in(start..start + self.batch)?;
        let (bad, first) = identify_in(&mut points, self.jobs, identified, &mut self.content)?;
        if start == 0 && bad == points.len() {
            let which = if points.len() == self.counts.points {
                "no point"
            } else {
                "none of the first batch of points"
            };
            return Err(SweepError::Spec(format!(
                "{}: {which} has a valid machine config; the first error: {}",
                self.spec.origin,
                first.unwrap_or_default()
            )));
        }
        let mut batch = Batch {
            todo: Vec::new(),
            configs: configs_jsonl(&points, &mut self.configs),
            skipped: 0,
            rerun_failed: 0,
            new: 0,
        };
        for p in points {
            let mut slot = Slot {
                id: p.id.as_str().into(),
                config_hash: p.config_hash.as_str().into(),
                row: None,
                failed: false,
            };
            match self.index.get(&p.id) {
                Some(e) if e.ok => {
                    slot.row = Some(Held::Journal(*e));
                    batch.skipped += 1;
                }
                Some(_) => {
                    batch.rerun_failed += 1;
                    batch.todo.push(p);
                }
                None => {
                    batch.new += 1;
                    batch.todo.push(p);
                }
            }
            self.slots.push(slot);
        }
        self.counts.planned = self.slots.len();
        self.counts.skipped += batch.skipped;
        self.counts.ok += batch.skipped;
        self.counts.rerun_failed += batch.rerun_failed;
        self.counts.new += batch.new;
        Ok(Some(batch))
    }

    /// A finished point's row: appended to `journal`, and its place kept. A row the
    /// journal cannot take is kept in memory (so the results still hold it) and the
    /// journal's error returned: the caller stops the sweep.
    pub fn record(&mut self, row: Row, journal: &mut Journal) -> Result<(), SweepError> {
        let i = row.index;
        if i >= self.slots.len() {
            return Err(SweepError::Executor(format!(
                "a row for point {i}, which was not planned (the executor's rows must be of the points it was given)"
            )));
        }
        let failed = row.error.is_some();
        let (held, res) = match journal.append(&row) {
            Ok(e) => (Held::Journal(e), Ok(())),
            Err(e) => {
                self.spill.push(row);
                (Held::Memory(self.spill.len() - 1), Err(e))
            }
        };
        let slot = &mut self.slots[i];
        // A point's second row (an executor that sent one twice) replaces its first.
        if slot.row.is_some() {
            match slot.failed {
                true => self.counts.failed -= 1,
                false => self.counts.ok -= 1,
            }
        }
        slot.row = Some(held);
        slot.failed = failed;
        match failed {
            true => self.counts.failed += 1,
            false => self.counts.ok += 1,
        }
        res
    }

    /// Calls `f` with each point planned so far (as the spec makes it, with its id and
    /// hash) and its row if it has one, in point order; rows are read back from the
    /// journal, with the point's own index and parameters (a row the journal held from
    /// an earlier sweep may have had others).
    pub fn each(&self, f: impl FnMut(&Point, Option<&Row>) -> Result<(), SweepError>) -> Result<(), SweepError> {
        self.each_of(self.slots.len(), f)
    }

    /// [`Sweep::each`] over the first `points` points planned.
    pub fn each_of(
        &self,
        points: usize,
        mut f: impl FnMut(&Point, Option<&Row>) -> Result<(), SweepError>,
    ) -> Result<(), SweepError> {
        let mut reader = None;
        self.each_slot(points, |p, slot| {
            let mut row = match slot.row {
                None => None,
                Some(Held::Memory(k)) => Some(self.spill[k].clone()),
                Some(Held::Journal(e)) => {
                    if reader.is_none() {
                        reader = Some(journal::Reader::open(&self.journal_path)?);
                    }
                    Some(reader.as_mut().expect("opened").row(e)?)
                }
            };
            if let Some(r) = row.as_mut() {
                r.index = p.index;
                r.params = p.params.clone();
            }
            f(p, row.as_ref())
        })
    }

    /// Calls `f` with each point planned so far (as the spec makes it, with its id and
    /// hash) and its status (`None`: no row; `Some(true)`: a failed point's row), in
    /// point order, without reading the rows back (what the manifest needs).
    pub fn each_status(
        &self,
        mut f: impl FnMut(&Point, Option<bool>) -> Result<(), SweepError>,
    ) -> Result<(), SweepError> {
        self.each_slot(self.slots.len(), |p, slot| f(p, slot.row.map(|_| slot.failed)))
    }

    /// Calls `f` with each of the first `points` points planned (with its id and hash)
    /// and its slot, in point order, expanding the spec a batch at a time.
    fn each_slot(
        &self,
        points: usize,
        mut f: impl FnMut(&Point, &Slot) -> Result<(), SweepError>,
    ) -> Result<(), SweepError> {
        let points = points.min(self.slots.len());
        for start in (0..points).step_by(BATCH) {
            let end = (start + BATCH).min(points);
            for (mut p, slot) in self
                .spec
                .points_in(start..end)?
                .into_iter()
                .zip(&self.slots[start..end])
            {
                p.id = slot.id.to_string();
                p.config_hash = slot.config_hash.to_string();
                f(&p, slot)?;
            }
        }
        Ok(())
    }

    /// Calls `f` with each point not planned yet (a sweep stopped before its last
    /// batch), as the spec makes it (no id), in point order.
    pub fn each_unplanned(&self, mut f: impl FnMut(&Point) -> Result<(), SweepError>) -> Result<(), SweepError> {
        for start in (self.slots.len()..self.counts.points).step_by(BATCH) {
            self.spec.points_in(start..start + BATCH)?.iter().try_for_each(&mut f)?;
        }
        Ok(())
    }

    /// Calls `f` with each row, in point order ([`Sweep::each`]).
    pub fn each_row(&self, mut f: impl FnMut(&Row) -> Result<(), SweepError>) -> Result<(), SweepError> {
        self.each(|_, row| row.map_or(Ok(()), &mut f))
    }
}
