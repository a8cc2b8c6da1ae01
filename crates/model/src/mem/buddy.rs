use crate::addr::{FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use std::collections::BTreeSet;

/// Largest block order: 2^18 frames of 4 KiB = 1 GiB.
pub const MAX_ORDER: u32 = 18;

/// A binary buddy allocator over frame numbers. Free blocks of each order are kept in
/// ordered sets, so allocation always takes the lowest-addressed block: runs are
/// deterministic and fragmentation is reproducible.
///
/// With NUMA nodes ([`Buddy::with_nodes`], mem/numa.rs) no block crosses a node's
/// boundary: the range is carved node by node and a freed block merges only with a
/// buddy of its own node (as each node's zone has its own free areas in Linux). A
/// node's free lists are then the part of each order's set inside its range, so
/// [`Buddy::alloc_in`] is that node's buddy allocator, with blocks aligned on physical
/// addresses as the kernel's are.
#[derive(Clone, Debug)]
pub struct Buddy {
    frames: u64,
    free: Vec<BTreeSet<u64>>,
    free_frames: u64,
    /// Node ranges of frames `[start, end)`, in order, covering all frames; empty
    /// without NUMA.
    nodes: Vec<(u64, u64)>,
}

impl Buddy {
    /// An allocator over `bytes` of memory, all free.
    pub fn new(bytes: u64) -> Result<Buddy, ModelError> {
        if bytes == 0 || bytes % FRAME_SIZE != 0 {
            return Err(ModelError::Config(format!(
                "memory.size = {bytes} bytes: must be a positive multiple of 4 KiB"
            )));
        }
        let frames = bytes >> FRAME_SHIFT;
        let mut b = Buddy {
            frames,
            free: vec![BTreeSet::new(); MAX_ORDER as usize + 1],
            free_frames: 0,
            nodes: Vec::new(),
        };
        b.carve(0, frames);
        Ok(b)
    }

    /// An allocator over `bytes` of memory, all free, whose blocks never cross the
    /// boundaries of `nodes` (frame ranges `[start, end)` in order, covering every
    /// frame without gaps: mem/numa.rs's split).
    pub fn with_nodes(bytes: u64, nodes: &[(u64, u64)]) -> Result<Buddy, ModelError> {
        let mut b = Buddy::new(bytes)?;
        let covers = nodes.first().is_some_and(|n| n.0 == 0)
            && nodes.last().is_some_and(|n| n.1 == b.frames)
            && nodes.windows(2).all(|w| w[0].1 == w[1].0)
            && nodes.iter().all(|n| n.0 < n.1);
        if !covers {
            return Err(ModelError::Config(format!(
                "numa: node ranges {nodes:?} do not cover the {} frames of memory in order",
                b.frames
            )));
        }
        b.free.iter_mut().for_each(BTreeSet::clear);
        b.free_frames = 0;
        for &(lo, hi) in nodes {
            b.carve(lo, hi);
        }
        b.nodes = nodes.to_vec();
        Ok(b)
    }

    /// Adds `[lo, hi)` to the free lists in the largest naturally aligned blocks.
    fn carve(&mut self, lo: u64, hi: u64) {
        let mut pfn = lo;
        while pfn < hi {
            let mut order = MAX_ORDER;
            while pfn % (1 << order) != 0 || pfn + (1 << order) > hi {
                order -= 1;
            }
            self.free[order as usize].insert(pfn);
            self.free_frames += 1 << order;
            pfn += 1 << order;
        }
    }

    /// True if frames `a` and `b` lie in the same node (always, without nodes).
    fn same_node(&self, a: u64, b: u64) -> bool {
        let node = |p: u64| self.nodes.partition_point(|n| n.1 <= p);
        self.nodes.is_empty() || node(a) == node(b)
    }

    /// True if frames `[first, first + count)` lie in one node (always, without nodes).
    pub fn one_node(&self, first: u64, count: u64) -> bool {
        self.same_node(first, first + count - 1)
    }

    /// Allocates a naturally aligned block of 2^order frames inside frames `[lo, hi)`
    /// (one node's range): the lowest block of the smallest order that has one there,
    /// split down as [`Buddy::alloc`] does. `None` if that range has no such block.
    pub fn alloc_in(&mut self, lo: u64, hi: u64, order: u32) -> Option<u64> {
        let (from, pfn) =
            (order..=MAX_ORDER).find_map(|o| self.free[o as usize].range(lo..hi).next().map(|&p| (o, p)))?;
        self.free[from as usize].remove(&pfn);
        for o in (order..from).rev() {
            self.free[o as usize].insert(pfn + (1 << o));
        }
        self.free_frames -= 1 << order;
        Some(pfn)
    }

    /// Free frames inside frames `[lo, hi)` (a node's range: no free block crosses it).
    pub fn free_frames_in(&self, lo: u64, hi: u64) -> u64 {
        self.free
            .iter()
            .enumerate()
            .map(|(o, s)| (s.range(lo..hi).count() as u64) << o)
            .sum()
    }

    /// Total frames.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Free frames.
    pub fn free_frames(&self) -> u64 {
        self.free_frames
    }

    /// Free blocks of exactly `order`.
    pub fn free_blocks(&self, order: u32) -> usize {
        self.free[order as usize].len()
    }

    /// Frames that sit in free blocks of at least `order` (how much memory could still
    /// back pages of that size without compaction).
    pub fn free_frames_at_least(&self, order: u32) -> u64 {
        (order..=MAX_ORDER)
            .map(|o| (self.free[o as usize].len() as u64) << o)
            .sum()
    }

    /// True if frame `pfn` lies in a free block (a check for tests and audits).
    pub fn is_free(&self, pfn: u64) -> bool {
        (0..=MAX_ORDER).any(|o| self.free[o as usize].contains(&(pfn & !((1u64 << o) - 1))))
    }

    /// Allocates a naturally aligned block of 2^order frames; returns its first frame.
    pub fn alloc(&mut self, order: u32) -> Option<u64> {
        let from = (order..=MAX_ORDER).find(|&o| !self.free[o as usize].is_empty())?;
        let pfn = self.free[from as usize].pop_first()?;
        // Split down, returning the upper halves to the free lists.
        for o in (order..from).rev() {
            self.free[o as usize].insert(pfn + (1 << o));
        }
        self.free_frames -= 1 << order;
        Some(pfn)
    }

    /// Returns a block, merging it with free buddies.
    pub fn free(&mut self, pfn: u64, order: u32) {
        debug_assert!(pfn % (1 << order) == 0 && pfn + (1 << order) <= self.frames);
        self.free_frames += 1 << order;
        let (mut pfn, mut order) = (pfn, order);
        while order < MAX_ORDER {
            let buddy = pfn ^ (1 << order);
            if !self.same_node(pfn, buddy) || !self.free[order as usize].remove(&buddy) {
                break;
            }
            pfn = pfn.min(buddy);
            order += 1;
        }
        self.free[order as usize].insert(pfn);
    }

    /// Every free block smaller than `order`, as (first frame, order), in no particular
    /// order (compaction's census of partly free blocks).
    pub fn free_pieces_below(&self, order: u32) -> Vec<(u64, u32)> {
        (0..order.min(MAX_ORDER + 1))
            .flat_map(|o| self.free[o as usize].iter().map(move |&p| (p, o)))
            .collect()
    }

    /// Removes the free block of exactly `order` at `pfn` from the free lists (the
    /// caller now owns it); false if no such free block exists.
    pub fn take(&mut self, pfn: u64, order: u32) -> bool {
        let ok = self.free.get_mut(order as usize).is_some_and(|s| s.remove(&pfn));
        if ok {
            self.free_frames -= 1 << order;
        }
        ok
    }

    /// The error for an allocation that failed.
    pub fn oom(&self, what: &str) -> ModelError {
        ModelError::OutOfMemory(format!(
            "no free physical memory for {what}: {} of {} MiB free, largest free block {} KiB; \
             raise memory.size, use smaller pages, or turn on reclaim (os.reclaim.enabled = true)",
            (self.free_frames << FRAME_SHIFT) >> 20,
            (self.frames << FRAME_SHIFT) >> 20,
            (0..=MAX_ORDER)
                .rev()
                .find(|&o| !self.free[o as usize].is_empty())
                .map_or(0, |o| 4u64 << o),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_merges_back() {
        let mut b = Buddy::new(8 << 20).unwrap();
        assert_eq!(b.free_frames(), 2048);
        let a = b.alloc(0).unwrap();
        let c = b.alloc(9).unwrap();
        assert_eq!(a, 0);
        assert_eq!(c % 512, 0);
        assert_eq!(b.free_frames(), 2048 - 513);
        b.free(a, 0);
        b.free(c, 9);
        assert_eq!(b.free_frames(), 2048);
        assert_eq!(b.free_blocks(11), 1);
    }

    #[test]
    fn exhaustion_is_none_and_odd_sizes_carve() {
        let mut b = Buddy::new(12 << 10).unwrap();
        assert_eq!(b.free_blocks(1) + b.free_blocks(0), 2);
        assert!(b.alloc(2).is_none());
        assert!(b.alloc(1).is_some());
        assert!(b.alloc(0).is_some());
        assert!(b.alloc(0).is_none());
        assert!(b.oom("x").to_string().contains("memory.size"));
        assert!(Buddy::new(1000).is_err());
    }
}
