//! x86-64 4-level paging (Intel SDM vol. 3 §4.5): PML4, PDPT, PD, PT; 9 index bits each.
//! Bits: 0 present, 1 R/W, 2 U/S, 5 accessed, 6 dirty, 7 PS (leaf at PDPT/PD),
//! physical address in bits 12..51.

use super::{LevelGeom, PageTableFormat, Pte};
use crate::translation::Attrs;

/// The 4-level geometry (EPT, ept.rs, shares it).
pub(super) const LEVELS: [LevelGeom; 4] = [
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

/// x86-64 4-level paging: 4K pages, 2M and 1G leaves (PS bit); 48-bit VA, 52-bit PA
/// (mmulab keeps physical addresses below 2^48).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct X86_64;

impl PageTableFormat for X86_64 {
    const ARCH_NAME: &'static str = "x86_64";
    const LEVELS: &'static [LevelGeom] = &LEVELS;
    const MAX_PA: u64 = 1 << 48;

    #[inline]
    fn decode(level: usize, raw: u64) -> Pte {
        decode(level, raw)
    }
    #[inline]
    fn encode_table(level: usize, pa: u64) -> u64 {
        encode_table(level, pa)
    }
    #[inline]
    fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64 {
        encode_leaf(level, pa, attrs)
    }
}

const P: u64 = 1 << 0;
const RW: u64 = 1 << 1;
const US: u64 = 1 << 2;
const A: u64 = 1 << 5;
const D: u64 = 1 << 6;
const PS: u64 = 1 << 7;
const ADDR: u64 = 0x000f_ffff_ffff_f000;

/// A leaf's attribute bits by its descriptor bits 1..=6 (R/W, U/S, PWT, PCD, A, D): one
/// load per walk instead of four tests.
const LEAF_ATTRS: [u16; 64] = {
    let mut t = [0u16; 64];
    let mut i = 0;
    while i < 64 {
        let raw = (i as u64) << 1;
        let mut a = 0;
        if raw & RW != 0 {
            a |= Attrs::WRITABLE;
        }
        if raw & US != 0 {
            a |= Attrs::USER;
        }
        if raw & A != 0 {
            a |= Attrs::ACCESSED;
        }
        if raw & D != 0 {
            a |= Attrs::DIRTY;
        }
        t[i] = a;
        i += 1;
    }
    t
};

#[inline]
fn decode(level: usize, raw: u64) -> Pte {
    if raw & P == 0 {
        return Pte::Invalid;
    }
    let pa = raw & ADDR;
    if level == 3 || (level > 0 && raw & PS != 0) {
        Pte::Leaf {
            pa,
            attrs: Attrs(LEAF_ATTRS[(raw >> 1) as usize & 0x3f]),
        }
    } else {
        Pte::Table(pa)
    }
}

fn encode_table(_level: usize, pa: u64) -> u64 {
    (pa & ADDR) | P | RW | US
}

fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64 {
    let mut raw = (pa & ADDR) | P;
    if level != 3 {
        raw |= PS;
    }
    if attrs.has(Attrs::WRITABLE) {
        raw |= RW;
    }
    if attrs.has(Attrs::USER) {
        raw |= US;
    }
    if attrs.has(Attrs::ACCESSED) {
        raw |= A;
    }
    if attrs.has(Attrs::DIRTY) {
        raw |= D;
    }
    raw
}
