//! Dinero III/IV `din` traces: text lines `LABEL HEXADDR [ignored...]`.
//! Labels: 0 read, 1 write, 2 instruction fetch; 3 (escape) and 4 (flush) carry no
//! reference and are skipped. Blank lines and lines starting with `#` are skipped.

use super::text::{parse_hex, LineReader};
use crate::{AccessKind, MemRef, TraceError, TraceSource};
use std::io::BufRead;

/// Streaming `din` reader.
pub struct DinReader<R> {
    lines: LineReader<R>,
    refs: u64,
}

impl<R: BufRead> DinReader<R> {
    /// Reads `din` text from `lines`.
    pub fn new(lines: LineReader<R>) -> Self {
        DinReader { lines, refs: 0 }
    }
}

impl<R: BufRead> TraceSource for DinReader<R> {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let start = buf.len();
        while buf.len() - start < max {
            let refs = self.refs + (buf.len() - start) as u64;
            let Some(line) = self.lines.next_line(refs)? else { break };
            let mut it = line.split_ascii_whitespace();
            let Some(label) = it.next() else { continue };
            if label.starts_with('#') {
                continue;
            }
            let kind = match label {
                "0" => AccessKind::Load,
                "1" => AccessKind::Store,
                "2" => AccessKind::IFetch,
                "3" | "4" => continue,
                _ => {
                    let what = format!("'{label}' is not a din label (0 read, 1 write, 2 ifetch, 3 escape, 4 flush)");
                    return Err(self.lines.corrupt(what, refs));
                }
            };
            let addr = it.next().and_then(parse_hex).ok_or_else(|| {
                self.lines
                    .corrupt("expected a hexadecimal address after the label".into(), refs)
            })?;
            buf.push(MemRef::new(addr, kind, 0));
        }
        let n = buf.len() - start;
        self.refs += n as u64;
        Ok(n)
    }
    fn describe(&self) -> String {
        format!("{} (din)", self.lines.path().display())
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.lines.progress()
    }
}

/// Writes references as `din` lines.
pub fn write_din<W: std::io::Write>(out: &mut W, r: &MemRef) -> std::io::Result<()> {
    writeln!(out, "{} {:x}", r.kind as u8, r.addr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn read(s: &str) -> Result<Vec<MemRef>, TraceError> {
        let lr = LineReader::new(s.as_bytes(), Path::new("t.din"), None);
        let mut r = DinReader::new(lr);
        let mut v = crate::Batch::default();
        while r.next_batch(&mut v, 2)? > 0 {}
        Ok(v.refs)
    }

    #[test]
    fn parses_labels_and_skips_escapes() {
        let v = read("0 1000\n1 0x2000 extra\n\n2 3000\n4 0\n").unwrap();
        let kinds: Vec<_> = v.iter().map(|r| (r.kind, r.addr)).collect();
        assert_eq!(
            kinds,
            vec![
                (AccessKind::Load, 0x1000),
                (AccessKind::Store, 0x2000),
                (AccessKind::IFetch, 0x3000)
            ]
        );
    }

    #[test]
    fn garbage_names_line_offset_and_refs_before() {
        let e = read("0 1000\n0 2000\nhello world\n").unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("t.din") && s.contains("offset 14") && s.contains("line 3"),
            "{s}"
        );
        assert_eq!(e.refs_before(), Some(2));
        assert!(read("0 zz\n").is_err());
    }
}
