//! Address spaces: one page table (root and format) per address-space id, and the
//! virtual memory areas (VMAs) the OS policies consult.
//!
//! VMAs: a trace that carries mapping metadata installs them with [`AddressSpace::add_vma`];
//! otherwise they are inferred from touched addresses by one documented rule
//! ([`INFER_SPAN`]): an address not inside any VMA creates the VMA of the 1 GiB-aligned
//! range containing it, clipped so it does not overlap an existing VMA. With that rule a
//! superpage-sized aligned range is always "inside the VMA" unless a trace-given VMA
//! edge cuts it — which is exactly the case the policies must handle.

use crate::addr::{Asid, FolioSize};
use crate::error::ModelError;
use crate::mem::Memory;
use crate::pt::Format;

/// The span of an inferred VMA: the 1 GiB-aligned range around the first touched address.
pub const INFER_SPAN: u64 = 1 << 30;

/// One virtual memory area `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `madvise(MADV_HUGEPAGE)` was applied (THP `enabled = madvise` uses huge pages here).
    pub hugepage: bool,
    /// `madvise(MADV_NOHUGEPAGE)` was applied (`VM_NOHUGEPAGE`: no THP or mTHP at fault,
    /// even with `enabled = always`).
    pub nohugepage: bool,
    /// mprotect made it read-only (kept so that VMAs split by mprotect stay apart, as
    /// Linux's do; the policies do not consult it).
    pub readonly: bool,
    /// True if the VMA came from the inference rule rather than the trace.
    pub inferred: bool,
}

impl Vma {
    /// True if `[start, end)` lies inside this VMA.
    pub fn contains_range(&self, start: u64, end: u64) -> bool {
        start >= self.start && end <= self.end
    }
}

/// An anonymous large folio mapped with more than one leaf (an mTHP folio in 4 KiB
/// entries on x86-64, or in 64 KiB groups on arm64), as the OS mapped it at a fault:
/// page tables alone do not show where such a folio starts and ends, which Linux's
/// deferred split needs (mm/rmap.c `__folio_remove_rmap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Folio {
    /// Physical address of its first byte.
    pub pa: u64,
    /// Its size.
    pub size: FolioSize,
    /// Part of it was unmapped and part is still mapped (Linux's `PG_partially_mapped`):
    /// it has been queued for a deferred split once and is not counted again.
    pub partial: bool,
}

/// One process's translation context.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    /// Its id (TLB entries are tagged with it).
    pub asid: Asid,
    /// The page-table format.
    pub fmt: Format,
    /// Physical address of the root table.
    pub root: u64,
    /// Its VMAs, sorted by start, not overlapping.
    pub vmas: Vec<Vma>,
    /// Folios mapped with more than one leaf, by their first virtual address
    /// ([`Folio`]). An entry outlives its folio when a path other than an unmap frees
    /// or moves it (a collapse, a remap); whoever reads one checks that the page tables
    /// still map it.
    pub folios: std::collections::BTreeMap<u64, Folio>,
}

impl AddressSpace {
    /// A new, empty address space with its root table allocated in `mem`.
    pub fn new(asid: Asid, fmt: Format, mem: &mut Memory) -> Result<AddressSpace, ModelError> {
        let root = mem.alloc_table(fmt.levels()[0].entries())?;
        mem.register_space(asid, fmt, root);
        Ok(AddressSpace {
            asid,
            fmt,
            root,
            vmas: Vec::new(),
            folios: Default::default(),
        })
    }

    /// Adds a VMA given by the trace (or a test); overlapping VMAs are an error.
    pub fn add_vma(&mut self, start: u64, end: u64, hugepage: bool) -> Result<(), ModelError> {
        if start >= end {
            return Err(ModelError::Conflict(format!("VMA [{start:#x}, {end:#x}) is empty")));
        }
        if self.vmas.iter().any(|v| v.start < end && start < v.end) {
            return Err(ModelError::Conflict(format!(
                "VMA [{start:#x}, {end:#x}) overlaps an existing VMA"
            )));
        }
        let at = self.vmas.partition_point(|v| v.start < start);
        self.vmas.insert(
            at,
            Vma {
                start,
                end,
                hugepage,
                nohugepage: false,
                readonly: false,
                inferred: false,
            },
        );
        Ok(())
    }

