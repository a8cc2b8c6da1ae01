//! A machine with data caches (`[caches]`; docs/memory.md): building the hierarchy,
//! the per-reference path through it, and the request stream (`sim --mem-trace`).
//! A machine without the section never reaches this code (`Machine::plain_ok` and
//! `Machine::access` send it down the path it always took).

use super::mem_trace::{MemTrace, MemTraceFormat};
use super::Machine;
use crate::config::MachineSpec;
use crate::translator::{CacheSide, CachedCore, CoreCache, Stage1, Stop, Translator};
use crate::SimError;
use mmulab_model::cache::{Caches, FirstLevel};
use mmulab_model::dram::Dram;
use mmulab_model::mem::backend::{Flat, MemoryBackend};
use mmulab_trace::MemRef;

/// Requests kept before they are written to the request stream.
const LOG_FLUSH: usize = 1 << 16;

/// The caches `spec` asks for (none without `[caches]`), with the cores switched to
/// the data-cache path. Main memory is the DRAM model of `[dram]` when given, else [`Flat`] at `caches.memory_latency` cycles
/// (default `walk.mem_latency`: a walk read that misses every level then costs what
/// every walk read cost before caches existed).
pub(super) fn build(spec: &MachineSpec, mut cpus: Vec<Stage1>) -> (Vec<Stage1>, Option<Box<Caches>>) {
    let caches = build_for(spec, &mut cpus);
    (cpus, caches)
}

/// [`build`] for any cores with a data-cache path (stage-1 or nested).
pub(super) fn build_for<C: CachedCore>(spec: &MachineSpec, cores: &mut [C]) -> Option<Box<Caches>> {
    let c = spec.caches.as_ref()?;
    for core in cores.iter_mut() {
        core.enable_caches(CoreCache::new(c, spec.cache_mlp));
    }
    let backend: Box<dyn MemoryBackend + Send> = match (&spec.dram, spec.clock_mhz) {
        (Some(d), Some(mhz)) => Box::new(Dram::new(d.clone(), mhz)),
        _ => Box::new(Flat::new(c.memory_latency)),
    };
    // Every physical address a core sends (data, descriptors; a guest's too) is in the
    // machine's memory: the caches may keep narrower tags for it.
    let pa_max = spec.memory_bytes.saturating_sub(1);
    Some(Box::new(Caches::with_limit(c, spec.cores, backend, pa_max)))
}

impl Machine {
    /// [`Machine::access`] on a machine with caches: the translation (walks recording
    /// their descriptor reads), the OS on a fault, then the reads and the reference
    /// through the caches. Inlined into the run loop: as a call of its own it cost a
    /// frame and its register saves on every reference. The core and the caches are
    /// found once (borrowed field by field); a translation that stopped (a fault) takes
    /// the out-of-line path, which finds them again after the OS ran.
    #[inline(always)]
    pub(super) fn access_cached(&mut self, core: usize, r: &MemRef) -> Result<(), SimError> {
        let Machine { req, sys, caches, .. } = self;
        let cpus = &mut req.cpus;
        let cpu = &mut cpus[core];
        if let Err(stop) = cpu.access_rec(sys, r) {
            return self.access_cached_stopped(core, r, stop);
        }
        let caches = caches.as_deref_mut().expect("a machine with caches");
        cpu.cache_access(sys, caches, core, r)
    }

    /// [`Machine::access_cached`] out of line: for [`Machine::access`], which takes a
    /// machine with caches only for the reference a background tick falls on, or when
    /// it tracks touched pages (the run loop sends every other reference to
    /// [`Machine::access_cached_run`]), so the run loop's general copy does not carry
    /// another inlined copy of the cached path.
    #[inline(never)]
    pub(super) fn access_cached_call(&mut self, core: usize, r: &MemRef) -> Result<(), SimError> {
        self.access_cached(core, r)
    }

    /// [`Machine::access_cached`] after its translation stopped with `stop`: the OS
    /// (and the translation's retries), then the reads and the reference through the
    /// caches.
    #[cold]
    #[inline(never)]
    fn access_cached_stopped(&mut self, core: usize, r: &MemRef, stop: Stop) -> Result<(), SimError> {
        self.stopped(core, r, stop)?;
        let caches = self.caches.as_deref_mut().expect("a machine with caches");
        self.req.cpus[core].cache_access(&mut self.sys, caches, core, r)
    }

    /// Runs the data caches and the memory below them on a second thread during
    /// the run loop (`run`) (run::pipeline), one step behind the translation: the same
    /// results, in less time when the host has a second core free. Off by default; it
    /// takes effect only on a machine with `[caches]` and stage-1 cores that writes no
    /// request stream and has no GPU ([`Machine::pipeline_ok`]).
    pub fn set_pipeline(&mut self, on: bool) {
        self.pipeline = on;
    }

    /// True if the run loop (`run`) runs the caches on a second thread (see
    /// [`Machine::set_pipeline`]).
    pub fn pipeline_ok(&self) -> bool {
        self.pipeline
            && self.caches.is_some()
            && !self.req.cpus.is_empty()
            && self.mem_trace.is_none()
            && self.req.gpus.is_empty()
    }

