//! Page-table formats: the geometry of each radix level and the bit encoding of its
//! descriptors. Tables live in simulated physical frames ([`crate::mem::PtMem`]); the
//! walker ([`crate::walk`]) reads them entry by entry.
//!
//! Adding a format: a file here with `LEVELS`, `decode`, `encode_table` and
//! `encode_leaf`; a variant of [`Format`] dispatching to it; the arch name in the sim
//! crate's config; walker tests of its reference counts.

mod armv8;
mod x86_64;

use crate::addr::PageSize;
use crate::translation::Attrs;

/// One level of a radix page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelGeom {
    /// Shift of the address bits this level indexes (the span of one entry).
    pub shift: u32,
    /// Width of the index (the table has 2^bits entries).
    pub bits: u32,
    /// True if a leaf (page or block) may sit at this level.
    pub leaf: bool,
}

impl LevelGeom {
    /// Bytes one entry of this level maps.
    #[inline]
    pub const fn span(&self) -> u64 {
        1 << self.shift
    }
    /// Entries in a table of this level.
    #[inline]
    pub const fn entries(&self) -> usize {
        1 << self.bits
    }
    /// The index `va` selects at this level.
    #[inline]
    pub const fn index(&self, va: u64) -> usize {
        ((va >> self.shift) & ((1 << self.bits) - 1)) as usize
    }
}

/// A decoded descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pte {
    /// Not valid: a walk that reaches it faults.
    Invalid,
    /// Points to the next-level table at this physical address.
    Table(u64),
    /// Maps a page or block at this physical address.
    Leaf {
        /// Physical base.
        pa: u64,
        /// Permission and state bits.
        attrs: Attrs,
    },
}

/// A page-table format (closed set; static dispatch on the walk path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// x86-64 4-level paging: 4K pages, 2M and 1G leaves (PS bit).
    X86_64,
    /// ARMv8-A stage 1, 4 KiB granule, 48-bit VA: 4K pages, 2M and 1G blocks.
    Armv8_4K,
}

impl Format {
    /// Name as configs spell the architecture.
    pub fn arch_name(self) -> &'static str {
        match self {
            Format::X86_64 => "x86_64",
            Format::Armv8_4K => "aarch64",
        }
    }

    /// The levels, root first.
    #[inline]
    pub fn levels(self) -> &'static [LevelGeom] {
        match self {
            Format::X86_64 => &x86_64::LEVELS,
            Format::Armv8_4K => &armv8::LEVELS_4K,
        }
    }

    /// Decodes a descriptor read at `level`.
    #[inline]
    pub fn decode(self, level: usize, raw: u64) -> Pte {
        match self {
            Format::X86_64 => x86_64::decode(level, raw),
            Format::Armv8_4K => armv8::decode(level, raw, armv8::LEVELS_4K.len()),
        }
    }

    /// Encodes a pointer to the next-level table at `pa`.
    pub fn encode_table(self, level: usize, pa: u64) -> u64 {
        match self {
            Format::X86_64 => x86_64::encode_table(level, pa),
            Format::Armv8_4K => armv8::encode_table(level, pa),
        }
    }

    /// Encodes a leaf at `level` mapping `pa` with `attrs`.
    pub fn encode_leaf(self, level: usize, pa: u64, attrs: Attrs) -> u64 {
        match self {
            Format::X86_64 => x86_64::encode_leaf(level, pa, attrs),
            Format::Armv8_4K => armv8::encode_leaf(level, pa, attrs, armv8::LEVELS_4K.len()),
        }
    }

    /// The level at which a leaf of `size` sits, if the format has such leaves.
    pub fn leaf_level(self, size: PageSize) -> Option<usize> {
        self.levels().iter().position(|l| l.leaf && l.span() == size.bytes())
    }

    /// The page size of a leaf at `level`.
    #[inline]
    pub fn leaf_size(self, level: usize) -> PageSize {
        let shift = self.levels()[level].shift;
        PageSize::from_shift(shift).expect("format leaf levels have known sizes")
    }

    /// Every page size this format can map as a leaf, smallest first.
    pub fn page_sizes(self) -> Vec<PageSize> {
        let mut v: Vec<PageSize> =
            self.levels().iter().filter(|l| l.leaf).filter_map(|l| PageSize::from_shift(l.shift)).collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip() {
        for f in [Format::X86_64, Format::Armv8_4K] {
            let n = f.levels().len();
            for level in 0..n {
                if level + 1 < n {
                    assert_eq!(f.decode(level, f.encode_table(level, 0x1234_5000)), Pte::Table(0x1234_5000));
                }
                if f.levels()[level].leaf {
                    let pa = 0x4000_0000;
                    for attrs in [Attrs::user_rw(), Attrs(Attrs::USER), Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED)] {
                        assert_eq!(f.decode(level, f.encode_leaf(level, pa, attrs)), Pte::Leaf { pa, attrs }, "{f:?} level {level}");
                    }
                }
                assert_eq!(f.decode(level, 0), Pte::Invalid);
            }
            assert_eq!(f.page_sizes(), vec![PageSize::K4, PageSize::M2, PageSize::G1]);
            assert_eq!(f.leaf_level(PageSize::M2), Some(2));
        }
    }
}
