//! Opening a trace file: format from the `--format` flag, else detected — from magic bytes
//! first (after looking through gzip / xz / zstd), then from the file name, then by sniffing
//! text. A directory is a drmemtrace per-thread trace directory.

use crate::event::LegacyMarkers;
use crate::format::champsim::{self, ChampSimReader, Variant};
use crate::format::drmemtrace::{self, DrDirReader, DrOptions, DrReader};
use crate::format::input::{open_input, sniff, Container, WithProgress};
use crate::format::mlt::{self, MltReader};
use crate::format::{din::DinReader, lackey::LackeyReader, LineReader};
use crate::readahead::ReadAhead;
use crate::{TraceError, TraceSource};
use std::io::Read;
use std::path::Path;

/// The trace formats mmulab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Dinero `din` text (plain, .gz, .xz or .zst).
    Din,
    /// Valgrind Lackey text (plain, .gz, .xz or .zst).
    Lackey,
    /// mmulab's own compact binary format (`.mlt`).
    Mlt,
    /// DynamoRIO drmemtrace offline trace: `.trace.zip`, `.trace.gz`, raw, or a directory
    /// of per-thread files.
    DrMemtrace,
    /// ChampSim `input_instr` records (64 bytes), usually `.xz` / `.gz`.
    ChampSim,
    /// ChampSim `cloudsuite_instr` records (96 bytes, with ASIDs).
    CloudSuite,
}

/// How drmemtrace threads map to cores (see `format::drmemtrace`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CoreMap {
    /// The CPU of the thread's latest CPU_ID marker, renumbered densely.
    #[default]
    Cpu,
    /// One core per thread, numbered in order of first appearance.
    Thread,
}

/// How the per-thread files of a drmemtrace directory are interleaved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Interleave {
    /// As traced: by the threads' TIMESTAMP markers.
    #[default]
    Timestamp,
    /// Each thread in turn delivers this many references.
    RoundRobin(u64),
}

/// Options for [`open_trace_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceOptions {
    /// The format; `None` detects it.
    pub format: Option<Format>,
    /// drmemtrace: deliver prefetch records as loads (default: ignore them).
    pub prefetches: bool,
    /// drmemtrace: thread-to-core rule.
    pub cores: CoreMap,
    /// drmemtrace directories: interleaving rule.
    pub interleave: Interleave,
}

/// The quantum of `rr` without a count: references each thread delivers per turn.
pub const DEFAULT_QUANTUM: u64 = 1000;

impl CoreMap {
    /// Parses a core-mapping name: `cpu` ([`CoreMap::Cpu`]) or `thread`
    /// ([`CoreMap::Thread`]). The one parser of this option: `sim`, `convert`,
    /// `trace-info`, sweeps and the Python package all call it (docs/trace-format.md,
    /// "Reader options").
    pub fn parse(s: &str) -> Result<CoreMap, TraceError> {
        match s {
            "cpu" => Ok(CoreMap::Cpu),
            "thread" => Ok(CoreMap::Thread),
            _ => Err(TraceError::Spec(format!("cores takes `cpu` or `thread`, not '{s}'"))),
        }
    }
}

impl Interleave {
    /// Parses an interleaving rule: `timestamp` ([`Interleave::Timestamp`]), or `rr:N`
    /// ([`Interleave::RoundRobin`], N > 0 references per turn); `rr` alone is `rr:1000`
    /// ([`DEFAULT_QUANTUM`]), and the colon may be left out (`rr64` is `rr:64`). `rr:`
    /// with no N is an error (an empty variable in a script, say), not the default.
    /// The one parser of this option, with one meaning everywhere (docs/trace-format.md,
    /// "Reader options").
    pub fn parse(s: &str) -> Result<Interleave, TraceError> {
        if s == "timestamp" {
            return Ok(Interleave::Timestamp);
        }
        let quantum = s.strip_prefix("rr").map(|n| match n {
            "" => Ok(DEFAULT_QUANTUM),
            n => n.strip_prefix(':').unwrap_or(n).parse::<u64>(),
        });
        match quantum {
            Some(Ok(q)) if q > 0 => Ok(Interleave::RoundRobin(q)),
            _ => Err(TraceError::Spec(format!(
                "interleave takes `timestamp` or `rr:N` (N > 0 references per turn; `rr` alone: {DEFAULT_QUANTUM}), not '{s}'"
            ))),
        }
    }
}

