//! Reproducible fragmentation: "age" a fresh memory with a seeded mix of allocations and
//! frees until the share of free memory that still sits in free 2 MiB (order-9 or larger)
//! blocks falls to a target.
//!
//! Rule (documented in docs/policies.md): first allocate `fill` of all frames as
//! single 4 KiB frames in random order of 2 MiB regions (a seeded shuffle), so every
//! 2 MiB region is touched; then free a random subset of those frames, one at a time,
//! until free memory reaches `1 - fill` of the total, stopping early freeing whole
//! regions only when the free-2M share would exceed the target. The frames kept
//! allocated are "pinned" (owned by nobody in the simulation, like kernel memory and
//! page cache of other programs) and stay allocated for the whole run.
//!
//! Why this way: a target share of free 2 MiB blocks is what decides whether a THP
//! fault or a reservation finds a contiguous extent, and it is the figure Linux reports
//! (/proc/buddyinfo, extfrag); a seed makes the same config give the same memory.

use mmulab_base::SplitMix64;

use super::Buddy;

/// The share of free frames that sit in free blocks of 2 MiB or more (1.0 = no
/// fragmentation, 0.0 = no free 2 MiB block at all). 1.0 when nothing is free.
pub fn free_2m_share(b: &Buddy) -> f64 {
    if b.free_frames() == 0 {
        return 1.0;
    }
    b.free_frames_at_least(9) as f64 / b.free_frames() as f64
}

/// Ages `b` (which should be fresh): pins `used` (0..1) of memory in scattered pages of
/// `unit` 4 KiB frames (1; or 4 and 16 for a kernel whose base page is 16 or 64 KiB, whose
/// memory never fragments below its page) so that the share of free memory in free
/// 2 MiB blocks is at most `target` (0..=1). Returns the frames pinned.
///
/// Each 2 MiB region gets pinned pages with probability `1 - target` (seeded), spread
/// at random inside it, until `used` of memory is pinned; regions chosen to stay clean
/// stay whole, so about `target` of the free memory remains in 2 MiB blocks. With
/// `unit = 1` the stream of choices is the 4 KiB one.
pub fn age(b: &mut Buddy, used: f64, target: f64, seed: u64, unit: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed ^ 0x6167_6521);
    let regions = b.frames() / 512;
    let unit = unit.clamp(1, 512);
    // Pages of `unit` frames per 2 MiB region.
    let slots = 512 / unit;
    let want = ((b.frames() as f64) * used.clamp(0.0, 0.95)) as u64 / unit;
    // Pick the regions that get pinned frames: a fraction (1 - target) of them, but at
    // least enough to hold `want` pages at `slots - 1` per region.
    let mut order: Vec<u64> = (0..regions).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let dirty_regions = (((regions as f64) * (1.0 - target.clamp(0.0, 1.0))).ceil() as u64)
        .max(want.div_ceil(slots.saturating_sub(1).max(1)))
        .min(regions);
    let chosen = &order[..dirty_regions as usize];
    // Take every frame (lowest first), then give back what is not pinned.
    let mut all = Vec::with_capacity(b.frames() as usize);
    while let Some(p) = b.alloc(0) {
        all.push(p);
    }
    let mut pinned = vec![false; b.frames() as usize];
    if dirty_regions > 0 {
        // At least one pinned page in each chosen region, then the rest at random
        // inside chosen regions (never all of it, so each stays usable for small pages).
        let mut count = vec![0u32; regions as usize];
        let mut left = want;
        for &r in chosen {
            if left == 0 {
                break;
            }
            let f = r * 512 + rng.below(slots) * unit;
            pinned[f as usize..(f + unit) as usize].fill(true);
            count[r as usize] += 1;
            left -= 1;
        }
        let mut guard = 0u64;
        while left > 0 && guard < want * 64 {
            guard += 1;
            let r = chosen[rng.below(chosen.len() as u64) as usize];
            if count[r as usize] as u64 >= slots - 1 {
                continue;
            }
            let f = r * 512 + rng.below(slots) * unit;
            if !pinned[f as usize] {
                pinned[f as usize..(f + unit) as usize].fill(true);
                count[r as usize] += 1;
                left -= 1;
            }
        }
    }
    let mut kept = Vec::new();
    for p in all {
        if pinned[p as usize] {
            kept.push(p);
        } else {
            b.free(p, 0);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aging_is_reproducible_and_hits_the_target() {
        let mut a = Buddy::new(256 << 20).unwrap();
        let mut b = Buddy::new(256 << 20).unwrap();
        let pa = age(&mut a, 0.2, 0.3, 1, 1);
        let pb = age(&mut b, 0.2, 0.3, 1, 1);
        assert_eq!(pa, pb);
        let share = free_2m_share(&a);
        assert!((0.2..=0.4).contains(&share), "share {share}");
        let mut c = Buddy::new(256 << 20).unwrap();
        age(&mut c, 0.2, 1.0, 1, 1);
        assert!(free_2m_share(&c) > 0.7, "{}", free_2m_share(&c));
        assert!(a.free_blocks(9) + a.free_blocks(10) < c.free_blocks(9) + c.free_blocks(10) + 1);
    }

    #[test]
    fn aging_in_64k_pages_pins_whole_pages() {
        let mut a = Buddy::new(256 << 20).unwrap();
        let pinned = age(&mut a, 0.2, 0.3, 1, 16);
        // 20 % of 65,536 frames, in whole 16-frame pages: 13,107 / 16 = 819 pages.
        assert_eq!(pinned.len(), 819 * 16);
        assert!(pinned
            .chunks(16)
            .all(|c| c[0] % 16 == 0 && c.windows(2).all(|w| w[1] == w[0] + 1)));
        // Free memory still comes in whole 64 KiB blocks.
        assert_eq!(a.free_frames() % 16, 0);
        assert!(a.alloc(4).is_some());
        let share = free_2m_share(&a);
        assert!((0.2..=0.4).contains(&share), "share {share}");
    }
}
