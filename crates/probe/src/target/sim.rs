//! A simulated core as a probe [`Target`]: the probe runs unchanged, and every access of
//! its chases goes through an `mmulab_sim::Machine` built from a machine config, whose
//! cost model turns it into cycles.
//!
//! * `map` builds a fresh machine (empty TLBs, page tables and memory) whose OS policy is
//!   `fixed` at the backing's page size: the format's smallest page for
//!   [`Backing::Base`], and for the 2 MiB backings the format's 2 MiB leaf (block or
//!   contiguous group), or its largest leaf below 2 MiB (the ARMv7 1 MiB section — what
//!   Linux calls a huge page there). It then stores to every slot, as the contract asks.
//! * `measure` links the slots into one random cycle (as the native target does), runs
//!   two warm-up laps, then times `steps` loads following the cycle: time per access =
//!   [`DATA_CYCLES`] + the machine's TLB and walk cycles per access. The dense baseline
//!   is the cost of an access that hits the first data TLB level (`DATA_CYCLES` + its
//!   latency): the simulated data caches are perfect, so that is what a dense chase costs.
//!
//! Why the knees are sharp: the slots of a chase sit in consecutive pages, which a
//! set-associative level spreads evenly over its sets, so a cyclic chase over N ≤ entries
//! pages fits every set and hits, and N = entries + 1 overflows one set. The rise just
//! past a set-associative level's capacity is small (one set misses), which is why the
//! simulated probe refines knees with [`crate::probe::ProbeConfig::exact`].

use mmulab_model::addr::PageSize;
use mmulab_model::tlb::{Serves, Unsupported};
use mmulab_sim::config::{MachineSpec, OsSpec};
use mmulab_sim::{Machine, Session, Stats};
use mmulab_trace::{AccessKind, MemRef};

use super::{Backing, Measurement, Stride, Target, TargetInfo, TimeUnit, VerifiedBacking};
use crate::error::{ProbeError, Result};
use crate::rng::Rng;

/// Cycles of the data access itself (an L1 data-cache hit), the same in chase and
/// baseline.
pub const DATA_CYCLES: f64 = 4.0;

/// Virtual base of the probe's mapping: 1 GiB, inside a 32-bit address space too.
const BASE_VA: u64 = 1 << 30;

/// A simulated core.
pub struct SimTarget {
    name: String,
    spec: MachineSpec,
    machine: Option<(Machine, Stride, usize)>,
    /// Per data-TLB level (a level and its same-cycle parts): the index of the part whose
    /// misses are the level's misses (the last part), and the level's name.
    miss_counters: Vec<(usize, String)>,
}

fn err(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Invalid(format!("simulated machine: {e}"))
}

impl SimTarget {
    /// A target for the machine `spec`, called `name` in reports.
    pub fn new(name: &str, spec: MachineSpec) -> Self {
        let mut miss_counters: Vec<(usize, String)> = Vec::new();
        let mut cur = Some(spec.data_entry);
        while let Some(i) = cur {
            let t = &spec.tlbs[i];
            match miss_counters.last_mut() {
                Some(last) if t.latency == 0 => last.0 = i,
                _ => miss_counters.push((i, format!("{} misses", t.name))),
            }
            cur = t.next;
        }
        SimTarget {
            name: name.to_string(),
            spec,
            machine: None,
            miss_counters,
        }
    }

    /// The machine description.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// The page size the probe's 2 MiB backings get on this format (see the module doc).
    pub fn huge_size(&self) -> Option<PageSize> {
        huge_size(&self.spec)
    }

    fn page_size(&self, backing: Backing) -> std::result::Result<PageSize, String> {
        match backing {
            Backing::Base => Ok(self.spec.format.page_sizes()[0]),
            _ => self.huge_size().ok_or_else(|| {
                format!(
                    "{} page tables have no leaf of 1 or 2 MiB",
                    self.spec.format.arch_name()
                )
            }),
        }
    }

    /// (translation cycles, misses of each data-TLB level) so far.
    fn counters(&self, m: &Machine) -> (u64, Vec<u64>) {
        let s = Stats::collect(m);
        let misses = self
            .miss_counters
            .iter()
            .map(|&(i, _)| s.levels[i].counts.misses)
            .collect();
        (s.counters.tlb_cycles + s.counters.walk_cycles, misses)
    }
}

/// The page size the probe's 2 MiB backings get on the machine's format.
pub fn huge_size(spec: &MachineSpec) -> Option<PageSize> {
    huge_size_of(spec.format)
}