impl TraceOptions {
    /// The reader options named by the strings every front end takes (`--format`,
    /// `--prefetches`, `--cores`, `--interleave`; a sweep's `[read]` table; Python's
    /// arguments): [`Format::parse`], [`CoreMap::parse`] and [`Interleave::parse`].
    pub fn parse(format: &str, prefetches: bool, cores: &str, interleave: &str) -> Result<TraceOptions, TraceError> {
        Ok(TraceOptions {
            format: Format::parse(format)?,
            prefetches,
            cores: CoreMap::parse(cores)?,
            interleave: Interleave::parse(interleave)?,
        })
    }
}

impl Format {
    /// Every format's name, as `--format` takes it.
    pub const NAMES: &'static [&'static str] =
        &["din", "lackey", "mlt", "drmemtrace", "champsim", "cloudsuite", "auto"];

    /// The `--format` name of this format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Din => "din",
            Format::Lackey => "lackey",
            Format::Mlt => "mlt",
            Format::DrMemtrace => "drmemtrace",
            Format::ChampSim => "champsim",
            Format::CloudSuite => "cloudsuite",
        }
    }

    /// Parses a `--format` value; `auto` (or `None`) means detect.
    pub fn parse(name: &str) -> Result<Option<Format>, TraceError> {
        match name {
            "din" => Ok(Some(Format::Din)),
            "lackey" => Ok(Some(Format::Lackey)),
            "mlt" => Ok(Some(Format::Mlt)),
            "drmemtrace" => Ok(Some(Format::DrMemtrace)),
            "champsim" => Ok(Some(Format::ChampSim)),
            "cloudsuite" => Ok(Some(Format::CloudSuite)),
            "auto" => Ok(None),
            _ => Err(TraceError::Spec(format!(
                "unknown trace format '{name}'; known: {}",
                Format::NAMES.join(", ")
            ))),
        }
    }

    /// Detects the format of `path` (a file or a drmemtrace directory) by reading its
    /// first bytes. A pipe, FIFO or terminal ([`is_stream`]) is refused: its bytes can be
    /// read only once, so [`open_inline`] detects a stream's format from the head it reads.
    pub fn detect_path(path: &Path) -> Result<Format, TraceError> {
        if path.is_dir() {
            return Ok(Format::DrMemtrace);
        }
        if is_stream(path) {
            return Err(TraceError::Spec(format!(
                "{}: a pipe or FIFO can be read only once; its format is detected when it is opened",
                path.display()
            )));
        }
        let (container, head) = sniff(path, 1 << 14)?;
        if container == Container::Zip {
            return Ok(Format::DrMemtrace);
        }
        Format::detect(path, &head)
    }

    /// Detects the format from the first decompressed bytes of the file (`head`) and its
    /// name: magic bytes first, then the extension, then text sniffing.
    pub fn detect(path: &Path, head: &[u8]) -> Result<Format, TraceError> {
        if head.starts_with(&mlt::MAGIC) {
            return Ok(Format::Mlt);
        }
        if drmemtrace::looks_like(head) {
            return Ok(Format::DrMemtrace);
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let base = [".gz", ".xz", ".zst"]
            .iter()
            .fold(name.as_str(), |n, s| n.strip_suffix(s).unwrap_or(n));
        if base.ends_with(".mlt") {
            return Ok(Format::Mlt);
        }
        if base.ends_with(".din") {
            return Ok(Format::Din);
        }
        if base.contains("lackey") {
            return Ok(Format::Lackey);
        }
        if base.contains("cloudsuite") {
            return Ok(Format::CloudSuite);
        }
        if base.contains("champsim") {
            return Ok(Format::ChampSim);
        }
        if base.ends_with(".trace") || base.ends_with(".trace.zip") {
            return Ok(Format::DrMemtrace);
        }
        let sample = &head[..head.len().min(4096)];
        let texty = !sample.is_empty()
            && sample
                .iter()
                .all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (32..127).contains(&b));
        if texty {
            let text = String::from_utf8_lossy(sample);
            for line in text.lines().take(64) {
                if line.starts_with("==")
                    || line.starts_with("I  ")
                    || line.starts_with(" L ")
                    || line.starts_with(" S ")
                {
                    return Ok(Format::Lackey);
                }
                let mut it = line.split_whitespace();
                if let (Some(l), Some(_)) = (it.next(), it.next()) {
                    if matches!(l, "0" | "1" | "2" | "3" | "4") {
                        return Ok(Format::Din);
                    }
                }
            }
        } else if let Some(v) = champsim::guess_variant(sample) {
            return Ok(match v {
                Variant::Standard => Format::ChampSim,
                Variant::Cloudsuite => Format::CloudSuite,
            });
        }
        Err(TraceError::Spec(format!(
            "{}: cannot tell the trace format from its first bytes or name; pass --format ({})",
            path.display(),
            Format::NAMES.join("|")
        )))
    }
}

