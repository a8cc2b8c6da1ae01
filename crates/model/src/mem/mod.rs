//! Physical memory: a buddy allocator of 4 KiB frames, the page-table frames that live
//! in it, the reverse map from frames to the leaves that map them, the registry of live
//! address spaces (so compaction and reclaim can reach every page table) and the swap
//! slots of evicted pages.
//!
//! Adding an allocator or a DRAM/NUMA model: a file here, owned by [`Memory`].

mod age;
pub mod backend;
mod buddy;
pub mod numa;
mod ptmem;
mod rmap;
pub mod zero;

pub use age::{age, free_2m_share};

pub use buddy::{Buddy, MAX_ORDER};
pub use ptmem::PtMem;
pub use rmap::{Owner, Rmap, EXTERNAL};

use crate::addr::{Asid, PageSize, FRAME_SHIFT};
use crate::error::ModelError;
use crate::pt::Format;
use std::collections::{BTreeMap, BTreeSet};

/// Swapped-out pages: a slot per evicted 4 KiB page, keyed by (asid, page address), and
/// the clock hand of the second-chance scan (os::reclaim).
#[derive(Clone, Debug, Default)]
pub struct Swap {
    /// Pages whose data sits in swap; the page-table entry is invalid.
    pub slots: BTreeSet<(Asid, u64)>,
    /// Where the clock scan resumes: (asid, virtual address).
    pub hand: (Asid, u64),
}

impl Swap {
    /// True if a page of `asid` in `[start, end)` is swapped out.
    pub fn any_in(&self, asid: Asid, start: u64, end: u64) -> bool {
        !self.slots.is_empty() && self.slots.range((asid, start)..(asid, end)).next().is_some()
    }

    /// Drops every slot of `asid` (at exit); returns how many.
    pub fn drop_space(&mut self, asid: Asid) -> u64 {
        self.drop_range(asid, 0, u64::MAX)
    }

    /// Drops the slots of `asid`'s pages in `[start, end)` (munmap: the data is gone);
    /// returns how many.
    pub fn drop_range(&mut self, asid: Asid, start: u64, end: u64) -> u64 {
        if self.slots.is_empty() {
            return 0;
        }
        let gone: Vec<_> = self.slots.range((asid, start)..(asid, end)).copied().collect();
        for k in &gone {
            self.slots.remove(k);
        }
        gone.len() as u64
    }
}

/// A frame compaction may migrate (see [`Memory::owner`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Movable {
    /// The 4 KiB leaf at `va` of address space `asid` maps it.
    Page {
        /// Its address space.
        asid: Asid,
        /// Its virtual address.
        va: u64,
    },
    /// A movable frame owned outside the simulation (`[memory.age]`).
    External,
}

/// All simulated physical memory: the frame allocator and the page-table store.
#[derive(Debug)]
pub struct Memory {
    /// The frame allocator.
    pub buddy: Buddy,
    /// Page-table frames and their contents.
    pub pt: PtMem,
    /// Frame → the 4 KiB leaf that maps it (a checked hint; see [`Rmap`]).
    pub rmap: Rmap,
    /// Live address spaces: asid → (format, root table).
    pub spaces: BTreeMap<Asid, (Format, u64)>,
    /// Swapped-out pages.
    pub swap: Swap,
    /// Linux's zero pages (allocated at first use; never freed or moved).
    pub zero: zero::ZeroFrames,
    /// Emulated NUMA nodes and the memory policy (`[numa]`); `None`: one flat memory.
    pub numa: Option<numa::Numa>,
}

impl Memory {
    /// `bytes` of physical memory (a positive multiple of 4 KiB).
    pub fn new(bytes: u64) -> Result<Memory, ModelError> {
        let buddy = Buddy::new(bytes)?;
        let pt = PtMem::new(buddy.frames());
        let rmap = Rmap::new(buddy.frames());
        Ok(Memory {
            buddy,
            pt,
            rmap,
            spaces: BTreeMap::new(),
            swap: Swap::default(),
            zero: zero::ZeroFrames::default(),
            numa: None,
        })
    }

    /// `bytes` of physical memory split into the fake NUMA nodes of `cfg` (mem/numa.rs):
    /// one buddy allocator per node, and the memory policy.
    pub fn with_numa(bytes: u64, cfg: numa::NumaConfig) -> Result<Memory, ModelError> {
        let mut mem = Memory::new(bytes)?;
        let numa = numa::Numa::new(cfg, bytes)?;
        mem.buddy = Buddy::with_nodes(bytes, numa.ranges())?;
        mem.numa = Some(numa);
        Ok(mem)
    }

    /// Allocates 2^order frames for user memory: by the NUMA policy for the unit `at`
    /// (its VMA and address) when nodes are emulated, else the lowest free block
    /// ([`Buddy::alloc`]). OS policies allocate user pages here.
    #[inline]
    pub fn alloc_pages(&mut self, order: u32, at: Option<numa::At>) -> Option<u64> {
        match &mut self.numa {
            None => self.buddy.alloc(order),
            Some(n) => n.alloc(&mut self.buddy, order, at),
        }
    }

