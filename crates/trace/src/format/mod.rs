//! Trace formats: one file per format, each a streaming reader (and a writer where the
//! format is ours or worth producing).
//!
//! | file | format |
//! |---|---|
//! | `din.rs` | Dinero `din` text |
//! | `lackey.rs` | Valgrind Lackey text |
//! | `mlt.rs` | mmulab's compact binary format (reader and writer) |
//! | `drmemtrace.rs` | DynamoRIO drmemtrace offline traces and trace directories |
//! | `champsim.rs` | ChampSim `input_instr` and `cloudsuite_instr` |
//! | `input.rs` | compression layers (gzip, xz, zstd) found by magic bytes |
//! | `zipchunks.rs` | the members of a zip archive as one stream |

pub mod champsim;
pub mod din;
pub mod drmemtrace;
pub mod input;
pub mod lackey;
pub mod mlt;
mod text;
pub mod xz;
pub mod zipchunks;

pub use text::LineReader;

/// A writer that counts the bytes it passes on: the size of an output that may be a
/// pipe or a device.
pub struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: std::io::Write> Counted<W> {
    /// Wraps `inner`, counting from zero.
    pub fn new(inner: W) -> Counted<W> {
        Counted { inner, bytes: 0 }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl<W: std::io::Write> std::io::Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
