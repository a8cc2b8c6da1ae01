//! Per-region counting (`SessionOptions::regions`): each reference's walk cycles, each
//! fault's pages and resident bytes, and at the end the touched pages, attributed to the
//! trace VMA that holds the address (stats/regions.rs). The walk cycles of a reference
//! are the translators' walk cycles after it less before it (`Translator::walk_cycles`,
//! the figure the statistics report), so the regions' sum is the run's.
//!
//! Counting takes the general path of the run loop for every reference (it needs the
//! touched pages too), so it is opt-in: `mmulab advise` turns it on to say where huge
//! pages pay.

use super::Machine;
use crate::stats::regions::RegionStats;
use crate::system::TraceVma;
use crate::translator::Translator;
use crate::SimError;
use mmulab_trace::MemRef;

/// The regions and their counters; the last entry is the outside one.
pub(crate) struct Regions {
    /// Sorted, non-overlapping `[start, end)`.
    ranges: Vec<(u64, u64)>,
    stats: Vec<RegionStats>,
    /// The index of the last region found (runs of references stay in one).
    last: usize,
}

/// How a trace's allocations refine its VMAs into regions (`Machine::set_region_cuts`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionCuts {
    /// Addresses inside an anonymous VMA where two merged allocations meet (sorted).
    pub splits: Vec<u64>,
    /// Allocations no VMA sample held (mapped and unmapped between samples): regions of
    /// their own, where they overlap no VMA and no earlier one of them.
    pub extra: Vec<(u64, u64)>,
}

impl Regions {
    fn new(vmas: &[TraceVma], cuts: &RegionCuts) -> Regions {
        let mut r = Regions {
            ranges: Vec::new(),
            stats: Vec::new(),
            last: 0,
        };
        r.set(vmas, cuts);
        r
    }

    /// Takes `vmas` as the regions, each cut at the addresses of `cuts.splits` inside it
    /// (the allocations the kernel merged into one VMA), and `cuts.extra` beside them,
    /// unless something was counted already (VMAs a source reports late): the counts stay
    /// with the regions they were made in.
    fn set(&mut self, vmas: &[TraceVma], cuts: &RegionCuts) {
        let splits = &cuts.splits;
        if self.stats.iter().any(|s| s.references > 0 || s.faults() > 0) {
            return;
        }
        let mut whole: Vec<(u64, u64)> = vmas
            .iter()
            .filter(|v| v.start < v.end)
            .map(|v| (v.start, v.end))
            .collect();
        whole.sort_unstable();
        // Overlaps (a damaged list) are dropped, as `TraceVma::install` skips them.
        whole.dedup_by(|b, a| b.0 < a.1);
        let mut ranges = Vec::with_capacity(whole.len());
        for (s, e) in whole {
            let mut at = s;
            let from = splits.partition_point(|&p| p <= s);
            for &p in splits[from..].iter().take_while(|&&p| p < e) {
                ranges.push((at, p));
                at = p;
            }
            ranges.push((at, e));
        }
        for &(s, e) in &cuts.extra {
            let i = ranges.partition_point(|&(_, re)| re <= s);
            if s < e && ranges.get(i).is_none_or(|&(rs, _)| rs >= e) {
                ranges.insert(i, (s, e));
            }
        }
        self.stats = ranges
            .iter()
            .map(|&(start, end)| RegionStats {
                start,
                end,
                ..Default::default()
            })
            .chain(std::iter::once(RegionStats {
                outside: true,
                ..Default::default()
            }))
            .collect();
        self.ranges = ranges;
        self.last = 0;
    }

    /// The index of the region holding `addr` (the outside entry if none).
    #[inline]
    fn index(&mut self, addr: u64) -> usize {
        if let Some(&(s, e)) = self.ranges.get(self.last) {
            if s <= addr && addr < e {
                return self.last;
            }
        }
        let i = self.ranges.partition_point(|&(_, e)| e <= addr);
        match self.ranges.get(i) {
            Some(&(s, _)) if s <= addr => {
                self.last = i;
                i
            }
            _ => self.ranges.len(),
        }
    }

    /// The counters, with each region's touched bytes from `pages` (touched 4 KiB page
    /// numbers).
    fn report(&self, pages: impl Iterator<Item = u64>) -> Vec<RegionStats> {
        let mut out = self.stats.clone();
        for page in pages {
            let addr = page << 12;
            let i = self.ranges.partition_point(|&(_, e)| e <= addr);
            let i = match self.ranges.get(i) {
                Some(&(s, _)) if s <= addr => i,
                _ => self.ranges.len(),
            };
            out[i].touched_bytes += 4096;
        }
        out
    }
}

impl Machine {
    /// Counts per region from now on (the trace's VMAs, as installed now or later), and
    /// tracks touched pages.
    pub fn count_regions(&mut self) {
        self.regions = Some(Box::new(Regions::new(&self.sys.trace_vmas, &self.region_cuts)));
        self.bg.track_touched = true;
    }

    /// The regions take the trace's VMAs (nothing counted yet).
    pub(super) fn regions_vmas_changed(&mut self) {
        if let Some(r) = &mut self.regions {
            r.set(&self.sys.trace_vmas, &self.region_cuts);
        }
    }

