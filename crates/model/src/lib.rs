//! mmulab's models of address translation hardware and the software that drives it:
//! page sizes ([`addr`]), page-table formats ([`pt`]), the walker and page-walk caches
//! ([`walk`]), TLBs ([`tlb`]), physical memory ([`mem`]), OS policies ([`os`]) and the
//! cost model ([`cost`]); KVM stage-2 dirty logging and eager splitting ([`kvm`]).
//!
//! Models count events; they never print. Wiring them into a machine and reporting is
//! the `mmulab-sim` crate's job.
#![deny(missing_docs)]

pub mod addr;
pub mod assoc;
pub mod cache;
pub mod cost;
pub mod dram;
mod error;
pub mod gpu;
pub mod hint;
pub mod kvm;
pub mod mem;
pub mod os;
pub mod pt;
pub mod replacement;
pub mod space;
pub mod tlb;
pub mod translation;
pub mod walk;

pub use error::ModelError;
