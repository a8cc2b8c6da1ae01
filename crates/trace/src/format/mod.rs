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
pub mod zipchunks;

pub use text::LineReader;
