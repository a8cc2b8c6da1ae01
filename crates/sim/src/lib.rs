//! mmulab's simulator wiring: a validated [`config`] becomes a [`Machine`] of models; a
//! trace is fed through it ([`run()`]); [`Stats`] come out, exported as JSON or tables
//! ([`report`]). [`Session`] is the one front door: a resolved machine spec, a trace
//! source and run options in, the statistics out.
//!
//! The folders are the layers, each using only those before it:
//!
//! | folder | role |
//! |---|---|
//! | `config/` | parse, validate and resolve a machine's config ([`config::MachineSpec`]); the catalog; host-memory limits; GPU profiles |
//! | `stats/` | what a run reports ([`Stats`] and its parts), warm-up subtraction, text tables |
//! | `system/` | what every requester shares: physical memory, address spaces, the OS policy, a VM's stage 2 |
//! | `translator/` | per-requester translation: stage 1, nested, device; host-side speed helpers |
//! | `machine/` | the requesters over one system, background work, data caches, GPUs |
//! | `run/` | the run loop, the cache thread, the region of interest, a trace's VMAs |
//! | `session.rs` | the front door over all of it |
//!
//! `error.rs`, `stop.rs` and `pool.rs` sit below every folder (the error type; the stop
//! flag a signal handler sets; the one job pool experiments and sweeps share).
#![deny(missing_docs)]

pub mod config;
mod error;
mod machine;
pub mod pool;
pub mod run;
mod session;
pub mod stats;
mod stop;
mod system;
mod translator;

pub use config::catalog;
pub use config::limits;
pub use error::SimError;
pub use machine::background::Sample;
pub use machine::mem_trace::MemTraceFormat;
pub use machine::Machine;
pub use run::roi::{roi_line, run_roi, Roi, Warmup};
pub use run::run;
pub use run::vmas::{preload_vmas, trace_file_meta};
pub use run::Progress;
pub use session::{RunError, Session, SessionOptions};
pub use stats::cache::CacheReport;
pub use stats::nested::{NestedStats, WalkCacheSplit};
pub use stats::report;
pub use stats::{Counters, LevelStats, Report, RoiInfo, Stats};
pub use stop::{clear_stop, references_simulated, request_stop, stop_requested};
pub use system::{System, TraceVma};
pub use translator::{Nested, Stage1};