    /// Refines the regions by a trace's allocations (`TraceMeta::allocations`): each
    /// allocation the kernel merged with a neighbour, and each no VMA sample held, is a
    /// region of its own.
    pub fn set_region_cuts(&mut self, mut cuts: RegionCuts) {
        cuts.splits.sort_unstable();
        cuts.splits.dedup();
        self.region_cuts = cuts;
        self.regions_vmas_changed();
    }

    /// Walk cycles of every core so far.
    fn walk_cycles_now(&self) -> u64 {
        self.req.cpus.iter().map(Translator::walk_cycles).sum::<u64>()
            + self.req.vcpus.iter().map(Translator::walk_cycles).sum::<u64>()
    }

    /// [`Machine::access`] counted per region (the reference is counted and background
    /// work done).
    #[inline(never)]
    pub(super) fn access_counted(&mut self, r: &MemRef) -> Result<(), SimError> {
        let before = self.walk_cycles_now();
        let res = self.access_translate(r);
        let cycles = self.walk_cycles_now() - before;
        if let Some(g) = &mut self.regions {
            let i = g.index(r.addr);
            let s = &mut g.stats[i];
            s.references += 1;
            s.walk_cycles += cycles;
        }
        res
    }

    /// Resident bytes and pages mapped by size now, for [`Machine::regions_after`].
    #[inline(always)]
    pub(super) fn regions_before(&self) -> Option<(u64, [u64; 9])> {
        self.regions.as_ref()?;
        Some((self.sys.resident_bytes(), self.sys.os.stats().mapped))
    }

    /// Attributes what changed since `before` ([`Machine::regions_before`]) to the
    /// region holding `addr`: the resident bytes, and with `fault` one fault at the
    /// largest page size whose count grew (the base page if none did).
    #[inline(always)]
    pub(super) fn regions_after(&mut self, before: Option<(u64, [u64; 9])>, addr: u64, fault: bool) {
        let (Some((resident, mapped)), Some(g)) = (before, self.regions.as_mut()) else {
            return;
        };
        let now = self.sys.os.stats().mapped;
        let i = g.index(addr);
        let s = &mut g.stats[i];
        s.resident_bytes += self.sys.resident_bytes() as i64 - resident as i64;
        if fault {
            let size = (0..now.len())
                .rev()
                .find(|&k| now[k] > mapped[k])
                .unwrap_or(self.spec.format.base_page().index());
            s.faults_by_size[size] += 1;
        }
    }

    /// The regions' counters now (touched bytes from the tracked pages).
    pub(super) fn regions_report(&self) -> Option<Vec<RegionStats>> {
        Some(self.regions.as_ref()?.report(self.bg.touched_pages()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_falls_in_the_vma_that_holds_it_or_outside() {
        let v = [TraceVma::plain(0x5000, 0x9000), TraceVma::plain(0x1000, 0x3000)];
        let mut r = Regions::new(&v, &RegionCuts::default());
        assert_eq!(r.ranges, vec![(0x1000, 0x3000), (0x5000, 0x9000)]);
        assert_eq!(r.index(0x1000), 0);
        assert_eq!(r.index(0x2fff), 0);
        assert_eq!(r.index(0x3000), 2, "the end is outside");
        assert_eq!(r.index(0x4fff), 2);
        assert_eq!(r.index(0x8fff), 1);
        assert_eq!(r.index(0x9000), 2);
        assert_eq!(r.index(0), 2);
        let rep = r.report([1, 2, 5, 8, 9, 100].into_iter());
        assert_eq!(
            rep.iter().map(|s| s.touched_bytes / 4096).collect::<Vec<_>>(),
            vec![2, 2, 2]
        );
        assert!(rep[2].outside);
    }

    /// Allocations merged into one VMA: cut at the addresses inside it (0x6000, 0x7000),
    /// not at one on its edge (0x5000) or outside every VMA (0x4000, 0xa000). Allocations
    /// no VMA held are regions beside them (0xa000–0xc000; 0x2000–0x4000 overlaps a VMA
    /// and 0xb000–0xd000 the first extra one: both dropped).
    #[test]
    fn a_vma_is_cut_at_the_allocation_boundaries_inside_it() {
        let v = [TraceVma::plain(0x5000, 0x9000), TraceVma::plain(0x1000, 0x3000)];
        let cuts = RegionCuts {
            splits: vec![0x4000, 0x5000, 0x6000, 0x7000, 0xa000],
            extra: vec![(0xa000, 0xc000), (0x2000, 0x4000), (0xb000, 0xd000)],
        };
        let mut r = Regions::new(&v, &cuts);
        assert_eq!(
            r.ranges,
            vec![
                (0x1000, 0x3000),
                (0x5000, 0x6000),
                (0x6000, 0x7000),
                (0x7000, 0x9000),
                (0xa000, 0xc000)
            ]
        );
        assert_eq!(r.index(0x6fff), 2);
        assert_eq!(r.index(0x7000), 3);
        assert_eq!(r.index(0xbfff), 4);
        assert_eq!(r.index(0xc000), 5, "outside");
        assert_eq!(r.stats.len(), 6, "five regions and the outside one");
    }
}
