//! Linux's deferred split queue and the THP shrinker (mm/huge_memory.c), for policy
//! `thp`/`khugepaged`.
//!
//! **What is queued.** Since 6.12 every PMD-sized THP a fault or a collapse maps is put
//! on the deferred split queue (`map_anon_folio_pmd` and `collapse_huge_page` call
//! `deferred_split_folio(folio, false)`), unless
//! `/sys/kernel/mm/transparent_hugepage/shrink_underused` is 0 (`os.thp.shrink_underused`).
//! A large folio (PMD-sized or mTHP) that an unmap leaves partly mapped is queued as
//! well (`deferred_split_folio(folio, true)`; unmap.rs counts that). Here every large
//! folio the policy maps is kept with whether it is on the kernel's list; an unmap or
//! MADV_DONTNEED that cuts one marks it, and the shrinker recognises a partly mapped one
//! from the page tables, which is what queueing it at the unmap amounts to.
//!
//! **The shrinker** (`deferred_split_scan`; run by reclaim and by `echo 2 >
//! /proc/sys/vm/drop_caches`) takes each queued folio:
//!
//! * partly mapped: split (`split_folio`);
//! * else underused (`thp_underused`: more than `khugepaged/max_ptes_none` of its base
//!   pages zero-filled; never when `max_ptes_none` is `HPAGE_PMD_NR − 1`, the default):
//!   split, counted `THP_UNDERUSED_SPLIT_PAGE`;
//! * else it leaves the list, considered used, and is not looked at again unless an
//!   unmap later leaves it partly mapped.
//!
//! A split counts `THP_SPLIT_PAGE` for a PMD-sized folio and the size's mTHP `split`
//! (`__folio_split`); a folio still mapped by one PMD has that PMD split first
//! (`unmap_folio` → `__split_huge_pmd`, `THP_SPLIT_PMD`). Afterwards every mapped base
//! page that is zero-filled is replaced by the shared zero page and freed (`remap_page`
//! with `RMP_USE_SHARED_ZEROPAGE` → mm/migrate.c `try_to_map_unused_to_zeropage`, 6.12+),
//! so the process's RSS drops by them.
//!
//! **Zero-filled** is what the kernel reads from the pages. mmulab's OS model sees
//! faults, not the stores to a page once it is mapped, so the caller says what it knows
//! (a `contents` function: `Some(true)` zero-filled, `Some(false)` written, `None`
//! unknown). The kernel check's replay knows every store. A simulation does not; then
//! the base pages that were empty when khugepaged collapsed a range count as zero-filled
//! and a THP mapped at a fault counts as written throughout (**assumed**: with unknown
//! contents the shrinker never finds a faulted THP underused).
//!
//! Not modelled: the kernel keeps a partly unmapped folio whole until it is split (the
//! model frees the unmapped base pages at the unmap, so splitting one frees only its
//! zero-filled pages); mlocked folios (skipped by the kernel) do not exist in the model.

use super::granule::linux_pmd_size;
use super::remap::clear_leaves;
use super::{order_of, OsEvent, OsStats, Shootdown};
use crate::addr::{Asid, FolioSize, PageSize, FRAME_SHIFT, FRAME_SIZE};
use crate::mem::Memory;
use crate::translation::Attrs;
use crate::walk::{lookup, map_leaf};
use std::collections::BTreeMap;

/// What the shrinker is told of a page's data: `contents(asid, va)` is `Some(true)` if
/// the base page at `va` is zero-filled, `Some(false)` if not, `None` if unknown.
pub type Contents<'a> = &'a dyn Fn(Asid, u64) -> Option<bool>;

#[derive(Clone, Debug)]
struct Folio {
    pfn: u64,
    size: FolioSize,
    /// On the deferred split list as a whole (not partly mapped) folio.
    queued: bool,
    /// An unmap cut into it since the last scan: it may be partly mapped (only such
    /// folios and queued ones are looked at, so a scan does not walk every folio).
    cut: bool,
    /// For a collapsed page: its base pages present at collapse (one bit each).
    present: Option<Vec<u64>>,
}

