//! mmulab's simulator wiring: a validated [`config`] becomes a [`Machine`] of models; a
//! trace is fed through it ([`run`]); [`Stats`] come out, exported as JSON or tables
//! ([`report`]).
#![deny(missing_docs)]

mod background;
pub mod catalog;
pub mod config;
pub mod config_cache;
mod config_numa;
mod config_os;
pub mod config_vm;
pub mod gpu;
mod host;
pub mod kernel_time;
pub mod limits;
mod machine;
mod mem_trace;
pub mod numa;
mod pipeline;
pub mod pool;
pub mod report;
mod roi;
mod run;
mod stats;
mod stats_cache;
mod system;
mod translator;
mod vm;
mod vmas;

pub use background::Sample;
pub use machine::Machine;
pub use mem_trace::MemTraceFormat;
pub use roi::{roi_line, run_roi, Roi, RoiInfo, Warmup};
pub use run::{references_simulated, request_stop, run, stop_requested, Progress};
pub use stats::{Counters, LevelStats, Report, Stats};
pub use stats_cache::CacheReport;
pub use system::System;
pub use translator::{Nested, Stage1};
pub use vm::{NestedStats, WalkCacheSplit};
pub use vmas::{preload_vmas, trace_file_meta};

/// Anything that can stop a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Invalid configuration (names the file and key).
    #[error("{0}")]
    Config(String),
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] mmulab_trace::TraceError),
    /// A model failed (e.g. simulated memory exhausted).
    #[error(transparent)]
    Model(#[from] mmulab_model::ModelError),
    /// A GPU model refused its input (names the BO, trace line, page or address).
    #[error("{0}")]
    Gpu(String),
}
