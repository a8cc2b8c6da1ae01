//! The GPU kernel driver: buffer objects (BOs) with backing memory, a VA node and PTEs.
//!
//! Creating a BO (V3D: `v3d_bo_create` → `v3d_bo_create_finish`; Panfrost:
//! `panfrost_gem_open` → `panfrost_mmu_map`):
//! 1. its size is rounded up to the kernel page (`PAGE_SIZE`: 4 KiB on the Pi 4, 16 KiB
//!    on the Pi 5 kernel);
//! 2. backing pages come from the physical memory model ([`crate::mem::Memory`], shared
//!    with the CPU side): from shmem, one kernel page at a time; or from gemfs, the
//!    driver's private tmpfs mounted with `huge=within_size` (`v3d_gemfs_init`), which
//!    takes a PMD-sized transparent huge page (2 MiB with 4 KiB pages, 32 MiB with
//!    16 KiB pages) for every huge-page-aligned part of the file that lies wholly within
//!    its size, and falls back to kernel pages when the buddy allocator has no free
//!    block that large (shmem's fallback to order 0);
//! 3. the pages in file order become the scatterlist, physically consecutive pages
//!    merged into one segment (`sg_alloc_table_from_pages`; no segment-size cap is
//!    modelled: assumed);
//! 4. a VA node is inserted with the alignment policy ([`super::va`]); Panfrost aligns
//!    non-executable BOs of 2 MiB or more to 2 MiB, others to a page;
//! 5. the PTEs are written ([`super::device::Table::map`]) and the MMU flushed: V3D the
//!    full flush after every insert and remove (`v3d_mmu_insert_ptes`,
//!    `v3d_mmu_remove_ptes` → `v3d_mmu_flush_all`), Panfrost a flush of the range.

use super::device::Table;
use super::mmu::{Mmu, MmuSpec};
use super::pte::{Segment, Written};
use super::va::{self, AlignPolicy, VaSpace};
use super::{GpuError, GPU_PAGE};
use crate::mem::Memory;
use std::collections::HashMap;

/// Which GPU the driver drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuKind {
    /// Broadcom V3D (Raspberry Pi 4 and 5).
    V3d,
    /// Arm Mali under Panfrost/Panthor.
    Mali,
}

/// Where BO pages come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backing {
    /// shmem: kernel pages one at a time.
    Shmem,
    /// gemfs: tmpfs with `huge=within_size` (transparent huge pages).
    Gemfs,
}

/// A driver configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DriverSpec {
    /// The GPU.
    pub kind: GpuKind,
    /// Kernel page size in bytes (4096 or 16384).
    pub kernel_page: u64,
    /// VA alignment policy (V3D; Panfrost's is fixed).
    pub align: AlignPolicy,
    /// Backing memory.
    pub backing: Backing,
    /// Large pages in the page table: V3D big/super PTEs, Mali 2 MiB blocks. Off: every
    /// PTE maps 4 KiB (the V3D driver before the series).
    pub large: bool,
}

impl DriverSpec {
    /// The kernel's transparent huge page (PMD) size for this kernel page size: a
    /// page-sized table of 8-byte entries, each mapping a page (2 MiB for 4 KiB pages,
    /// 32 MiB for 16 KiB pages).
    pub fn thp_bytes(&self) -> u64 {
        self.kernel_page * (self.kernel_page / 8)
    }
}

/// A live BO.
#[derive(Clone, Debug)]
pub struct Bo {
    /// First GPU page of its VA node.
    pub start_page: u64,
    /// Size in bytes (rounded up to the kernel page).
    pub bytes: u64,
    /// Its scatterlist.
    pub sg: Vec<Segment>,
    /// The pages its PTEs map, by size.
    pub written: Written,
    /// Physical blocks (first frame, buddy order) to free on destroy.
    blocks: Vec<(u64, u32)>,
}

/// Counters of the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DriverCounts {
    /// BOs created.
    pub creates: u64,
    /// BOs destroyed.
    pub destroys: u64,
    /// PTEs written by inserts.
    pub ptes_written: u64,
    /// Scatterlist segments of all BOs created.
    pub segments: u64,
    /// Transparent huge pages gemfs got.
    pub thp: u64,
    /// Huge-page-sized parts gemfs wanted but backed with kernel pages (no free block).
    pub thp_fallbacks: u64,
    /// Bytes of every BO created, by the page size its PTEs map: 4K, 64K, 1M, 2M.
    pub mapped: [u64; 4],
}

/// A GPU: its driver state and its MMU.
#[derive(Clone, Debug)]
pub struct Gpu {
    spec: DriverSpec,
    va: VaSpace,
    /// The device MMU.
    pub mmu: Mmu,
    bos: HashMap<u32, Bo>,
    counts: DriverCounts,
}