    /// True if the run loop may send references to the cache thread: as
    /// [`Machine::cached_ok`], whether the caches are here or with the thread.
    #[inline]
    pub(crate) fn piped_ok(&self) -> bool {
        !self.req.cpus.is_empty() && !self.bg.track_touched
    }

    /// [`Machine::access_cached_run`] on the pipeline: the translation (and the OS on a
    /// fault) here, the reference's records to `out` for the cache thread.
    #[inline(always)]
    pub(crate) fn access_piped(
        &mut self,
        r: &MemRef,
        first: Option<&mut FirstLevel>,
        out: &mut Vec<u64>,
    ) -> Result<(), SimError> {
        debug_assert!(self.caches.is_none() && !self.bg.track_touched && self.references + 1 < self.next_tick);
        self.references += 1;
        let core = if self.req.cpus.len() == 1 {
            0
        } else {
            r.core as usize % self.req.cpus.len()
        };
        let Machine { req, sys, .. } = self;
        let cpus = &mut req.cpus;
        if let Err(stop) = cpus[core].access_rec(sys, r) {
            self.stopped(core, r, stop)?;
        }
        self.req.cpus[core].cache_record(&mut self.sys, first, core, r, out)
    }

    /// The cache side, for the cache thread, and on a machine with the DRAM model the
    /// caches' first level split off for the simulating thread ([`Caches::split`];
    /// run::pipeline says why): the machine has no caches until
    /// [`Machine::put_cache_side`].
    pub(crate) fn take_cache_side(&mut self) -> (CacheSide, Option<FirstLevel>) {
        let mut caches = self.caches.take().expect("a machine with caches");
        let first = caches.backend_is_dram().then(|| caches.split());
        let side = CacheSide {
            caches,
            cores: self.req.cpus.iter_mut().map(Stage1::take_core_cache).collect(),
            split: first.is_some(),
        };
        (side, first)
    }

    /// The cache side back from the cache thread, and the first level joined back.
    pub(crate) fn put_cache_side(&mut self, mut side: CacheSide, first: Option<FirstLevel>) {
        if let Some(first) = first {
            side.caches.join(first);
        }
        self.caches = Some(side.caches);
        for (c, cc) in self.req.cpus.iter_mut().zip(side.cores) {
            c.put_core_cache(cc);
        }
    }

    /// Writes the request stream out when enough requests are kept: the run loop asks
    /// after each batch (the run loop (`run`); a batch adds a few requests per reference at
    /// most, so the log stays within a few batches' worth), not every reference.
    /// [`Machine::finish_mem_trace`] writes the rest.
    pub(crate) fn flush_mem_trace_if_full(&mut self) -> Result<(), SimError> {
        if self.caches.as_deref().is_some_and(|c| c.logged() >= LOG_FLUSH) {
            self.flush_mem_trace()?;
        }
        Ok(())
    }

    /// Writes every request that reaches main memory to `out` in `format`
    /// (docs/memory.md); [`Machine::finish_mem_trace`] flushes it. An error on a machine
    /// without `[caches]` (no request reaches memory as such).
    pub fn set_mem_trace(
        &mut self,
        format: MemTraceFormat,
        out: Box<dyn std::io::Write + Send>,
    ) -> Result<(), SimError> {
        let Some(c) = self.caches.as_deref_mut() else {
            return Err(SimError::Config(
                "--mem-trace needs data caches: give the machine a [caches] section (docs/memory.md), e.g. --machine cortex-a76-pi5".into(),
            ));
        };
        c.set_logging(true);
        self.mem_trace = Some(MemTrace::new(format, out));
        Ok(())
    }

    /// Writes the requests logged so far to the request stream.
    fn flush_mem_trace(&mut self) -> Result<(), SimError> {
        let (Some(c), Some(t)) = (self.caches.as_deref_mut(), self.mem_trace.as_mut()) else {
            return Ok(());
        };
        let reqs = c.take_log();
        t.write(&reqs).map_err(stream_error)
    }

    /// Writes what is left of the request stream and flushes it (after the run, also
    /// after one that stopped early).
    pub fn finish_mem_trace(&mut self) -> Result<(), SimError> {
        self.flush_mem_trace()?;
        match self.mem_trace.as_mut() {
            Some(t) => t.flush().map_err(stream_error),
            None => Ok(()),
        }
    }

    /// The data caches, if the machine has them.
    pub fn caches(&self) -> Option<&Caches> {
        self.caches.as_deref()
    }

    /// Drops every core's cached translations (for tests of the cache path that need
    /// walks to repeat).
    #[doc(hidden)]
    pub fn flush_tlbs(&mut self) {
        for c in &mut self.req.cpus {
            c.invalidate_range(0, 0, u64::MAX);
        }
        for c in &mut self.req.vcpus {
            c.flush_tlbs();
        }
    }
}

fn stream_error(e: std::io::Error) -> SimError {
    SimError::Config(format!("cannot write the memory request stream: {e}"))
}
