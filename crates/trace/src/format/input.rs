//! Opening an input file through its compression layer: plain, gzip, xz or zstd, told
//! apart by their magic bytes (never by the extension alone). Zip archives are recognised
//! here but opened by the drmemtrace reader, which reads their members in order.
//!
//! Progress is measured in bytes of the *file* (compressed bytes), so a progress bar over a
//! `.gz` trace ends at 100 %.

use crate::{TraceError, TraceMeta, TraceSource};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The outer layer of a file, from its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// No compression.
    Plain,
    /// gzip (`1f 8b`); concatenated members are read as one stream.
    Gzip,
    /// xz (`fd 37 7a 58 5a 00`); concatenated streams are read as one, and a file of
    /// several blocks is decoded on several threads (xz.rs).
    Xz,
    /// zstd (`28 b5 2f fd`).
    Zstd,
    /// zip archive (`50 4b 03 04`).
    Zip,
}

impl Container {
    /// The container a file starting with `head` uses.
    pub fn from_magic(head: &[u8]) -> Container {
        if head.starts_with(&[0x1f, 0x8b]) {
            Container::Gzip
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Container::Xz
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Container::Zstd
        } else if head.starts_with(b"PK\x03\x04") {
            Container::Zip
        } else {
            Container::Plain
        }
    }
}

/// Bytes of the file consumed so far, shared with the reader that advances it.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    done: Arc<AtomicU64>,
    total: Option<u64>,
}

impl Progress {
    /// (bytes consumed, file size) when the size is known.
    pub fn get(&self) -> Option<(u64, u64)> {
        self.total.map(|t| (self.done.load(Ordering::Relaxed).min(t), t))
    }
}

/// Bytes [`Container::from_magic`] needs: the longest magic (xz's).
const MAGIC_BYTES: usize = 6;

/// A reader that counts the bytes read through it into a [`Progress`].
pub struct Counting<R> {
    inner: R,
    done: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An opened input: the decompressed byte stream and how far through the file it is.
pub struct Input {
    /// The decompressed content.
    pub reader: Box<dyn BufRead + Send>,
    /// The compression layer found.
    pub container: Container,
    /// Progress through the file.
    pub progress: Progress,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> TraceError + '_ {
    move |source| TraceError::Io {
        path: path.to_path_buf(),
        error: source,
    }
}

/// Opens `path` and wraps it in the decompressor its magic bytes call for. A zip archive
/// is returned as [`Container::Zip`] with the raw bytes (callers open zips themselves).
pub fn open_input(path: &Path) -> Result<Input, TraceError> {
    let mut file = File::open(path).map_err(io_err(path))?;
    let total = file.metadata().ok().map(|m| m.len());
    let progress = Progress {
        done: Arc::new(AtomicU64::new(0)),
        total,
    };
    // The magic bytes alone, read straight from the file (also a pipe) and put back in
    // front of it: the 64 KiB buffer below is filled only when the content is read. A
    // zip is opened again by its reader, and `sniff` of a zip reads nothing more, so
    // neither fills (and first zeroes: the standard library initialises a buffer before
    // a reader without `read_buf` fills it) 16 pages it then drops (docs/benchmarks-log.md,
    // "Start-up").
    let mut magic = [0u8; MAGIC_BYTES];
    let mut got = 0;
    while got < MAGIC_BYTES {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(path)(e)),
        }
    }
    let container = Container::from_magic(&magic[..got]);
    let counting = Counting {
        inner: std::io::Cursor::new(magic).take(got as u64).chain(file),
        done: progress.done.clone(),
    };
    let raw = BufReader::with_capacity(1 << 16, counting);
    let reader: Box<dyn BufRead + Send> = match container {
        Container::Plain | Container::Zip => Box::new(raw),
        Container::Gzip => Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(raw),
        )),
        Container::Xz => Box::new(BufReader::with_capacity(
            1 << 16,
            super::xz::XzReader::new(raw).map_err(io_err(path))?,
        )),
        Container::Zstd => Box::new(BufReader::with_capacity(
            1 << 16,
            zstd::stream::read::Decoder::with_buffer(raw).map_err(io_err(path))?,
        )),
    };
    Ok(Input {
        reader,
        container,
        progress,
    })
}

/// The container of `path` and up to `n` bytes of its decompressed content (fewer when
/// the file is short or damaged: sniffing never fails on bad content, only on I/O).
pub fn sniff(path: &Path, n: usize) -> Result<(Container, Vec<u8>), TraceError> {
    let mut input = open_input(path)?;
    let mut head = vec![0u8; n];
    let got = if input.container == Container::Zip {
        0
    } else {
        let mut got = 0;
        while got < n {
            match input.reader.read(&mut head[got..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => got += k,
            }
        }
        got
    };
    head.truncate(got);
    Ok((input.container, head))
}

/// A trace source whose progress is the bytes consumed of its (compressed) file.
pub struct WithProgress<S> {
    /// The decoding source.
    pub inner: S,
    /// Progress through the file.
    pub progress: Progress,
}

impl<S: TraceSource> TraceSource for WithProgress<S> {
    fn next_batch(&mut self, buf: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        self.inner.next_batch(buf, max)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.progress.get()
    }
    fn meta(&self) -> Option<TraceMeta> {
        self.inner.meta()
    }
}
