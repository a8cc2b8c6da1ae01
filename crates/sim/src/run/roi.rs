//! Warm-up and region of interest, as users of DynamoRIO's drcachesim (`-skip_refs`,
//! `-warmup_refs`, `-sim_refs`) and of ChampSim (`--warmup-instructions`,
//! `--simulation-instructions`) expect (docs/output.md, "Warm-up and region of
//! interest"):
//!
//! - `skip`: the first references are read and dropped, never simulated (events among
//!   them too: nothing they would act on exists yet);
//! - `warmup`: the next references are simulated, and every counter is snapshotted at
//!   the boundary; the warm-up's statistics are reported apart ([`Stats::warmup`]);
//! - `refs`: the measured references, after which the run stops; the statistics are the
//!   counters at the end less the snapshot ([`Stats::since`]). Gauges (resident memory,
//!   page-table pages, free 2 MiB share) are the state at the end.
//!
//! [`Warmup::Auto`], the default, takes the warm-up a workload declares about itself
//! ([`TraceSource::warmup_refs`]: GUPS's `Table[i] = i`), 0 for traces. A run with no
//! skip, no warm-up, no limit and no straddling is exactly [`run`]: its statistics
//! carry neither `roi` nor `warmup`, so its JSON is byte for byte what it was.
//!
//! `straddle`: a reference whose bytes cross a base-page boundary looks up every base
//! page it touches, each piece a reference of its own, as DynamoRIO's TLB simulator does
//! (`tlb_t::request` in clients/drcachesim/simulator/tlb.cpp, like
//! `caching_device_t::request`, loops `for (; tag <= final_tag; ++tag)` over every
//! block from the first byte's tag to the last byte's, "each block separately for
//! statistics purposes"). Off by default: mmulab translates a reference at its first
//! byte only.

use super::{run, Progress};
use crate::machine::Machine;
use crate::stats::{RoiInfo, Stats};
use crate::SimError;
use mmulab_trace::{Batch, MemRef, TraceError, TraceMeta, TraceSource};

/// How many references warm the machine up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Warmup {
    /// What the source declares ([`TraceSource::warmup_refs`]) less the skipped ones.
    #[default]
    Auto,
    /// This many references.
    Refs(u64),
}

/// The region of interest of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roi {
    /// References read and dropped before anything is simulated.
    pub skip: u64,
    /// References simulated before measuring.
    pub warmup: Warmup,
    /// References measured, then stop (`None`: to the end of the source).
    pub refs: Option<u64>,
    /// Look up every base page a reference straddles.
    pub straddle: bool,
    /// Count compulsory misses per TLB level (JSON `tlb.LEVEL.compulsory`).
    pub compulsory: bool,
}

/// Feeds `src` through `m` with the region of interest `roi` ([`run`] when it has
/// none). The statistics are those of the measured part, with the warm-up's in
/// [`Stats::warmup`] and the region in [`Stats::roi`].
pub fn run_roi(
    m: &mut Machine,
    src: &mut dyn TraceSource,
    roi: &Roi,
    mut progress: Option<Progress<'_>>,
) -> Result<Stats, SimError> {
    if roi.compulsory {
        m.count_compulsory();
    }
    let warmup = match roi.warmup {
        Warmup::Auto => src.warmup_refs().saturating_sub(roi.skip),
        Warmup::Refs(n) => n,
    };
    if roi.skip == 0 && warmup == 0 && roi.refs.is_none() && !roi.straddle {
        return run(m, src, progress);
    }
    let granule = roi.straddle.then(|| m.spec().format.base_page().bytes());
    let mut w = Window {
        inner: src,
        skip_left: roi.skip,
        skipped: 0,
        left: warmup,
        passed: 0,
        granule,
        scratch: Batch::default(),
    };
    // One callback for both phases (the caller's, if any).
    let mut report = |n: u64, f: Option<(u64, u64)>| {
        if let Some(p) = progress.as_mut() {
            p(n, f)
        }
    };
    let mut warm = None;
    if warmup > 0 {
        let s = run(m, &mut w, Some(&mut report))?;
        let stopped = !s.complete;
        warm = Some((s, w.passed));
        if stopped {
            // Stopped (Ctrl-C) during the warm-up: nothing was measured.
            let (s, n) = warm.expect("set above");
            let mut none = s.since(&s);
            none.complete = false;
            none.roi = Some(RoiInfo {
                skipped: w.skipped,
                warmup: n,
                ..Default::default()
            });
            none.warmup = Some(Box::new(s));
            return Ok(none);
        }
    }
    w.left = roi.refs.unwrap_or(u64::MAX);
    w.passed = 0;
    let end = run(m, &mut w, Some(&mut report))?;
    let mut measured = match &warm {
        Some((s, _)) => end.since(s),
        None => end,
    };
    measured.roi = Some(RoiInfo {
        skipped: w.skipped,
        warmup: warm.as_ref().map_or(0, |w| w.1),
        measured: w.passed,
        straddle_pieces: measured.counters.references - w.passed,
    });
    measured.warmup = warm.map(|(s, _)| Box::new(s));
    Ok(measured)
}

