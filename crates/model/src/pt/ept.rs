//! Intel EPT (extended page tables; SDM vol. 3 §29.3 "The Extended Page Table
//! Mechanism", 4-level EPT): the hypervisor's guest-physical → host-physical tables.
//! Four levels of 512 entries (PML4, PDPT, PD, PT) as in x86-64 paging, with their own
//! bits: 0 read, 1 write, 2 execute (an entry is present when any of bits 2:0 is set);
//! leaves: bits 5:3 EPT memory type (written 6, write-back), bit 7 a 1 GiB (PDPT) or
//! 2 MiB (PD) leaf, bit 8 accessed and bit 9 dirty (when the EPTP enables accessed and
//! dirty flags); physical address in bits 12..51.
//!
//! mmulab's [`Attrs`] map onto them: `USER` = read, `WRITABLE` = write, `ACCESSED` =
//! bit 8, `DIRTY` = bit 9; execute is always granted (a leaf encoded without `USER` or
//! `WRITABLE` is then still present, as an execute-only page). A write-only leaf (write
//! without read) is an EPT misconfiguration on hardware; mmulab decodes it as written.
//! AMD's nested page tables (NPT) are ordinary x86-64 tables (`x86_64`).

use super::{LevelGeom, PageTableFormat, Pte};
use crate::translation::Attrs;

// EPT walks the same geometry as x86-64 4-level paging: 9 bits a level from bit 39,
// leaves at levels 1-3.
use super::x86_64::LEVELS;

/// Intel EPT, 4 levels: 4K pages, 2M and 1G leaves (bit 7); 48-bit guest-physical
/// addresses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ept;

const R: u64 = 1 << 0;
const W: u64 = 1 << 1;
const X: u64 = 1 << 2;
const RWX: u64 = R | W | X;
/// EPT memory type 6: write-back.
const MT_WB: u64 = 6 << 3;
const LARGE: u64 = 1 << 7;
const A: u64 = 1 << 8;
const D: u64 = 1 << 9;
const ADDR: u64 = 0x000f_ffff_ffff_f000;

impl PageTableFormat for Ept {
    const ARCH_NAME: &'static str = "ept";
    const LEVELS: &'static [LevelGeom] = &LEVELS;
    const MAX_PA: u64 = 1 << 48;
    const STAGE2_ONLY: bool = true;

    #[inline]
    fn decode(level: usize, raw: u64) -> Pte {
        if raw & RWX == 0 {
            return Pte::Invalid;
        }
        let pa = raw & ADDR;
        if level == 3 || (level > 0 && raw & LARGE != 0) {
            let mut a = 0;
            if raw & R != 0 {
                a |= Attrs::USER;
            }
            if raw & W != 0 {
                a |= Attrs::WRITABLE;
            }
            if raw & A != 0 {
                a |= Attrs::ACCESSED;
            }
            if raw & D != 0 {
                a |= Attrs::DIRTY;
            }
            Pte::Leaf { pa, attrs: Attrs(a) }
        } else {
            Pte::Table(pa)
        }
    }

    #[inline]
    fn encode_table(_level: usize, pa: u64) -> u64 {
        (pa & ADDR) | RWX
    }

    #[inline]
    fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64 {
        let mut raw = (pa & ADDR) | X | MT_WB;
        if level != 3 {
            raw |= LARGE;
        }
        if attrs.has(Attrs::USER) {
            raw |= R;
        }
        if attrs.has(Attrs::WRITABLE) {
            raw |= W;
        }
        if attrs.has(Attrs::ACCESSED) {
            raw |= A;
        }
        if attrs.has(Attrs::DIRTY) {
            raw |= D;
        }
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ept_bits_are_where_the_sdm_puts_them() {
        // RW, accessed, dirty 2 MiB leaf at 0x4020_0000: R|W|X (7), WB type (0x30), bit 7,
        // A (0x100), D (0x200).
        let raw = Ept::encode_leaf(2, 0x4020_0000, Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED));
        assert_eq!(raw, 0x4020_0000 | 0x7 | 0x30 | 0x80 | 0x100 | 0x200);
        // A table pointer grants RWX; bit 7 at the PML4 is not a leaf.
        assert_eq!(Ept::encode_table(0, 0x5000), 0x5007);
        assert_eq!(Ept::decode(0, 0x5000 | 0x87), Pte::Table(0x5000));
        // Present means any of R, W, X: an execute-only entry is valid.
        assert!(matches!(Ept::decode(3, 0x1000 | X), Pte::Leaf { .. }));
        assert_eq!(Ept::decode(3, 0x1000 | MT_WB | A), Pte::Invalid);
    }
}
