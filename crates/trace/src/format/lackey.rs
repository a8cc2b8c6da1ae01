//! Valgrind Lackey traces (`valgrind --tool=lackey --trace-mem=yes`):
//! `I  ADDR,SIZE` (instruction fetch), ` L ADDR,SIZE` (load), ` S ADDR,SIZE` (store),
//! ` M ADDR,SIZE` (modify: counted as one store). Addresses are hexadecimal without
//! prefix. Other lines (Valgrind's `==PID==` messages, program output) are skipped.

use super::text::{parse_hex, LineReader};
use crate::{AccessKind, MemRef, TraceError, TraceSource};
use std::io::BufRead;

/// Streaming Lackey reader.
pub struct LackeyReader<R> {
    lines: LineReader<R>,
    refs: u64,
}

impl<R: BufRead> LackeyReader<R> {
    /// Reads Lackey text from `lines`.
    pub fn new(lines: LineReader<R>) -> Self {
        LackeyReader { lines, refs: 0 }
    }
}

/// Parses one Lackey line: `Ok(None)` for a line that is not a reference, `Err` for a
/// reference line whose address or size is malformed.
pub fn parse_line(line: &str) -> Result<Option<MemRef>, String> {
    let b = line.as_bytes();
    if b.len() < 3 {
        return Ok(None);
    }
    let kind = match (b[0], b[1], b[2]) {
        (b'I', b' ', _) => AccessKind::IFetch,
        (b' ', b'L', b' ') => AccessKind::Load,
        (b' ', b'S', b' ') | (b' ', b'M', b' ') => AccessKind::Store,
        _ => return Ok(None),
    };
    let rest = line[2..].trim_ascii();
    let (a, s) = rest.split_once(',').ok_or("expected ADDR,SIZE")?;
    let addr = parse_hex(a.trim_ascii()).ok_or_else(|| format!("'{a}' is not a hexadecimal address"))?;
    let size: u16 = s
        .trim_ascii()
        .parse()
        .map_err(|_| format!("'{s}' is not an access size"))?;
    Ok(Some(MemRef::new(addr, kind, size)))
}

impl<R: BufRead> TraceSource for LackeyReader<R> {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let start = buf.len();
        while buf.len() - start < max {
            let refs = self.refs + (buf.len() - start) as u64;
            let Some(line) = self.lines.next_line(refs)? else { break };
            match parse_line(line) {
                Ok(Some(r)) => buf.push(r),
                Ok(None) => {}
                Err(what) => return Err(self.lines.corrupt(what, refs)),
            }
        }
        let n = buf.len() - start;
        self.refs += n as u64;
        Ok(n)
    }
    fn describe(&self) -> String {
        format!("{} (lackey)", self.lines.path().display())
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.lines.progress()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_kind_and_skips_noise() {
        assert_eq!(parse_line("==123== Lackey"), Ok(None));
        let i = parse_line("I  0023C790,2").unwrap().unwrap();
        assert_eq!((i.kind, i.addr, i.size), (AccessKind::IFetch, 0x23c790, 2));
        let l = parse_line(" L BE801950,4").unwrap().unwrap();
        assert_eq!((l.kind, l.addr), (AccessKind::Load, 0xbe801950));
        let m = parse_line(" M 0025747C,1").unwrap().unwrap();
        assert_eq!(m.kind, AccessKind::Store);
        assert!(parse_line(" L nothex,4").is_err());
        assert!(parse_line(" S 1000").is_err());
    }
}