impl Gpu {
    /// A GPU whose page table, scratch page and BOs live in `mem`.
    pub fn new(spec: DriverSpec, mmu: MmuSpec, mem: &mut Memory) -> Result<Gpu, GpuError> {
        if spec.kernel_page != 4096 && spec.kernel_page != 16384 {
            return Err(GpuError::Config(format!(
                "kernel_page = {}: use 4096 (Pi 4) or 16384 (Pi 5)",
                spec.kernel_page
            )));
        }
        let table = match spec.kind {
            GpuKind::V3d => Table::v3d(),
            GpuKind::Mali => Table::mali(mem)?,
        };
        // The scratch page (the target of invalid PTEs, `V3D_MMU_ILLEGAL_ADDR`) comes from
        // `dma_alloc_wc` at probe time, at boot, long before any BO: it does not sit in
        // front of the BOs' pages. Assumed: the model takes it from outside the memory it
        // hands to shmem (taking the buddy allocator's first page would shift every later
        // shmem page one kernel page off the 64 KiB alignment big pages need, an artefact
        // of a fresh model memory). Its address is the first byte past the managed
        // memory; it is only counted.
        let scratch = mem.buddy.frames() * GPU_PAGE;
        Ok(Gpu {
            spec,
            va: VaSpace::default(),
            mmu: Mmu::new(table, mmu, scratch)?,
            bos: HashMap::new(),
            counts: DriverCounts::default(),
        })
    }

    /// The configuration.
    pub fn spec(&self) -> &DriverSpec {
        &self.spec
    }

    /// The driver's counters.
    pub fn counts(&self) -> DriverCounts {
        self.counts
    }

    /// A live BO.
    pub fn bo(&self, bo: u32) -> Option<&Bo> {
        self.bos.get(&bo)
    }

    /// Live BOs.
    pub fn live(&self) -> usize {
        self.bos.len()
    }

    /// Bytes of live BO memory mapped by pages of 4K, 64K, 1M, 2M.
    pub fn coverage(&self) -> [u64; 4] {
        let mut c = [0; 4];
        for b in self.bos.values() {
            let by = self.by_size(&b.written);
            (0..4).for_each(|i| c[i] += by[i]);
        }
        c
    }

    /// Bytes a write pass mapped by page size (4K, 64K, 1M, 2M): a Mali's large pages
    /// are 2 MiB blocks.
    fn by_size(&self, w: &Written) -> [u64; 4] {
        let by = w.bytes();
        match self.spec.kind {
            GpuKind::Mali => [by[0], 0, 0, w.pages[1] << 21],
            GpuKind::V3d => [by[0], by[1], by[2], 0],
        }
    }

    fn alloc_pages(&mut self, mem: &mut Memory, bo: u32, bytes: u64) -> Result<Vec<(u64, u32)>, GpuError> {
        let kp_order = (self.spec.kernel_page / GPU_PAGE).trailing_zeros();
        let thp = self.spec.thp_bytes();
        let thp_order = (thp / GPU_PAGE).trailing_zeros();
        let mut blocks = Vec::new();
        let mut off = 0;
        while off < bytes {
            // within_size: a huge page only for an aligned part wholly inside the file.
            if self.spec.backing == Backing::Gemfs && off % thp == 0 && off + thp <= bytes {
                if let Some(pfn) = mem.buddy.alloc(thp_order) {
                    self.counts.thp += 1;
                    blocks.push((pfn, thp_order));
                    off += thp;
                    continue;
                }
                self.counts.thp_fallbacks += 1;
            }
            match mem.buddy.alloc(kp_order) {
                Some(pfn) => blocks.push((pfn, kp_order)),
                None => {
                    let detail = mem.buddy.oom(&format!("BO {bo} of {bytes} bytes")).to_string();
                    for &(p, o) in &blocks {
                        mem.buddy.free(p, o);
                    }
                    return Err(GpuError::OutOfMemory { bo, detail });
                }
            }
            off += self.spec.kernel_page;
        }
        Ok(blocks)
    }

