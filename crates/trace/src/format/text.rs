use crate::TraceError;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Reads a text trace line by line with one reused buffer, tracking the byte offset and
/// line number of the current line for error messages.
pub struct LineReader<R> {
    inner: R,
    path: PathBuf,
    line: String,
    /// Byte offset of the start of the current line.
    pub offset: u64,
    next_offset: u64,
    /// 1-based number of the current line.
    pub lineno: u64,
    total: Option<u64>,
}

impl<R: BufRead> LineReader<R> {
    /// Wraps a buffered reader; `total` is the input size in bytes when known (progress).
    pub fn new(inner: R, path: &Path, total: Option<u64>) -> Self {
        LineReader {
            inner,
            path: path.to_path_buf(),
            line: String::new(),
            offset: 0,
            next_offset: 0,
            lineno: 0,
            total,
        }
    }

    /// The next line without its line ending, or `None` at end of input.
    pub fn next_line(&mut self, refs_before: u64) -> Result<Option<&str>, TraceError> {
        self.line.clear();
        self.offset = self.next_offset;
        let n = match self.inner.read_line(&mut self.line) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(self.corrupt(
                    "bytes that are not UTF-8 text (is this a binary trace? pass --format)".into(),
                    refs_before,
                ));
            }
            Err(e) => return Err(self.corrupt(format!("read error: {e} (truncated or damaged input?)"), refs_before)),
        };
        if n == 0 {
            return Ok(None);
        }
        self.next_offset += n as u64;
        self.lineno += 1;
        Ok(Some(self.line.trim_end_matches(['\n', '\r'])))
    }

    /// An error at the current line.
    pub fn corrupt(&self, what: String, refs_before: u64) -> TraceError {
        TraceError::Corrupt {
            path: self.path.clone(),
            offset: self.offset,
            line: Some(self.lineno.max(1)),
            what,
            refs_before,
        }
    }

    /// (bytes consumed, total bytes) when the total is known.
    pub fn progress(&self) -> Option<(u64, u64)> {
        self.total.map(|t| (self.next_offset, t))
    }

    /// The input's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Parses a hexadecimal address with or without a `0x` prefix.
pub(crate) fn parse_hex(s: &str) -> Option<u64> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if h.is_empty() || h.len() > 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}
