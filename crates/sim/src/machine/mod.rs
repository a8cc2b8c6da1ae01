//! The machine: a set of requesters, each with its own translator, over one shared
//! [`System`] (physical memory, address spaces, the OS policy), built once from a
//! validated [`MachineSpec`] and fed references one at a time.
//!
//! Requesters today are CPU cores, each with a [`Stage1`] translator (TLB hierarchy,
//! page-walk caches, walker). A translator raises faults to the machine ([`Stop`]); the
//! machine lets the OS act, applies its shootdowns to every requester and resumes the
//! translator. Trace events (an exit, an unmap, a touch between sampled windows) come between references, typed
//! ([`Machine::event`]). Background work (the OS policy's tick,
//! time-series samples) runs between references on the reference clock. Host-side speed
//! helpers live apart from simulated state, in each translator's `Host`, and never
//! change a result.

use self::requesters::Requesters;
use crate::config::MachineSpec;
use crate::stats::{Report, Stats};
use crate::system::{System, TraceVma};
use crate::translator::{Stage1, Stop, Translator};
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::mem::Memory;
use mmulab_model::os::{Os, OsPolicy};
use mmulab_trace::{Event, MemRef};

pub(crate) mod background;
mod cache;
mod gpu;
pub(crate) mod mem_trace;
mod regions;
pub use regions::RegionCuts;
mod requesters;
mod touch;
mod vm;

/// A simulated machine.
pub struct Machine {
    spec: MachineSpec,
    /// The requesters: CPU cores with a stage-1 translator each, or the nested cores
    /// of a machine with `[vm]` (machine/vm.rs), and devices (GPUs, machine/gpu.rs).
    pub(crate) req: Requesters,
    /// What every requester shares.
    pub(crate) sys: System,
    /// References simulated.
    references: u64,
    /// Background work and sampling (background.rs): next reference count at which
    /// `tick` runs; the hot path compares against it and nothing else.
    next_tick: u64,
    pub(crate) bg: background::Background,
    /// The data caches and the memory below them (`[caches]`), and the request stream
    /// being written (machine/cache.rs).
    caches: Option<Box<mmulab_model::cache::Caches>>,
    mem_trace: Option<mem_trace::MemTrace>,
    /// Run the caches on a second thread ([`Machine::set_pipeline`]).
    pub(crate) pipeline: bool,
    /// Per-region counters ([`Machine::count_regions`], regions.rs), if counted.
    regions: Option<Box<regions::Regions>>,
    /// How the trace's allocations refine the regions (`set_region_cuts`).
    region_cuts: regions::RegionCuts,
}

