//! ARMv7 short descriptors (ARM ARM B3.5; type fields as in Linux's
//! `arch/arm/include/asm/pgtable-2level-hwdef.h`): a two-level walk of a 32-bit VA.
//!
//! * First level: 4096 entries (a 16 KiB table), one per MiB. bits[1:0] = 0b01 points
//!   to a coarse second-level table (base bits 31:10); 0b10 is a 1 MiB section (base
//!   31:20), or with bit 18 set a 16 MiB supersection (base 31:24, PA[35:32] in bits
//!   23:20, PA[39:36] in bits 8:5) written as 16 identical consecutive entries.
//! * Second level: 256 entries (a 1 KiB table), one per 4 KiB. bits[1:0] = 0b01 is a
//!   64 KiB large page (base 31:16) written as 16 identical consecutive entries; 0b1x a
//!   4 KiB small page (base 31:12; bit 0 is XN).
//!
//! Storage: mmulab keeps every table as 64-bit slots in a simulated frame, so a 1 KiB
//! second-level table occupies a whole 4 KiB frame (256 slots used) and the 16 KiB first
//! level four frames; only the slot count matters to the walk's reference count.
//!
//! Permission and state bits (the access-flag model, SCTLR.AFE = 1): AP[0] is the
//! access flag, AP[1] user access, AP[2] read-only. The architecture has no hardware dirty
//! bit and keeps "writable" in software (Linux's shadow PTE); mmulab keeps it in TEX[0]
//! (memory types are not modelled) and treats AP[2] = 0 as writable-dirty, AP[2] = 1 on a
//! writable page as writable-clean — the same scheme as ARMv8's DBM. Large pages and
//! supersections decode with [`Attrs::CONTIG`] set, and a leaf encoded with it becomes
//! one (every entry of the group holds the group's base address).
//!
//! ARMv7 LPAE ([`Armv7Lpae`]) is here too: its own levels over ARMv8's long descriptors
//! (armv8.rs).

use super::{armv8, LevelGeom, PageTableFormat, Pte};
use crate::addr::PageSize;
use crate::translation::Attrs;

/// First level (1 MiB per entry, sections and supersections) and second level (4 KiB
/// per entry, small and large pages).
const LEVELS: [LevelGeom; 2] = [
    LevelGeom {
        shift: 20,
        bits: 12,
        leaf: true,
    },
    LevelGeom {
        shift: 12,
        bits: 8,
        leaf: true,
    },
];

/// ARMv7 short descriptors (2 levels, 32-bit VA and PA; 40-bit PA for supersections):
/// 4K small, 64K large, 1M section, 16M supersection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Armv7;

impl PageTableFormat for Armv7 {
    const ARCH_NAME: &'static str = "armv7";
    const LEVELS: &'static [LevelGeom] = &LEVELS;
    const MAX_PA: u64 = 1 << 32;
    const REPEATED: bool = true;

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
    /// Large pages (16 × L2 → 64K) and supersections (16 × L1 → 16M).
    #[inline]
    fn contig(level: usize) -> Option<(usize, PageSize)> {
        match level {
            1 => Some((16, PageSize::K64)),
            0 => Some((16, PageSize::M16)),
            _ => None,
        }
    }
}

