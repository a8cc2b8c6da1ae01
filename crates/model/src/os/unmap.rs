//! Partial munmap: the policy-independent part of [`super::Os::unmap`].
//!
//! Unmapping `[start, end)` of one address space, in order:
//! 1. The range is checked: non-empty, both ends aligned to the format's base page
//!    (4 KiB; 16/64 KiB with those ARMv8 granules), inside the format's virtual address
//!    space. `fixed` (hugetlbfs-like) additionally requires its page size, as Linux
//!    rejects an unaligned munmap of a hugetlb VMA (EINVAL).
//! 2. Every leaf (2 MiB / 1 MiB block, 64 KiB contiguous or repeated group, 16 MiB
//!    supersection, …) that straddles `start` or `end` is split into base pages with its
//!    attributes (minus the contiguous bit), as Linux splits a THP (`split_huge_pmd`) and
//!    FreeBSD demotes (`pmap_demote_l2` / `pmap_demote_l3c`) on a partial remove. Counted
//!    as a demotion of that size and as `munmap_splits`.
//! 3. The leaves inside the range are cleared (one pass of the shared walker via
//!    [`super::remap::clear_leaves`]); their frames go back to the buddy allocator —
//!    except frames of a FreeBSD reservation, which go back to the reservation
//!    (see `Reservation::unmap_frames`).
//! 4. The VMAs lose the range ([`crate::space::AddressSpace::remove_range`]); a later
//!    touch of an address in it faults again and gets a VMA by the inference rule
//!    (clipped to the neighbouring VMAs, so exactly the hole when both sides remain).
//! 5. Page tables are freed as Linux's `free_pgtables` frees them (mm/vma.c
//!    `unmap_region` passes the end of the VMA before the range as `floor` and the start
//!    of the one after as `ceiling`; mm/memory.c `free_pgd_range` frees a table whose
//!    span lies within them): every table whose whole span lies inside the range, and
//!    every empty table the range overlaps whose span lies between the neighbouring
//!    VMAs. So unmapping a whole mapping with no neighbour in its 2 MiB ranges leaves no
//!    page table there, and a later mapping of the range can take a PMD-sized page at
//!    its first fault (`__handle_mm_fault` needs `pmd_none`); a table shared with a
//!    neighbouring VMA stays.
//! 6. One shootdown for the whole range (it covers the split leaves' edges too, which
//!    are pushed separately) and the event `munmaps`.

use super::remap::clear_leaves;
use super::OsEvent;
use super::{OsStats, Shootdown};
use crate::addr::PageSize;
use crate::error::ModelError;
use crate::mem::Memory;
use crate::pt::Pte;
use crate::space::AddressSpace;
use crate::translation::Attrs;
use crate::walk::{lookup, map_leaf, walk, Action, Visit, Visitor, WalkCounts, WalkFlags};

/// Checks `[start, end)` for an unmap in `space` (step 1 of the module doc); `align` is
/// the alignment the policy requires (at least the format's base page).
pub(crate) fn check_range(space: &AddressSpace, start: u64, end: u64, align: PageSize) -> Result<(), ModelError> {
    let fmt = space.fmt;
    let align = align.max(fmt.base_page());
    if start >= end {
        return Err(ModelError::Conflict(format!(
            "unmap of [{start:#x}, {end:#x}): the range is empty or inverted"
        )));
    }
    if start & align.offset_mask() != 0 || end & align.offset_mask() != 0 {
        return Err(ModelError::Conflict(format!(
            "unmap of [{start:#x}, {end:#x}): both ends must be aligned to {align} here (the base page of {} page tables, or the fixed policy's page size)",
            fmt.arch_name()
        )));
    }
    if fmt.va_bits() < 64 && (end - 1) >> fmt.va_bits() != 0 {
        return Err(ModelError::Conflict(format!(
            "unmap of [{start:#x}, {end:#x}): beyond the {}-bit virtual address space of {} page tables",
            fmt.va_bits(),
            fmt.arch_name()
        )));
    }
    Ok(())
}

/// What a split of a leaf straddling a range's end counts under Linux's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Split {
    /// Not a Linux policy: neither counter.
    Uncounted,
    /// munmap or MADV_DONTNEED of part of a huge page: `THP_SPLIT_PMD`
    /// (`__split_huge_pmd_locked`) for a PMD leaf, and, unless it maps the huge zero
    /// page, the part left mapped queues the folio for a deferred split
    /// (`deferred_split_folio`: `THP_DEFERRED_SPLIT_PAGE` and the size's
    /// `split_deferred`).
    Unmap,
    /// mprotect of part of a huge page (`change_pmd_range`, or `split_vma` →
    /// `vma_adjust_trans_huge`): `THP_SPLIT_PMD` only; every page stays mapped.
    Protect,
}

