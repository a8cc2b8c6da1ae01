//! Warm-up subtraction: [`Stats::since`] takes a snapshot of the same machine away from
//! its statistics now, part by part, through [`Delta`]. The machine's own counters
//! ([`super::Counters`]) get their `Delta` from the macro that declares them; each other
//! part says here which of its fields are counters (subtracted) and which are gauges
//! (the state at the end: resident memory, pages mapped, page tables, free 2 MiB share,
//! touched bytes, pinned frames, the host's backing, NUMA nodes' allocated pages).

use super::nested::NestedStats;
use super::time::{KernelWork, TimeStats};
use super::Stats;
use mmulab_model::os::{OsEvents, OsStats};
use mmulab_model::tlb::TlbStats;

/// A part of the statistics that can be taken back to what happened after a snapshot.
pub trait Delta {
    /// `self` less `before` (a snapshot of the same thing earlier), counter by counter.
    fn less(&mut self, before: &Self);
}

impl Delta for u64 {
    fn less(&mut self, before: &u64) {
        *self -= before;
    }
}

impl<const N: usize> Delta for [u64; N] {
    fn less(&mut self, before: &[u64; N]) {
        for (x, y) in self.iter_mut().zip(before) {
            *x -= y;
        }
    }
}

impl Delta for Vec<u64> {
    fn less(&mut self, before: &Vec<u64>) {
        for (x, y) in self.iter_mut().zip(before) {
            *x -= y;
        }
    }
}

impl<T: Delta> Delta for Option<T> {
    fn less(&mut self, before: &Option<T>) {
        if let (Some(x), Some(y)) = (self.as_mut(), before.as_ref()) {
            x.less(y);
        }
    }
}

impl Delta for TlbStats {
    fn less(&mut self, y: &TlbStats) {
        // Destructured so that a field added to TlbStats must be placed here.
        let TlbStats {
            accesses,
            hits,
            misses,
            fills,
            evictions,
            splinters,
            bypasses,
            invalidations,
        } = self;
        accesses.less(&y.accesses);
        hits.less(&y.hits);
        misses.less(&y.misses);
        fills.less(&y.fills);
        evictions.less(&y.evictions);
        splinters.less(&y.splinters);
        bypasses.less(&y.bypasses);
        invalidations.less(&y.invalidations);
    }
}

/// The OS policy's counters; `mapped`, `resident_bytes` and `resident_by_size` describe
/// the whole run's memory (as the table's memory line does) and are kept.
fn os_less(o: &mut OsStats, p: &OsStats) {
    o.faults.less(&p.faults);
    o.promotions.less(&p.promotions);
    o.demotions.less(&p.demotions);
    o.collapses.less(&p.collapses);
    o.os_cycles.less(&p.os_cycles);
    for (m, b) in o.mthp.iter_mut().zip(&p.mthp) {
        // Destructured so that a counter added to MthpCounts must be placed here.
        let mmulab_model::os::MthpCounts {
            anon_fault_alloc,
            anon_fault_fallback,
            split_deferred,
            split,
        } = m;
        anon_fault_alloc.less(&b.anon_fault_alloc);
        anon_fault_fallback.less(&b.anon_fault_fallback);
        split_deferred.less(&b.split_deferred);
        split.less(&b.split);
    }
    let mut events = OsEvents::default();
    for (e, n) in o.events.iter() {
        events.add(e, n - p.events.get(e));
    }
    o.events = events;
}

impl Delta for KernelWork {
    fn less(&mut self, b: &KernelWork) {
        let KernelWork {
            cycles,
            wakeups,
            pages_scanned,
            pages_collapsed,
        } = self;
        cycles.less(&b.cycles);
        wakeups.less(&b.wakeups);
        pages_scanned.less(&b.pages_scanned);
        pages_collapsed.less(&b.pages_collapsed);
    }
}

impl Delta for TimeStats {
    /// The kernel thread's work; the clock and the charge rule are settings.
    fn less(&mut self, b: &TimeStats) {
        self.kernel.less(&b.kernel);
    }
}

impl Delta for NestedStats {
    /// Walk references, stage-2 translations and walks, the stage-2 TLB and walk
    /// caches, host faults; the host's backing (`host_mapped`, `host_resident_bytes`)
    /// is the state at the end.
    fn less(&mut self, p: &NestedStats) {
        self.stage1_refs_by_level.less(&p.stage1_refs_by_level);
        self.stage2_refs_by_level.less(&p.stage2_refs_by_level);
        self.stage2_translations.less(&p.stage2_translations);
        self.stage2_walks.less(&p.stage2_walks);
        self.s2tlb.less(&p.s2tlb);
        self.pwc2_lookups.less(&p.pwc2_lookups);
        self.pwc2_hits.less(&p.pwc2_hits);
        self.host_faults.less(&p.host_faults);
        self.host_fault_cycles.less(&p.host_fault_cycles);
        if let (Some(x), Some(y)) = (self.walk_caches.as_mut(), p.walk_caches.as_ref()) {
            x.cycles.less(&y.cycles);
            x.memory_reads.less(&y.memory_reads);
        }
        if let (Some(x), Some(y)) = (self.dirty_log.as_mut(), p.dirty_log.as_ref()) {
            x.less(y);
        }
    }
}

impl Stats {
    /// The statistics of what happened after `before` (a snapshot of the same machine
    /// earlier): every counter less its value then; the memory (resident bytes, pages
    /// mapped by size, page tables, free 2 MiB share, touched bytes, pinned frames, each
    /// region's resident and touched bytes) as it is now (the host's backing of a `[vm]` machine too). GPU statistics (a GPU
    /// run has no region of interest) are left as they are.
    pub fn since(&self, before: &Stats) -> Stats {
        let mut s = self.clone();
        s.counters.less(&before.counters);
        for (l, p) in s.levels.iter_mut().zip(&before.levels) {
            l.counts.less(&p.counts);
            l.compulsory.less(&p.compulsory);
        }
        s.pwc_hits.less(&before.pwc_hits);
        s.pwc_lookups.less(&before.pwc_lookups);
        os_less(&mut s.os, &before.os);
        s.nested.less(&before.nested);
        if let (Some(c), Some(p)) = (s.caches.as_mut(), before.caches.as_ref()) {
            *c = c.since(p);
        }
        s.time.less(&before.time);
        if let (Some(n), Some(p)) = (s.numa.as_mut(), before.numa.as_ref()) {
            n.less_counters(p);
        }
        if let (Some(r), Some(p)) = (s.regions.as_mut(), before.regions.as_ref()) {
            // Counters less their values then; resident and touched bytes as now.
            for (a, b) in r.iter_mut().zip(p) {
                a.references = a.references.saturating_sub(b.references);
                a.walk_cycles = a.walk_cycles.saturating_sub(b.walk_cycles);
                for (x, y) in a.faults_by_size.iter_mut().zip(b.faults_by_size) {
                    *x = x.saturating_sub(y);
                }
            }
        }
        s.roi = None;
        s.warmup = None;
        s
    }
}