/// The page size the probe's 2 MiB backings get on a page-table format: its 2 MiB leaf,
/// else its largest leaf between 64 KiB and 2 MiB (the ARMv7 1 MiB section).
pub fn huge_size_of(format: mmulab_model::pt::Format) -> Option<PageSize> {
    let sizes = format.page_sizes();
    if sizes.contains(&PageSize::M2) {
        return Some(PageSize::M2);
    }
    sizes.into_iter().rev().find(|&p| p < PageSize::M2 && p > PageSize::K64)
}

impl Target for SimTarget {
    fn info(&self) -> TargetInfo {
        TargetInfo {
            name: format!("sim: {}", self.name),
            arch: self.spec.format.arch_name().to_string(),
            unit: TimeUnit::Cycles,
            counters: self.miss_counters.iter().map(|(_, n)| n.clone()).collect(),
            counters_note: Some(
                "simulated core: timing from the machine's cost model; counters are its TLB misses".into(),
            ),
        }
    }

    fn check(&self, backing: Backing) -> std::result::Result<(), String> {
        self.page_size(backing).map(|_| ())
    }

    /// The simulator's per-level statistics count every level's misses exactly.
    fn exact_counters(&self) -> bool {
        true
    }

    fn map(&mut self, backing: Backing, stride: Stride, slots: usize, _seed: u64) -> Result<VerifiedBacking> {
        let size = self.page_size(backing).map_err(ProbeError::Unavailable)?;
        let mut spec = self.spec.clone();
        spec.os = OsSpec::Fixed(size);
        let span = stride.slot_offset(slots.saturating_sub(1)) as u64 + size.bytes() + 4096;
        let want = (2 * span).max(256 << 20).next_power_of_two().min(spec.format.max_pa());
        spec.memory_bytes = spec.memory_bytes.max(want).min(spec.format.max_pa());
        if BASE_VA + span > 1 << 32 && spec.format.levels()[0].shift + spec.format.levels()[0].bits <= 32 {
            return Err(ProbeError::Invalid(format!(
                "{slots} slots do not fit a 32-bit address space"
            )));
        }
        let mut m = Session::new(spec).map_err(err)?.into_machine();
        for i in 0..slots {
            m.access(&MemRef::new(
                BASE_VA + stride.slot_offset(i) as u64,
                AccessKind::Store,
                8,
            ))
            .map_err(err)?;
        }
        self.machine = Some((m, stride, slots));
        Ok(VerifiedBacking {
            requested: backing,
            kernel_page_bytes: size.bytes(),
            huge_fraction: if backing == Backing::Base { 0.0 } else { 1.0 },
            ok: true,
            how: format!("simulated: every page mapped as {size} (os policy fixed)"),
        })
    }

    fn measure(&mut self, slots: usize, steps: usize, seed: u64) -> Result<Measurement> {
        let entry_latency = self.spec.tlbs[self.spec.data_entry].latency as f64;
        let (mut m, stride, mapped) = self
            .machine
            .take()
            .ok_or_else(|| ProbeError::Invalid("measure before map".into()))?;
        let r = self.chase(&mut m, stride, mapped, slots, steps, seed);
        self.machine = Some((m, stride, mapped));
        let (cycles, misses) = r?;
        Ok(Measurement {
            chase: DATA_CYCLES + cycles,
            baseline: DATA_CYCLES + entry_latency,
            counters: misses,
        })
    }
}

impl SimTarget {
    /// Runs the timed chase: (cycles per access, misses per access of each level).
    fn chase(
        &self,
        m: &mut Machine,
        stride: Stride,
        mapped: usize,
        slots: usize,
        steps: usize,
        seed: u64,
    ) -> Result<(f64, Vec<f64>)> {
        if slots > mapped || slots == 0 {
            return Err(ProbeError::Invalid(format!("measure {slots} slots of {mapped} mapped")));
        }
        let mut order: Vec<usize> = (0..slots).collect();
        Rng::new(seed).shuffle(&mut order);
        let refs: Vec<MemRef> = order
            .iter()
            .map(|&i| MemRef::new(BASE_VA + stride.slot_offset(i) as u64, AccessKind::Load, 8))
            .collect();
        for r in refs.iter().cycle().take(2 * slots) {
            m.access(r).map_err(err)?;
        }
        let (c0, m0) = self.counters(m);
        for r in refs.iter().cycle().take(steps) {
            m.access(r).map_err(err)?;
        }
        let (c1, m1) = self.counters(m);
        let per = |a: u64, b: u64| (b - a) as f64 / steps as f64;
        Ok((per(c0, c1), m0.iter().zip(&m1).map(|(&a, &b)| per(a, b)).collect()))
    }
}

