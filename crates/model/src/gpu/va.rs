//! The GPU virtual address allocator: a drm_mm-style range allocator over the page
//! indices of the 4 GiB space, and the driver's alignment policies.
//!
//! The V3D driver manages pages `[1, 2^20)`: `v3d_gem_init` calls
//! `drm_mm_init(&v3d->mm, 1, pt_size / sizeof(u32) - 1)` because address 0 is special to
//! the hardware. `v3d_bo_create_finish` inserts each BO's node with
//! `drm_mm_insert_node_generic(..., align, 0, 0)`, mode 0 being `DRM_MM_INSERT_BEST`:
//! the smallest hole whose aligned start still fits the node, the node placed at the
//! lowest aligned address of that hole. drm_mm keeps holes in a tree ordered by size,
//! largest first, where `insert_hole_size` puts a new hole after those of equal size;
//! `best_hole` descends to the last hole large enough, and `next_hole` (`rb_prev`)
//! walks back from it: the smallest sizes first and, among holes of equal size, the
//! newest first (the hole added last by an insert or a remove). The first hole whose
//! aligned start still fits is taken.

use super::{GpuError, GPU_PAGE, GPU_PAGES};
use std::cmp::Reverse;
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

/// A hole in a usable-size index: (usable size once aligned, size, newest first, start).
type UsableKey = (u64, u64, Reverse<u64>, u64);

/// A drm_mm-style allocator of page ranges.
#[derive(Clone, Debug)]
pub struct VaSpace {
    /// Holes by (size, newest first, start): the order `best_hole` / `next_hole` visit
    /// them in, smallest large enough first.
    by_size: BTreeSet<(u64, Reverse<u64>, u64)>,
    /// Holes by start → (size, age stamp): neighbours to merge on removal.
    by_start: BTreeMap<u64, (u64, u64)>,
    /// Allocated nodes by start → size.
    nodes: BTreeMap<u64, u64>,
    /// Per alignment of [`INDEXED`]: holes by (usable size once aligned, size, newest
    /// first, start), so an aligned best-fit search skips holes too small after
    /// alignment without walking them (same answer as the plain scan; a speed index
    /// only).
    by_usable: [BTreeSet<UsableKey>; INDEXED.len()],
    /// The next hole's age stamp (`add_hole` order: a larger stamp is a newer hole).
    stamp: u64,
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
            stamp: 0,
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

    /// `add_hole`: the hole becomes the newest of its size.
    fn add_hole(&mut self, start: u64, size: u64) {
        if size > 0 {
            let age = Reverse(self.stamp);
            self.stamp += 1;
            self.by_size.insert((size, age, start));
            self.by_start.insert(start, (size, age.0));
            for (i, a) in INDEXED.iter().enumerate() {
                self.by_usable[i].insert((usable(start, size, *a), size, age, start));
            }
        }
    }

    /// `rm_hole` of the hole at `start`; returns its size.
    fn take_hole(&mut self, start: u64) -> u64 {
        let (size, stamp) = self.by_start.remove(&start).expect("a hole starts there");
        let age = Reverse(stamp);
        self.by_size.remove(&(size, age, start));
        for (i, a) in INDEXED.iter().enumerate() {
            self.by_usable[i].remove(&(usable(start, size, *a), size, age, start));
        }
        size
    }

    /// Inserts a node of `pages` aligned to `align` pages (a power of two); returns its
    /// first page, or `None` if no hole fits.
    pub fn insert(&mut self, pages: u64, align: u64) -> Option<u64> {
        debug_assert!(align.is_power_of_two() && pages > 0);
        let start = match INDEXED.iter().position(|&a| a == align) {
            // Best fit = the first (size, newest first) among holes whose usable part
            // holds the node; a hole's size is at least its usable part, so the scan
            // stops once the usable part exceeds the best size found.
            Some(i) => {
                let mut best: Option<(u64, Reverse<u64>, u64)> = None;
                for &(u, size, age, start) in self.by_usable[i].range((pages, 0, Reverse(u64::MAX), 0)..) {
                    if best.is_some_and(|b| u > b.0) {
                        break;
                    }
                    match best {
                        Some(b) if b <= (size, age, start) => {}
                        _ => best = Some((size, age, start)),
                    }
                }
                best?.2
            }
            None => {
                self.by_size
                    .range((pages, Reverse(u64::MAX), 0)..)
                    .find(|&&(size, _, start)| usable(start, size, align) >= pages)?
                    .2
            }
        };
        let at = start.next_multiple_of(align);
        // drm_mm_insert_node_in_range: rm_hole, then the part before the node, then the
        // part after it (the newest).
        let size = self.take_hole(start);
        self.add_hole(start, at - start);
        self.add_hole(at + pages, start + size - (at + pages));
        self.nodes.insert(at, pages);
        Some(at)
    }

