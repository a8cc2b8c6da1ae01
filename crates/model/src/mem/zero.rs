//! Linux's zero pages: the one shared frame every read fault on untouched anonymous
//! memory maps read-only (`ZERO_PAGE`, mm/memory.c `do_anonymous_page`), and the huge
//! zero page THP maps for a read fault on an empty PMD range (`mm_get_huge_zero_folio`,
//! mm/huge_memory.c). Each is allocated once, at its first use, and never freed or
//! moved: reclaim does not swap it out, compaction does not migrate it, and unmapping a
//! leaf that maps it frees nothing. (Linux frees an unused huge zero page from a
//! shrinker; mmulab keeps it, assumed.)
//!
//! Memory use counts each zero frame once: every leaf mapping a zero frame is recorded
//! as resident by the policy that maps it (so every unmap path stays balanced), and
//! [`ZeroFrames::mapped`] holds the bytes those leaves add, which the report subtracts
//! (`resident_correction`).

use crate::addr::{PageSize, FRAME_SHIFT};

/// The zero frames of one memory and the bytes mapped on them.
#[derive(Clone, Debug, Default)]
pub struct ZeroFrames {
    /// The zero page (first frame, order): the base page of the format, once allocated.
    pub small: Option<(u64, u32)>,
    /// The huge zero page (first frame, order), once allocated.
    pub huge: Option<(u64, u32)>,
    /// Bytes of live leaves mapping a zero frame, by leaf size (`PageSize::index`).
    pub mapped: [u64; 9],
}

impl ZeroFrames {
    /// True if frame `pfn` belongs to a zero page.
    #[inline]
    pub fn contains(&self, pfn: u64) -> bool {
        let inside = |z: Option<(u64, u32)>| z.is_some_and(|(p, o)| pfn >= p && pfn < p + (1 << o));
        inside(self.small) || inside(self.huge)
    }

    /// True if physical address `pa` lies in a zero page.
    #[inline]
    pub fn contains_pa(&self, pa: u64) -> bool {
        self.contains(pa >> FRAME_SHIFT)
    }

    /// A leaf of `size` mapping a zero frame was created.
    pub fn mapped(&mut self, size: PageSize) {
        self.mapped[size.index()] += size.bytes();
    }

    /// A leaf of `size` mapping a zero frame was removed (a leaf split by munmap keeps
    /// its bytes under the size it was mapped with, hence the saturation).
    pub fn unmapped(&mut self, size: PageSize) {
        let b = size.bytes();
        let mut left = b;
        let i = size.index();
        let take = self.mapped[i].min(left);
        self.mapped[i] -= take;
        left -= take;
        for m in self.mapped.iter_mut().rev() {
            let t = (*m).min(left);
            *m -= t;
            left -= t;
        }
    }

    /// Bytes of the zero frames themselves (each counted once).
    pub fn frame_bytes(&self) -> u64 {
        [self.small, self.huge]
            .iter()
            .flatten()
            .map(|&(_, o)| (1u64 << o) << FRAME_SHIFT)
            .sum()
    }

    /// What the report must subtract from a policy's resident bytes, by size: the
    /// bytes of leaves on zero frames, less the frames themselves counted once (under
    /// the size of the leaves that map them).
    pub fn resident_correction(&self) -> [i64; 9] {
        let mut c = [0i64; 9];
        for (i, &m) in self.mapped.iter().enumerate() {
            c[i] = m as i64;
        }
        for &(_, o) in [self.small, self.huge].iter().flatten() {
            let bytes = (1u64 << o) << FRAME_SHIFT;
            let size = PageSize::ALL
                .iter()
                .find(|p| p.bytes() == bytes)
                .copied()
                .unwrap_or(PageSize::K4);
            c[size.index()] -= bytes as i64;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_frame_counts_once_however_often_it_is_mapped() {
        let mut z = ZeroFrames {
            small: Some((7, 0)),
            ..Default::default()
        };
        for _ in 0..3 {
            z.mapped(PageSize::K4);
        }
        assert!(z.contains(7) && !z.contains(8));
        // Three leaves add 3 x 4096 to resident; the frame counts once: subtract 2 x 4096.
        assert_eq!(z.resident_correction()[PageSize::K4.index()], 2 * 4096);
        z.unmapped(PageSize::K4);
        assert_eq!(z.resident_correction()[PageSize::K4.index()], 4096);
    }
}
