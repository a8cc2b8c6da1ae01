//! Page-walk caches (paging-structure caches): per upper level, a small cache of
//! descriptors that point to next-level tables, keyed by the virtual-address prefix
//! the descriptor covers. A hit at level L lets the walk start at level L+1 with the
//! cached table, skipping the reads of levels 0..=L. The deepest hit wins.
//!
//! Each cache is fully associative with LRU replacement; `entries = 0` disables a level.

use crate::addr::Asid;
use crate::assoc::AssocArray;
use crate::pt::Format;
use crate::replacement::Policy;
use serde::Serialize;

/// Counts of the page-walk caches.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PwcStats {
    /// Lookups (one per walk when any cache is configured).
    pub lookups: u64,
    /// Hits by the level of the cached descriptor (index 0 = root level).
    pub hits: Vec<u64>,
    /// Walks that found nothing cached.
    pub misses: u64,
}

/// The page-walk caches of one core.
#[derive(Clone, Debug)]
pub struct Pwc {
    fmt: Format,
    caches: Vec<Option<AssocArray>>,
    /// Any level has a cache.
    enabled: bool,
    /// Counters.
    pub stats: PwcStats,
}

impl Pwc {
    /// Caches with `entries[L]` entries for the descriptors of level L (levels beyond the
    /// list, and the last level, have none).
    pub fn new(fmt: Format, entries: &[usize]) -> Pwc {
        let n = fmt.levels().len();
        let caches = (0..n.saturating_sub(1))
            .map(|l| entries.get(l).copied().filter(|&e| e > 0).map(|e| AssocArray::new(e, e, Policy::Lru, 0)))
            .collect::<Vec<_>>();
        Pwc { fmt, stats: PwcStats { hits: vec![0; caches.len()], ..Default::default() }, enabled: caches.iter().any(Option::is_some), caches }
    }

    /// True if any level has a cache.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The deepest cached table for `va`: (level to start the walk at, table address).
    #[inline(always)]
    pub fn lookup(&mut self, va: u64, asid: Asid) -> Option<(usize, u64)> {
        if !self.enabled() {
            return None;
        }
        self.stats.lookups += 1;
        let levels = self.fmt.levels();
        for l in (0..self.caches.len()).rev() {
            if let Some(c) = &mut self.caches[l] {
                let key = va >> levels[l].shift;
                if let Some(slot) = c.find(0, key, asid) {
                    self.stats.hits[l] += 1;
                    return Some((l + 1, c.data(slot)));
                }
            }
        }
        self.stats.misses += 1;
        None
    }

    /// Caches the level-`level` descriptor covering `va`, which points to `table`.
    #[inline]
    pub fn fill(&mut self, level: usize, va: u64, asid: Asid, table: u64) {
        let shift = self.fmt.levels()[level].shift;
        if let Some(Some(c)) = self.caches.get_mut(level) {
            // A descriptor the walk read is never already cached at its level: the
            // lookup would have hit it and started the walk below it.
            debug_assert!(c.peek(0, va >> shift, asid).is_none());
            c.insert(0, va >> shift, asid, table);
        }
    }

    /// Drops every cached descriptor of `asid` covering any of `[start, end)`.
    pub fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) {
        let levels = self.fmt.levels();
        for (l, c) in self.caches.iter_mut().enumerate() {
            if let Some(c) = c {
                let shift = levels[l].shift;
                c.invalidate_where(|k, a, _| {
                    let lo = k << shift;
                    a == asid && lo < end && lo.saturating_add(1 << shift) > start
                });
            }
        }
    }
}
