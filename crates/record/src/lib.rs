//! Recorders of real programs: they run a program and write its memory references into an
//! `.mlt` trace (read back by `mmulab-trace`) with the program's mappings (VMA samples from
//! `/proc/PID/maps`) and the page size.
//!
//! - [`Recorder`] (`valgrind.rs`): Valgrind's Lackey, or mmtrace ([`mmtrace`], a small
//!   Valgrind tool of mmulab's own, optionally sampled), streamed through a pipe.
//! - [`ptrace_sample`]: the ptrace window sampler (x86-64 Linux), which runs the program
//!   natively and single-steps windows of instructions, decoding them with `iced-x86`.
//!
//! Why a crate of its own: recorders run and decode programs (`libc`, `iced-x86`), which
//! nothing that reads or simulates a trace needs; the trace crate stays a reader and writer
//! of formats. `mmulab record` and `mmulab advise` are the callers.
//!
//! Contract: nothing is printed and no process but the recorded one is ever ended; errors
//! are [`RecordError`]s, progress goes to a callback.
#![deny(missing_docs)]

pub mod mmtrace;
pub mod ptrace_sample;
mod valgrind;

pub use valgrind::{Backend, RecordError, RecordOptions, Recorder, Recording};
