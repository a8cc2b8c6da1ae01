//! The journal: one JSON line per finished point, appended and flushed as each point
//! finishes, so that a sweep stopped in any way (Ctrl-C, a crash, a killed machine)
//! keeps what it finished. A re-run reads it back ([`read`]); a torn last line is
//! ignored.

use crate::point::Row;
use crate::SweepError;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The last row of every point id recorded in the journal at `path` (none if the file
/// does not exist).
pub fn read(path: &Path) -> Result<HashMap<String, Row>, SweepError> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => {
            return Err(SweepError::Io(format!(
                "cannot read the journal {}: {e}",
                path.display()
            )))
        }
    };
    let mut rows = HashMap::new();
    for line in BufReader::new(f).lines() {
        let line = line.map_err(|e| SweepError::Io(format!("cannot read the journal {}: {e}", path.display())))?;
        // A line cut by a crash does not parse: that point simply runs again.
        if let Ok(row) = serde_json::from_str::<Row>(&line) {
            rows.insert(row.id.clone(), row);
        }
    }
    Ok(rows)
}

/// An open journal, appended to.
pub struct Journal {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Journal {
    /// A journal at `path`, created on the first row.
    pub fn new(path: &Path) -> Journal {
        Journal {
            path: path.to_path_buf(),
            file: None,
        }
    }

    /// Opens (creating it if needed) the journal for appending now rather than at the
    /// first row: a sweep checks it can write its journal before any point runs.
    pub fn open(&mut self) -> Result<(), SweepError> {
        let err = |e: std::io::Error| SweepError::Io(format!("cannot write the journal {}: {e}", self.path.display()));
        if self.file.is_none() {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&self.path)
                .map_err(err)?;
            // A line torn by a crash gets its end, so the next row starts a line.
            let len = f.metadata().map_err(err)?.len();
            let mut last = [b'\n'];
            if len > 0 {
                std::os::unix::fs::FileExt::read_at(&f, &mut last, len - 1).map_err(err)?;
            }
            let torn = last[0] != b'\n';
            let mut f = f;
            if torn {
                f.write_all(b"\n").map_err(err)?;
            }
            self.file = Some(f);
        }
        Ok(())
    }

    /// Appends `row` as one line and flushes it to the file.
    pub fn append(&mut self, row: &Row) -> Result<(), SweepError> {
        self.open()?;
        let err = |e: std::io::Error| SweepError::Io(format!("cannot write the journal {}: {e}", self.path.display()));
        let mut line = serde_json::to_string(row).map_err(|e| SweepError::Io(e.to_string()))?;
        line.push('\n');
        let f = self.file.as_mut().expect("opened");
        f.write_all(line.as_bytes()).map_err(err)?;
        f.flush().map_err(err)
    }
}
