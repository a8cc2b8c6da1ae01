//! The front door: one simulation from a resolved machine spec, a trace source and run
//! options to the statistics. Every front end runs simulations through it (`mmulab sim`,
//! a sweep point, advise's prediction, every experiment, the Python package), so the
//! sequence spec → machine → VMAs → streams → run → statistics is written once, here,
//! and [`Session::new`] is where product code builds a [`Machine`].
//!
//! A session keeps its machine between runs: an experiment that attaches a GPU,
//! fragments memory or replays events by hand reaches it through
//! [`Session::machine_mut`], and a second [`Session::run`] continues on the same state.

use crate::config::gpu::GpuProfile;
use crate::config::MachineSpec;
use crate::machine::mem_trace::MemTraceFormat;
use crate::machine::Machine;
use crate::run::roi::{run_roi, Roi};
use crate::run::vmas::preload_vmas;
use crate::run::Progress;
use crate::stats::Stats;
use crate::SimError;
use mmulab_trace::gpu::GpuSource;
use mmulab_trace::user_space::{OutsideUser, UserOnly};
use mmulab_trace::{TraceMeta, TraceSource};
use std::io::Write;

/// How a run goes, beside the machine and the source. The default is a plain run: no
/// region of interest, one thread, no streams.
#[derive(Default)]
pub struct SessionOptions<'a> {
    /// Skip, warm-up, measured references, straddling, compulsory misses.
    pub roi: Roi,
    /// Run the data caches and DRAM on a second thread (`--sim-threads 2`; the same
    /// results, [`Machine::set_pipeline`]).
    pub pipeline: bool,
    /// The trace's metadata read up front: its VMAs are installed before the first
    /// reference ([`preload_vmas`]).
    pub meta: Option<&'a TraceMeta>,
    /// A time series: a sample every `.0` references, JSON lines to `.1`.
    pub series: Option<(u64, Box<dyn Write + Send>)>,
    /// Track the distinct 4 KiB pages touched, so that the statistics carry
    /// `memory.touched_bytes`, `bloat_bytes` (resident − touched at the end) and
    /// `peak_bloat_bytes` (`mmulab sim --bloat`; a time series tracks them too). It costs
    /// a hash-set insert per reference that changes page.
    pub bloat: bool,
    /// Count per region (each trace VMA, and outside them): references, walk cycles,
    /// faults by page size, resident and touched bytes (`Stats::regions`; JSON
    /// `regions`, docs/output.md § Regions). Tracks touched pages as `bloat` does, and
    /// costs more: every reference takes the run loop's general path.
    pub regions: bool,
    /// The memory request stream below the caches, in a format, to a writer.
    pub mem_trace: Option<(MemTraceFormat, Box<dyn Write + Send>)>,
    /// Called once per batch with the references so far and the source's progress.
    pub progress: Option<Progress<'a>>,
    /// References at or above the end of the user address space
    /// (`Format::user_va_end`): stop with the trace, index and address (default), or
    /// drop and count them (`Stats::outside_user`).
    pub outside_user: OutsideUser,
}

/// A run that stopped on an error: the error, and the statistics of the references
/// simulated before it (`complete: false`; none if the machine could not be built).
#[derive(Debug)]
pub struct RunError {
    /// What stopped the run.
    pub error: SimError,
    /// What was simulated before it.
    pub stats: Option<Box<Stats>>,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<RunError> for SimError {
    /// The error alone, for callers that do not report partial statistics.
    fn from(e: RunError) -> SimError {
        e.error
    }
}

/// One simulated machine and the runs made on it.
pub struct Session {
    machine: Machine,
}

impl Session {
    /// Builds the machine of `spec` (checked against the host's memory first).
    pub fn new(spec: MachineSpec) -> Result<Session, SimError> {
        Ok(Session {
            machine: Machine::new(spec)?,
        })
    }

    /// Builds the machine of `spec` and runs `src` through it with `opts`: the common
    /// case in one call.
    pub fn simulate(spec: MachineSpec, src: &mut dyn TraceSource, opts: SessionOptions<'_>) -> Result<Stats, RunError> {
        let mut s = Session::new(spec).map_err(|error| RunError { error, stats: None })?;
        s.run(src, opts)
    }

