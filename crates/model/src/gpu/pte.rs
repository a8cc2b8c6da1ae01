//! The V3D page-table entry and the driver's PTE writer.
//!
//! Encoding (Linux `drivers/gpu/drm/v3d/v3d_mmu.c`, the `V3D_PTE_*` defines): bit 31
//! SUPERPAGE (1 MiB), bit 30 BIGPAGE (64 KiB), bit 29 WRITEABLE, bit 28 VALID, bits 27:0
//! the page frame number (PA >> 12), so physical addresses are 40 bits wide. Every one
//! of the 16 (big) or 256 (super) PTEs of a large page carries its bit (the comment
//! above the defines), and the PTE of each following 4 KiB page is the previous one
//! plus 1.

use super::{GpuError, GPU_PAGE};
use crate::addr::PageSize;

/// Bit 31: the PTE belongs to a 1 MiB super page.
pub const SUPERPAGE: u32 = 1 << 31;
/// Bit 30: the PTE belongs to a 64 KiB big page.
pub const BIGPAGE: u32 = 1 << 30;
/// Bit 29: writes allowed.
pub const WRITEABLE: u32 = 1 << 29;
/// Bit 28: the PTE is valid.
pub const VALID: u32 = 1 << 28;
/// Bits 27:0: the page frame number.
pub const PFN_MASK: u32 = (1 << 28) - 1;
/// Physical addresses a PTE can hold: 40 bits.
pub const PA_BITS: u32 = 40;

/// One V3D PTE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pte(pub u32);

impl Pte {
    /// True if the valid bit is set.
    pub fn valid(self) -> bool {
        self.0 & VALID != 0
    }
    /// True if the writeable bit is set.
    pub fn writeable(self) -> bool {
        self.0 & WRITEABLE != 0
    }
    /// The page frame number of this 4 KiB page.
    pub fn pfn(self) -> u64 {
        (self.0 & PFN_MASK) as u64
    }
    /// The size of the page this PTE is part of (super wins over big).
    pub fn size(self) -> PageSize {
        if self.0 & SUPERPAGE != 0 {
            PageSize::M1
        } else if self.0 & BIGPAGE != 0 {
            PageSize::K64
        } else {
            PageSize::K4
        }
    }
}

/// A DMA-mapped scatterlist segment: physically contiguous bytes (`sg_dma_address`,
/// `sg_dma_len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Bus (physical) address of the first byte; 4 KiB aligned.
    pub pa: u64,
    /// Length in bytes; a multiple of 4 KiB.
    pub len: u64,
}

/// What one PTE write pass produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Pages emitted by size: 4 KiB, 64 KiB, 1 MiB (PTEs are 1, 16, 256 per page).
    pub pages: [u64; 3],
    /// PTEs written.
    pub ptes: u64,
}

impl Written {
    /// Bytes mapped by pages of each size (4 KiB, 64 KiB, 1 MiB).
    pub fn bytes(&self) -> [u64; 3] {
        [self.pages[0] << 12, self.pages[1] << 16, self.pages[2] << 20]
    }
}

/// Writes the PTEs of a BO whose first GPU page is `start_page` from its scatterlist
/// `sg`, as `v3d_mmu_insert_ptes` does since the big/super page series: segment by
/// segment, while bytes remain in the segment, a 1 MiB super page when at least 1 MiB
/// remains and both the GPU page index and the PFN are multiples of 256 (the helper
/// `v3d_mmu_is_aligned`), else a 64 KiB big page when at least 64 KiB remains and both
/// are multiples of 16, else one 4 KiB page. With `large = false` it writes 4 KiB PTEs
/// only (the driver before the series).
///
/// Every target PTE must be zero (free), else [`GpuError::Overlap`] and nothing is
/// written; a PA beyond 40 bits is [`GpuError::PfnTooLarge`]. (The driver itself
/// `BUG_ON`s at PFN 2^24, a bound of the SoC's bus rather than of the PTE.)
pub fn write_ptes(pt: &mut [u32], start_page: u64, sg: &[Segment], large: bool) -> Result<Written, GpuError> {
    // Check everything first, so an error leaves the table as it was.
    let total: u64 = sg.iter().map(|s| s.len / GPU_PAGE).sum();
    for s in sg {
        if s.pa % GPU_PAGE != 0 || s.len % GPU_PAGE != 0 || s.len == 0 {
            return Err(GpuError::BadSegment { pa: s.pa, len: s.len });
        }
        let end = s.pa + s.len;
        if end > 1u64 << PA_BITS {
            return Err(GpuError::PfnTooLarge { pa: end - GPU_PAGE });
        }
    }
    let end_page = start_page + total;
    if end_page > pt.len() as u64 {
        return Err(GpuError::Config(format!(
            "PTE write of {total} pages at page {start_page:#x} runs past the table's {} entries",
            pt.len()
        )));
    }
    for page in start_page..end_page {
        let pte = pt[page as usize];
        if pte != 0 {
            return Err(GpuError::Overlap {
                page,
                va: page * GPU_PAGE,
                pte,
            });
        }
    }
    let mut w = Written::default();
    let mut page = start_page;
    for s in sg {
        let mut pfn = s.pa / GPU_PAGE;
        let mut len = s.len;
        while len > 0 {
            let (count, flag, k) = if large && len >= 1 << 20 && page % 256 == 0 && pfn % 256 == 0 {
                (256, SUPERPAGE, 2)
            } else if large && len >= 1 << 16 && page % 16 == 0 && pfn % 16 == 0 {
                (16, BIGPAGE, 1)
            } else {
                (1, 0, 0)
            };
            let base = WRITEABLE | VALID | flag | pfn as u32;
            for i in 0..count {
                pt[(page + i) as usize] = base + i as u32;
            }
            page += count;
            pfn += count;
            len -= count * GPU_PAGE;
            w.pages[k] += 1;
            w.ptes += count;
        }
    }
    Ok(w)
}

/// Clears the `pages` PTEs from `start_page` (`v3d_mmu_remove_ptes` writes 0 to each).
pub fn remove_ptes(pt: &mut [u32], start_page: u64, pages: u64) {
    for p in &mut pt[start_page as usize..(start_page + pages) as usize] {
        *p = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<u32> {
        vec![0; 4096]
    }

    #[test]
    fn bits_decode() {
        let p = Pte(SUPERPAGE | WRITEABLE | VALID | 0x300);
        assert!(p.valid() && p.writeable());
        assert_eq!((p.size(), p.pfn()), (PageSize::M1, 0x300));
        assert_eq!(Pte(BIGPAGE | VALID).size(), PageSize::K64);
        assert_eq!(Pte(VALID).size(), PageSize::K4);
        assert!(!Pte(0).valid());
    }

    #[test]
    fn consecutive_ptes_add_one() {
        // One 12 KiB segment at PFN 5: three 4 KiB PTEs 5, 6, 7 with the same flags.
        let mut pt = table();
        let w = write_ptes(
            &mut pt,
            3,
            &[Segment {
                pa: 5 << 12,
                len: 3 << 12,
            }],
            true,
        )
        .unwrap();
        assert_eq!(
            &pt[3..6],
            &[VALID | WRITEABLE | 5, VALID | WRITEABLE | 6, VALID | WRITEABLE | 7]
        );
        assert_eq!((w.pages, w.ptes), ([3, 0, 0], 3));
        remove_ptes(&mut pt, 3, 3);
        assert!(pt.iter().all(|&p| p == 0));
    }
}
