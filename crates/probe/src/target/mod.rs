//! What the probe measures: a [`Target`]. The probe algorithm (`crate::probe`) never
//! touches the OS; it asks a target for fresh mappings and for timed pointer chases over
//! them. Two implementations are planned:
//!
//! - [`native::NativeTarget`]: this machine (Linux: mmap, madvise, smaps, perf counters);
//! - [`sim::SimTarget`]: a simulated core; the simulator turns each access into time
//!   through the machine's cost model.
//!
//! To add a target, implement [`Target`]; the contract is on each method.

#[cfg(target_os = "linux")]
pub mod native;
pub mod sim;

use serde::Serialize;

use crate::error::Result;

/// Which page size backs a probe mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Backing {
    /// Base pages (4 KiB); transparent huge pages explicitly refused.
    Base,
    /// 2 MiB pages through transparent huge pages (madvise(MADV_HUGEPAGE)).
    Thp,
    /// 2 MiB pages from the hugetlbfs pool (MAP_HUGETLB).
    Hugetlb,
}

impl Backing {
    /// Short label used in reports.
    pub fn label(self) -> &'static str {
        match self {
            Backing::Base => "4K",
            Backing::Thp => "2M-thp",
            Backing::Hugetlb => "2M-hugetlb",
        }
    }
    /// The page size this backing asks for, in bytes.
    pub fn page_bytes(self) -> u64 {
        match self {
            Backing::Base => 4096,
            Backing::Thp | Backing::Hugetlb => 2 << 20,
        }
    }
}

/// Distance between consecutive chase slots: one slot per 4 KiB page, or one per 2 MiB page.
/// Within its page each slot sits at a rotating offset (slot `i` at `i·64 B` modulo the
/// 4 KiB page) so the slots spread over all data-cache sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Stride {
    /// One slot per 4 KiB.
    #[serde(rename = "4K")]
    Page4K,
    /// One slot per 2 MiB.
    #[serde(rename = "2M")]
    Page2M,
}

impl Stride {
    /// Bytes between slots.
    pub fn bytes(self) -> usize {
        match self {
            Stride::Page4K => 4096,
            Stride::Page2M => 2 << 20,
        }
    }
    /// Byte offset of slot `i` from the start of the mapping: one cache line per page, the
    /// line rotating by 64 B per page (and, for 2 MiB strides, by 4 KiB + 64 B so slots
    /// also spread over physically indexed cache sets).
    pub fn slot_offset(self, i: usize) -> usize {
        match self {
            Stride::Page4K => i * 4096 + (i * 64) % 4096,
            Stride::Page2M => i * (2 << 20) + (i * (4096 + 64)) % (2 << 20),
        }
    }
}

/// What the target reports about the page size it actually obtained for a mapping.
#[derive(Clone, Debug, Serialize)]
pub struct VerifiedBacking {
    /// What was asked for.
    pub requested: Backing,
    /// Page size the kernel reports for the mapping (smaps `KernelPageSize`), bytes.
    pub kernel_page_bytes: u64,
    /// Fraction of the mapping's resident bytes that sit in 2 MiB pages (smaps
    /// `AnonHugePages`, or the whole mapping for hugetlbfs).
    pub huge_fraction: f64,
    /// True when the mapping is backed as requested (≥ 95 % huge for huge backings, 0 % for
    /// base pages).
    pub ok: bool,
    /// How it was verified, or why it could not be.
    pub how: String,
}

/// Time unit of a target's measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    /// Nanoseconds (wall clock).
    Ns,
    /// Core cycles (simulated targets).
    Cycles,
}

impl TimeUnit {
    /// Unit label.
    pub fn label(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Cycles => "cycles",
        }
    }
}

/// Static facts about a target.
#[derive(Clone, Debug, Serialize)]
pub struct TargetInfo {
    /// A short description ("native: AMD EPYC (x86_64)", "sim: cortex-a76").
    pub name: String,
    /// `"x86_64"` or `"aarch64"` (the machine-config spelling).
    pub arch: String,
    /// Unit of every time the target returns.
    pub unit: TimeUnit,
    /// Names of the miss counters a [`Measurement`] carries (empty: timing only).
    pub counters: Vec<String>,
    /// Why counters are missing, when they are.
    pub counters_note: Option<String>,
}

/// One timed chase over the first `slots` slots of the current mapping.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measurement {
    /// Time per access of the page chase (one slot per page).
    pub chase: f64,
    /// Time per access of the dense baseline: the same number of cache lines packed
    /// contiguously, visited in random order, so the data-cache cost matches and the
    /// difference is translation.
    pub baseline: f64,
    /// Counter values per access, in the order of [`TargetInfo::counters`].
    pub counters: Vec<f64>,
}

/// A machine the probe can measure.
///
/// Contract: `map` creates a *fresh* mapping (new physical pages on a real machine) of
/// `slots` slots of the given stride and backing, writes every page before returning and
/// reports the backing it verified; `measure` then times chases over a prefix of it.
/// Implementations must make the chase a dependent, randomized pointer chase so that time
/// per access reflects latency, and must warm the chase before timing it.
pub trait Target {
    /// Static facts: name, unit, counters.
    fn info(&self) -> TargetInfo;
    /// `Ok(())` if the backing can be used at all, else the reason it cannot (THP
    /// disabled, no hugetlb pool, ...).
    fn check(&self, backing: Backing) -> std::result::Result<(), String>;
    /// Replace the current mapping with a fresh one holding `slots` slots of `stride`,
    /// backed by `backing`, every page written; return the verified backing.
    fn map(&mut self, backing: Backing, stride: Stride, slots: usize, seed: u64) -> Result<VerifiedBacking>;
    /// Time a random-order chase over the first `slots` slots of the current mapping
    /// (`slots` ≤ the mapped count), `steps` dependent accesses per timed pass, and the
    /// matching dense baseline.
    fn measure(&mut self, slots: usize, steps: usize, seed: u64) -> Result<Measurement>;
    /// True when counter `i` of [`TargetInfo::counters`] counts the misses of data-TLB
    /// level `i + 1` exactly (no noise, no other events): the probe then takes each
    /// level's capacity from where its misses first appear instead of from time steps.
    /// Default `false` (hardware counters are approximate and not per level).
    fn exact_counters(&self) -> bool {
        false
    }
}