/// The table's line for a run with a region of interest: what was skipped, warmed up
/// and measured, and the warm-up's own TLB misses, walks and faults (the table above it
/// covers the measured part only).
pub fn roi_line(s: &Stats) -> Option<String> {
    let r = s.roi.as_ref()?;
    let t = crate::stats::report::thousands;
    let mut line = format!(
        "region of interest: {} references skipped, {} warm-up, {} measured (the figures above)",
        t(r.skipped),
        t(r.warmup),
        t(r.measured)
    );
    if r.straddle_pieces > 0 {
        line += &format!("; {} extra lookups of straddling references", t(r.straddle_pieces));
    }
    if let Some(w) = &s.warmup {
        line += &format!(
            "\nwarm-up: {} references, {} last-level TLB misses, {} walks, {} faults",
            t(w.counters.references),
            t(w.stlb_misses()),
            t(w.counters.walks),
            t(w.counters.faults)
        );
    }
    Some(line)
}

/// The source as the run loop sees it: the skipped references dropped, at most `left`
/// references of the current phase handed out (then the end), straddling references
/// split if `granule` is set.
struct Window<'a> {
    inner: &'a mut dyn TraceSource,
    skip_left: u64,
    skipped: u64,
    /// Trace references the current phase may still take.
    left: u64,
    /// Trace references the current phase took.
    passed: u64,
    granule: Option<u64>,
    scratch: Batch,
}

impl TraceSource for Window<'_> {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        // `max` bounds the items (references and events) a call appends, so asking for
        // at most `left` items never yields more than `left` references.
        while self.skip_left > 0 {
            self.scratch.clear();
            let n = self.inner.next_batch(&mut self.scratch, cap(max, self.skip_left))?;
            if n == 0 {
                return Ok(0);
            }
            let r = self.scratch.refs.len() as u64;
            self.skip_left -= r;
            self.skipped += r;
        }
        if self.left == 0 {
            return Ok(0);
        }
        let want = cap(max, self.left);
        let (n, refs) = match self.granule {
            None => {
                let before = buf.refs.len();
                let n = self.inner.next_batch(buf, want)?;
                (n, (buf.refs.len() - before) as u64)
            }
            Some(g) => {
                self.scratch.clear();
                let n = self.inner.next_batch(&mut self.scratch, want)?;
                let extra = split_straddling(&self.scratch, buf, g);
                (n + extra as usize, self.scratch.refs.len() as u64)
            }
        };
        self.left -= refs;
        self.passed += refs;
        Ok(n)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.inner.progress()
    }
    fn meta(&self) -> Option<TraceMeta> {
        self.inner.meta()
    }
}

/// `max` items, at most `left`.
fn cap(max: usize, left: u64) -> usize {
    left.min(max as u64) as usize
}

/// Appends `src`'s references to `dst`, each reference whose bytes cross a `granule`
/// boundary as one piece per granule it touches (same kind, core and address space; the
/// piece's size the bytes in that granule), the events kept in their places. Returns
/// the pieces added beyond one per reference.
pub(crate) fn split_straddling(src: &Batch, dst: &mut Batch, granule: u64) -> u64 {
    let mut extra = 0;
    let mut events = src.events.iter().peekable();
    for (i, r) in src.refs.iter().enumerate() {
        while let Some(e) = events.next_if(|e| e.before <= i) {
            dst.push_event(e.event);
        }
        let last = r.addr.saturating_add((r.size as u64).saturating_sub(1));
        if r.size <= 1 || r.addr / granule == last / granule {
            dst.push(*r);
            continue;
        }
        let mut a = r.addr;
        loop {
            let end = (a / granule + 1).saturating_mul(granule);
            let piece = end.min(last.saturating_add(1)) - a;
            dst.push(MemRef {
                addr: a,
                size: piece as u16,
                ..*r
            });
            if end > last {
                break;
            }
            extra += 1;
            a = end;
        }
    }
    for e in events {
        dst.push_event(e.event);
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmulab_trace::{AccessKind, Event};

    /// An 8-byte load at 4092 covers bytes 4092..=4099: two 4 KiB pages, two pieces of
    /// 4 bytes; one at 4088 ends at 4095 (one page); a size-0 reference is never split.
    /// The event after the first reference stays after all of its pieces.
    #[test]
    fn straddling_reference_is_split_per_page() {
        let mut src = Batch::default();
        src.push(MemRef::new(4092, AccessKind::Load, 8));
        src.push_event(Event::Exit { asid: 3 });
        src.push(MemRef::new(4088, AccessKind::Store, 8));
        src.push(MemRef::new(8191, AccessKind::Load, 0));
        let mut dst = Batch::default();
        assert_eq!(split_straddling(&src, &mut dst, 4096), 1);
        let got: Vec<(u64, u16)> = dst.refs.iter().map(|r| (r.addr, r.size)).collect();
        assert_eq!(got, [(4092, 4), (4096, 4), (4088, 8), (8191, 0)]);
        assert_eq!(dst.events.len(), 1);
        assert_eq!(dst.events[0].before, 2);
    }
}