/// The large folios a policy mapped, keyed by (address space, first virtual address).
#[derive(Clone, Debug, Default)]
pub struct DeferredSplit {
    folios: BTreeMap<(Asid, u64), Folio>,
    /// The largest folio kept so far (how far below a range a folio cutting it may start).
    max_bytes: u64,
}

/// The settings one scan runs with.
#[derive(Clone, Copy, Debug)]
pub struct ScanSettings {
    /// `khugepaged/max_ptes_none` (`None`: the kernel's default, `HPAGE_PMD_NR − 1`).
    pub max_ptes_none: Option<u64>,
    /// Zero-filled pages go to the shared zero page (`os.zero_page`); without it they
    /// are left unmapped (a later touch faults a fresh page).
    pub zero_page: bool,
    /// Stop once this many 4 KiB frames are freed (`u64::MAX`: scan everything, as
    /// `drop_caches` does).
    pub want: u64,
}

impl DeferredSplit {
    /// Records a large folio mapped at `va` of `asid` (replacing any stale one there);
    /// `queued` puts it on the list as a whole folio, `present` is a collapse's bitmap.
    pub(crate) fn mapped(
        &mut self,
        asid: Asid,
        va: u64,
        pfn: u64,
        size: FolioSize,
        queued: bool,
        present: Option<Vec<u64>>,
    ) {
        self.max_bytes = self.max_bytes.max(size.bytes());
        self.folios.insert(
            (asid, va),
            Folio {
                pfn,
                size,
                queued,
                cut: false,
                present,
            },
        );
    }

    /// `[start, end)` of `asid` was unmapped (munmap, MADV_DONTNEED): the folios wholly
    /// inside are forgotten, the ones it cuts marked for the next scan.
    pub(crate) fn unmapped(&mut self, asid: Asid, start: u64, end: u64) {
        let from = start.saturating_sub(self.max_bytes);
        let hit: Vec<((Asid, u64), bool)> = self
            .folios
            .range((asid, from)..(asid, end))
            .filter(|(k, f)| k.1 + f.size.bytes() > start)
            .map(|(k, f)| (*k, k.1 >= start && k.1 + f.size.bytes() <= end))
            .collect();
        for (k, inside) in hit {
            if inside {
                self.folios.remove(&k);
            } else if let Some(f) = self.folios.get_mut(&k) {
                f.cut = true;
            }
        }
    }

    /// Forgets every folio of `asid` (at exit).
    pub(crate) fn drop_space(&mut self, asid: Asid) {
        self.folios.retain(|k, _| k.0 != asid);
    }

    /// The large folios kept, on the list or not (for tests and reports).
    pub fn len(&self) -> usize {
        self.folios.len()
    }

    /// True if no folio is kept.
    pub fn is_empty(&self) -> bool {
        self.folios.is_empty()
    }

