//! The simulated state every requester of a machine shares: physical memory (with the
//! page tables in it), the address spaces, and the OS policy that maps them. A
//! translator reads and updates page tables here; only the OS policy writes leaves for
//! user memory, when the machine hands it a fault.

pub(crate) mod dirty_log;
pub(crate) mod stage2;

use crate::stats::{Report, Stats};
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::mem::Memory;
use mmulab_model::os::{FaultCtx, Os, Shootdown};
use mmulab_model::pt::Format;
use mmulab_model::space::AddressSpace;
use mmulab_trace::MemRef;

/// Counters of the OS side of the machine.
#[derive(Clone, Debug, Default)]
struct OsCounters {
    /// Page faults.
    faults: u64,
    /// Cycles the OS spent in faults.
    fault_cycles: u64,
    /// Ranges invalidated on behalf of the OS.
    shootdowns: u64,
    /// Touch events applied (machine/touch.rs).
    touches: u64,
}

/// A VMA a trace carries, with its madvise state (`VmFlags` `hg`/`nh` in the sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceVma {
    /// First address.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// `MADV_HUGEPAGE` (what THP `madvise` mode asks for).
    pub hugepage: bool,
    /// `MADV_NOHUGEPAGE`.
    pub nohugepage: bool,
}

impl TraceVma {
    /// A VMA without madvise flags (a `/proc/PID/maps` sample).
    pub fn plain(start: u64, end: u64) -> TraceVma {
        TraceVma {
            start,
            end,
            hugepage: false,
            nohugepage: false,
        }
    }

    /// The VMA of a trace's sample, with its flags.
    pub fn of(v: &mmulab_trace::meta::Vma) -> TraceVma {
        TraceVma {
            start: v.start,
            end: v.end,
            hugepage: v.huge_advised(),
            nohugepage: v.no_huge(),
        }
    }

    /// Installs the VMA in `s`: a damaged list (overlaps: /proc/PID/maps never lists
    /// them) is skipped entry by entry, and the inference rule covers the gaps.
    pub(crate) fn install(&self, s: &mut AddressSpace) {
        if s.add_vma(self.start, self.end, self.hugepage).is_ok() && self.nohugepage {
            s.modify_range(self.start, self.end, |v| v.nohugepage = true);
        }
    }
}

/// Memory, address spaces and the OS policy of one machine.
pub struct System {
    /// Physical memory and page tables.
    pub(crate) mem: Memory,
    /// Address spaces by asid (`None`: never used or exited).
    pub(crate) spaces: Vec<Option<AddressSpace>>,
    /// The OS policy.
    pub(crate) os: Os,
    /// The page-table format of every address space.
    fmt: Format,
    /// Cycles the OS spends per fault.
    fault_latency: u32,
    /// VMAs from the trace's metadata, installed in every new address space.
    pub(crate) trace_vmas: Vec<TraceVma>,
    /// Ranges whose translations the OS changed in its last call: every requester must
    /// drop them.
    pub(crate) shootdowns: Vec<Shootdown>,
    counters: OsCounters,
    /// The host of this system's memory when it is a guest's (`[vm]`): stage-2 tables
    /// and the backing policy (stage2.rs).
    pub(crate) host: Option<Box<stage2::HostCtx>>,
}

impl System {
    /// A system over `mem` with policy `os`.
    pub(crate) fn new(mem: Memory, os: Os, fmt: Format, fault_latency: u32) -> System {
        System {
            mem,
            spaces: Vec::new(),
            os,
            fmt,
            fault_latency,
            trace_vmas: Vec::new(),
            shootdowns: Vec::new(),
            counters: OsCounters::default(),
            host: None,
        }
    }

    /// The index of `asid`'s address space, created on first use.
    #[inline]
    pub(crate) fn space(&mut self, asid: Asid) -> Result<usize, SimError> {
        let i = asid as usize;
        if matches!(self.spaces.get(i), Some(Some(_))) {
            return Ok(i);
        }
        self.new_space(asid)
    }