    /// Removes the node starting at `start`; returns its size in pages.
    pub fn remove(&mut self, start: u64) -> Option<u64> {
        let pages = self.nodes.remove(&start)?;
        // drm_mm_remove_node: the node's own hole and the previous node's go; the
        // previous node's hole, now spanning both, is added (the newest).
        let (mut lo, mut hi) = (start, start + pages);
        if let Some((&s, &(sz, _))) = self.by_start.range(..start).next_back() {
            if s + sz == start {
                self.take_hole(s);
                lo = s;
            }
        }
        if self.by_start.contains_key(&hi) {
            hi += self.take_hole(hi);
        }
        self.add_hole(lo, hi - lo);
        Some(pages)
    }
}

/// How many BOs of `bytes` each fit the V3D space under `policy` (gemfs active for the
/// size-class policy, as it is when that policy applies), found by allocating until the
/// allocator refuses.
pub fn capacity(policy: AlignPolicy, bytes: u64) -> u64 {
    capacity_on(policy, bytes, GPU_PAGE)
}

/// [`capacity`] on a kernel of `kernel_page` bytes: a BO's size is a whole number of
/// kernel pages (shmem backs it with them; `drm_gem_object_init` takes a PAGE_SIZE
/// multiple), so on the Pi 5's 16 KiB pages a 4 KiB BO takes 4 GPU pages of VA.
pub fn capacity_on(policy: AlignPolicy, bytes: u64, kernel_page: u64) -> u64 {
    let mut v = VaSpace::default();
    let pages = bytes.next_multiple_of(kernel_page.max(GPU_PAGE)).div_ceil(GPU_PAGE);
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
    /// Issue 49, defect 6: among holes of equal size drm_mm takes the newest
    /// (`insert_hole_size` puts it after its equals; `best_hole` ends on the last one
    /// large enough). Four 5-page nodes at 0, 5, 10, 15 (tail hole [20, 100)); removing
    /// the first makes hole [0, 5), then removing the third makes [10, 15), the newer.
    /// A 5-page node goes to 10 (the lowest-address rule gave 0), the next to 0.
    #[test]
    fn equal_holes_newest_first() {
        let mut v = VaSpace::new(0, 100);
        let n: Vec<u64> = (0..4).map(|_| v.insert(5, 1).unwrap()).collect();
        assert_eq!(n, [0, 5, 10, 15]);
        v.remove(0).unwrap();
        v.remove(10).unwrap();
        assert_eq!(v.insert(5, 1), Some(10));
        assert_eq!(v.insert(5, 1), Some(0));
        assert_eq!(v.insert(5, 1), Some(20), "then the tail");
    }

    /// The same with alignment, by the plain scan (4 pages, not indexed) and by the
    /// usable-size index (16 pages). Nodes 3 @0, 5 @3, 3 @8, 5 @11, 4 @16: removing the
    /// 5-page nodes leaves holes [3, 8) then [11, 16). A 4-page node aligned to 4 fits
    /// both (at 4 and at 12): the newer gives 12 (the lowest-address rule gave 4). With
    /// 16: nodes 8 @0, 32 @8, 8 @40, 32 @48, 8 @80; holes [8, 40) then [48, 80); a
    /// 16-page node aligned to 16 fits both (16 and 48): 48; its hole's tail [64, 80)
    /// is then the smallest that fits, and [8, 40) comes after it.
    #[test]
    fn equal_holes_newest_first_with_alignment() {
        let mut v = VaSpace::new(0, 100);
        for p in [3, 5, 3, 5, 4] {
            v.insert(p, 1).unwrap();
        }
        v.remove(3).unwrap();
        v.remove(11).unwrap();
        assert_eq!(v.insert(4, 4), Some(12));
        assert_eq!(v.insert(4, 4), Some(4));
        let mut v = VaSpace::new(0, 200);
        for p in [8, 32, 8, 32, 8] {
            v.insert(p, 1).unwrap();
        }
        v.remove(8).unwrap();
        v.remove(48).unwrap();
        assert_eq!(v.insert(16, 16), Some(48));
        // Then the smallest hole that fits: [64, 80), left of 16 pages.
        assert_eq!(v.insert(16, 16), Some(64));
        assert_eq!(v.insert(16, 16), Some(16));
    }
}