/// ARMv7 LPAE (long descriptors), 32-bit VA: L1 (4 entries, 1 GiB blocks), L2 (2 MiB
/// blocks), L3 (4 KiB pages). Contiguous groups of 16: 64 KiB at L3, 32 MiB at L2.
const LEVELS_LPAE: [LevelGeom; 3] = [
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

/// ARMv7 LPAE long descriptors (3 levels, 32-bit VA, 40-bit PA): 4K, 2M, 1G;
/// contiguous 64K (16 × L3) and 32M (16 × L2). The descriptors are ARMv8's
/// (armv8.rs), over these levels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Armv7Lpae;

impl PageTableFormat for Armv7Lpae {
    const ARCH_NAME: &'static str = "armv7-lpae";
    const LEVELS: &'static [LevelGeom] = &LEVELS_LPAE;
    const MAX_PA: u64 = 1 << 40;

    #[inline]
    fn decode(level: usize, raw: u64) -> Pte {
        armv8::decode(level, raw, &LEVELS_LPAE)
    }
    #[inline]
    fn encode_table(level: usize, pa: u64) -> u64 {
        armv8::encode_table(level, pa)
    }
    #[inline]
    fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64 {
        armv8::encode_leaf(level, pa, attrs, &LEVELS_LPAE)
    }
    #[inline]
    fn contig(level: usize) -> Option<(usize, PageSize)> {
        match level {
            2 => Some((16, PageSize::K64)),
            1 => Some((16, PageSize::M32)),
            _ => None,
        }
    }
}

const SUPER: u64 = 1 << 18;

/// Bit positions of AP[0], AP[1], AP[2] and TEX[0] for one descriptor kind.
struct Bits {
    ap0: u64,
    ap1: u64,
    ap2: u64,
    tex0: u64,
}

const SECTION_BITS: Bits = Bits {
    ap0: 1 << 10,
    ap1: 1 << 11,
    ap2: 1 << 15,
    tex0: 1 << 12,
};
const LARGE_BITS: Bits = Bits {
    ap0: 1 << 4,
    ap1: 1 << 5,
    ap2: 1 << 9,
    tex0: 1 << 12,
};
const SMALL_BITS: Bits = Bits {
    ap0: 1 << 4,
    ap1: 1 << 5,
    ap2: 1 << 9,
    tex0: 1 << 6,
};

fn attrs_of(raw: u64, b: &Bits, contig: bool) -> Attrs {
    let mut a = 0;
    if raw & b.ap0 != 0 {
        a |= Attrs::ACCESSED;
    }
    if raw & b.ap1 != 0 {
        a |= Attrs::USER;
    }
    if raw & b.tex0 != 0 || raw & b.ap2 == 0 {
        a |= Attrs::WRITABLE;
    }
    if raw & b.ap2 == 0 {
        a |= Attrs::DIRTY;
    }
    if contig {
        a |= Attrs::CONTIG;
    }
    Attrs(a)
}

fn bits_of(attrs: Attrs, b: &Bits) -> u64 {
    let mut raw = 0;
    if attrs.has(Attrs::ACCESSED) {
        raw |= b.ap0;
    }
    if attrs.has(Attrs::USER) {
        raw |= b.ap1;
    }
    if attrs.has(Attrs::WRITABLE) {
        raw |= b.tex0;
    }
    if !(attrs.has(Attrs::WRITABLE) && attrs.has(Attrs::DIRTY)) {
        raw |= b.ap2;
    }
    raw
}

#[inline]
fn decode(level: usize, raw: u64) -> Pte {
    let raw = raw & 0xffff_ffff;
    if level == 0 {
        match raw & 0b11 {
            0b01 => Pte::Table(raw & 0xffff_fc00),
            0b10 if raw & SUPER != 0 => {
                let pa = (raw & 0xff00_0000) | ((raw >> 20) & 0xf) << 32 | ((raw >> 5) & 0xf) << 36;
                Pte::Leaf {
                    pa,
                    attrs: attrs_of(raw, &SECTION_BITS, true),
                }
            }
            0b10 => Pte::Leaf {
                pa: raw & 0xfff0_0000,
                attrs: attrs_of(raw, &SECTION_BITS, false),
            },
            _ => Pte::Invalid,
        }
    } else {
        match raw & 0b11 {
            0b00 => Pte::Invalid,
            0b01 => Pte::Leaf {
                pa: raw & 0xffff_0000,
                attrs: attrs_of(raw, &LARGE_BITS, true),
            },
            _ => Pte::Leaf {
                pa: raw & 0xffff_f000,
                attrs: attrs_of(raw, &SMALL_BITS, false),
            },
        }
    }
}

fn encode_table(_level: usize, pa: u64) -> u64 {
    debug_assert!(pa < 1 << 32, "ARMv7 short-descriptor tables live below 4 GiB");
    (pa & 0xffff_fc00) | 0b01
}

fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64 {
    let contig = attrs.has(Attrs::CONTIG);
    match (level, contig) {
        (0, true) => {
            (pa & 0xff00_0000)
                | ((pa >> 32) & 0xf) << 20
                | ((pa >> 36) & 0xf) << 5
                | SUPER
                | 0b10
                | bits_of(attrs, &SECTION_BITS)
        }
        (0, false) => (pa & 0xfff0_0000) | 0b10 | bits_of(attrs, &SECTION_BITS),
        (_, true) => (pa & 0xffff_0000) | 0b01 | bits_of(attrs, &LARGE_BITS),
        (_, false) => (pa & 0xffff_f000) | 0b10 | bits_of(attrs, &SMALL_BITS),
    }
}
