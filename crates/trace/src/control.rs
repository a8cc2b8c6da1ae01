//! Control references: references to addresses no program can touch, which the simulator
//! takes as OS events rather than memory accesses. They travel through every trace
//! format unchanged (a `.mlt` file stores them losslessly like any reference), so a
//! synthetic workload and a converted or recorded trace express events the same way.
//!
//! * **exit** — a reference to [`EXIT_ADDR`] (the last page of the 47-bit user address
//!   space) ends its address space.
//! * **unmap** — two consecutive references of one address space, in the tagged window
//!   [`UNMAP_TAG`] (address bits 63..48 = `0xfffe`): the first, `UNMAP_TAG | start`,
//!   opens the range; the second, `UNMAP_TAG | end | 1`, closes it and unmaps
//!   `[start, end)` of that address space (munmap). `start` and `end` are 4 KiB-aligned
//!   virtual addresses below 2^48; the low 12 bits of a marker say which end it is (0:
//!   start, 1: end) and any other value is an error, as is an end without a start, a
//!   second start before the end, an end of another address space, or an empty or
//!   inverted range. Ordinary references between the two markers are simulated as
//!   usual. A marker is a load (or store): an instruction fetch on a machine without an
//!   instruction-TLB path is never translated, so it would not be seen; size and core
//!   are ignored. Example: unmapping `[0x4000_0000, 0x4020_0000)` is a reference to
//!   `0xfffe_0000_4000_0000` followed by one to `0xfffe_0000_4020_0001`.
//!
//! Why these addresses cannot be a real access: `0xfffe_…` is non-canonical on x86-64
//! (4- and 5-level paging: a #GP, never a memory reference), and on arm64 — even with
//! top-byte-ignore — bit 55 is set, which selects the kernel's TTBR1 half, so a user
//! access faults. The simulator rejects addresses beyond a format's virtual address
//! space, so before this encoding existed no trace holding them simulated at all.

use crate::{AccessKind, MemRef};

pub use crate::workload::EXIT_ADDR;

/// Bits 63..48 of an unmap marker.
pub const UNMAP_TAG: u64 = 0xfffe << 48;
/// Low bits of the marker that closes the range.
pub const UNMAP_END_FLAG: u64 = 1;

/// One end of an unmap range, decoded from a marker reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmapMarker {
    /// Opens a range at this (4 KiB-aligned) address.
    Start(u64),
    /// Closes the open range at this (4 KiB-aligned) address.
    End(u64),
    /// A tagged address with low bits other than 0 or 1: malformed.
    Bad(u64),
}

/// True if `addr` is in the unmap window (a cheap test for the simulator's cold path).
#[inline]
pub fn is_unmap_marker(addr: u64) -> bool {
    addr >> 48 == UNMAP_TAG >> 48
}

/// True if `addr` is a control reference (exit or either end of an unmap): an OS event,
/// not a memory access, so summaries leave it out of loads, stores and footprints.
#[inline]
pub fn is_control(addr: u64) -> bool {
    addr == EXIT_ADDR || is_unmap_marker(addr)
}

/// Decodes an unmap marker (`None` if `addr` is not in the window).
pub fn decode_unmap(addr: u64) -> Option<UnmapMarker> {
    if !is_unmap_marker(addr) {
        return None;
    }
    let va = addr & 0x0000_ffff_ffff_f000;
    Some(match addr & 0xfff {
        0 => UnmapMarker::Start(va),
        UNMAP_END_FLAG => UnmapMarker::End(va),
        _ => UnmapMarker::Bad(addr),
    })
}

/// The two references that unmap `[start, end)` of `asid` (both ends 4 KiB-aligned,
/// below 2^48; the caller checks).
pub fn unmap_refs(asid: u16, start: u64, end: u64) -> [MemRef; 2] {
    debug_assert!(start < end && (start | end) & 0xfff == 0 && end <= 1 << 48);
    let m = |addr| MemRef {
        addr,
        size: 0,
        kind: AccessKind::Load,
        core: 0,
        asid,
    };
    [m(UNMAP_TAG | start), m(UNMAP_TAG | end | UNMAP_END_FLAG)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_ordinary_addresses_are_not_markers() {
        let [a, b] = unmap_refs(3, 0x4000_0000, 0x4020_0000);
        assert_eq!(a.addr, 0xfffe_0000_4000_0000);
        assert_eq!(decode_unmap(a.addr), Some(UnmapMarker::Start(0x4000_0000)));
        assert_eq!(decode_unmap(b.addr), Some(UnmapMarker::End(0x4020_0000)));
        assert_eq!(
            decode_unmap(UNMAP_TAG | 0x5000 | 0x8),
            Some(UnmapMarker::Bad(UNMAP_TAG | 0x5008))
        );
        for addr in [
            0u64,
            EXIT_ADDR,
            0x7fff_ffff_ffff,
            0xffff_8000_0000_0000,
            0xffff_ffff_ffff_f000,
            0xfffd_ffff_ffff_ffff,
        ] {
            assert!(!is_unmap_marker(addr), "{addr:#x}");
            assert_eq!(decode_unmap(addr), None);
        }
    }
}