    #[cold]
    fn new_space(&mut self, asid: Asid) -> Result<usize, SimError> {
        let i = asid as usize;
        if self.spaces.len() <= i {
            self.spaces.resize(i + 1, None);
        }
        if self.spaces[i].is_none() {
            let mut s = AddressSpace::new(asid, self.fmt, &mut self.mem)?;
            for v in &self.trace_vmas {
                v.install(&mut s);
            }
            self.spaces[i] = Some(s);
        }
        Ok(i)
    }

    /// The root table of the address space at index `si` (from [`System::space`]).
    #[inline]
    pub(crate) fn root(&self, si: usize) -> u64 {
        self.spaces[si].as_ref().map(|s| s.root).unwrap_or_default()
    }

    /// Lets the OS handle a fault at `r`; the ranges whose translations it changed are
    /// left in `shootdowns` for the machine to apply to every requester.
    pub(crate) fn fault(&mut self, r: &MemRef) -> Result<(), SimError> {
        self.counters.faults += 1;
        self.counters.fault_cycles += self.fault_latency as u64;
        let si = self.space(r.asid)?;
        let space = self.spaces[si].as_mut().expect("space created");
        self.shootdowns.clear();
        self.mem.set_cpu(r.core as usize);
        self.os.handle_fault(FaultCtx {
            mem: &mut self.mem,
            space,
            va: r.addr,
            kind: r.kind,
            shootdowns: &mut self.shootdowns,
        })?;
        Ok(())
    }

    /// Cycles the OS spent in faults so far (the fault latency of each).
    pub(crate) fn fault_cycles(&self) -> u64 {
        self.counters.fault_cycles
    }

    /// Counts a touch event applied.
    #[inline]
    pub(crate) fn count_touch(&mut self) {
        self.counters.touches += 1;
    }

    /// Counts the shootdowns the machine applies.
    #[inline]
    pub(crate) fn count_shootdowns(&mut self, n: usize) {
        self.counters.shootdowns += n as u64;
    }
}

impl System {
    /// Resident bytes now: the OS policy's count, with the leaves on a zero page
    /// counted once (model mem/zero.rs).
    pub fn resident_bytes(&self) -> u64 {
        let r = self.os.stats().resident_bytes;
        if self.mem.zero.frame_bytes() == 0 {
            return r;
        }
        let total: i64 = self.mem.zero.resident_correction().iter().sum();
        (r as i64 - total).max(0) as u64
    }
}

impl Report for System {
    /// The OS policy's counters, memory use, and the fault and shootdown counts.
    fn report(&self, s: &mut Stats) {
        let os = self.os.stats();
        s.counters.faults += self.counters.faults;
        s.counters.fault_cycles += self.counters.fault_cycles;
        s.counters.shootdowns += self.counters.shootdowns;
        s.counters.touches += self.counters.touches;
        s.mapped = os.mapped;
        s.resident_bytes = self.resident_bytes();
        s.page_tables = self.mem.pt.live_tables();
        s.policy = self.os.name().to_string();
        s.os = os.clone();
        // Leaves on a zero page were recorded as resident one by one; the frame counts
        // once (model mem/zero.rs).
        if self.mem.zero.frame_bytes() > 0 {
            let c = self.mem.zero.resident_correction();
            s.os.resident_bytes = s.resident_bytes;
            for (r, d) in s.os.resident_by_size.iter_mut().zip(c) {
                *r = (*r as i64 - d).max(0) as u64;
            }
        }
        s.free_2m_share = free_share(&self.mem);
        s.numa = crate::stats::numa::NumaStats::collect(&self.mem);
        if let Some(h) = &self.host {
            h.report(s);
        }
    }
}

/// The share of free memory in free 2 MiB blocks now.
pub(crate) fn free_share(mem: &Memory) -> f64 {
    mmulab_model::mem::free_2m_share(&mem.buddy)
}
