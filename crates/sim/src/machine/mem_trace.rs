//! The main-memory request stream (`sim --mem-trace FILE`, docs/memory.md "Request
//! streams"): every request that reaches memory below the data caches, one line each,
//! in a DRAM simulator's trace format, for cross-checking a DRAM model against it.

use mmulab_model::mem::backend::MemReq;
use std::io::Write;

/// A request stream's line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemTraceFormat {
    /// DRAMsim3's trace format: `0xADDR READ|WRITE cycle`.
    Dramsim3,
    /// Ramulator's memory-trace format: `0xADDR R|W`.
    Ramulator,
}

impl MemTraceFormat {
    /// Parses `dramsim3` or `ramulator`.
    pub fn parse(s: &str) -> Result<MemTraceFormat, String> {
        match s {
            "dramsim3" => Ok(MemTraceFormat::Dramsim3),
            "ramulator" => Ok(MemTraceFormat::Ramulator),
            _ => Err(format!(
                "unknown request-stream format '{s}': use dramsim3 or ramulator"
            )),
        }
    }
}

/// An open request stream.
pub(crate) struct MemTrace {
    format: MemTraceFormat,
    out: std::io::BufWriter<Box<dyn Write + Send>>,
}

impl MemTrace {
    pub(crate) fn new(format: MemTraceFormat, out: Box<dyn Write + Send>) -> MemTrace {
        MemTrace {
            format,
            out: std::io::BufWriter::with_capacity(1 << 16, out),
        }
    }

    /// Writes `reqs`, in order.
    pub(crate) fn write(&mut self, reqs: &[MemReq]) -> std::io::Result<()> {
        for r in reqs {
            match self.format {
                MemTraceFormat::Dramsim3 => writeln!(
                    self.out,
                    "{:#x} {} {}",
                    r.pa,
                    if r.write { "WRITE" } else { "READ" },
                    r.at
                )?,
                MemTraceFormat::Ramulator => writeln!(self.out, "{:#x} {}", r.pa, if r.write { "W" } else { "R" })?,
            }
        }
        Ok(())
    }

    /// Flushes what is buffered.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_in_both_formats() {
        let reqs = [
            MemReq {
                pa: 0x1040,
                write: false,
                core: 0,
                at: 7,
            },
            MemReq {
                pa: 0x80,
                write: true,
                core: 1,
                at: 9,
            },
        ];
        for (f, want) in [
            (MemTraceFormat::Dramsim3, "0x1040 READ 7\n0x80 WRITE 9\n"),
            (MemTraceFormat::Ramulator, "0x1040 R\n0x80 W\n"),
        ] {
            let buf = Shared::default();
            let mut t = MemTrace::new(f, Box::new(buf.clone()));
            t.write(&reqs).unwrap();
            t.flush().unwrap();
            assert_eq!(String::from_utf8(buf.0.lock().unwrap().clone()).unwrap(), want);
        }
        assert!(MemTraceFormat::parse("dramsim2")
            .unwrap_err()
            .contains("dramsim3 or ramulator"));
    }
}