    /// Allocates a PMD-sized transparent huge page at a fault: with NUMA nodes by
    /// [`numa::Numa::alloc_thp`] (the local node alone unless the fault may reclaim,
    /// `direct_reclaim`), else as [`Memory::alloc_pages`]. `None`: fall back to base pages
    /// (or compact, when the fault may).
    #[inline]
    pub fn alloc_thp(&mut self, order: u32, at: numa::At, direct_reclaim: bool) -> Option<u64> {
        match &mut self.numa {
            None => self.buddy.alloc(order),
            Some(n) => n.alloc_thp(&mut self.buddy, order, at, direct_reclaim),
        }
    }

    /// The core whose fault the OS is serving (the NUMA local node is its node).
    #[inline]
    pub fn set_cpu(&mut self, cpu: usize) {
        if let Some(n) = &mut self.numa {
            n.set_cpu(cpu);
        }
    }

    /// Allocates a zeroed page table of `entries` entries; returns its physical address.
    /// With NUMA nodes it is placed by the policy outside any VMA (mem/numa.rs).
    pub fn alloc_table(&mut self, entries: usize) -> Result<u64, ModelError> {
        let bytes = (entries as u64 * 8).max(crate::addr::FRAME_SIZE);
        let order = (bytes / crate::addr::FRAME_SIZE).next_power_of_two().trailing_zeros();
        let pfn = self
            .alloc_pages(order, None)
            .ok_or_else(|| self.buddy.oom("a page table"))?;
        Ok(self.pt.create(pfn, entries, order))
    }

    /// Fragments a fresh memory reproducibly (see [`age`]): pins `used` of it in
    /// scattered 4 KiB frames so that about `target_free_2m_share` of the free memory
    /// stays in free 2 MiB blocks. Returns the number of frames pinned. Pinned frames
    /// are unmovable (kernel memory).
    pub fn age(&mut self, used: f64, target_free_2m_share: f64, seed: u64) -> u64 {
        self.age_movable(used, target_free_2m_share, seed, 0.0)
    }

    /// [`Memory::age`], with a seeded share `movable` (0..=1) of the pinned frames
    /// movable by compaction (page cache and anonymous memory of programs outside the
    /// simulation, which Linux migrates; the rest stays unmovable, like kernel memory).
    pub fn age_movable(&mut self, used: f64, target_free_2m_share: f64, seed: u64, movable: f64) -> u64 {
        self.age_pages(used, target_free_2m_share, seed, movable, 1)
    }

    /// [`Memory::age_movable`] in pages of `unit` 4 KiB frames (the base page of the
    /// kernel's granule: 1, 4 or 16), so a 16 or 64 KiB kernel's memory fragments in
    /// its own pages; a page is movable or not as a whole.
    pub fn age_pages(&mut self, used: f64, target_free_2m_share: f64, seed: u64, movable: f64, unit: u64) -> u64 {
        let pinned = age::age(&mut self.buddy, used, target_free_2m_share, seed, unit);
        if movable > 0.0 {
            let mut rng = mmulab_base::SplitMix64::new(seed ^ 0x006d_6f76_6162_6c65);
            let cut = (movable.clamp(0.0, 1.0) * (1u64 << 32) as f64) as u64;
            let unit = unit.clamp(1, 512) as usize;
            for page in pinned.chunks(unit) {
                if rng.next_u64() >> 32 < cut {
                    for &p in page {
                        self.rmap.set_external(p, true);
                    }
                }
            }
        }
        pinned.len() as u64
    }

    /// Frees the page table at `pa`.
    pub fn free_table(&mut self, pa: u64) {
        if let Some((pfn, order)) = self.pt.destroy(pa) {
            self.buddy.free(pfn, order);
        }
    }

    /// Registers a live address space (its root table) so compaction and reclaim can
    /// reach its pages.
    pub fn register_space(&mut self, asid: Asid, fmt: Format, root: u64) {
        self.spaces.insert(asid, (fmt, root));
    }

    /// Forgets an address space whose tables were torn down, and its swap slots.
    pub fn unregister_space(&mut self, root: u64) {
        if let Some((&asid, _)) = self.spaces.iter().find(|(_, &(_, r))| r == root) {
            self.spaces.remove(&asid);
            self.swap.drop_space(asid);
        }
    }

    /// The checked owner of frame `pfn`: a 4 KiB leaf of a live address space that
    /// really maps it, or a movable external frame; `None` if the frame is not movable.
    pub fn owner(&mut self, pfn: u64) -> Option<Movable> {
        // The zero pages are never migrated (they are not on an LRU list).
        if self.zero.contains(pfn) {
            return None;
        }
        match self.rmap.get(pfn)? {
            Owner::External => Some(Movable::External),
            Owner::Leaf { root, va } => {
                let (&asid, &(fmt, _)) = self.spaces.iter().find(|(_, &(_, r))| r == root)?;
                let m = crate::walk::lookup(self, fmt, root, va)?;
                (m.size == PageSize::K4
                    && m.pa >> FRAME_SHIFT == pfn
                    && !m.attrs.has(crate::translation::Attrs::CONTIG))
                .then_some(Movable::Page { asid, va })
            }
        }
    }
}
