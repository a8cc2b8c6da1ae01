//! ARMv8-A VMSAv8-64 stage-1 descriptors (ARM ARM D8.3; bit positions as in FreeBSD's
//! `sys/arm64/include/pte.h`). bits[1:0]: 0b11 table (levels above the last) or page
//! (last level), 0b01 block (levels that allow blocks), else invalid. AF bit 10,
//! AP[1] bit 6 (EL0 access), AP[2] bit 7 (read-only), DBM bit 51, Contiguous bit 52.
//! Output address bits 12..47 (16..47 for the 64 KiB granule; the low bits of a page
//! address are zero). The same long-descriptor encoding serves ARMv7 LPAE (armv7.rs; its
//! first level allows 1 GiB blocks), which is why the level geometry is passed in: a block is
//! legal at a level exactly when that level is a leaf level and not the last one.
//!
//! Contiguous bit: an aligned group of [`PageTableFormat::contig`] entries that all carry
//! it and map one aligned, physically contiguous range may be cached as one TLB entry;
//! each entry still holds its own output address (unlike ARMv7 large pages).
//!
//! Dirty state follows the hardware DBM scheme: a writable page is mapped with DBM set;
//! AP[2] = 1 means clean ("writable-clean"), AP[2] = 0 dirty. A read-only page has DBM
//! clear and AP[2] = 1.

use super::{LevelGeom, PageTableFormat, Pte};
use crate::addr::PageSize;
use crate::translation::Attrs;

/// 4 KiB granule, 48-bit VA: L0..L3; blocks at L1 (1 GiB) and L2 (2 MiB).
/// Contiguous groups: 16 L3 entries (64 KiB), 16 L2 entries (32 MiB).
const LEVELS_4K: [LevelGeom; 4] = [
    LevelGeom {
        shift: 39,
        bits: 9,
        leaf: false,
    },
    LevelGeom {
        shift: 30,
        bits: 9,
        leaf: true,
    },
    LevelGeom {
        shift: 21,
        bits: 9,
        leaf: true,
    },
    LevelGeom {
        shift: 12,
        bits: 9,
        leaf: true,
    },
];

/// 16 KiB granule, 48-bit VA: L0 (1 index bit, two entries) .. L3; blocks only at L2
/// (32 MiB) — L1 blocks (64 GiB) need FEAT_LPA2, not modelled. Contiguous groups: 128 L3
/// entries (2 MiB), 32 L2 entries (1 GiB).
const LEVELS_16K: [LevelGeom; 4] = [
    LevelGeom {
        shift: 47,
        bits: 1,
        leaf: false,
    },
    LevelGeom {
        shift: 36,
        bits: 11,
        leaf: false,
    },
    LevelGeom {
        shift: 25,
        bits: 11,
        leaf: true,
    },
    LevelGeom {
        shift: 14,
        bits: 11,
        leaf: true,
    },
];

/// 64 KiB granule, 48-bit VA: three levels L1..L3 (L1 has 6 index bits); blocks only at
/// L2 (512 MiB) — L1 blocks (4 TiB) need 52-bit PAs, not modelled. Contiguous groups: 32
/// L3 entries (2 MiB); 32 L2 entries would be 16 GiB, a size mmulab's TLBs do not hold,
/// so such a group is treated as 32 separate 512 MiB blocks.
const LEVELS_64K: [LevelGeom; 3] = [
    LevelGeom {
        shift: 42,
        bits: 6,
        leaf: false,
    },
    LevelGeom {
        shift: 29,
        bits: 13,
        leaf: true,
    },
    LevelGeom {
        shift: 16,
        bits: 13,
        leaf: true,
    },
];

/// The [`PageTableFormat`] of one ARMv8 granule: its levels, the shared long-descriptor
/// encoding, its contiguous groups.
macro_rules! granule {
    ($(#[doc = $doc:literal])* $ty:ident, $name:literal, $aliases:expr, $levels:ident,
     { $($level:literal => ($n:literal, $size:ident)),* }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl PageTableFormat for $ty {
            const ARCH_NAME: &'static str = $name;
            const ALIASES: &'static [&'static str] = $aliases;
            const LEVELS: &'static [LevelGeom] = &$levels;
            const MAX_PA: u64 = 1 << 48;

            #[inline]
            fn decode(level: usize, raw: u64) -> Pte {
                decode(level, raw, &$levels)
            }
            #[inline]
            fn encode_table(level: usize, pa: u64) -> u64 {
                encode_table(level, pa)
            }
            #[inline]
            fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64 {
                encode_leaf(level, pa, attrs, &$levels)
            }
            #[inline]
            fn contig(level: usize) -> Option<(usize, PageSize)> {
                match level {
                    $($level => Some(($n, PageSize::$size)),)*
                    _ => None,
                }
            }
        }
    };
}

