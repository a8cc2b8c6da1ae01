//! GPU address translation: the Broadcom V3D MMU of the Raspberry Pi 4 and 5 (V3D 4.2
//! and 7.1) with its 64 KiB "big" and 1 MiB "super" pages, and the kernel driver that
//! fills its page table (Linux `drivers/gpu/drm/v3d/`).
//!
//! * [`pte`]: the 32-bit PTE encoding and the driver's per-segment PTE writer
//!   (`v3d_mmu_insert_ptes`, `v3d_mmu_remove_ptes`).
//! * [`va`]: the drm_mm-style allocator of the 4 GiB GPU virtual address space and the
//!   three alignment policies (`v3d_bo_create_finish` before and after the series).
//! * [`mmu`]: the device MMU: the single-level table, a PTE cache and a TLB whose
//!   entries cover 4 KiB, 64 KiB or 1 MiB, the scratch page, and the full flush
//!   (`v3d_mmu_flush_all`).
//! * [`driver`]: buffer objects (BOs): backing memory from shmem in kernel pages or from
//!   gemfs (transparent huge pages, `huge=within_size`) through the physical memory
//!   model ([`crate::mem::Buddy`]), their scatterlists, VA nodes and PTEs.
//! * [`device`]: the page-table side of the machinery made general: the V3D table and an
//!   Arm Mali (Panfrost/Panthor) table in the AArch64 stage-1 format behind one trait,
//!   so the same MMU (PTE cache, TLB, flush, counters) serves both GPUs.
//!
//! Models count; they never print.

pub mod device;
pub mod driver;
pub mod mmu;
pub mod pte;
pub mod va;

/// Bytes of one GPU MMU page (`V3D_MMU_PAGE_SHIFT = 12`).
pub const GPU_PAGE: u64 = 4096;
/// Pages of the 4 GiB GPU virtual address space (one PTE each).
pub const GPU_PAGES: u64 = 1 << 20;

/// An error of the GPU model: bad input a driver would refuse (or BUG on), named with
/// the BO, page or address concerned and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// A BO that cannot fit the 4 GiB space at all.
    #[error("BO {bo} of {bytes} bytes is larger than the GPU address space (4 GiB less the reserved page 0); use smaller BOs")]
    BoTooLarge {
        /// BO id.
        bo: u32,
        /// Its size.
        bytes: u64,
    },
    /// A BO of size 0.
    #[error("BO {bo} has size 0; a BO needs at least one page")]
    EmptyBo {
        /// BO id.
        bo: u32,
    },
    /// No hole of the VA space fits the BO (the space is full or fragmented).
    #[error("no free GPU virtual address range for BO {bo} of {bytes} bytes with {align} KiB alignment ({live} BOs live); destroy BOs or use a smaller alignment policy")]
    NoSpace {
        /// BO id.
        bo: u32,
        /// Its size.
        bytes: u64,
        /// Alignment in KiB.
        align: u64,
        /// BOs live at the time.
        live: usize,
    },
    /// A physical address the 28-bit PFN field of a PTE cannot hold (40-bit PAs).
    #[error("physical address {pa:#x} is beyond the 40 bits a V3D PTE can address (PFN field of 28 bits); give the GPU memory below 1 TiB")]
    PfnTooLarge {
        /// The physical address.
        pa: u64,
    },
    /// A PTE write over a page that is already mapped.
    #[error("GPU page {page:#x} (VA {va:#x}) is already mapped (PTE {pte:#010x}); a BO's range must be free before its PTEs are written")]
    Overlap {
        /// The page index.
        page: u64,
        /// Its VA.
        va: u64,
        /// The PTE found there.
        pte: u32,
    },
    /// A scatterlist segment not a multiple of 4 KiB, or not 4 KiB aligned.
    #[error("scatterlist segment at {pa:#x} of {len} bytes is not 4 KiB aligned; segments must be whole GPU pages")]
    BadSegment {
        /// Segment start.
        pa: u64,
        /// Segment length.
        len: u64,
    },
    /// A BO id that is not live.
    #[error("BO {bo} is not live (never created, or destroyed){context}; create it first")]
    UnknownBo {
        /// BO id.
        bo: u32,
        /// Where it was referenced (e.g. " at line 12").
        context: String,
    },
    /// A BO id created twice.
    #[error("BO {bo} is already live; destroy it before creating it again")]
    DuplicateBo {
        /// BO id.
        bo: u32,
    },
    /// An access beyond the end of its BO.
    #[error("access at offset {offset} of BO {bo} is beyond its {bytes} bytes")]
    OutOfBo {
        /// BO id.
        bo: u32,
        /// Offset.
        offset: u64,
        /// BO size.
        bytes: u64,
    },
    /// Simulated physical memory ran out.
    #[error("out of simulated physical memory for BO {bo}: {detail}")]
    OutOfMemory {
        /// BO id.
        bo: u32,
        /// The allocator's account.
        detail: String,
    },
    /// A configuration value the model cannot honour.
    #[error("invalid GPU configuration: {0}")]
    Config(String),
}
