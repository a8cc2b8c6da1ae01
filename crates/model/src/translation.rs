//! What a walk produces and a TLB caches: one translation of one page of one size in one
//! address space, with its permission and state bits.

use crate::addr::{Asid, PageSize};

/// Permission and state bits of a leaf mapping, independent of any PTE format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Attrs(pub u16);

impl Attrs {
    /// Writes are allowed.
    pub const WRITABLE: u16 = 1 << 0;
    /// The page has been written (x86 D bit; ARMv8 DBM writable-dirty).
    pub const DIRTY: u16 = 1 << 1;
    /// The page has been accessed (x86 A bit; ARMv8 AF).
    pub const ACCESSED: u16 = 1 << 2;
    /// User-accessible.
    pub const USER: u16 = 1 << 3;
    /// Part of a contiguous-bit group (ARMv8) / repeated-entry group (ARMv7 large pages).
    pub const CONTIG: u16 = 1 << 4;

    /// Read-write user memory: what the OS maps for anonymous memory.
    pub const fn user_rw() -> Attrs {
        Attrs(Self::WRITABLE | Self::USER)
    }
    /// True if all of `bits` are set.
    #[inline]
    pub const fn has(self, bits: u16) -> bool {
        self.0 & bits == bits
    }
    /// With `bits` set.
    #[inline]
    pub const fn with(self, bits: u16) -> Attrs {
        Attrs(self.0 | bits)
    }
    /// With `bits` cleared.
    #[inline]
    pub const fn without(self, bits: u16) -> Attrs {
        Attrs(self.0 & !bits)
    }
}

/// A translation of one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Virtual address of the page's first byte (aligned to `size`).
    pub va: u64,
    /// Physical address of the page's first byte (aligned to `size`).
    pub pa: u64,
    /// The page size the mapping has in the page table (a contiguous-bit group counts
    /// as its group size).
    pub size: PageSize,
    /// The address space.
    pub asid: Asid,
    /// Permission and state bits.
    pub attrs: Attrs,
}

impl Translation {
    /// The physical address of `va` under this translation.
    #[inline]
    pub fn translate(&self, va: u64) -> u64 {
        self.pa + (va - self.va)
    }

    /// The piece of `size` (smaller than this page) that contains `va`: what a TLB level
    /// that splinters keeps.
    pub fn piece(&self, va: u64, size: PageSize) -> Translation {
        let off = (va - self.va) & !size.offset_mask();
        Translation {
            va: self.va + off,
            pa: self.pa + off,
            size,
            ..*self
        }
    }
}
