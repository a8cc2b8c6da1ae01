//! ARMv8-A VMSAv8-64 stage-2 descriptors (the hypervisor's IPA → PA tables; Arm ARM
//! D8.3, "Stage 2 Block and Page descriptor attributes"). Bits[1:0] as at stage 1: 0b11
//! table (levels above the last) or page (last level), 0b01 block, else invalid. Leaf
//! attributes differ from stage 1:
//!
//! * MemAttr[3:0] at bits 5:2 (written 0b1111, Normal Write-Back, the attribute KVM's
//!   `stage2_set_prot_attr` gives guest RAM without FWB; not decoded);
//! * S2AP[1:0] at bits 7:6: bit 6 read allowed, bit 7 write allowed (00 none, 01
//!   read-only, 10 write-only, 11 read/write — the reverse polarity of stage 1's AP[2]);
//! * SH[1:0] at bits 9:8 (written 0b11, inner shareable), AF bit 10;
//! * DBM bit 51 (FEAT_HAFDBS at stage 2: hardware sets S2AP[1] on the first write),
//!   Contiguous bit 52, XN bits 54:53 (written 0: executable).
//!
//! mmulab's [`Attrs`] map onto them: `USER` = S2AP read (a stage-2 leaf has no EL0/EL1
//! split), `WRITABLE` = DBM or S2AP write, `DIRTY` = S2AP write, `ACCESSED` = AF,
//! `CONTIG` = the contiguous bit (groups as at stage 1: each entry holds its own output
//! address).
//!
//! Starting level and concatenation: KVM sizes the stage-2 tables for the VM's IPA
//! width and concatenates up to 16 tables at the starting level to save a level
//! (Linux `arch/arm64/include/asm/stage2_pgtable.h`: `stage2_pgtable_levels(ipa) =
//! ARM64_HW_PGTABLE_LEVELS(ipa - 4)`). These formats are for a 40-bit IPA, KVM's default
//! (`KVM_PHYS_SHIFT`, used when the VM type names no IPA size): 4K granule, 3 levels
//! from level 1 with 2 concatenated tables (1024 entries); 16K, 2 levels from level 2
//! with 16 concatenated tables (32768 entries); 64K, 2 levels from level 2 (one table of
//! 2048 entries). Limit: other IPA sizes (a 48-bit IPA adds a level) are not modelled;
//! guest memory must fit below 1 TiB.

use super::{LevelGeom, PageTableFormat, Pte};
use crate::addr::PageSize;
use crate::translation::Attrs;

