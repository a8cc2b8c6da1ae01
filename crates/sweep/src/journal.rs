//! The journal: one JSON line per finished point, appended and flushed as each point
//! finishes, so that a sweep stopped in any way (Ctrl-C, a crash, a killed machine)
//! keeps what it finished. It is also where a sweep keeps its rows while it runs: a
//! sweep holds only where each row is ([`Entry`]) and reads the rows back, in point
//! order, when it writes its results. A re-run indexes it ([`index`]); a torn last line
//! is ignored.

use crate::point::Row;
use crate::SweepError;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where one row lies in the journal, and whether it is a finished, successful point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Byte offset of its line.
    pub offset: u64,
    /// Length of its line, without the newline.
    pub len: u32,
    /// The point finished without an error (`error` null, `complete` true).
    pub ok: bool,
}

/// The last row of every point id recorded in a journal, by id.
pub type Index = HashMap<String, Entry>;

/// What [`index`] reads of each line: the rest of the row is skipped, not kept.
#[derive(serde::Deserialize)]
struct Head {
    id: String,
    error: Option<String>,
    complete: bool,
}

/// The last row of every point id recorded in the journal at `path` (none if the file
/// does not exist): where it is, not the row.
pub fn index(path: &Path) -> Result<Index, SweepError> {
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
    let err = |e: std::io::Error| SweepError::Io(format!("cannot read the journal {}: {e}", path.display()));
    // A device or a FIFO may never end (/dev/zero): a journal is a file the sweep made.
    if !f.metadata().map_err(err)?.is_file() {
        return Err(SweepError::Io(format!(
            "the journal {} is not a regular file; give the results another name (-o), which names the journal OUTPUT.journal",
            path.display()
        )));
    }
    let mut rows = HashMap::new();
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut line = Vec::new();
    let mut offset = 0u64;
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).map_err(err)?;
        if n == 0 {
            break;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        // A line cut by a crash does not parse: that point simply runs again.
        if let (Ok(head), Ok(len)) = (serde_json::from_slice::<Head>(body), u32::try_from(body.len())) {
            let ok = head.error.is_none() && head.complete;
            rows.insert(head.id, Entry { offset, len, ok });
        }
        offset += n as u64;
    }
    Ok(rows)
}

/// Reads rows back from a journal by their [`Entry`].
pub struct Reader {
    path: PathBuf,
    file: std::fs::File,
    buf: Vec<u8>,
}

impl Reader {
    /// Opens the journal at `path` for reading.
    pub fn open(path: &Path) -> Result<Reader, SweepError> {
        let file = std::fs::File::open(path)
            .map_err(|e| SweepError::Io(format!("cannot read the journal {}: {e}", path.display())))?;
        Ok(Reader {
            path: path.to_path_buf(),
            file,
            buf: Vec::new(),
        })
    }

    /// The row at `e`.
    pub fn row(&mut self, e: Entry) -> Result<Row, SweepError> {
        let err = |m: String| {
            SweepError::Io(format!(
                "the journal {} at byte {}: {m} (was it changed while the sweep ran? run the sweep again to rebuild the results from it)",
                self.path.display(),
                e.offset
            ))
        };
        self.buf.resize(e.len as usize, 0);
        self.file
            .read_exact_at(&mut self.buf, e.offset)
            .map_err(|x| err(x.to_string()))?;
        serde_json::from_slice(&self.buf).map_err(|x| err(x.to_string()))
    }
}

/// An open journal, appended to.
pub struct Journal {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// The file's length: where the next line starts.
    len: u64,
}

impl Journal {
    /// A journal at `path`, created on the first row.
    pub fn new(path: &Path) -> Journal {
        Journal {
            path: path.to_path_buf(),
            file: None,
            len: 0,
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
            let mut len = f.metadata().map_err(err)?.len();
            let mut last = [b'\n'];
            if len > 0 {
                f.read_at(&mut last, len - 1).map_err(err)?;
            }
            let mut f = f;
            if last[0] != b'\n' {
                f.write_all(b"\n").map_err(err)?;
                len += 1;
            }
            self.len = len;
            self.file = Some(f);
        }
        Ok(())
    }

    /// Appends `row` as one line, flushes it to the file and says where it is.
    pub fn append(&mut self, row: &Row) -> Result<Entry, SweepError> {
        self.open()?;
        let err = |e: std::io::Error| SweepError::Io(format!("cannot write the journal {}: {e}", self.path.display()));
        let mut line = serde_json::to_string(row).map_err(|e| SweepError::Io(e.to_string()))?;
        let entry = Entry {
            offset: self.len,
            len: u32::try_from(line.len())
                .map_err(|_| SweepError::Io(format!("a row of {} bytes is too long for the journal", line.len())))?,
            ok: row.error.is_none() && row.complete,
        };
        line.push('\n');
        let f = self.file.as_mut().expect("opened");
        if let Err(e) = f.write_all(line.as_bytes()).and_then(|_| f.flush()) {
            // Part of the line may be in the file: the next append opens it again, which
            // ends a torn line and finds where the next one starts.
            self.file = None;
            return Err(err(e));
        }
        self.len += line.len() as u64;
        Ok(entry)
    }
}