    /// The shrinker's pass (see the module doc). Returns the 4 KiB frames freed.
    pub(crate) fn scan(
        &mut self,
        mem: &mut Memory,
        s: ScanSettings,
        contents: Contents<'_>,
        stats: &mut OsStats,
        shootdowns: &mut Vec<Shootdown>,
    ) -> u64 {
        let mut freed = 0;
        // Only queued folios and those an unmap cut can be split.
        let keys: Vec<(Asid, u64)> = self
            .folios
            .iter()
            .filter(|(_, f)| f.queued || f.cut)
            .map(|(k, _)| *k)
            .collect();
        for (asid, key) in keys {
            if freed >= s.want {
                break;
            }
            let Some(&(fmt, root)) = mem.spaces.get(&asid) else {
                self.folios.remove(&(asid, key));
                continue;
            };
            let f = self.folios[&(asid, key)].clone();
            let base = fmt.base_page();
            let n = f.size.bytes() / base.bytes();
            let pa = f.pfn << FRAME_SHIFT;
            // How the folio is mapped now: by one leaf of its size, or page by page.
            let whole =
                lookup(mem, fmt, root, key).filter(|m| m.va == key && m.pa == pa && m.size.bytes() == f.size.bytes());
            let mapped: Vec<bool> = match whole {
                Some(_) => vec![true; n as usize],
                None => (0..n)
                    .map(|i| {
                        let va = key + i * base.bytes();
                        lookup(mem, fmt, root, va).is_some_and(|m| m.pa + (va - m.va) == pa + i * base.bytes())
                    })
                    .collect(),
            };
            let count = mapped.iter().filter(|&&b| b).count() as u64;
            if count == 0 {
                self.folios.remove(&(asid, key));
                continue;
            }
            let zero = |i: u64| {
                contents(asid, key + i * base.bytes()).unwrap_or_else(|| {
                    f.present
                        .as_ref()
                        .is_some_and(|b| b[(i / 64) as usize] & (1 << (i % 64)) == 0)
                })
            };
            let mut underused = false;
            if count == n {
                if !f.queued {
                    if let Some(e) = self.folios.get_mut(&(asid, key)) {
                        e.cut = false;
                    }
                    continue;
                }
                // mm/huge_memory.c thp_underused.
                let most = s.max_ptes_none.unwrap_or(n - 1);
                underused = most < n - 1 && (0..n).filter(|&i| zero(i)).count() as u64 > most;
                if !underused {
                    if let Some(e) = self.folios.get_mut(&(asid, key)) {
                        e.queued = false;
                    }
                    continue;
                }
            }
            // split_folio.
            if let Some(m) = whole {
                if m.size != base {
                    clear_leaves(mem, fmt, root, key, key + m.size.bytes());
                    let attrs = m.attrs.without(Attrs::CONTIG);
                    let ok = (0..n).all(|i| {
                        let off = i * base.bytes();
                        map_leaf(mem, fmt, root, key + off, pa + off, base, attrs).is_ok()
                    });
                    if !ok {
                        // No frame for the page table: put the leaf back; the split failed
                        // and the folio leaves the list (the kernel deposits that table at
                        // the fault, so it cannot fail there).
                        clear_leaves(mem, fmt, root, key, key + m.size.bytes());
                        map_leaf(mem, fmt, root, key, m.pa, m.size, m.attrs)
                            .expect("the emptied range takes its old leaf back");
                        if let Some(e) = self.folios.get_mut(&(asid, key)) {
                            e.queued = false;
                        }
                        continue;
                    }
                    stats.record_unmap(m.size);
                    for _ in 0..n {
                        stats.record_leaf(base);
                    }
                    stats.demotions[m.size.index()] += 1;
                    if linux_pmd_size(fmt).ok() == Some(m.size) {
                        stats.event(OsEvent::ThpSplitPmd);
                    }
                }
            }
            self.folios.remove(&(asid, key));
            freed += remap_zero_filled(mem, (fmt, root), key, pa, base, &mapped, &zero, s.zero_page, stats);
            if linux_pmd_size(fmt).ok().map(FolioSize::from) == Some(f.size) {
                stats.event(OsEvent::ThpSplits);
            }
            if underused {
                stats.event(OsEvent::ThpUnderusedSplit);
            }
            stats.mthp_of(f.size).split += 1;
            shootdowns.push((asid, key, key + f.size.bytes()));
        }
        freed
    }
}

/// After a split: each mapped base page of the folio at `key` that is zero-filled goes
/// to the shared zero page (or is left unmapped without zero pages) and its frame is
/// freed. Returns the frames freed.
#[allow(clippy::too_many_arguments)]
fn remap_zero_filled(
    mem: &mut Memory,
    (fmt, root): (crate::pt::Format, u64),
    key: u64,
    pa: u64,
    base: PageSize,
    mapped: &[bool],
    zero: &dyn Fn(u64) -> bool,
    zero_page: bool,
    stats: &mut OsStats,
) -> u64 {
    let frames = base.bytes() / FRAME_SIZE;
    let mut freed = 0;
    for i in (0..mapped.len() as u64).filter(|&i| mapped[i as usize] && zero(i)) {
        let va = key + i * base.bytes();
        clear_leaves(mem, fmt, root, va, va + base.bytes());
        stats.record_unmap(base);
        mem.buddy.free((pa >> FRAME_SHIFT) + i * frames, order_of(base));
        freed += frames;
        if zero_page {
            if let Some(z) = super::zero::small_zero_pfn(mem, base) {
                if map_leaf(mem, fmt, root, va, z << FRAME_SHIFT, base, super::zero::zero_attrs()).is_ok() {
                    mem.zero.mapped(base);
                    stats.record_leaf(base);
                }
            }
        }
    }
    freed
}
