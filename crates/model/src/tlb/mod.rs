//! Translation lookaside buffers: one [`Tlb`] per level, and a [`Hierarchy`] of levels
//! wired as a tree (each level names the level it falls back to).
//!
//! A TLB is not a cache whose block is the page: one level may hold entries of several
//! page sizes at once. An entry is keyed by (virtual page number at its own size, size,
//! address-space id); the set index is that page number modulo the number of sets, so a
//! lookup probes the set of every size the level supports. A level that does not
//! support a translation's size either splinters it (caches the piece of the largest
//! supported smaller size that contains the address — the 4 KiB piece on a 4K-only
//! level, as the Cortex-A15 L1 does) or bypasses it (does not cache it).
//!
//! Adding a behaviour: per-level options belong in [`TlbSpec`] and are validated in the
//! sim crate's config module; keep lookups free of allocation.

mod hierarchy;
mod level;

pub use hierarchy::{Hierarchy, Lookup, LruPow2, MAX_DEPTH};
pub use level::{Tlb, TlbStats};

use crate::addr::PageSize;
use crate::replacement::Policy;
use serde::{Deserialize, Serialize};

/// What kind of references a level serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Serves {
    /// Loads and stores.
    Data,
    /// Instruction fetches.
    Instr,
    /// Both.
    Unified,
}

/// What a level does with a page size it does not list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Unsupported {
    /// Cache the largest supported smaller piece containing the address.
    #[default]
    Splinter,
    /// Do not cache it.
    Bypass,
}

/// A validated TLB level description.
#[derive(Clone, Debug, PartialEq)]
pub struct TlbSpec {
    /// Level name (unique in the hierarchy).
    pub name: String,
    /// What it serves.
    pub serves: Serves,
    /// Total entries (a multiple of `ways`).
    pub entries: usize,
    /// Ways per set (`ways == entries` is fully associative).
    pub ways: usize,
    /// Page sizes it holds, smallest first, no duplicates.
    pub page_sizes: Vec<PageSize>,
    /// What to do with other sizes.
    pub unsupported: Unsupported,
    /// Replacement policy.
    pub replacement: Policy,
    /// Lookup latency in cycles.
    pub latency: u32,
    /// Index of the fallback level in the hierarchy, if any.
    pub next: Option<usize>,
    /// Seed for random replacement.
    pub seed: u64,
}
