//! ARMv8-A VMSAv8-64 stage-1 descriptors (ARM ARM D8.3; bit positions as in FreeBSD's
//! `sys/arm64/include/pte.h`). bits[1:0]: 0b11 table (levels above the last) or page
//! (last level), 0b01 block (levels that allow blocks), else invalid. AF bit 10,
//! AP[1] bit 6 (EL0 access), AP[2] bit 7 (read-only), DBM bit 51, Contiguous bit 52.
//! Output address bits 12..47 (16..47 for the 64 KiB granule; the low bits of a page
//! address are zero). The same long-descriptor encoding serves ARMv7 LPAE (its first
//! level allows 1 GiB blocks), which is why the level geometry is passed in: a block is
//! legal at a level exactly when that level is a leaf level and not the last one.
//!
//! Contiguous bit: an aligned group of [`super::Format::contig`] entries that all carry
//! it and map one aligned, physically contiguous range may be cached as one TLB entry;
//! each entry still holds its own output address (unlike ARMv7 large pages).
//!
//! Dirty state follows the hardware DBM scheme: a writable page is mapped with DBM set;
//! AP[2] = 1 means clean ("writable-clean"), AP[2] = 0 dirty. A read-only page has DBM
//! clear and AP[2] = 1.

use super::{LevelGeom, Pte};
use crate::translation::Attrs;

/// 4 KiB granule, 48-bit VA: L0..L3; blocks at L1 (1 GiB) and L2 (2 MiB).
/// Contiguous groups: 16 L3 entries (64 KiB), 16 L2 entries (32 MiB).
pub(super) const LEVELS_4K: [LevelGeom; 4] = [
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
pub(super) const LEVELS_16K: [LevelGeom; 4] = [
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
pub(super) const LEVELS_64K: [LevelGeom; 3] = [
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

/// ARMv7 LPAE (long descriptors), 32-bit VA: L1 (4 entries, 1 GiB blocks), L2 (2 MiB
/// blocks), L3 (4 KiB pages). Contiguous groups of 16: 64 KiB at L3, 32 MiB at L2.
pub(super) const LEVELS_LPAE: [LevelGeom; 3] = [
    LevelGeom {
        shift: 30,
        bits: 2,
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