/// Whether `path` is a pipe, FIFO, socket or character device (`/dev/stdin` from a pipe,
/// `<(…)`, a `mkfifo` node): bytes that can be read once, from the start, and not sought.
/// Everything that looks into a trace before reading it (format detection, an `.mlt`'s
/// metadata sections) must then work on the one stream that is read.
pub fn is_stream(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Bytes [`open_inline`] reads from a stream to detect its format (as `detect_path` sniffs
/// a file), then puts back in front of the rest.
const STREAM_HEAD: usize = 1 << 14;

/// Opens `path` as a streaming trace with default options. `format = None` detects it.
pub fn open_trace(path: &Path, format: Option<Format>) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    open_trace_with(
        path,
        &TraceOptions {
            format,
            ..TraceOptions::default()
        },
    )
}

/// Opens `path` (a file, or a drmemtrace directory) as a streaming trace, decompressed and
/// decoded on a second thread ([`ReadAhead`]).
pub fn open_trace_with(path: &Path, opts: &TraceOptions) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    Ok(Box::new(ReadAhead::new(open_inline(path, opts)?)))
}

/// [`open_trace_with`] without the second thread: the reader itself.
pub fn open_inline(path: &Path, opts: &TraceOptions) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    if is_stream(path) {
        return open_stream(path, opts);
    }
    let format = match opts.format {
        Some(f) => f,
        None => Format::detect_path(path)?,
    };
    let dr = DrOptions {
        prefetches: opts.prefetches,
        cores: opts.cores,
    };
    if path.is_dir() {
        if format != Format::DrMemtrace {
            return Err(TraceError::Spec(format!(
                "{}: a directory can only be a drmemtrace trace directory",
                path.display()
            )));
        }
        return Ok(Box::new(DrDirReader::open(path, dr, opts.interleave)?));
    }
    if format == Format::DrMemtrace {
        return Ok(Box::new(DrReader::open(path, dr)?));
    }
    let input = open_input(path)?;
    if input.container == Container::Zip {
        return Err(TraceError::Spec(format!(
            "{}: a zip archive holds a drmemtrace trace, not {} (use --format drmemtrace or auto)",
            path.display(),
            format.name()
        )));
    }
    decode(path, format, input.reader, input.progress)
}

