//! Parquet results written as points finish (docs/sweep.md, "Results, resume"): rows are
//! buffered and written as row groups, in point order, to `OUTPUT.partial` beside the
//! results file; when the sweep ends (or stops) the file is closed and renamed to
//! `OUTPUT`. A sweep killed on the way leaves at most `OUTPUT.partial` (no footer: not a
//! Parquet file) and never a half-written `OUTPUT`; the journal is what it resumes from.
//!
//! The columns of a results file are those of [`Table::of`] over all its rows, which a
//! stream fixes from its first row group. If a later row group or the whole table has
//! other columns or column types (a point on another machine adds statistics, a column
//! that was all null turns out to hold numbers), the stream gives up, removes its file
//! and [`ParquetStream::finish`] says so: the caller then writes the whole table at once,
//! as before. Either way the final file holds the same columns and rows, in point order.

use crate::point::Row;
use crate::table::{Kind, Table};
use crate::SweepError;
use parquet::file::writer::SerializedFileWriter;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Rows per row group (assumed: small enough that a row group is written every few
/// points of a typical sweep, large enough that a file of thousands of points has few).
pub const ROWS_PER_GROUP: usize = 64;

/// At most this long between row groups while rows are ready (assumed).
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(5);

/// A results file being written row group by row group.
pub struct ParquetStream {
    output: PathBuf,
    temp: PathBuf,
    every: usize,
    interval: Duration,
    last: Instant,
    /// Finished rows not yet written, by point index.
    ready: BTreeMap<usize, Row>,
    /// Point indices in order; `next` is the position of the first not yet written.
    order: Vec<usize>,
    next: usize,
    writer: Option<(SerializedFileWriter<File>, Vec<String>, Vec<Kind>)>,
    gave_up: bool,
    groups: usize,
}

impl ParquetStream {
    /// A stream for results file `output` of a sweep whose points have indices `order`
    /// (ascending), with `done` (rows a journal held) already finished; a row group every
    /// `every` ready rows or `interval`.
    pub fn new(output: &Path, order: Vec<usize>, done: &[Row], every: usize, interval: Duration) -> ParquetStream {
        let mut s = ParquetStream {
            output: output.to_path_buf(),
            temp: PathBuf::from(format!("{}.partial", output.display())),
            every: every.max(1),
            interval,
            last: Instant::now(),
            ready: BTreeMap::new(),
            order,
            next: 0,
            writer: None,
            gave_up: false,
            groups: 0,
        };
        for r in done {
            s.ready.insert(r.index, r.clone());
        }
        s
    }

    /// The temporary file (`OUTPUT.partial`).
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Row groups written so far.
    pub fn row_groups(&self) -> usize {
        self.groups
    }

    /// A finished row; writes a row group when enough rows in point order are ready.
    pub fn push(&mut self, row: Row) -> Result<(), SweepError> {
        self.ready.insert(row.index, row);
        let prefix = self.prefix_len();
        if prefix >= self.every || prefix > 0 && self.last.elapsed() >= self.interval {
            self.flush(prefix)?;
        }
        Ok(())
    }

    /// Ready rows that continue the written ones in point order.
    fn prefix_len(&self) -> usize {
        self.order[self.next..]
            .iter()
            .take_while(|i| self.ready.contains_key(i))
            .count()
    }

    /// Writes the next `n` rows in point order as one row group (or, after giving up,
    /// nothing).
    fn flush(&mut self, n: usize) -> Result<(), SweepError> {
        self.last = Instant::now();
        if self.gave_up || n == 0 {
            return Ok(());
        }
        let rows: Vec<Row> = self.order[self.next..self.next + n]
            .iter()
            .filter_map(|i| self.ready.remove(i))
            .collect();
        self.next += n;
        let refs: Vec<&Row> = rows.iter().collect();
        let t = Table::of(&refs);
        let err = |e: &dyn std::fmt::Display| SweepError::Io(format!("writing {}: {e}", self.temp.display()));
        if self.writer.is_none() {
            let f = File::create(&self.temp).map_err(|e| err(&e))?;
            let w = t.parquet_writer(f).map_err(|e| err(&e))?;
            self.writer = Some((w, t.names.clone(), t.kinds.clone()));
        }
        let (w, names, kinds) = self.writer.as_mut().expect("opened");
        // A column all null in this group fits any type.
        let fits = t.names == *names
            && (0..kinds.len()).all(|c| t.kinds[c] == kinds[c] || t.cells.iter().all(|r| r[c].is_null()));
        if !fits {
            self.give_up();
            return Ok(());
        }
        let fixed = Table {
            names: names.clone(),
            kinds: kinds.clone(),
            cells: Vec::new(),
        };
        fixed.write_row_group(w, &t.cells).map_err(|e| err(&e))?;
        self.groups += 1;
        Ok(())
    }

    /// Stops streaming and removes the temporary file.
    fn give_up(&mut self) {
        self.gave_up = true;
        self.writer = None;
        let _ = std::fs::remove_file(&self.temp);
    }

    /// Ends the sweep: writes the rows still ready and, if the file's columns are those
    /// of `all` (every row of the results, in point order) and it holds exactly those
    /// rows, closes it and renames it to the results file: `Ok(true)`. Otherwise removes
    /// it and returns `Ok(false)`: write `all` whole instead.
    pub fn finish(mut self, all: &[Row]) -> Result<bool, SweepError> {
        // Points that never finished (stopped, or the executor failed) leave gaps: write
        // what is ready, in point order, across them.
        let rest: Vec<usize> = self.order[self.next..]
            .iter()
            .copied()
            .filter(|i| self.ready.contains_key(i))
            .collect();
        self.order.truncate(self.next);
        self.order.extend(&rest);
        let n = rest.len();
        self.flush(n)?;
        let refs: Vec<&Row> = all.iter().collect();
        let whole = Table::of(&refs);
        let written: Vec<usize> = self.order[..self.next].to_vec();
        let same_rows = written.len() == all.len() && written.iter().zip(all).all(|(i, r)| *i == r.index);
        match self.writer.take() {
            Some((w, names, kinds)) if !self.gave_up && same_rows && names == whole.names && kinds == whole.kinds => {
                w.close()
                    .map_err(|e| SweepError::Io(format!("writing {}: {e}", self.temp.display())))?;
                std::fs::rename(&self.temp, &self.output).map_err(|e| {
                    SweepError::Io(format!(
                        "cannot rename {} to {}: {e}",
                        self.temp.display(),
                        self.output.display()
                    ))
                })?;
                Ok(true)
            }
            _ => {
                self.give_up();
                Ok(false)
            }
        }
    }

    /// Abandons the stream (nothing to write): removes the temporary file.
    pub fn abandon(mut self) {
        self.give_up();
    }
}
