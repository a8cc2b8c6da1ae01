//! The address-space calls besides munmap that change what backs a range: madvise
//! (`MADV_HUGEPAGE`, `MADV_NOHUGEPAGE`, `MADV_DONTNEED`, `MADV_COLLAPSE`) and mprotect.
//! Each follows the Linux function named on it; the FreeBSD and fixed policies take
//! `MADV_DONTNEED` and mprotect's splits too, and refuse `MADV_COLLAPSE`.

use super::unmap::{self, Split};
use super::{Os, OsEvent, OsPolicy, Shootdown};
use crate::error::ModelError;
use crate::mem::Memory;
use crate::space::AddressSpace;

/// A madvise advice mmulab models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `MADV_HUGEPAGE`: sets `VM_HUGEPAGE` (clears `VM_NOHUGEPAGE`) on the range.
    Hugepage,
    /// `MADV_NOHUGEPAGE`: sets `VM_NOHUGEPAGE` (clears `VM_HUGEPAGE`).
    NoHugepage,
    /// `MADV_DONTNEED`: drops the range's pages, keeps the VMA.
    DontNeed,
    /// `MADV_COLLAPSE`: collapses the PMD-sized ranges inside it now.
    Collapse,
}

impl Os {
    /// madvise(`start`, `end - start`, `advice`) on `space` (mm/madvise.c
    /// `madvise_vma_behavior`). `MADV_HUGEPAGE`/`NOHUGEPAGE` split the VMAs at the range's
    /// ends (`vma_modify_flags`) and change their flags; existing pages stay.
    /// `MADV_DONTNEED` is munmap's page work without the VMA change
    /// (`zap_page_range_single`: a huge page cut by an end is split, `__split_huge_pmd`,
    /// and queued for a deferred split; on x86-64 a Linux policy then frees the PTE
    /// tables the zap emptied over whole PMD ranges, `unmap::reclaim_empty_pte_tables`).
    /// `MADV_COLLAPSE`: [`super::Thp::madvise_collapse`]
    /// (policy `thp` and `khugepaged`; an error for others). Returns the number of
    /// PMD-sized ranges MADV_COLLAPSE failed to collapse (0 otherwise).
    pub fn madvise(
        &mut self,
        mem: &mut Memory,
        space: &mut AddressSpace,
        start: u64,
        end: u64,
        advice: Advice,
        shootdowns: &mut Vec<Shootdown>,
    ) -> Result<u64, ModelError> {
        match advice {
            Advice::Hugepage => {
                space.modify_range(start, end, |v| {
                    v.hugepage = true;
                    v.nohugepage = false;
                });
            }
            Advice::NoHugepage => {
                space.modify_range(start, end, |v| {
                    v.hugepage = false;
                    v.nohugepage = true;
                });
            }
            Advice::DontNeed => {
                unmap::check_range(space, start, end, self.unmap_align())?;
                let (fmt, root, asid) = (space.fmt, space.root, space.asid);
                let split = self.linux_split(Split::Unmap);
                unmap::split_straddlers(mem, space, start, end, self.stats_mut(), shootdowns, split)?;
                let maps = super::remap::clear_leaves(mem, fmt, root, start, end);
                self.unmap_frames(mem, asid, start, end, &maps);
                let stats = self.stats_mut();
                for m in &maps {
                    stats.record_unmap(m.size);
                }
                mem.swap.drop_range(asid, start, end);
                if split != Split::Uncounted && fmt == crate::pt::Format::X86_64 {
                    unmap::reclaim_empty_pte_tables(mem, space, start, end);
                }
                shootdowns.push((asid, start, end));
            }
            Advice::Collapse => {
                let Os::Thp(t) = self else {
                    return Err(ModelError::Conflict(format!(
                        "MADV_COLLAPSE: policy \"{}\" has no collapse (use \"thp\" or \"khugepaged\")",
                        self.name()
                    )));
                };
                return t.madvise_collapse(mem, space, start, end, shootdowns);
            }
        }
        Ok(0)
    }

    /// mprotect(`start`, `end - start`) on `space` as far as page sizes go
    /// (mm/mprotect.c `mprotect_fixup` → `vma_modify_flags`, whose `split_vma` splits a
    /// huge page an end cuts, `vma_adjust_trans_huge`; `change_pmd_range` would split it
    /// otherwise): the VMAs are split at the ends and a leaf straddling one is split into
    /// base pages (`THP_SPLIT_PMD`). The VMA records read-only; the leaves' protection
    /// is not changed (a store to a read-only VMA is the caller's error).
    pub fn protect(
        &mut self,
        mem: &mut Memory,
        space: &mut AddressSpace,
        start: u64,
        end: u64,
        writable: bool,
        shootdowns: &mut Vec<Shootdown>,
    ) -> Result<(), ModelError> {
        unmap::check_range(space, start, end, self.unmap_align())?;
        let split = self.linux_split(Split::Protect);
        unmap::split_straddlers(mem, space, start, end, self.stats_mut(), shootdowns, split)?;
        space.modify_range(start, end, |v| v.readonly = !writable);
        self.stats_mut().add(OsEvent::ThpSplitPmd, 0);
        Ok(())
    }
}
