//! The run loop: a trace source fed through a machine in batches, with the region of
//! interest (roi.rs), the cache thread (pipeline.rs) and the VMAs a trace file declares
//! (vmas.rs).

pub(crate) mod pipeline;
pub(crate) mod roi;
pub(crate) mod vmas;

use self::pipeline::Pipe;
use crate::machine::Machine;
use crate::stats::Stats;
use crate::stop::{stop_requested, SIMULATED};
use crate::SimError;
use mmulab_trace::{Batch, MemRef, TraceSource};
use std::sync::atomic::Ordering;

/// References read per batch.
pub const BATCH: usize = 8192;

/// How far ahead the run loop prefetches walks.
const AHEAD: usize = 8;

/// A progress callback: (references so far, source progress (done, total) if known).
pub type Progress<'a> = &'a mut dyn FnMut(u64, Option<(u64, u64)>);

/// Feeds `src` through `m` to its end, or until `request_stop` (checked once per batch
/// of `BATCH` (8192) references); the statistics then say `complete: false`. On a trace or
/// model error the machine keeps the statistics of every reference simulated before it,
/// so the caller can still report them ([`Stats::collect`]).
///
/// A machine with [`Machine::pipeline_ok`] runs its data caches on a second thread
/// (pipeline.rs), with the same results; if that thread cannot start, the run takes
/// the one-thread path.
pub fn run(m: &mut Machine, src: &mut dyn TraceSource, progress: Option<Progress<'_>>) -> Result<Stats, SimError> {
    if m.pipeline_ok() {
        return std::thread::scope(|s| match Pipe::spawn(s) {
            Ok(mut pipe) => {
                let r = run_on(m, src, progress, Some(&mut pipe));
                pipe.park(m);
                r
            }
            Err(_) => run_on(m, src, progress, None),
        });
    }
    run_on(m, src, progress, None)
}

/// [`run`] with the cache thread `pipe` (taken back before this returns), or none.
fn run_on(
    m: &mut Machine,
    src: &mut dyn TraceSource,
    progress: Option<Progress<'_>>,
    mut pipe: Option<&mut Pipe>,
) -> Result<Stats, SimError> {
    let r = run_loop(m, src, progress, &mut pipe);
    if let Some(p) = pipe {
        p.park(m);
    }
    r
}

fn run_loop(
    m: &mut Machine,
    src: &mut dyn TraceSource,
    progress: Option<Progress<'_>>,
    pipe: &mut Option<&mut Pipe>,
) -> Result<Stats, SimError> {
    let mut buf = Batch::with_capacity(BATCH);
    let mut progress = progress;
    let mut batches = 0u64;
    let mut walk_heavy = false;
    let mut walks_before = m.walks();
    let mut stopped = false;
    loop {
        if stop_requested() {
            stopped = true;
            break;
        }
        buf.clear();
        let n = match src.next_batch(&mut buf, BATCH) {
            Ok(n) => n,
            // What the source delivered before the damage is simulated, so that the
            // partial statistics cover the references the error says were read.
            Err(e) => {
                feed_batch(m, &buf, walk_heavy, pipe)?;
                park(m, pipe);
                return Err(e.into());
            }
        };
        if n == 0 {
            break;
        }
        // VMAs the trace carries (docs/policies.md), taken as soon as they are known.
        if !m.bg.trace_vmas_seen && batches % 64 == 0 {
            m.take_trace_vmas(src);
        }
        feed_batch(m, &buf, walk_heavy, pipe)?;
        // The request stream (`sim --mem-trace`) is written out between batches.
        m.flush_mem_trace_if_full()?;
        let n = buf.refs.len();
        let walks = m.walks();
        walk_heavy = (walks - walks_before) * 16 > n as u64;
        walks_before = walks;
        batches += 1;
        SIMULATED.fetch_add(n as u64, Ordering::Relaxed);
        if batches % 64 == 0 {
            if let Some(p) = progress.as_mut() {
                p(m.references(), src.progress());
            }
        }
    }
    park(m, pipe);
    if stopped {
        let mut s = Stats::collect(m);
        s.complete = false;
        return Ok(s);
    }
    Ok(Stats::collect(m))
}

/// Feeds one batch: its references, and its events between the runs of references they
/// separate. When the previous batch walked often (`walk_heavy`: more than one reference
/// in 16), the page-table descriptors of the reference AHEAD positions ahead are
/// prefetched, so host cache misses on big simulated page tables overlap; results are
/// unaffected.
fn feed_batch(m: &mut Machine, buf: &Batch, walk_heavy: bool, pipe: &mut Option<&mut Pipe>) -> Result<(), SimError> {
    if buf.events.is_empty() {
        feed_run(m, &buf.refs, walk_heavy, pipe)
    } else {
        buf.for_each_run(|x| match x {
            Ok(run) => feed_run(m, run, walk_heavy, pipe),
            Err(e) => {
                park(m, pipe);
                m.event(e)
            }
        })
    }
}