/// What the probe should find on a machine: per data-TLB level (a level and the
/// same-cycle parts after it, i.e. following levels with latency 0), the 4 KiB entries
/// and whether a chase over the probe's huge pages at 4 KiB stride hits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// Names of the parts, e.g. `["l2", "l2-side"]`.
    pub parts: Vec<String>,
    /// Entries of each part, e.g. `"4 + 128"` as [128, 4].
    pub entries: Vec<usize>,
    /// Entries that hold 4 KiB pages: the first part's (what the 4 KiB sweep measures)
    /// and all parts' together. They differ when a same-cycle part holds 4 KiB pages too
    /// (the Cortex-A9's "4 + 128"): filled on every walk, such a part only rescues pages
    /// one overflowing set loses, so the probe finds a capacity in between.
    pub entries_4k: (usize, usize),
    /// Sizes the level holds beyond 4 KiB.
    pub huge_sizes: Vec<PageSize>,
    /// The probe's huge pages (2 MiB, or the 1 MiB section) are cached, or pieces of them
    /// larger than 4 KiB are: the 4 KiB-stride chase over huge pages hits.
    pub holds_huge: bool,
}

/// The data-TLB levels of `spec` as the probe should recover them.
///
/// Which entry a level ends up holding for a huge page depends on where its fills come
/// from: a walk delivers the huge page itself, a hit in the level below delivers that
/// level's entry (perhaps a splintered piece). In the probe's chases the lower level hits
/// whenever it holds anything for the page, so each level's entry is derived from the
/// bottom of the data path up: `arriving` is what the fill carries, and a level keeps it
/// if it holds that size, its largest smaller piece if it splinters, or nothing.
///
/// In a guest (`[vm]`), a combined entry is no larger than the host page under the guest
/// page (docs/virtualization.md): over base host pages (`vm.backing = "4K"`) or a smaller
/// hugetlb size the huge page arrives as host-page pieces. THP in the host maps at least
/// the probe's 2 MiB (the stage-2 PMD block: 2M, 32M or 512M).
pub fn expected(spec: &MachineSpec) -> Vec<Expected> {
    let host = spec.vm.as_ref().and_then(|vm| match vm.host_os {
        OsSpec::Base { .. } => Some(vm.stage2.base_page()),
        OsSpec::Fixed(p) => Some(p),
        _ => None,
    });
    let huge = match (huge_size(spec), host) {
        (Some(h), Some(p)) => Some(h.min(p)),
        (h, _) => h,
    };
    let mut chain = Vec::new();
    let mut cur = Some(spec.data_entry);
    while let Some(i) = cur {
        debug_assert!(spec.tlbs[i].serves != Serves::Instr);
        chain.push(i);
        cur = spec.tlbs[i].next;
    }
    // Entry size each part caches for the huge page, bottom up.
    let mut cached: Vec<Option<PageSize>> = vec![None; chain.len()];
    let mut arriving = huge;
    for (k, &i) in chain.iter().enumerate().rev() {
        let t = &spec.tlbs[i];
        let keep = arriving.and_then(|h| {
            if t.page_sizes.contains(&h) {
                Some(h)
            } else if t.unsupported == Unsupported::Splinter {
                t.page_sizes.iter().rev().copied().find(|&p| p < h)
            } else {
                None
            }
        });
        cached[k] = keep;
        if keep.is_some() {
            arriving = keep;
        }
    }
    let mut out: Vec<Expected> = Vec::new();
    for (k, &i) in chain.iter().enumerate() {
        let t = &spec.tlbs[i];
        let piece = if t.page_sizes.contains(&PageSize::K4) {
            t.entries
        } else {
            0
        };
        let holds = cached[k].is_some_and(|p| p > PageSize::K4);
        let extra: Vec<PageSize> = t.page_sizes.iter().copied().filter(|&p| p > PageSize::K4).collect();
        match out.last_mut() {
            Some(e) if t.latency == 0 => {
                e.parts.push(t.name.clone());
                e.entries.push(t.entries);
                e.entries_4k.1 += piece;
                e.holds_huge |= holds;
                e.huge_sizes.extend(extra);
                e.huge_sizes.sort();
                e.huge_sizes.dedup();
            }
            _ => out.push(Expected {
                parts: vec![t.name.clone()],
                entries: vec![t.entries],
                entries_4k: (piece, piece),
                huge_sizes: extra,
                holds_huge: holds,
            }),
        }
    }
    out
}
