//! Trace formats: one file per format, each a streaming reader (and a writer where the
//! format is ours or worth producing).

pub mod din;
pub mod lackey;
mod text;

pub use text::LineReader;