/// How [`feed`] takes each reference of a run: one implementation per path, chosen by
/// the caller for the whole run (static dispatch, inlined into [`feed`]'s loops).
trait Path {
    fn access(&mut self, m: &mut Machine, r: &MemRef) -> Result<(), SimError>;
}

/// [`Machine::access`] (it tests for ticks, tracking, caches and the core per
/// reference).
struct General;
/// [`Machine::access_plain`] (the machine is [`Machine::plain_ok`], no tick due).
struct Plain;
/// [`Machine::access_cached_run`] (the machine is [`Machine::cached_ok`], no tick due).
struct Cached;
/// [`Machine::access_piped`]: the translation here, the reference's record to the cache
/// thread (which holds the cache side: [`Pipe::records`]).
struct Piped<'p>(&'p mut Pipe);

impl Path for General {
    #[inline(always)]
    fn access(&mut self, m: &mut Machine, r: &MemRef) -> Result<(), SimError> {
        m.access(r)
    }
}

impl Path for Plain {
    #[inline(always)]
    fn access(&mut self, m: &mut Machine, r: &MemRef) -> Result<(), SimError> {
        m.access_plain(r)
    }
}

impl Path for Cached {
    #[inline(always)]
    fn access(&mut self, m: &mut Machine, r: &MemRef) -> Result<(), SimError> {
        m.access_cached_run(r)
    }
}

impl Path for Piped<'_> {
    #[inline(always)]
    fn access(&mut self, m: &mut Machine, r: &MemRef) -> Result<(), SimError> {
        let (first, out) = self.0.cur();
        m.access_piped(r, first, out)?;
        self.0.flush_if_full();
        Ok(())
    }
}

/// Feeds a run of references (no event among them). A machine that takes the plain or
/// the cached path does so up to the reference a background tick falls on, which
/// [`Machine::access`] takes (the tick first), then goes on by its path: only that one
/// reference of the batch pays for the tests.
///
/// With the cache thread `pipe`, the cached path's references go to it
/// ([`feed_piped`]); the reference of a tick, and anything else, takes the cache side
/// back first.
#[inline(always)]
fn feed_run(m: &mut Machine, refs: &[MemRef], prefetch: bool, pipe: &mut Option<&mut Pipe>) -> Result<(), SimError> {
    let mut rest = refs;
    while !rest.is_empty() {
        let k = m.before_tick().min(rest.len() as u64) as usize;
        // (While the cache thread holds the caches the machine has none: the pipe is
        // asked first.)
        if let Some(p) = pipe.as_deref_mut().filter(|_| m.piped_ok()) {
            feed_piped(m, p, &rest[..k], prefetch)?;
        } else if m.plain_ok() {
            feed(m, &rest[..k], prefetch, Plain)?;
        } else if m.cached_ok() {
            feed(m, &rest[..k], prefetch, Cached)?;
        } else {
            park(m, pipe);
            return feed(m, rest, prefetch, General);
        }
        let Some(r) = rest.get(k) else { break };
        park(m, pipe);
        m.access(r)?;
        rest = &rest[k + 1..];
    }
    Ok(())
}

/// Gives `m` its cache side back from the cache thread, if there is one.
#[inline]
fn park(m: &mut Machine, pipe: &mut Option<&mut Pipe>) {
    if let Some(p) = pipe.as_deref_mut() {
        p.park(m);
    }
}

/// [`feed`]'s cached path on the pipeline: each reference is translated here and its
/// record goes to the cache thread (pipeline.rs). On an error the records before
/// it are still replayed ([`run`] takes the cache side back before it returns).
#[inline(never)]
fn feed_piped(m: &mut Machine, p: &mut Pipe, buf: &[MemRef], prefetch: bool) -> Result<(), SimError> {
    if buf.is_empty() {
        return Ok(());
    }
    // The cache side goes to the cache thread (if it is not there already) and stays
    // there through the batch (a fault does not need it).
    p.records(m);
    feed(m, buf, prefetch, Piped(p))
}

/// Feeds one batch to `m` by `path` (the caller checked the batch for it), prefetching
/// ahead if `prefetch`.
#[inline(always)]
fn feed<P: Path>(m: &mut Machine, buf: &[MemRef], prefetch: bool, mut path: P) -> Result<(), SimError> {
    let mut i = 0;
    if prefetch {
        // Pairs (buf[i + AHEAD - 1], buf[i + AHEAD]) beside buf[i]; the last AHEAD
        // references of the batch have nothing ahead to prefetch.
        let ahead = buf.get(AHEAD - 1..).unwrap_or(&[]).windows(2);
        for (r, w) in buf.iter().zip(ahead) {
            // Only a reference that changes page can start a walk worth prefetching.
            let (prev, next) = (&w[0], &w[1]);
            if next.addr >> 12 != prev.addr >> 12 || next.asid != prev.asid {
                m.prefetch(next);
            }
            path.access(m, r)?;
            i += 1;
        }
    }
    for r in &buf[i..] {
        path.access(m, r)?;
    }
    Ok(())
}