/// [`open_inline`] of a pipe or FIFO: opened once; the format is detected from the first
/// [`STREAM_HEAD`] decompressed bytes, which are then read again in front of the rest.
fn open_stream(path: &Path, opts: &TraceOptions) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    let refuse = |what: &str| {
        Err(TraceError::Spec(format!(
            "{}: {what} cannot be read from a pipe or FIFO (its reader opens and seeks the file): write it to a file first",
            path.display()
        )))
    };
    if opts.format == Some(Format::DrMemtrace) {
        return refuse("a drmemtrace trace");
    }
    let mut input = open_input(path)?;
    if input.container == Container::Zip {
        return refuse("a zip archive (drmemtrace)");
    }
    let mut head = vec![0u8; STREAM_HEAD];
    let mut got = 0;
    while got < head.len() {
        match input.reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                return Err(TraceError::Io {
                    path: path.to_path_buf(),
                    error,
                })
            }
        }
    }
    head.truncate(got);
    let format = match opts.format {
        Some(f) => f,
        None => Format::detect(path, &head)?,
    };
    if format == Format::DrMemtrace {
        return refuse("a drmemtrace trace");
    }
    let reader = std::io::BufReader::with_capacity(1 << 16, std::io::Cursor::new(head).chain(input.reader));
    decode(path, format, Box::new(reader), input.progress)
}

/// The reader of `format` over the decompressed bytes of `path`.
fn decode(
    path: &Path,
    format: Format,
    reader: Box<dyn std::io::BufRead + Send>,
    progress: crate::format::input::Progress,
) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    // The formats mmulab writes (mlt, din, Lackey) may hold events in the legacy
    // encoding of older versions (crate::event): they are read through its decoder.
    let src: Box<dyn TraceSource + Send> = match format {
        Format::Din => Box::new(LegacyMarkers::new(WithProgress {
            inner: DinReader::new(LineReader::new(reader, path, None)),
            progress,
        })),
        Format::Lackey => Box::new(LegacyMarkers::new(WithProgress {
            inner: LackeyReader::new(LineReader::new(reader, path, None)),
            progress,
        })),
        Format::Mlt => Box::new(LegacyMarkers::new(WithProgress {
            inner: MltReader::new(reader, path, None)?,
            progress,
        })),
        Format::ChampSim => Box::new(WithProgress {
            inner: ChampSimReader::new(Box::new(reader), path, Variant::Standard),
            progress,
        }),
        Format::CloudSuite => Box::new(WithProgress {
            inner: ChampSimReader::new(Box::new(reader), path, Variant::Cloudsuite),
            progress,
        }),
        Format::DrMemtrace => {
            return Err(TraceError::Spec(format!(
                "{}: a drmemtrace trace is opened by its own reader, not as a byte stream",
                path.display()
            )))
        }
    };
    Ok(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_options_parse_with_one_meaning() {
        assert_eq!(CoreMap::parse("cpu").unwrap(), CoreMap::Cpu);
        assert_eq!(CoreMap::parse("thread").unwrap(), CoreMap::Thread);
        assert!(CoreMap::parse("core")
            .unwrap_err()
            .to_string()
            .contains("`cpu` or `thread`"));
        assert_eq!(Interleave::parse("timestamp").unwrap(), Interleave::Timestamp);
        assert_eq!(Interleave::parse("rr:5").unwrap(), Interleave::RoundRobin(5));
        assert_eq!(Interleave::parse("rr5").unwrap(), Interleave::RoundRobin(5));
        assert_eq!(
            Interleave::parse("rr").unwrap(),
            Interleave::RoundRobin(DEFAULT_QUANTUM)
        );
        for bad in ["rr:", "rr:0", "rr0", "rr:x", "round", "", "rr:-1"] {
            let e = Interleave::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("not '{bad}'")) && e.contains("rr:N"), "{bad}: {e}");
        }
        let o = TraceOptions::parse("mlt", true, "thread", "rr").unwrap();
        assert_eq!(o.format, Some(Format::Mlt));
        assert!(o.prefetches);
        assert_eq!((o.cores, o.interleave), (CoreMap::Thread, Interleave::RoundRobin(1000)));
    }
}
