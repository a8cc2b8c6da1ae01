//! Translators: what turns a requester's virtual addresses into physical ones. A
//! machine is a set of requesters (CPU cores today; devices such as a GPU later), each
//! with its own translator, over one shared [`System`] (physical memory, address
//! spaces, the OS policy).
//!
//! Contract of a translator ([`Translator`]):
//! * [`Translator::access`] translates one reference: TLB lookups, walks (page-walk
//!   caches, descriptor reads through `System::mem`), fills, hardware accessed/dirty
//!   updates. It never calls the OS: a fault is raised to the machine as
//!   [`Stop::Fault`], the machine lets the context's OS handle it, applies the
//!   shootdowns to every requester, then calls [`Translator::resume`], as hardware
//!   raises an exception and retries the access.
//! * [`Translator::invalidate_range`] drops every cached translation of a range (TLBs
//!   and walk caches): shootdowns and address-space exits.
//! * Every translator reports its counters through [`Report`], the one interface of
//!   every component (`stats.rs` reads no machine internals).
//! * Host-side speed helpers (the walk memo, the root cache, the specialised-path
//!   choice) sit apart from the simulated state, in a translator's own
//!   `host::Host`, and never change a result.
//!
//! Adding a translator (a nested stage-1 × stage-2 translator, a device MMU with its
//! own page-table format): a file here with a struct implementing [`Translator`], a
//! field of the machine holding its requesters, and its events in `Stats`. The stage-1
//! translator and the machine's hot path do not change.

mod core_cache;
mod device;
pub(crate) mod host;
mod mlp;
mod nested;
mod stage1;

pub(crate) use core_cache::{replay, CacheSide, CachedCore, CoreCache};

pub use device::Device;
pub use nested::Nested;
pub use stage1::Stage1;

use crate::stats::{LevelStats, Report};
use crate::system::System;
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::tlb::Tlb;
use mmulab_trace::MemRef;

/// Why a translator stopped before finishing an access.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A walk reached an invalid descriptor, or a store found a read-only page: the OS
    /// must act, then [`Translator::resume`] continues with `attempt` (walks so far in
    /// this access's retry budget) and fills the first `upto` levels of the path.
    Fault {
        /// Levels of the TLB path to fill after the walk.
        upto: u8,
        /// Walk attempts already made (at most 3 per access).
        attempt: u8,
    },
    /// A stage-2 walk found no leaf for guest-physical address `gpa`, or a write found
    /// a read-only one (a nested translator): the host maps it or makes it writable,
    /// then [`Translator::resume`] continues as after [`Stop::Fault`].
    HostFault {
        /// The guest-physical address.
        gpa: u64,
        /// True for a write (a store, or the walker's update of a guest descriptor).
        write: bool,
        /// Levels of the TLB path to fill after the walk.
        upto: u8,
        /// Faults taken so far by this access.
        attempt: u8,
    },
    /// An error (boxed: `Result<(), Stop>` then fits in two registers, which the
    /// per-reference path returns and tests).
    Error(Box<SimError>),
}

impl From<SimError> for Stop {
    fn from(e: SimError) -> Self {
        Stop::Error(Box::new(e))
    }
}

/// A requester's translation hardware (see the module contract).
pub(crate) trait Translator: Report {
    /// Translates one reference.
    fn access(&mut self, sys: &mut System, r: &MemRef) -> Result<(), Stop>;
    /// Continues an access after the OS handled the fault [`Stop::Fault`] reported.
    fn resume(&mut self, sys: &mut System, r: &MemRef, upto: u8, attempt: u8) -> Result<(), Stop>;
    /// Drops every cached translation of `[start, end)` of `asid`.
    fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64);
    /// Address spaces changed (created, exited, faulted, unmapped, background work):
    /// drop any host-side cache of their page-table roots.
    fn spaces_changed(&mut self);
    /// Walk cycles so far: what [`Report`] adds to `counters.walk_cycles` (the one
    /// definition; per-region attribution reads it before and after a reference).
    fn walk_cycles(&self) -> u64;
}

/// Adds a core's TLB levels to the per-level figures (counts, and compulsory misses
/// where they are counted) and the cycles of their lookups, each at its level's latency,
/// to `tlb_cycles`: the one place stage-1 and nested cores report their TLBs.
pub(crate) fn add_tlb_levels(levels: &mut [LevelStats], tlbs: &[Tlb], tlb_cycles: &mut u64) {
    for (l, t) in levels.iter_mut().zip(tlbs) {
        let b = t.stats();
        *tlb_cycles += b.accesses * t.spec().latency as u64;
        l.counts.add(&b);
        if let Some(c) = t.compulsory() {
            *l.compulsory.get_or_insert(0) += c;
        }
    }
}