    /// Creates BO `bo` of `bytes`: backing pages, VA node, PTEs, flush.
    pub fn create(&mut self, mem: &mut Memory, bo: u32, bytes: u64) -> Result<(), GpuError> {
        va::check_size(bo, bytes)?;
        if self.bos.contains_key(&bo) {
            return Err(GpuError::DuplicateBo { bo });
        }
        let bytes = bytes.next_multiple_of(self.spec.kernel_page);
        va::check_size(bo, bytes)?;
        let pages = bytes / GPU_PAGE;
        let align = match self.spec.kind {
            GpuKind::V3d => self.spec.align.align_pages(bytes, self.spec.backing == Backing::Gemfs),
            // panfrost_gem_open: 2 MiB for non-executable BOs of at least 2 MiB.
            GpuKind::Mali if bytes >= 2 << 20 => (2 << 20) / GPU_PAGE,
            GpuKind::Mali => 1,
        };
        let start_page = self.va.insert(pages, align).ok_or(GpuError::NoSpace {
            bo,
            bytes,
            align: align * 4,
            live: self.bos.len(),
        })?;
        let blocks = match self.alloc_pages(mem, bo, bytes) {
            Ok(b) => b,
            Err(e) => {
                self.va.remove(start_page);
                return Err(e);
            }
        };
        let mut sg: Vec<Segment> = Vec::new();
        for &(pfn, order) in &blocks {
            let (pa, len) = (pfn * GPU_PAGE, GPU_PAGE << order);
            match sg.last_mut() {
                Some(s) if s.pa + s.len == pa => s.len += len,
                _ => sg.push(Segment { pa, len }),
            }
        }
        let written = match self.mmu.table.map(mem, start_page, &sg, self.spec.large) {
            Ok(w) => w,
            Err(e) => {
                self.va.remove(start_page);
                for &(p, o) in &blocks {
                    mem.buddy.free(p, o);
                }
                return Err(e);
            }
        };
        self.flush(start_page, pages);
        self.counts.creates += 1;
        self.counts.ptes_written += written.ptes;
        self.counts.segments += sg.len() as u64;
        let by = self.by_size(&written);
        (0..4).for_each(|i| self.counts.mapped[i] += by[i]);
        self.bos.insert(
            bo,
            Bo {
                start_page,
                bytes,
                sg,
                written,
                blocks,
            },
        );
        Ok(())
    }

    fn flush(&mut self, start_page: u64, pages: u64) {
        match self.spec.kind {
            GpuKind::V3d => self.mmu.flush(),
            GpuKind::Mali => self
                .mmu
                .flush_range(start_page * GPU_PAGE, (start_page + pages) * GPU_PAGE),
        }
    }

    /// Destroys BO `bo`: PTEs cleared, flush, VA node and pages freed.
    pub fn destroy(&mut self, mem: &mut Memory, bo: u32) -> Result<(), GpuError> {
        let b = self.bos.remove(&bo).ok_or(GpuError::UnknownBo {
            bo,
            context: String::new(),
        })?;
        let pages = b.bytes / GPU_PAGE;
        self.mmu.table.unmap(mem, b.start_page, pages);
        self.flush(b.start_page, pages);
        self.va.remove(b.start_page);
        for &(p, o) in &b.blocks {
            mem.buddy.free(p, o);
        }
        self.counts.destroys += 1;
        Ok(())
    }

    /// The GPU virtual address of `offset` in BO `bo`.
    pub fn va_of(&self, bo: u32, offset: u64) -> Result<u64, GpuError> {
        let b = self.bos.get(&bo).ok_or(GpuError::UnknownBo {
            bo,
            context: String::new(),
        })?;
        if offset >= b.bytes {
            return Err(GpuError::OutOfBo {
                bo,
                offset,
                bytes: b.bytes,
            });
        }
        Ok(b.start_page * GPU_PAGE + offset)
    }

    /// One GPU access to `offset` of BO `bo`; returns the physical address.
    pub fn access(&mut self, mem: &mut Memory, bo: u32, offset: u64, write: bool) -> Result<u64, GpuError> {
        let va = self.va_of(bo, offset)?;
        Ok(self.mmu.access(mem, va, write))
    }
}

/// Fragments `mem` at the granularity of the kernel's pages, as a kernel with pages of
/// `kernel_page` bytes fragments it (a 16 KiB-page kernel never splits below 16 KiB, so
/// `mem::age`'s scattered 4 KiB frames would model it wrongly): a seeded share `clean`
/// of the 2 MiB regions stays wholly free; in the others, kernel pages are pinned at
/// random until about `used` of all memory is pinned (at most 95 % of those regions).
/// Returns the frames pinned. Pinned pages stay allocated for the whole run.
pub fn fragment(mem: &mut Memory, used: f64, clean: f64, kernel_page: u64, seed: u64) -> u64 {
    let order = (kernel_page / GPU_PAGE).trailing_zeros();
    let mut rng = mmulab_base::SplitMix64::new(seed ^ 0x6770_7566);
    let mut rand = move || rng.unit_f64();
    let mut blocks = Vec::new();
    while let Some(p) = mem.buddy.alloc(order) {
        blocks.push(p);
    }
    let regions = mem.buddy.frames().div_ceil(512) as usize;
    let clean_region: Vec<bool> = (0..regions).map(|_| rand() < clean).collect();
    let q = (used / (1.0 - clean).max(1e-9)).clamp(0.0, 0.95);
    let mut pinned = 0;
    for p in blocks {
        if !clean_region[(p / 512) as usize] && rand() < q {
            pinned += 1u64 << order;
        } else {
            mem.buddy.free(p, order);
        }
    }
    pinned
}
