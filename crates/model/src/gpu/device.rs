//! The page table a GPU MMU walks, behind one enum so the same MMU machinery
//! ([`super::mmu::Mmu`]: PTE cache, TLB, flush, counters) serves each GPU:
//!
//! * [`Table::V3d`]: Broadcom V3D, one level of 2^20 32-bit PTEs over 4 GiB ([`super::pte`]),
//!   4 KiB, 64 KiB (big) and 1 MiB (super) pages.
//! * [`Table::Mali`]: Arm Mali under Panfrost/Panthor, the AArch64 stage-1 long-descriptor
//!   format with the 4 KiB granule (io-pgtable `ARM_64_LPAE_S1`; Panfrost's
//!   `ARM_MALI_LPAE` differs only in attribute bits), mapped and walked by the model's
//!   own format and walker ([`crate::pt::Format::Armv8_4K`], [`crate::walk::map_leaf`], [`crate::walk::lookup`]), with
//!   4 KiB pages and 2 MiB blocks.
//!
//! A lookup returns the leaf and the descriptor lines it read, as keys of the PTE cache:
//! a key names one 64-byte line of descriptors (16 V3D PTEs, 8 AArch64 descriptors; the
//! line size is assumed).

use super::pte::{self, Pte, Segment, Written};
use super::{GpuError, GPU_PAGE, GPU_PAGES};
use crate::addr::PageSize;
use crate::mem::Memory;
use crate::pt::Format;
use crate::translation::Attrs;
use crate::walk as map;

/// A leaf translation found by a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Virtual base of the page.
    pub va: u64,
    /// Physical base of the page.
    pub pa: u64,
    /// Its size.
    pub size: PageSize,
    /// Writes allowed.
    pub writeable: bool,
}

/// A GPU's page table.
#[derive(Clone, Debug)]
pub enum Table {
    /// The V3D single-level table (its 4 MiB of PTEs; physical base `base`).
    V3d {
        /// PTEs by GPU page index.
        pt: Vec<u32>,
        /// Physical address of the table (`V3D_MMU_PT_PA_BASE << 12`; nominal).
        base: u64,
    },
    /// An AArch64 4 KiB-granule stage-1 table rooted at `root` in the model's memory.
    Mali {
        /// Physical address of the level-0 table.
        root: u64,
    },
}

impl Table {
    /// A V3D table. Its 4 MiB of physically contiguous PTEs (`dma_alloc_wc` in
    /// `v3d_gem_init`) come from CMA, reserved at boot outside the memory the buddy
    /// allocator manages, so they take nothing from the model's memory; the table's
    /// physical address plays no part in the model (PTE-cache keys are PTE indices).
    pub fn v3d() -> Table {
        Table::V3d {
            pt: vec![0; GPU_PAGES as usize],
            base: 0,
        }
    }

    /// A Mali table: an empty AArch64 level-0 table in `mem`.
    pub fn mali(mem: &mut Memory) -> Result<Table, GpuError> {
        let root = mem.alloc_table(512).map_err(|e| GpuError::OutOfMemory {
            bo: 0,
            detail: e.to_string(),
        })?;
        Ok(Table::Mali { root })
    }

    /// Page sizes the table maps, smallest first (the TLB holds these).
    pub fn page_sizes(&self) -> Vec<PageSize> {
        match self {
            Table::V3d { .. } => vec![PageSize::K4, PageSize::K64, PageSize::M1],
            Table::Mali { .. } => vec![PageSize::K4, PageSize::M2],
        }
    }

    /// Maps a BO at GPU page `start_page` from its scatterlist. V3D: the driver's PTE
    /// writer ([`pte::write_ptes`], `large` = big/super pages on). Mali: the same
    /// per-segment choice the kernel's io-pgtable mapping makes (`iommu_pgsize` through
    /// Panfrost's `mmu_map_sg`): a 2 MiB block where VA and PA are 2 MiB aligned and
    /// 2 MiB remain, else a 4 KiB page. `Written::pages` counts 4K, 64K/2M, 1M.
    pub fn map(&mut self, mem: &mut Memory, start_page: u64, sg: &[Segment], large: bool) -> Result<Written, GpuError> {
        match self {
            Table::V3d { pt, .. } => pte::write_ptes(pt, start_page, sg, large),
            Table::Mali { root } => {
                let mut w = Written::default();
                let mut va = start_page * GPU_PAGE;
                for s in sg {
                    let (mut pa, mut len) = (s.pa, s.len);
                    while len > 0 {
                        let m2 = PageSize::M2.bytes();
                        let size = if large && len >= m2 && va % m2 == 0 && pa % m2 == 0 {
                            PageSize::M2
                        } else {
                            PageSize::K4
                        };
                        if map::lookup(mem, Format::Armv8_4K, *root, va).is_some() {
                            return Err(GpuError::Overlap {
                                page: va / GPU_PAGE,
                                va,
                                pte: 0,
                            });
                        }
                        let attrs = Attrs(Attrs::WRITABLE | Attrs::ACCESSED | Attrs::DIRTY);
                        map::map_leaf(mem, Format::Armv8_4K, *root, va, pa, size, attrs)
                            .map_err(|e| GpuError::Config(e.to_string()))?;
                        let k = if size == PageSize::M2 { 1 } else { 0 };
                        w.pages[k] += 1;
                        w.ptes += 1;
                        va += size.bytes();
                        pa += size.bytes();
                        len -= size.bytes();
                    }
                }
                Ok(w)
            }
        }
    }

    /// Unmaps `pages` GPU pages from `start_page`.
    pub fn unmap(&mut self, mem: &mut Memory, start_page: u64, pages: u64) {
        match self {
            Table::V3d { pt, .. } => pte::remove_ptes(pt, start_page, pages),
            Table::Mali { root } => {
                let (mut va, end) = (start_page * GPU_PAGE, (start_page + pages) * GPU_PAGE);
                while va < end {
                    va = match map::unmap_leaf(mem, Format::Armv8_4K, *root, va) {
                        Some(m) => m.va + m.size.bytes(),
                        None => va + GPU_PAGE,
                    };
                }
            }
        }
    }

    /// Looks `va` up as the hardware walks: pushes the PTE-cache key of every
    /// descriptor line read onto `lines`; `None` for an invalid entry.
    pub fn lookup(&self, mem: &mut Memory, va: u64, lines: &mut Vec<u64>) -> Option<Leaf> {
        match self {
            Table::V3d { pt, .. } => {
                let index = va / GPU_PAGE;
                lines.push(index >> 4);
                let p = Pte(*pt.get(index as usize)?);
                if !p.valid() {
                    return None;
                }
                let size = p.size();
                let within = (va & size.offset_mask()) / GPU_PAGE;
                Some(Leaf {
                    va: va & !size.offset_mask(),
                    pa: (p.pfn() - within) * GPU_PAGE,
                    size,
                    writeable: p.writeable(),
                })
            }
            Table::Mali { root } => {
                let m = map::lookup(mem, Format::Armv8_4K, *root, va);
                // Levels read: 0..=leaf level (3 for a page, 2 for a block), or all four
                // when nothing is mapped (assumed: the walk reads down to the last level).
                let last = m.map_or(3, |m| m.level);
                for level in 0..=last {
                    let shift = 39 - 9 * level as u32;
                    lines.push(((level as u64) << 60) | (va >> (shift + 3)));
                }
                m.map(|m| Leaf {
                    va: m.va,
                    pa: m.pa,
                    size: m.size,
                    writeable: m.attrs.has(Attrs::WRITABLE),
                })
            }
        }
    }
}
