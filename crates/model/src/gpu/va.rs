//! The GPU virtual address allocator: a drm_mm-style range allocator over the page
//! indices of the 4 GiB space, and the driver's alignment policies.
//!
//! The V3D driver manages pages `[1, 2^20)`: `v3d_gem_init` calls
//! `drm_mm_init(&v3d->mm, 1, pt_size / sizeof(u32) - 1)` because address 0 is special to
//! the hardware. `v3d_bo_create_finish` inserts each BO's node with
//! `drm_mm_insert_node_generic(..., align, 0, 0)`, mode 0 being `DRM_MM_INSERT_BEST`:
//! the smallest hole whose aligned start still fits the node, the node placed at the
//! lowest aligned address of that hole. Holes of equal size are taken lowest first
//! (drm_mm keeps them in a size-ordered tree; the order among equal sizes is assumed).

use super::{GpuError, GPU_PAGE, GPU_PAGES};
use std::collections::{BTreeMap, BTreeSet};

/// How the driver aligns a BO's virtual address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AlignPolicy {
    /// Every BO 128 KiB aligned (`GMP_GRANULARITY`; the driver before the series).
    #[serde(rename = "128K")]
    K128,
    /// Every BO 4 KiB aligned (patch 07/11 of the series).
    #[serde(rename = "4K")]
    K4,
    /// 1 MiB when the BO is at least 1 MiB, 64 KiB when at least 64 KiB, else 4 KiB,
    /// when gemfs is active (patch 09/11); 4 KiB without gemfs.
    #[serde(rename = "size-class")]
    SizeClass,
}

impl AlignPolicy {
    /// Every policy, in the order of the reproduction.
    pub const ALL: [AlignPolicy; 3] = [AlignPolicy::K128, AlignPolicy::K4, AlignPolicy::SizeClass];

    /// The name used in configs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            AlignPolicy::K128 => "128K",
            AlignPolicy::K4 => "4K",
            AlignPolicy::SizeClass => "size-class",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<AlignPolicy, String> {
        AlignPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("alignment policy \"{s}\" is not known; use 128K, 4K or size-class"))
    }

    /// Alignment in GPU pages for a BO of `bytes` (page aligned), with gemfs active or not.
    pub fn align_pages(self, bytes: u64, gemfs: bool) -> u64 {
        match self {
            AlignPolicy::K128 => (128 << 10) / GPU_PAGE,
            AlignPolicy::K4 => 1,
            AlignPolicy::SizeClass if gemfs && bytes >= 1 << 20 => (1 << 20) / GPU_PAGE,
            AlignPolicy::SizeClass if gemfs && bytes >= 64 << 10 => (64 << 10) / GPU_PAGE,
            AlignPolicy::SizeClass => 1,
        }
    }
}

/// Alignments (in pages) with a usable-size index: 64 KiB, 128 KiB, 1 MiB, 2 MiB.
const INDEXED: [u64; 4] = [16, 32, 256, 512];

/// Pages of hole `(start, size)` left for a node aligned to `align`.
fn usable(start: u64, size: u64, align: u64) -> u64 {
    (start + size).saturating_sub(start.next_multiple_of(align))
}

/// A drm_mm-style allocator of page ranges.
#[derive(Clone, Debug)]
pub struct VaSpace {
    /// Holes by (size, start): best fit walks them from the smallest that is large
    /// enough.
    by_size: BTreeSet<(u64, u64)>,
    /// Holes by start → size: neighbours to merge on removal.
    by_start: BTreeMap<u64, u64>,
    /// Allocated nodes by start → size.
    nodes: BTreeMap<u64, u64>,
    /// Per alignment of [`INDEXED`]: holes by (usable size once aligned, size, start), so
    /// an aligned best-fit search skips holes too small after alignment without walking
    /// them (same answer as the plain scan; a speed index only).
    by_usable: [BTreeSet<(u64, u64, u64)>; INDEXED.len()],
    first: u64,
    end: u64,
}

impl Default for VaSpace {
    fn default() -> Self {
        VaSpace::new(1, GPU_PAGES)
    }
}

impl VaSpace {
    /// A space managing pages `[first, end)` (the V3D's is `[1, 2^20)`).
    pub fn new(first: u64, end: u64) -> VaSpace {
        let mut v = VaSpace {
            by_size: BTreeSet::new(),
            by_start: BTreeMap::new(),
            nodes: BTreeMap::new(),
            by_usable: Default::default(),
            first,
            end,
        };
        v.add_hole(first, end - first);
        v
    }

