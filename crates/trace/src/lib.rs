//! Memory-reference traces: the [`MemRef`] stream that every mmulab model consumes, the
//! readers and writers of trace formats, and synthetic workload generators.
//!
//! Contract: a [`TraceSource`] hands out references in batches and never holds a whole
//! trace in memory, so a 100 M-reference trace costs the same memory as a 1 K one.
//! A damaged input yields a [`TraceError`] that names the file and byte offset and says
//! how many references were read before the damage; nothing is silently dropped.
//!
//! Adding a format: write `format/NAME.rs` with a reader implementing [`TraceSource`]
//! (and a writer if it makes sense), add a variant to [`Format`] in `open.rs` with its
//! detection rule, and a golden test on a tiny file in `tests/data/`.
#![deny(missing_docs)]

mod error;
pub mod event;
pub mod format;
pub mod gpu;
pub mod meta;
mod open;
pub mod readahead;
pub mod summary;
pub use mmulab_base::units;
pub mod user_space;
pub mod workload;

pub use error::TraceError;
pub use event::{Batch, Event, EventAt};
pub use meta::{TraceMeta, Vma};
pub use mmulab_base::{AccessKind, MemRef};
pub use open::{
    is_stream, open_inline, open_trace, open_trace_with, CoreMap, Format, Interleave, TraceOptions, DEFAULT_QUANTUM,
};
pub use readahead::ReadAhead;

/// A stream of memory references, read in batches.
pub trait TraceSource {
    /// Appends up to `max` references to `buf.refs`, and the events that come between
    /// them to `buf.events` ([`Batch`]), and returns how many items (references and
    /// events) were appended. Returns `Ok(0)` only at the end of the trace. On an error,
    /// items this call appended before the damage stay in `buf`, and the error's
    /// `refs_before` counts every reference appended to the caller's buffers so far,
    /// these included.
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError>;

    /// A short human-readable description (file name or workload spec).
    fn describe(&self) -> String;

    /// Progress as (done, total) in some unit (bytes of input, or references), when known.
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }

    /// What the trace has said about itself so far (markers, threads, metadata sections
    /// such as captured VMAs). `None` for sources that carry no metadata.
    fn meta(&self) -> Option<TraceMeta> {
        None
    }

    /// How many references at the start of the stream are the workload's own warm-up,
    /// outside its measured region (GUPS's `Table[i] = i`); `sim --warmup auto`, the
    /// default, simulates them as warm-up and reports them apart. 0 for traces.
    fn warmup_refs(&self) -> u64 {
        0
    }

    /// An exclusive bound every reference address (and touch) of the stream stays
    /// under, when the source knows one: a built-in workload's base plus its extent.
    /// `None` for traces. The simulator skips its user-space check of a source whose
    /// bound is inside the user space.
    fn addr_end(&self) -> Option<u64> {
        None
    }
}

impl<T: TraceSource + ?Sized> TraceSource for Box<T> {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        (**self).next_batch(buf, max)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        (**self).progress()
    }
    fn meta(&self) -> Option<TraceMeta> {
        (**self).meta()
    }
    fn warmup_refs(&self) -> u64 {
        (**self).warmup_refs()
    }
    fn addr_end(&self) -> Option<u64> {
        (**self).addr_end()
    }
}
