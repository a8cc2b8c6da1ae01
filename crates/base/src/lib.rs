//! The ground every mmulab crate stands on: the memory reference ([`MemRef`],
//! [`AccessKind`]) that traces carry and models consume, and the one seeded generator
//! ([`SplitMix64`]) that workloads, models and the probe draw from.
//!
//! Contract: this crate depends on nothing, so that a crate needing only these items
//! (the hardware models) does not pull trace decoders, compressors or recorders. The
//! trace crate re-exports everything here at its old paths (`mmulab_trace::MemRef`,
//! `mmulab_trace::workload::SplitMix64`).
#![deny(missing_docs)]

mod memref;
mod splitmix;

pub use memref::{AccessKind, MemRef};
pub use splitmix::SplitMix64;