    /// Applies `f` to the VMAs covering `[start, end)`, split at `start` and `end` first
    /// so that only the range changes (madvise, mprotect: Linux's `vma_modify`, which
    /// splits a VMA at the range's ends). Addresses with no VMA are left alone. Returns
    /// how many VMAs the range touched.
    pub fn modify_range(&mut self, start: u64, end: u64, f: impl Fn(&mut Vma)) -> usize {
        let mut out = Vec::with_capacity(self.vmas.len() + 2);
        let mut touched = 0;
        for v in self.vmas.drain(..) {
            if v.end <= start || v.start >= end {
                out.push(v);
                continue;
            }
            touched += 1;
            if v.start < start {
                out.push(Vma { end: start, ..v });
            }
            let mut mid = Vma {
                start: v.start.max(start),
                end: v.end.min(end),
                ..v
            };
            f(&mut mid);
            out.push(mid);
            if v.end > end {
                out.push(Vma { start: end, ..v });
            }
        }
        // vma_modify → vma_merge_existing_range: neighbours left with equal flags merge.
        let mut merged: Vec<Vma> = Vec::with_capacity(out.len());
        for v in out {
            match merged.last_mut() {
                Some(p)
                    if p.end == v.start
                        && !p.inferred
                        && !v.inferred
                        && (p.hugepage, p.nohugepage, p.readonly) == (v.hugepage, v.nohugepage, v.readonly) =>
                {
                    p.end = v.end
                }
                _ => merged.push(v),
            }
        }
        self.vmas = merged;
        touched
    }

    /// Grows the VMA ending at `old_end` to end at `new_end` (mremap growing a mapping
    /// in place). False if no VMA ends there or the new part overlaps another VMA.
    pub fn grow(&mut self, old_end: u64, new_end: u64) -> bool {
        let Some(i) = self.vmas.iter().position(|v| v.end == old_end) else {
            return false;
        };
        if self.vmas.get(i + 1).is_some_and(|n| n.start < new_end) || new_end <= old_end {
            return false;
        }
        self.vmas[i].end = new_end;
        true
    }

    /// Removes `[start, end)` from the VMA list (munmap): VMAs inside it are dropped, a
    /// VMA straddling an end is trimmed, and one covering the whole range is split in
    /// two (both keep its flags). Returns how many VMAs the range touched.
    pub fn remove_range(&mut self, start: u64, end: u64) -> usize {
        let mut out = Vec::with_capacity(self.vmas.len() + 1);
        let mut touched = 0;
        for v in self.vmas.drain(..) {
            if v.end <= start || v.start >= end {
                out.push(v);
                continue;
            }
            touched += 1;
            if v.start < start {
                out.push(Vma { end: start, ..v });
            }
            if v.end > end {
                out.push(Vma { start: end, ..v });
            }
        }
        self.vmas = out;
        touched
    }

    /// The VMA containing `va`, inferring one by the [`INFER_SPAN`] rule if none does.
    pub fn vma(&mut self, va: u64) -> Vma {
        let at = self.vmas.partition_point(|v| v.start <= va);
        if at > 0 && self.vmas[at - 1].end > va {
            return self.vmas[at - 1];
        }
        let mut start = va & !(INFER_SPAN - 1);
        let mut end = start.saturating_add(INFER_SPAN);
        if at > 0 {
            start = start.max(self.vmas[at - 1].end);
        }
        if let Some(n) = self.vmas.get(at) {
            end = end.min(n.start);
        }
        let v = Vma {
            start,
            end,
            hugepage: false,
            nohugepage: false,
            readonly: false,
            inferred: true,
        };
        self.vmas.insert(at, v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inferred_vmas_fill_gaps_without_overlap() {
        let mut mem = Memory::new(4 << 20).unwrap();
        let mut s = AddressSpace::new(0, Format::X86_64, &mut mem).unwrap();
        s.add_vma(0x4000_0000 + 0x1000, 0x4000_0000 + 0x30_0000, true).unwrap();
        assert!(s.add_vma(0x4000_2000, 0x4000_3000, false).is_err());
        let v = s.vma(0x4000_0000 + 0x2000);
        assert!(v.hugepage && !v.inferred);
        let below = s.vma(0x4000_0000);
        assert_eq!((below.start, below.end), (0x4000_0000, 0x4000_1000));
        let above = s.vma(0x4000_0000 + 0x40_0000);
        assert_eq!((above.start, above.end), (0x4000_0000 + 0x30_0000, 0x8000_0000));
        assert_eq!(s.vmas.len(), 3);
    }

    #[test]
    fn remove_range_drops_trims_and_splits() {
        let mut mem = Memory::new(4 << 20).unwrap();
        let mut s = AddressSpace::new(0, Format::X86_64, &mut mem).unwrap();
        s.add_vma(0x1000, 0x9000, true).unwrap();
        s.add_vma(0x10000, 0x20000, false).unwrap();
        assert_eq!(s.remove_range(0x3000, 0x5000), 1);
        let spans: Vec<_> = s.vmas.iter().map(|v| (v.start, v.end, v.hugepage)).collect();
        assert_eq!(
            spans,
            vec![
                (0x1000, 0x3000, true),
                (0x5000, 0x9000, true),
                (0x10000, 0x20000, false)
            ]
        );
        assert_eq!(s.remove_range(0x8000, 0x18000), 2);
        let spans: Vec<_> = s.vmas.iter().map(|v| (v.start, v.end)).collect();
        assert_eq!(spans, vec![(0x1000, 0x3000), (0x5000, 0x8000), (0x18000, 0x20000)]);
        // The hole is filled again by the inference rule, clipped to its neighbours.
        let v = s.vma(0x4000);
        assert_eq!((v.start, v.end, v.inferred), (0x3000, 0x5000, true));
    }
}