/// 4 KiB granule, 40-bit IPA: level 1 (two concatenated tables: 10 index bits; 1 GiB
/// blocks), level 2 (2 MiB blocks), level 3 (4 KiB pages).
const LEVELS_4K: [LevelGeom; 3] = [
    LevelGeom {
        shift: 30,
        bits: 10,
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

/// 16 KiB granule, 40-bit IPA: level 2 (16 concatenated tables: 15 index bits; 32 MiB
/// blocks), level 3 (16 KiB pages).
const LEVELS_16K: [LevelGeom; 2] = [
    LevelGeom {
        shift: 25,
        bits: 15,
        leaf: true,
    },
    LevelGeom {
        shift: 14,
        bits: 11,
        leaf: true,
    },
];

/// 64 KiB granule, 40-bit IPA: level 2 (11 index bits; 512 MiB blocks), level 3 (64 KiB
/// pages).
const LEVELS_64K: [LevelGeom; 2] = [
    LevelGeom {
        shift: 29,
        bits: 11,
        leaf: true,
    },
    LevelGeom {
        shift: 16,
        bits: 13,
        leaf: true,
    },
];

/// The [`PageTableFormat`] of one stage-2 granule.
macro_rules! s2_granule {
    ($(#[doc = $doc:literal])* $ty:ident, $name:literal, $levels:ident,
     { $($level:literal => ($n:literal, $size:ident)),* }) => {
        $(#[doc = $doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty;

        impl PageTableFormat for $ty {
            const ARCH_NAME: &'static str = $name;
            const LEVELS: &'static [LevelGeom] = &$levels;
            const MAX_PA: u64 = 1 << 48;
            const STAGE2_ONLY: bool = true;

            #[inline]
            fn decode(level: usize, raw: u64) -> Pte {
                decode(level, raw, &$levels)
            }
            #[inline]
            fn encode_table(_level: usize, pa: u64) -> u64 {
                (pa & ADDR) | TYPE_TABLE_OR_PAGE
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

s2_granule!(
    /// ARMv8-A stage 2, 4 KiB granule, 40-bit IPA (3 levels from L1, 2 concatenated
    /// tables): 4K pages, 2M and 1G blocks; contiguous 64K (16 × L3) and 32M (16 × L2).
    Aarch64S2_4K, "aarch64-s2", LEVELS_4K, { 2 => (16, K64), 1 => (16, M32) }
);
s2_granule!(
    /// ARMv8-A stage 2, 16 KiB granule, 40-bit IPA (2 levels from L2, 16 concatenated
    /// tables): 16K pages, 32M blocks; contiguous 2M (128 × L3) and 1G (32 × L2).
    Aarch64S2_16K, "aarch64-s2-16k", LEVELS_16K, { 1 => (128, M2), 0 => (32, G1) }
);
s2_granule!(
    /// ARMv8-A stage 2, 64 KiB granule, 40-bit IPA (2 levels from L2): 64K pages, 512M
    /// blocks; contiguous 2M (32 × L3).
    Aarch64S2_64K, "aarch64-s2-64k", LEVELS_64K, { 1 => (32, M2) }
);

const TYPE_MASK: u64 = 0b11;
const TYPE_TABLE_OR_PAGE: u64 = 0b11;
const TYPE_BLOCK: u64 = 0b01;
/// MemAttr[3:0] = 0b1111: Normal, Outer and Inner Write-Back Cacheable.
const MEMATTR_NORMAL_WB: u64 = 0b1111 << 2;
const S2AP_R: u64 = 1 << 6;
const S2AP_W: u64 = 1 << 7;
/// SH[1:0] = 0b11: Inner Shareable.
const SH_INNER: u64 = 0b11 << 8;
const AF: u64 = 1 << 10;
const DBM: u64 = 1 << 51;
const CONT: u64 = 1 << 52;
const ADDR: u64 = 0x0000_ffff_ffff_f000;

#[inline]
fn decode(level: usize, raw: u64, levels: &[LevelGeom]) -> Pte {
    let last = level + 1 == levels.len();
    match raw & TYPE_MASK {
        TYPE_TABLE_OR_PAGE if !last => return Pte::Table(raw & ADDR),
        TYPE_TABLE_OR_PAGE => {}
        TYPE_BLOCK if !last && levels[level].leaf => {}
        _ => return Pte::Invalid,
    }
    let mut a = 0;
    if raw & S2AP_R != 0 {
        a |= Attrs::USER;
    }
    if raw & AF != 0 {
        a |= Attrs::ACCESSED;
    }
    if raw & (DBM | S2AP_W) != 0 {
        a |= Attrs::WRITABLE;
    }
    if raw & S2AP_W != 0 {
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

fn encode_leaf(level: usize, pa: u64, attrs: Attrs, levels: &[LevelGeom]) -> u64 {
    let kind = if level + 1 == levels.len() {
        TYPE_TABLE_OR_PAGE
    } else {
        TYPE_BLOCK
    };
    let mut raw = (pa & ADDR) | kind | MEMATTR_NORMAL_WB | SH_INNER;
    if attrs.has(Attrs::USER) {
        raw |= S2AP_R;
    }
    if attrs.has(Attrs::ACCESSED) {
        raw |= AF;
    }
    if attrs.has(Attrs::WRITABLE) {
        // Writable-clean: DBM set, S2AP write clear until the first store; dirty:
        // S2AP write set (DBM kept).
        raw |= DBM;
        if attrs.has(Attrs::DIRTY) {
            raw |= S2AP_W;
        }
    }
    if attrs.has(Attrs::CONTIG) {
        raw |= CONT;
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage2_bits_are_where_the_arm_arm_puts_them() {
        // A read/write, accessed, dirty 4 KiB page at 0x8000_0000: type 0b11, MemAttr
        // 0b1111 (0x3c), S2AP 0b11 (0xc0), SH 0b11 (0x300), AF (0x400), DBM (bit 51).
        let raw = Aarch64S2_4K::encode_leaf(2, 0x8000_0000, Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED));
        assert_eq!(raw, 0x8000_0000 | 0x3 | 0x3c | 0xc0 | 0x300 | 0x400 | (1 << 51));
        // A read-only 2 MiB block: type 0b01, S2AP 0b01, no DBM.
        let raw = Aarch64S2_4K::encode_leaf(1, 0x20_0000, Attrs(Attrs::USER));
        assert_eq!(raw, 0x20_0000 | 0x1 | 0x3c | 0x40 | 0x300);
        // Writable-clean: DBM without S2AP write.
        let raw = Aarch64S2_4K::encode_leaf(2, 0x1000, Attrs::user_rw());
        assert_eq!(raw & (S2AP_W | DBM), DBM);
        // Concatenated starting level: 1024 entries (4K), 32768 (16K), 2048 (64K).
        assert_eq!(LEVELS_4K[0].entries(), 1024);
        assert_eq!(LEVELS_16K[0].entries(), 32768);
        assert_eq!(LEVELS_64K[0].entries(), 2048);
    }
}