impl Machine {
    /// Builds a machine.
    pub fn new(spec: MachineSpec) -> Result<Machine, SimError> {
        crate::config::limits::check_host(&spec)?;
        if spec.vm.is_some() {
            return Machine::new_nested(spec);
        }
        let mut mem = match &spec.numa {
            Some(n) => Memory::with_numa(spec.memory_bytes, n.clone())?,
            None => Memory::new(spec.memory_bytes)?,
        };
        let cpus: Vec<Stage1> = (0..spec.cores)
            .map(|_| {
                Stage1::new(
                    spec.tlbs.clone(),
                    spec.data_entry,
                    spec.instr_entry,
                    spec.format,
                    &spec.pwc_entries,
                    spec.cost,
                )
            })
            .collect();
        let mut os = spec.os.build(spec.format).map_err(SimError::Config)?;
        os.set_zero_page(spec.zero_page);
        let mut cpus = cpus;
        for c in &mut cpus {
            c.set_software_ad(spec.ad_software);
        }
        let mut bg = background::Background::new(&spec, &mut mem);
        bg.set_os_ticks(mmulab_model::os::OsPolicy::has_tick(&os));
        let (cpus, caches) = cache::build(&spec, cpus);
        Ok(Machine {
            caches,
            mem_trace: None,
            pipeline: false,
            regions: None,
            region_cuts: regions::RegionCuts::default(),
            req: Requesters {
                cpus,
                ..Default::default()
            },
            sys: System::new(mem, os, spec.format, spec.cost.fault_latency),
            references: 0,
            next_tick: bg.next_tick(0),
            bg,
            spec,
        })
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// The CPU cores' translators.
    pub fn cpus(&self) -> &[Stage1] {
        &self.req.cpus
    }

    /// References simulated so far.
    #[inline]
    pub fn references(&self) -> u64 {
        self.references
    }

    /// Simulates one reference. The common case — the entry level's most recent entry
    /// covers the address (runs of references to one page) — is inlined into the run
    /// loop; everything else is out of line.
    #[inline(always)]
    pub fn access(&mut self, r: &MemRef) -> Result<(), SimError> {
        self.references += 1;
        if self.references >= self.next_tick {
            self.tick()?;
        }
        if self.bg.track_touched {
            self.bg.touch(r);
            if self.regions.is_some() {
                return self.access_counted(r);
            }
        }
        self.access_translate(r)
    }

    /// [`Machine::access`] after the reference is counted, background work is done and
    /// the page noted: the core's translation, and the data caches.
    #[inline(always)]
    fn access_translate(&mut self, r: &MemRef) -> Result<(), SimError> {
        let core = if self.req.cpus.len() == 1 {
            0
        } else if self.req.cpus.is_empty() {
            return self.access_nested(r);
        } else {
            r.core as usize % self.req.cpus.len()
        };
        if self.caches.is_some() {
            return self.access_cached_call(core, r);
        }
        self.access_on(core, r)
    }

    /// References that can be counted before the next background tick falls due:
    /// that many may take [`Machine::access_plain`] or [`Machine::access_cached_run`]
    /// (which do not test for it); the next one must take [`Machine::access`].
    #[inline]
    pub(crate) fn before_tick(&self) -> u64 {
        self.next_tick.saturating_sub(self.references.saturating_add(1))
    }

    /// True if the machine's references can take [`Machine::access_cached_run`]
    /// (before a tick): it has data caches and stage-1 cores and tracks no touched
    /// pages. (The run loop asks once per run of references.)
    #[inline]
    pub(crate) fn cached_ok(&self) -> bool {
        self.caches.is_some() && !self.req.cpus.is_empty() && !self.bg.track_touched
    }

    /// [`Machine::access`] of a reference [`Machine::cached_ok`] and
    /// [`Machine::before_tick`] admitted (caches, stage-1 cores, no tracking, no tick
    /// due): the same events without the tests the run loop made once.
    #[inline(always)]
    pub(crate) fn access_cached_run(&mut self, r: &MemRef) -> Result<(), SimError> {
        debug_assert!(self.caches.is_some() && !self.bg.track_touched && self.references + 1 < self.next_tick);
        self.references += 1;
        let core = if self.req.cpus.len() == 1 {
            0
        } else {
            r.core as usize % self.req.cpus.len()
        };
        self.access_cached(core, r)
    }

    /// True if the machine's references can take [`Machine::access_plain`] (before a
    /// tick): it has one core, no data caches, and tracks no touched pages. (The run
    /// loop asks once per run of references.)
    #[inline]
    pub(crate) fn plain_ok(&self) -> bool {
        self.req.cpus.len() == 1 && !self.bg.track_touched && self.caches.is_none()
    }

    /// [`Machine::access`] of a reference [`Machine::plain_ok`] and
    /// [`Machine::before_tick`] admitted (one core, no caches, no tracking, no tick
    /// due): the same events without the per-reference tests.
    #[inline(always)]
    pub(crate) fn access_plain(&mut self, r: &MemRef) -> Result<(), SimError> {
        debug_assert!(self.req.cpus.len() == 1 && !self.bg.track_touched && self.references + 1 < self.next_tick);
        self.references += 1;
        self.access_on(0, r)
    }

    /// [`Machine::access`] after the reference is counted and background work is
    /// done: the core's translator.
    #[inline(always)]
    fn access_on(&mut self, core: usize, r: &MemRef) -> Result<(), SimError> {
        // Every core index the machine passes is `r.core % cpus.len()` or 0 (see
        // `access`), and `cpus` never changes length after `new`.
        debug_assert!(core < self.req.cpus.len());
        // SAFETY: see above.
        let cpu = unsafe { self.req.cpus.get_unchecked_mut(core) };
        match cpu.access(&mut self.sys, r) {
            Ok(()) => Ok(()),
            Err(stop) => self.stopped(core, r, stop),
        }
    }

    /// A translator stopped: an error, or a fault the OS handles
    /// before the translator resumes (as often as it faults again).
    #[cold]
    #[inline(never)]
    fn stopped(&mut self, core: usize, r: &MemRef, mut stop: Stop) -> Result<(), SimError> {
        loop {
            match stop {
                Stop::Error(e) => return Err(*e),
                Stop::HostFault { gpa, .. } => {
                    return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                        "a stage-2 fault at guest-physical {gpa:#x} on a core without stage 2"
                    ))))
                }
                Stop::Fault { upto, attempt } => {
                    self.fault(r)?;
                    match self.req.cpus[core].resume(&mut self.sys, r, upto, attempt) {
                        Ok(()) => return Ok(()),
                        Err(s) => stop = s,
                    }
                }
            }
        }
    }

    /// Prefetches into the host cache what a walk of `r` would read (no simulated
    /// effect).
    #[inline]
    pub fn prefetch(&self, r: &MemRef) {
        let core = if self.req.cpus.len() == 1 {
            0
        } else if self.req.cpus.is_empty() {
            // A machine with `[vm]`: nested cores keep no walk memo.
            return;
        } else {
            r.core as usize % self.req.cpus.len()
        };
        self.req.cpus[core].prefetch(r);
    }

    /// Walks so far, all cores (the run loop uses the walk rate to decide whether to
    /// prefetch).
    #[inline]
    pub fn walks(&self) -> u64 {
        self.req.cpus.iter().map(Stage1::walks).sum::<u64>() + self.req.vcpus.iter().map(|c| c.walks()).sum::<u64>()
    }

    /// The statistics now: every component reports into them ([`Report`]).
    pub fn stats(&self) -> Stats {
        let mut s = Stats::empty(&self.spec);
        s.counters.references = self.references;
        self.req.report(&mut s);
        self.sys.report(&mut s);
        self.bg.report(&mut s);
        s.regions = self.regions_report();
        if let Some(c) = &self.caches {
            c.report(&mut s);
        }
        s
    }

    /// The reference count at which [`Machine::tick`] next has work: background work,
    /// a time-series sample, or dirty logging turning on (after `at` references: at
    /// reference `at + 1`).
    fn next_due(&self, now: u64) -> u64 {
        let t = self.bg.next_tick(now);
        match self.dirty_log_pending() {
            Some(at) => t.min(at.saturating_add(1).max(now + 1)),
            None => t,
        }
    }

    /// Background work, time-series samples and dirty logging turning on, every
    /// `next_tick` references.
    #[cold]
    fn tick(&mut self) -> Result<(), SimError> {
        let now = self.references;
        if self.dirty_log_pending().is_some_and(|at| at < now) {
            self.dirty_log_tick(now - 1)?;
            if self.bg.next_tick(now - 1) > now {
                // Nothing else is due at this reference.
                self.next_tick = self.next_due(now);
                return Ok(());
            }
        }
        self.spaces_changed();
        let now_ns = self.now_ns();
        let sys = &mut self.sys;
        sys.shootdowns.clear();
        let before = crate::stats::time::Before::of(sys.os.stats());
        sys.os.tick(mmulab_model::os::TickCtx {
            mem: &mut sys.mem,
            spaces: &mut sys.spaces,
            now,
            now_ns,
            shootdowns: &mut sys.shootdowns,
        })?;
        self.bg.kernel.add(before, sys.os.stats(), self.bg.pmd_nr);
        self.apply_shootdowns();
        if self.bg.track_touched {
            self.bg.note_bloat(self.sys.resident_bytes());
        }
        if self.bg.sample_due(now) {
            let s = self.stats();
            self.bg.sample(now, &s);
        }
        self.next_tick = self.next_due(now);
        Ok(())
    }

    /// Simulated nanoseconds so far on a machine with a clock: the application's
    /// cycles (stats/time.rs) at `machine.clock_mhz`.
    fn now_ns(&self) -> Option<u64> {
        let mhz = self.bg.clock_mhz?;
        let mut s = Stats::empty(&self.spec);
        self.req.report(&mut s);
        s.counters.fault_cycles += self.sys.fault_cycles();
        s.os.os_cycles = self.sys.os.stats().os_cycles;
        if !self.bg.charge_app {
            s.os.os_cycles -= self.bg.kernel.cycles;
        }
        Some(crate::stats::time::ns_of(
            crate::stats::time::TimeStats::app_cycles(&s),
            mhz,
        ))
    }

    /// A trace event, between two references. Every kind is named here: a new
    /// [`Event`] variant does not compile until the machine handles it.
    pub fn event(&mut self, e: &Event) -> Result<(), SimError> {
        e.check()
            .map_err(|w| SimError::Model(mmulab_model::ModelError::Conflict(format!("asid {}: {w}", e.asid()))))?;
        match *e {
            Event::Exit { asid } => self.exit(asid),
            Event::Unmap { asid, start, end } => self.unmap(asid, start, end),
            Event::DontNeed { asid, start, end } => self.dontneed(asid, start, end),
            Event::Touch { asid, addr, write } => self.touch(asid, addr, write),
            Event::Vma {
                asid,
                start,
                end,
                hugepage,
                nohugepage,
            } => {
                self.set_vma(
                    asid,
                    TraceVma {
                        start,
                        end,
                        hugepage,
                        nohugepage,
                    },
                );
                Ok(())
            }
        }
    }

    /// Makes `v` one VMA of address space `asid` (a vma event): a huge page that one of
    /// its ends cuts is split first, as Linux splits one at every VMA split
    /// (`__split_vma` → `vma_adjust_trans_huge`, what `Os::protect` does: mprotect or
    /// madvise of part of a huge page, `THP_SPLIT_PMD`); then the VMA records it overlaps
    /// are cut back (`AddressSpace::remove_range`) and it is added with its flags. The
    /// pages stay: the kernel's VMA list changed (a mapping grown, merged with a
    /// neighbour, madvised, protected), not what backs it. An address space not yet used
    /// gets it with the trace's other VMAs when it is made.
    fn set_vma(&mut self, asid: Asid, v: TraceVma) {
        self.spaces_changed();
        let sys = &mut self.sys;
        sys.trace_vmas.retain(|t| t.end <= v.start || t.start >= v.end);
        let at = sys.trace_vmas.partition_point(|t| t.start < v.start);
        sys.trace_vmas.insert(at, v);
        sys.shootdowns.clear();
        if let Some(Some(space)) = sys.spaces.get_mut(asid as usize) {
            // A recording does not carry permissions: the VMA stays writable. A policy that
            // cannot split at this edge (`fixed` needs its page size, as hugetlbfs refuses
            // an unaligned mprotect) keeps its leaf; a split that runs out of memory for
            // its table leaves the leaf whole (unmap.rs puts it back).
            let _ = sys
                .os
                .protect(&mut sys.mem, space, v.start, v.end, true, &mut sys.shootdowns);
            space.remove_range(v.start, v.end);
            v.install(space);
        }
        self.apply_shootdowns();
        self.regions_vmas_changed();
    }

    /// Ends address space `asid` (an exit event): the OS frees its memory
    /// and every core drops its translations.
    #[cold]
    fn exit(&mut self, asid: Asid) -> Result<(), SimError> {
        self.spaces_changed();
        if let Some(space) = self.sys.spaces.get_mut(asid as usize).and_then(Option::take) {
            self.sys.os.exit(&mut self.sys.mem, &space);
            self.req.invalidate_range(asid, 0, u64::MAX);
            self.bg.forget(asid);
        }
        Ok(())
    }

    /// Unmaps `[start, end)` of `asid` (munmap): the OS frees the range and every core
    /// drops the translations its shootdowns name. An address space never touched has
    /// nothing to unmap.
    pub fn unmap(&mut self, asid: Asid, start: u64, end: u64) -> Result<(), SimError> {
        self.spaces_changed();
        self.bg.forget_range(asid, start, end);
        let before = self.regions_before();
        let sys = &mut self.sys;
        let Some(Some(space)) = sys.spaces.get_mut(asid as usize) else {
            return Ok(());
        };
        sys.shootdowns.clear();
        sys.os.unmap(&mut sys.mem, space, start, end, &mut sys.shootdowns)?;
        self.regions_after(before, start, false);
        self.apply_shootdowns();
        Ok(())
    }

    /// `madvise(MADV_DONTNEED)` of `[start, end)` of `asid`: the OS frees the pages
    /// (`Os::madvise`, splitting a huge page an end cuts), the VMAs stay.
    pub fn dontneed(&mut self, asid: Asid, start: u64, end: u64) -> Result<(), SimError> {
        self.spaces_changed();
        self.bg.forget_range(asid, start, end);
        let sys = &mut self.sys;
        let Some(Some(space)) = sys.spaces.get_mut(asid as usize) else {
            return Ok(());
        };
        sys.shootdowns.clear();
        sys.os.madvise(
            &mut sys.mem,
            space,
            start,
            end,
            mmulab_model::os::Advice::DontNeed,
            &mut sys.shootdowns,
        )?;
        self.apply_shootdowns();
        Ok(())
    }

    /// Writes the final time-series sample (if a series is on and the run did not end
    /// exactly on a sample point).
    pub fn finish_series(&mut self) -> Result<(), SimError> {
        let now = self.references;
        if self.bg.series_on() && self.bg.samples.last().map(|s| s.refs) != Some(now) {
            let s = self.stats();
            self.bg.sample(now, &s);
        }
        self.bg.finish()
    }

    /// Turns on a time series: a sample every `interval` references written as JSON
    /// lines to `out` (see docs/output.md), and tracking of touched pages for bloat.
    pub fn set_series(&mut self, interval: u64, out: Box<dyn std::io::Write + Send>) {
        self.bg.set_series(interval, out);
        self.next_tick = self.next_due(self.references);
    }

    /// VMAs the trace carries (`mmulab record`'s /proc/PID/maps samples): installed in
    /// every address space, existing ones included; addresses outside them get VMAs by
    /// the inference rule (mmulab_model::space). Returns how many were taken.
    pub fn set_trace_vmas(&mut self, vmas: &[(u64, u64)]) -> usize {
        let v: Vec<TraceVma> = vmas.iter().map(|&(s, e)| TraceVma::plain(s, e)).collect();
        self.set_trace_vma_flags(&v)
    }

    /// [`Machine::set_trace_vmas`] with each VMA's madvise state (`hg` VMAs are where THP
    /// `madvise` mode may map huge pages, `nh` ones never).
    pub fn set_trace_vma_flags(&mut self, vmas: &[TraceVma]) -> usize {
        self.spaces_changed();
        let sys = &mut self.sys;
        sys.trace_vmas = vmas.iter().copied().filter(|v| v.start < v.end).collect();
        for s in sys.spaces.iter_mut().flatten() {
            for v in &sys.trace_vmas {
                v.install(s);
            }
        }
        self.regions_vmas_changed();
        self.sys.trace_vmas.len()
    }

    /// Looks for VMAs in the trace's metadata and installs them once found.
    pub(crate) fn take_trace_vmas(&mut self, src: &dyn mmulab_trace::TraceSource) {
        if let Some(meta) = src.meta() {
            let v: Vec<TraceVma> = meta.vmas_at_start().iter().map(TraceVma::of).collect();
            if !v.is_empty() {
                self.set_trace_vma_flags(&v);
                self.bg.trace_vmas_seen = true;
            }
        }
    }

    /// Counts compulsory misses at every TLB level of every CPU core from now on
    /// (run/roi.rs), the combined TLBs of a `[vm]` machine's nested cores included.
    pub fn count_compulsory(&mut self) {
        for c in &mut self.req.cpus {
            c.tlbs.count_compulsory();
        }
        for c in &mut self.req.vcpus {
            c.tlbs.count_compulsory();
        }
    }

    /// Tracks touched 4 KiB pages (for memory bloat) without a time series.
    pub fn track_touched(&mut self) {
        self.bg.track_touched = true;
    }

    /// Time-series samples taken so far.
    pub fn samples(&self) -> &[background::Sample] {
        &self.bg.samples
    }

    /// The OS policy (its counters and state).
    pub fn os(&self) -> &Os {
        &self.sys.os
    }

    /// Physical memory.
    pub fn memory(&self) -> &Memory {
        &self.sys.mem
    }

    /// Address spaces may have changed: every translator drops its cached roots.
    fn spaces_changed(&mut self) {
        self.req.spaces_changed();
    }

    /// Applies the shootdowns the OS left in `sys.shootdowns` to every requester.
    fn apply_shootdowns(&mut self) {
        let sys = &mut self.sys;
        sys.count_shootdowns(sys.shootdowns.len());
        for &(asid, start, end) in &sys.shootdowns {
            self.req.invalidate_range(asid, start, end);
        }
    }

    /// Lets the OS handle a fault at `r` and applies its shootdowns.
    fn fault(&mut self, r: &MemRef) -> Result<(), SimError> {
        self.spaces_changed();
        let before = self.regions_before();
        self.sys.fault(r)?;
        self.regions_after(before, r.addr, true);
        self.apply_shootdowns();
        if self.bg.track_touched {
            self.bg.note_bloat(self.sys.resident_bytes());
        }
        Ok(())
    }
}

impl Stats {
    /// Collects the statistics of `m` now (the same as [`Machine::stats`]).
    pub fn collect(m: &Machine) -> Stats {
        m.stats()
    }
}
