//! Opening a trace file: format from the `--format` flag, else detected from the file's
//! content and extension.

use crate::format::{din::DinReader, lackey::LackeyReader, LineReader};
use crate::{TraceError, TraceSource};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// The trace formats mmulab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Dinero `din` text.
    Din,
    /// Valgrind Lackey text.
    Lackey,
}

impl Format {
    /// Every format's name, as `--format` takes it.
    pub const NAMES: &'static [&'static str] = &["din", "lackey", "auto"];

    /// Parses a `--format` value; `auto` (or `None`) means detect.
    pub fn parse(name: &str) -> Result<Option<Format>, TraceError> {
        match name {
            "din" => Ok(Some(Format::Din)),
            "lackey" => Ok(Some(Format::Lackey)),
            "auto" => Ok(None),
            _ => Err(TraceError::Spec(format!(
                "unknown trace format '{name}'; known: {}",
                Format::NAMES.join(", ")
            ))),
        }
    }

    /// Detects the format from the first bytes of the file and its name.
    pub fn detect(path: &Path, head: &[u8]) -> Result<Format, TraceError> {
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        if name.ends_with(".din") {
            return Ok(Format::Din);
        }
        if name.contains("lackey") {
            return Ok(Format::Lackey);
        }
        let text = String::from_utf8_lossy(head);
        for line in text.lines().take(64) {
            if line.starts_with("==") || line.starts_with("I  ") || line.starts_with(" L ") {
                return Ok(Format::Lackey);
            }
            let mut it = line.split_whitespace();
            if let (Some(l), Some(_)) = (it.next(), it.next()) {
                if matches!(l, "0" | "1" | "2" | "3" | "4") {
                    return Ok(Format::Din);
                }
            }
        }
        Err(TraceError::Spec(format!(
            "{}: cannot tell the trace format from its name or first bytes; pass --format ({})",
            path.display(),
            Format::NAMES.join("|")
        )))
    }
}

/// Opens `path` as a streaming trace. `format = None` detects the format.
pub fn open_trace(path: &Path, format: Option<Format>) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    let io = |source| TraceError::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    let total = file.metadata().ok().map(|m| m.len());
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let format = match format {
        Some(f) => f,
        None => {
            let head = reader.fill_buf().map_err(io)?.to_vec();
            Format::detect(path, &head)?
        }
    };
    let lines = LineReader::new(reader, path, total);
    Ok(match format {
        Format::Din => Box::new(DinReader::new(lines)),
        Format::Lackey => Box::new(LackeyReader::new(lines)),
    })
}