/// Splits every leaf straddling `start` or `end` into base pages (step 2). Returns the
/// number of leaves split.
pub(crate) fn split_straddlers(
    mem: &mut Memory,
    space: &mut AddressSpace,
    start: u64,
    end: u64,
    stats: &mut OsStats,
    shootdowns: &mut Vec<Shootdown>,
    split: Split,
) -> Result<u64, ModelError> {
    if split == Split::Unmap {
        partly_unmapped_folios(mem, space, start, end, stats);
    }
    let (fmt, root) = (space.fmt, space.root);
    let base = fmt.base_page();
    let mut splits = 0;
    // Only the leaves holding the first and the last byte can straddle an end. (A range
    // walk would not see a contiguous group whose first entry lies before `start`.)
    let mut edges = vec![lookup(mem, fmt, root, start)];
    let last = lookup(mem, fmt, root, end - 1);
    if last.map(|m| m.va) != edges[0].map(|m| m.va) {
        edges.push(last);
    }
    for m in edges.into_iter().flatten() {
        let m_end = m.va + m.size.bytes();
        if m.size <= base || (m.va >= start && m_end <= end) {
            continue;
        }
        clear_leaves(mem, fmt, root, m.va, m_end);
        let attrs = m.attrs.without(Attrs::CONTIG);
        for off in (0..m.size.bytes()).step_by(base.bytes() as usize) {
            if let Err(e) = map_leaf(mem, fmt, root, m.va + off, m.pa + off, base, attrs) {
                // Out of memory for the new table: put the pieces mapped so far back
                // into the original leaf, so the page tables stay as they were.
                clear_leaves(mem, fmt, root, m.va, m_end);
                map_leaf(mem, fmt, root, m.va, m.pa, m.size, m.attrs)
                    .expect("the emptied range takes its old leaf back");
                return Err(e);
            }
        }
        stats.record_unmap(m.size);
        for _ in 0..m.size.bytes() / base.bytes() {
            stats.record_leaf(base);
        }
        stats.demotions[m.size.index()] += 1;
        if split != Split::Protect {
            stats.event(OsEvent::MunmapSplits);
        }
        let pmd = crate::os::granule::linux_pmd_size(fmt).ok() == Some(m.size);
        if split != Split::Uncounted && pmd {
            stats.event(OsEvent::ThpSplitPmd);
        }
        // A leaf that is part of a larger folio: the folio was counted above.
        let in_folio = !pmd && folio_at(mem, space, m.va).is_some();
        if split == Split::Unmap && !mem.zero.contains_pa(m.pa) && !in_folio {
            if pmd {
                stats.event(OsEvent::ThpDeferredSplitPage);
            }
            stats.mthp_of(m.size).split_deferred += 1;
        }
        shootdowns.push((space.asid, m.va, m_end));
        splits += 1;
    }
    Ok(splits)
}

/// The registered folio ([`crate::space::Folio`]) holding `va`, if the page tables still
/// map `va` where that folio put it: (its first virtual address, the folio).
fn folio_at(mem: &mut Memory, space: &AddressSpace, va: u64) -> Option<(u64, crate::space::Folio)> {
    let (&key, &f) = space.folios.range(..=va).next_back()?;
    let m = lookup(mem, space.fmt, space.root, va)?;
    let mapped_there = va < key + f.size.bytes() && m.pa + (va - m.va) == f.pa + (va - key);
    mapped_there.then_some((key, f))
}

