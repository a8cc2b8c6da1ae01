//! The reverse map: for each physical frame, which leaf maps it — what compaction needs
//! to migrate a frame and what reclaim needs to find a page's owner.
//!
//! Contract: one `u64` per 4 KiB frame (a direct index, no hashing), written only when a
//! 4 KiB leaf that is not part of a contiguous group is installed or removed
//! ([`crate::walk::map_leaf`], [`crate::walk::unmap_leaf`], [`crate::os::remap::clear_leaves`]),
//! never on the per-reference path. An entry names the page-table root and the virtual
//! address of the leaf; it is a *hint*: users check it against the page table
//! ([`crate::mem::Memory::owner`]) before trusting it, so a stale entry can never move
//! a frame that is not what it says.
//!
//! Frames owned by nobody but movable (the `movable` share of `[memory.age]`'s pinned
//! frames: page cache and anonymous memory of programs outside the simulation) carry
//! [`EXTERNAL`]. Everything else (page tables, unmovable pinned frames, huge pages,
//! contiguous groups, reservations' frames) has no entry and is never migrated.
//!
//! Packing: `((root_pfn + 1) << 36) | (va >> 12)`: 36 bits of virtual page number (48-bit
//! virtual addresses) and 28 bits of root frame; a memory of 2^28 − 1 frames (1 TiB)
//! or more keeps no reverse map (compaction and reclaim then find nothing to move).

use crate::addr::FRAME_SHIFT;

/// The entry of a movable frame owned by nobody in the simulation.
pub const EXTERNAL: u64 = u64::MAX;
const VPN_BITS: u32 = 36;

/// The reverse map (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Rmap {
    owner: Vec<u64>,
}

/// What the reverse map says about a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A 4 KiB leaf at `va` of the address space whose root table is at `root`.
    Leaf {
        /// Physical address of the page-table root.
        root: u64,
        /// Virtual address of the page.
        va: u64,
    },
    /// A movable frame owned outside the simulation.
    External,
}

impl Rmap {
    /// A map for `frames` frames (empty if the packing cannot name them).
    pub fn new(frames: u64) -> Rmap {
        if frames >= (1 << (64 - VPN_BITS)) - 1 {
            return Rmap::default();
        }
        Rmap {
            owner: vec![0; frames as usize],
        }
    }

    fn pack(root: u64, va: u64) -> Option<u64> {
        let vpn = va >> FRAME_SHIFT;
        (vpn < 1 << VPN_BITS).then(|| (((root >> FRAME_SHIFT) + 1) << VPN_BITS) | vpn)
    }

    /// Records that the 4 KiB leaf at `va` of `root` maps frame `pfn`.
    #[inline]
    pub fn set(&mut self, pfn: u64, root: u64, va: u64) {
        if let (Some(slot), Some(v)) = (self.owner.get_mut(pfn as usize), Self::pack(root, va)) {
            *slot = v;
        }
    }

    /// Forgets frame `pfn` if the leaf at `va` of `root` was its owner.
    #[inline]
    pub fn clear_if(&mut self, pfn: u64, root: u64, va: u64) {
        if let (Some(slot), Some(v)) = (self.owner.get_mut(pfn as usize), Self::pack(root, va)) {
            if *slot == v {
                *slot = 0;
            }
        }
    }

    /// Marks frame `pfn` movable and owned outside the simulation (or forgets it).
    pub fn set_external(&mut self, pfn: u64, on: bool) {
        if let Some(slot) = self.owner.get_mut(pfn as usize) {
            *slot = if on { EXTERNAL } else { 0 };
        }
    }

    /// The recorded owner of `pfn` (unchecked: see [`crate::mem::Memory::owner`]).
    pub fn get(&self, pfn: u64) -> Option<Owner> {
        match self.owner.get(pfn as usize).copied() {
            None | Some(0) => None,
            Some(EXTERNAL) => Some(Owner::External),
            Some(v) => Some(Owner::Leaf {
                root: ((v >> VPN_BITS) - 1) << FRAME_SHIFT,
                va: (v & ((1 << VPN_BITS) - 1)) << FRAME_SHIFT,
            }),
        }
    }

    /// Frames marked [`Owner::External`].
    pub fn external_frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.owner
            .iter()
            .enumerate()
            .filter(|(_, &v)| v == EXTERNAL)
            .map(|(i, _)| i as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_clears_only_its_own_entry() {
        let mut r = Rmap::new(1024);
        r.set(5, 0x3000, 0x7fff_ffff_f000);
        assert_eq!(
            r.get(5),
            Some(Owner::Leaf {
                root: 0x3000,
                va: 0x7fff_ffff_f000
            })
        );
        r.clear_if(5, 0x3000, 0x1000);
        assert!(r.get(5).is_some());
        r.clear_if(5, 0x3000, 0x7fff_ffff_f000);
        assert_eq!(r.get(5), None);
        r.set(0, 0, 0);
        assert_eq!(r.get(0), Some(Owner::Leaf { root: 0, va: 0 }));
        r.set_external(7, true);
        assert_eq!(r.get(7), Some(Owner::External));
        assert_eq!(r.external_frames().collect::<Vec<_>>(), vec![7]);
        assert_eq!(r.get(4096), None);
    }
}