    /// The machine.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The machine, to act on between runs (attach a GPU, fragment memory, apply
    /// events).
    pub fn machine_mut(&mut self) -> &mut Machine {
        &mut self.machine
    }

    /// The machine, the session done.
    pub fn into_machine(self) -> Machine {
        self.machine
    }

    /// The statistics of the machine now.
    pub fn stats(&self) -> Stats {
        self.machine.stats()
    }

    /// Runs `src` through the machine with `opts`. The statistics are the region of
    /// interest's when `opts.roi` has one (a time series does not change that); a run
    /// stopped by [`crate::request_stop`] returns them marked incomplete. The time series
    /// and the request stream are written to their ends even when the run stopped on an
    /// error: they cover what ran. On an error the statistics of what ran come with it.
    pub fn run(&mut self, src: &mut dyn TraceSource, opts: SessionOptions<'_>) -> Result<Stats, RunError> {
        let SessionOptions {
            roi,
            pipeline,
            meta,
            series,
            bloat,
            regions,
            mem_trace,
            progress,
            outside_user,
        } = opts;
        let m = &mut self.machine;
        let fail = |m: &Machine, error: SimError| {
            let mut stats = m.stats();
            stats.complete = false;
            RunError {
                error,
                stats: Some(Box::new(stats)),
            }
        };
        m.set_pipeline(pipeline);
        let writes_requests = mem_trace.is_some();
        if let Some((format, out)) = mem_trace {
            m.set_mem_trace(format, out).map_err(|e| fail(m, e))?;
        }
        if let Some(meta) = meta {
            preload_vmas(m, meta);
        }
        if bloat {
            m.track_touched();
        }
        if regions {
            m.count_regions();
        }
        let writes_series = series.is_some();
        if let Some((interval, out)) = series {
            if interval == 0 {
                return Err(fail(
                    m,
                    SimError::Config("the time series interval must be positive".into()),
                ));
            }
            m.set_series(interval, out);
        }
        // A trace that declares its workload's warm-up (`convert --workload`) gets it
        // under `--warmup auto`, as the workload would.
        let mut roi = roi;
        if let (crate::run::roi::Warmup::Auto, Some(n)) = (&roi.warmup, meta.and_then(|m| m.warmup_refs())) {
            if src.warmup_refs() == 0 {
                roi.warmup = crate::run::roi::Warmup::Refs(n.saturating_sub(roi.skip));
            }
        }
        let (end, space) = m.spec().format.user_va_end();
        let res = if src.addr_end().is_some_and(|e| e <= end) {
            // A built-in workload placed inside the user space: nothing to check.
            run_roi(m, src, &roi, progress).map(|mut s| {
                if outside_user == OutsideUser::Drop {
                    s.outside_user = Some(Default::default());
                }
                s
            })
        } else {
            let mut src = UserOnly::new(src, end, space.to_string(), outside_user);
            run_roi(m, &mut src, &roi, progress).map(|mut s| {
                if outside_user == OutsideUser::Drop {
                    s.outside_user = Some(src.dropped());
                }
                s
            })
        };
        let streams = (|| {
            if writes_requests {
                m.finish_mem_trace()?;
            }
            if writes_series {
                m.finish_series()?;
            }
            Ok(())
        })();
        match (res, streams) {
            (Ok(s), Ok(())) => Ok(s),
            (Err(e), _) | (Ok(_), Err(e)) => Err(fail(m, e)),
        }
    }

    /// Attaches a GPU of `profile` beside the cores and runs a GPU event stream through
    /// it (`mmulab sim --gpu`); returns the GPU's index and the events applied. Its
    /// statistics are in [`Session::stats`] (`gpu`) and [`Machine::gpu_stats`].
    pub fn run_gpu(&mut self, profile: &GpuProfile, src: &mut dyn GpuSource) -> Result<(usize, u64), SimError> {
        let g = self.machine.attach_gpu(profile)?;
        let n = self.machine.run_gpu(g, src)?;
        Ok((g, n))
    }
}