granule!(
    /// ARMv8-A stage 1, 4 KiB granule, 48-bit VA: 4K pages, 2M and 1G blocks;
    /// contiguous 64K (16 × L3) and 32M (16 × L2).
    Armv8_4K, "aarch64", &["armv8", "aarch64-4k"], LEVELS_4K, { 3 => (16, K64), 2 => (16, M32) }
);
granule!(
    /// ARMv8-A stage 1, 16 KiB granule, 48-bit VA: 16K pages, 32M blocks; contiguous 2M
    /// (128 × L3) and 1G (32 × L2).
    Armv8_16K, "aarch64-16k", &[], LEVELS_16K, { 3 => (128, M2), 2 => (32, G1) }
);
granule!(
    /// ARMv8-A stage 1, 64 KiB granule, 48-bit VA (3 levels): 64K pages, 512M blocks;
    /// contiguous 2M (32 × L3; the 16 GiB L2 group has no [`PageSize`]).
    Armv8_64K, "aarch64-64k", &[], LEVELS_64K, { 2 => (32, M2) }
);

const TYPE_MASK: u64 = 0b11;
const TYPE_TABLE_OR_PAGE: u64 = 0b11;
const TYPE_BLOCK: u64 = 0b01;
const AP1_EL0: u64 = 1 << 6;
const AP2_RO: u64 = 1 << 7;
const AF: u64 = 1 << 10;
const DBM: u64 = 1 << 51;
const CONT: u64 = 1 << 52;
const ADDR: u64 = 0x0000_ffff_ffff_f000;

#[inline]
pub(super) fn decode(level: usize, raw: u64, levels: &[LevelGeom]) -> Pte {
    let last = level + 1 == levels.len();
    let leaf = match raw & TYPE_MASK {
        TYPE_TABLE_OR_PAGE if !last => return Pte::Table(raw & ADDR),
        TYPE_TABLE_OR_PAGE => true,
        TYPE_BLOCK if !last && levels[level].leaf => true,
        _ => return Pte::Invalid,
    };
    debug_assert!(leaf);
    let mut a = 0;
    if raw & AP1_EL0 != 0 {
        a |= Attrs::USER;
    }
    if raw & AF != 0 {
        a |= Attrs::ACCESSED;
    }
    if raw & DBM != 0 || raw & AP2_RO == 0 {
        a |= Attrs::WRITABLE;
    }
    if raw & AP2_RO == 0 {
        a |= Attrs::DIRTY;
    }
    if raw & CONT != 0 {
        a |= Attrs::CONTIG;
    }
    Pte::Leaf {
        pa: raw & ADDR,
        attrs: Attrs(a),
    }
}

pub(super) fn encode_table(_level: usize, pa: u64) -> u64 {
    (pa & ADDR) | TYPE_TABLE_OR_PAGE
}

pub(super) fn encode_leaf(level: usize, pa: u64, attrs: Attrs, levels: &[LevelGeom]) -> u64 {
    let mut raw = (pa & ADDR)
        | if level + 1 == levels.len() {
            TYPE_TABLE_OR_PAGE
        } else {
            TYPE_BLOCK
        };
    if attrs.has(Attrs::USER) {
        raw |= AP1_EL0;
    }
    if attrs.has(Attrs::ACCESSED) {
        raw |= AF;
    }
    if attrs.has(Attrs::WRITABLE) {
        raw |= DBM;
    }
    // Dirty (AP[2] = 0) only makes sense for writable pages; a read-only page keeps AP[2].
    if !(attrs.has(Attrs::WRITABLE) && attrs.has(Attrs::DIRTY)) {
        raw |= AP2_RO;
    }
    if attrs.has(Attrs::CONTIG) {
        raw |= CONT;
    }
    raw
}
