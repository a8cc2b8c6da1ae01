//! The ground every mmulab crate stands on: the memory reference ([`MemRef`],
//! [`AccessKind`]) that traces carry and models consume, the one seeded generator
//! ([`SplitMix64`]) that workloads, models and the probe draw from, the parsing of sizes
//! and counts ([`units`]), and the one host-memory check every command makes before it
//! allocates ([`host_memory`]).
//!
//! Contract: this crate depends on nothing, so that a crate needing only these items
//! (the hardware models) does not pull trace decoders, compressors or recorders. The
//! trace crate re-exports everything here at its old paths (`mmulab_trace::MemRef`,
//! `mmulab_trace::workload::SplitMix64`, `mmulab_trace::units`).
#![deny(missing_docs)]

pub mod host_memory;
mod memref;
mod splitmix;
pub mod units;

pub use memref::{AccessKind, MemRef};
pub use splitmix::SplitMix64;