    /// Pages the space manages.
    pub fn pages(&self) -> u64 {
        self.end - self.first
    }

    /// Nodes allocated.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    fn add_hole(&mut self, start: u64, size: u64) {
        if size > 0 {
            self.by_size.insert((size, start));
            self.by_start.insert(start, size);
            for (i, a) in INDEXED.iter().enumerate() {
                self.by_usable[i].insert((usable(start, size, *a), size, start));
            }
        }
    }

    fn take_hole(&mut self, start: u64, size: u64) {
        self.by_size.remove(&(size, start));
        self.by_start.remove(&start);
        for (i, a) in INDEXED.iter().enumerate() {
            self.by_usable[i].remove(&(usable(start, size, *a), size, start));
        }
    }

    /// Inserts a node of `pages` aligned to `align` pages (a power of two); returns its
    /// first page, or `None` if no hole fits.
    pub fn insert(&mut self, pages: u64, align: u64) -> Option<u64> {
        debug_assert!(align.is_power_of_two() && pages > 0);
        let (size, start) = match INDEXED.iter().position(|&a| a == align) {
            // Best fit = the smallest (size, start) among holes whose usable part holds
            // the node; a hole's size is at least its usable part, so the scan stops
            // once the usable part exceeds the best size found.
            Some(i) => {
                let mut best: Option<(u64, u64)> = None;
                for &(u, size, start) in self.by_usable[i].range((pages, 0, 0)..) {
                    if best.is_some_and(|b| u > b.0) {
                        break;
                    }
                    match best {
                        Some(b) if b <= (size, start) => {}
                        _ => best = Some((size, start)),
                    }
                }
                best?
            }
            None => self
                .by_size
                .range((pages, 0)..)
                .find(|&&(size, start)| usable(start, size, align) >= pages)
                .copied()?,
        };
        let at = start.next_multiple_of(align);
        self.take_hole(start, size);
        self.add_hole(start, at - start);
        self.add_hole(at + pages, start + size - (at + pages));
        self.nodes.insert(at, pages);
        Some(at)
    }

    /// Removes the node starting at `start`; returns its size in pages.
    pub fn remove(&mut self, start: u64) -> Option<u64> {
        let pages = self.nodes.remove(&start)?;
        let (mut lo, mut hi) = (start, start + pages);
        if let Some((&s, &sz)) = self.by_start.range(..start).next_back() {
            if s + sz == start {
                self.take_hole(s, sz);
                lo = s;
            }
        }
        if let Some(&sz) = self.by_start.get(&hi) {
            self.take_hole(hi, sz);
            hi += sz;
        }
        self.add_hole(lo, hi - lo);
        Some(pages)
    }
}

/// How many BOs of `bytes` each fit the V3D space under `policy` (gemfs active for the
/// size-class policy, as it is when that policy applies), found by allocating until the
/// allocator refuses.
pub fn capacity(policy: AlignPolicy, bytes: u64) -> u64 {
    let mut v = VaSpace::default();
    let pages = bytes.div_ceil(GPU_PAGE);
    let align = policy.align_pages(pages * GPU_PAGE, true);
    let mut n = 0;
    while v.insert(pages, align).is_some() {
        n += 1;
    }
    n
}

/// Checks that a BO of `bytes` can fit the space at all.
pub fn check_size(bo: u32, bytes: u64) -> Result<(), GpuError> {
    if bytes == 0 {
        return Err(GpuError::EmptyBo { bo });
    }
    if bytes.div_ceil(GPU_PAGE) > GPU_PAGES - 1 {
        return Err(GpuError::BoTooLarge { bo, bytes });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_fit_takes_the_smallest_hole_and_merges_on_remove() {
        let mut v = VaSpace::new(0, 100);
        let a = v.insert(10, 1).unwrap();
        let b = v.insert(5, 1).unwrap();
        let c = v.insert(20, 1).unwrap();
        assert_eq!((a, b, c), (0, 10, 15));
        v.remove(b).unwrap();
        // Holes: [10,15) of 5 and [35,100) of 65: a 3-page node takes the small one.
        assert_eq!(v.insert(3, 1), Some(10));
        // Alignment 16: the 2-page hole [13,15) cannot hold it; the tail can at 48.
        assert_eq!(v.insert(2, 16), Some(48));
        v.remove(a).unwrap();
        v.remove(10).unwrap();
        v.remove(c).unwrap();
        v.remove(48).unwrap();
        assert_eq!(v.by_start.len(), 1, "all holes merged back into one");
        assert_eq!(v.insert(100, 1), Some(0));
    }
}