/// Linux's deferred split of a folio that an unmap of `[start, end)` leaves partly
/// mapped (mm/rmap.c `__folio_remove_rmap`: `partially_mapped && folio_test_anon &&
/// !folio_test_partially_mapped` → mm/huge_memory.c `deferred_split_folio(folio, true)`,
/// which sets `PG_partially_mapped` and counts the order's `split_deferred`, and
/// `THP_DEFERRED_SPLIT_PAGE` for a PMD-order folio): once per folio, however many
/// unmaps cut it. A folio wholly inside the range leaves the registry; one whose pages
/// outside the range are no longer mapped where it put them is stale and leaves it too.
fn partly_unmapped_folios(mem: &mut Memory, space: &mut AddressSpace, start: u64, end: u64, stats: &mut OsStats) {
    let cut: Vec<(u64, crate::space::Folio)> = space
        .folios
        .range(..end)
        .rev()
        .take_while(|(&k, f)| k + f.size.bytes() > start)
        .map(|(&k, &f)| (k, f))
        .collect();
    for (key, f) in cut {
        let f_end = key + f.size.bytes();
        if key >= start && f_end <= end {
            space.folios.remove(&key);
            continue;
        }
        // A page of the folio that the unmap leaves: still the folio's?
        let kept = if key < start { key } else { end };
        if folio_at(mem, space, kept).map(|(k, _)| k) != Some(key) {
            space.folios.remove(&key);
            continue;
        }
        if !f.partial {
            if crate::os::granule::linux_pmd_size(space.fmt)
                .ok()
                .map(crate::addr::FolioSize::from)
                == Some(f.size)
            {
                stats.event(OsEvent::ThpDeferredSplitPage);
            }
            stats.mthp_of(f.size).split_deferred += 1;
            if let Some(e) = space.folios.get_mut(&key) {
                e.partial = true;
            }
        }
    }
}

struct FreeInside {
    start: u64,
    end: u64,
    /// Free only last-level (PTE) tables, and only empty ones inside the range.
    pte_only: bool,
    /// The neighbouring VMAs' edges (`free_pgtables`' floor and ceiling).
    floor: u64,
    ceiling: u64,
    fmt: crate::pt::Format,
    freed: Vec<(u64, u64)>,
}

impl Visitor for FreeInside {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if let Pte::Table(child) = v.pte {
            let v_end = v.va.saturating_add(v.span);
            let last = v.level + 2 == self.fmt.levels().len();
            if self.pte_only && !last {
                return Action::Continue;
            }
            let inside = v.va >= self.start && v_end <= self.end && !self.pte_only;
            let between = v.va >= self.floor && v_end <= self.ceiling && {
                let entries = self.fmt.levels()[v.level + 1].entries();
                (0..entries).all(|i| mem.pt.read(child, i) == 0)
            };
            if inside || between {
                mem.pt.write(v.table, v.index, 0);
                mem.free_table(child);
                self.freed.push((v.va, v.span));
            }
        }
        Action::Continue
    }
}

/// Frees the page tables of step 5 for `[start, end)` (call after the leaves are cleared
/// and the VMAs have lost the range). Children are visited before parents (post-order),
/// so a subtree is freed bottom-up. Returns the number of tables freed.
pub(crate) fn free_tables_inside(mem: &mut Memory, space: &AddressSpace, start: u64, end: u64) -> usize {
    let floor = space
        .vmas
        .iter()
        .filter(|v| v.end <= start)
        .map(|v| v.end)
        .max()
        .unwrap_or(0);
    let ceiling = space
        .vmas
        .iter()
        .filter(|v| v.start >= end)
        .map(|v| v.start)
        .min()
        .unwrap_or(u64::MAX);
    free_tables(
        mem,
        space,
        FreeInside {
            start,
            end,
            pte_only: false,
            floor,
            ceiling,
            fmt: space.fmt,
            freed: Vec::new(),
        },
    )
}

/// MADV_DONTNEED's page-table reclaim (mm/pt_reclaim.c, x86-64 Linux 6.14+ with
/// `CONFIG_PT_RECLAIM`): `zap_pte_range` frees a PTE table when the zap covers its whole
/// PMD range (`reclaim_pt_is_enabled`: `end - start >= PMD_SIZE`) and leaves it empty, so
/// a later fault there finds `pmd_none` and may take a PMD-sized page (check-kernel's
/// `40_dontneed_small_then_huge` on this 6.18 kernel). Returns the number freed.
pub(crate) fn reclaim_empty_pte_tables(mem: &mut Memory, space: &AddressSpace, start: u64, end: u64) -> usize {
    free_tables(
        mem,
        space,
        FreeInside {
            start,
            end,
            pte_only: true,
            floor: start,
            ceiling: end,
            fmt: space.fmt,
            freed: Vec::new(),
        },
    )
}

/// Walks `[f.start, f.end)` children before parents, freeing what `f` says; the count.
fn free_tables(mem: &mut Memory, space: &AddressSpace, mut f: FreeInside) -> usize {
    walk(
        mem,
        space.fmt,
        space.root,
        0,
        f.start,
        f.end,
        WalkFlags::TABLE_POST,
        &mut f,
        &mut WalkCounts::default(),
    );
    f.freed.len()
}
