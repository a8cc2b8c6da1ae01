use crate::TraceError;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Longest line a text trace may hold (its lines are tens of bytes; Valgrind's comment
/// lines a few hundred). A longer line is an error at its offset, read no further than
/// this, so a file without line breaks is never buffered whole.
pub const MAX_LINE: usize = 1 << 16;

/// Reads a text trace line by line with one reused buffer of at most `MAX_LINE` (64 KiB) bytes,
/// tracking the byte offset and line number of the current line for error messages.
pub struct LineReader<R> {
    inner: R,
    path: PathBuf,
    line: Vec<u8>,
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
            line: Vec::new(),
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
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(self.corrupt(format!("read error: {e} (truncated or damaged input?)"), refs_before))
                }
            };
            if chunk.is_empty() {
                break;
            }
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            // Never hold more than MAX_LINE + 1 bytes of one line.
            let room = MAX_LINE + 1 - self.line.len();
            let take_now = take.min(room);
            self.line.extend_from_slice(&chunk[..take_now]);
            self.inner.consume(take_now);
            if self.line.len() > MAX_LINE {
                self.lineno += 1;
                return Err(self.corrupt(
                    format!(
                        "line longer than {MAX_LINE} bytes (text trace lines are tens of bytes: is this a binary trace, or damaged? pass --format)"
                    ),
                    refs_before,
                ));
            }
            if done {
                break;
            }
        }
        if self.line.is_empty() {
            return Ok(None);
        }
        self.next_offset += self.line.len() as u64;
        self.lineno += 1;
        match std::str::from_utf8(&self.line) {
            Ok(text) => Ok(Some(text.trim_end_matches(['\n', '\r']))),
            Err(_) => Err(self.corrupt(
                "bytes that are not UTF-8 text (is this a binary trace? pass --format)".into(),
                refs_before,
            )),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader of `len` bytes of one repeated byte, no line break (nothing stored).
    struct Endless(u64);
    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.0) as usize;
            buf[..n].fill(b'7');
            self.0 -= n as u64;
            Ok(n)
        }
    }

    #[test]
    fn a_gigabyte_line_is_refused_at_its_offset_without_buffering_it() {
        // Two good lines (9 + 4 = 13 bytes), then 1 GiB without a line break.
        let input = std::io::BufReader::new(std::io::Read::chain(&b"L 1000,4\nS 2\n"[..], Endless(1 << 30)));
        let mut r = LineReader::new(input, Path::new("big.lackey"), None);
        assert_eq!(r.next_line(0).unwrap(), Some("L 1000,4"));
        assert_eq!(r.next_line(1).unwrap(), Some("S 2"));
        let e = r.next_line(2).unwrap_err().to_string();
        assert!(
            e.contains("big.lackey") && e.contains("offset 13") && e.contains("line 3"),
            "{e}"
        );
        assert!(e.contains("longer than 65536"), "{e}");
        assert!(r.line.capacity() < 4 * MAX_LINE, "buffered {} bytes", r.line.capacity());
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_read() {
        let mut text = vec![b'x'; MAX_LINE - 1];
        text.push(b'\n');
        let mut r = LineReader::new(&text[..], Path::new("t"), None);
        assert_eq!(r.next_line(0).unwrap().map(str::len), Some(MAX_LINE - 1));
        assert_eq!(r.next_line(0).unwrap(), None);
    }
}
