//! Physical memory: a buddy allocator of 4 KiB frames and the page-table frames that live
//! in it.
//!
//! Adding an allocator or a DRAM/NUMA model: a file here, owned by [`Memory`].

mod age;
mod buddy;
mod ptmem;

pub use age::{age, free_2m_share};

pub use buddy::{Buddy, MAX_ORDER};
pub use ptmem::PtMem;

use crate::error::ModelError;

/// All simulated physical memory: the frame allocator and the page-table store.
#[derive(Debug)]
pub struct Memory {
    /// The frame allocator.
    pub buddy: Buddy,
    /// Page-table frames and their contents.
    pub pt: PtMem,
}

impl Memory {
    /// `bytes` of physical memory (a positive multiple of 4 KiB).
    pub fn new(bytes: u64) -> Result<Memory, ModelError> {
        let buddy = Buddy::new(bytes)?;
        let pt = PtMem::new(buddy.frames());
        Ok(Memory { buddy, pt })
    }

    /// Allocates a zeroed page table of `entries` entries; returns its physical address.
    pub fn alloc_table(&mut self, entries: usize) -> Result<u64, ModelError> {
        let bytes = (entries as u64 * 8).max(crate::addr::FRAME_SIZE);
        let order = (bytes / crate::addr::FRAME_SIZE).next_power_of_two().trailing_zeros();
        let pfn = self.buddy.alloc(order).ok_or_else(|| self.buddy.oom("a page table"))?;
        Ok(self.pt.create(pfn, entries, order))
    }

    /// Fragments a fresh memory reproducibly (see [`age`]): pins `used` of it in
    /// scattered 4 KiB frames so that about `target_free_2m_share` of the free memory
    /// stays in free 2 MiB blocks. Returns the number of frames pinned.
    pub fn age(&mut self, used: f64, target_free_2m_share: f64, seed: u64) -> u64 {
        age::age(&mut self.buddy, used, target_free_2m_share, seed).len() as u64
    }

    /// Frees the page table at `pa`.
    pub fn free_table(&mut self, pa: u64) {
        if let Some((pfn, order)) = self.pt.destroy(pa) {
            self.buddy.free(pfn, order);
        }
    }
}
