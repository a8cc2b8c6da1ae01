//! Direct compaction by page migration, in the spirit of Linux's mm/compaction.c: free
//! one naturally aligned block of a given order (2 MiB for THP) by moving the frames in
//! use inside it to free frames elsewhere.
//!
//! Rule:
//! 1. Census: the free pieces smaller than the block size tell how many frames of each
//!    aligned block are free. Blocks with no free frame and blocks already free are
//!    not candidates (a free block would have been allocated; a full block is most
//!    likely a huge page or page tables).
//! 2. Candidates are tried most-free first (fewest pages to migrate), then highest
//!    address first (Linux's free scanner starts at the top of the zone) — at most
//!    `MAX_CANDIDATES` blocks per attempt. A block qualifies if every used frame in it
//!    is *movable* — a 4 KiB user leaf that is not part of a contiguous group
//!    (checked against the page table through the reverse map, mem::Rmap), or a
//!    movable frame of `[memory.age]` — and enough free frames exist outside it.
//!    Page tables, unmovable aged frames (kernel memory), huge pages, contpte groups and
//!    reserved frames make a block unusable (Linux's unmovable pageblocks; migrating a
//!    whole large folio is not modelled).
//! 3. Migration: the block's free pieces are taken out of the free lists (isolated),
//!    then each used frame is copied to a frame from the allocator (so outside the
//!    block); the leaf is rewritten to the new frame with the same attributes
//!    (walk::move_leaf) and its range is shot down in its own address space. The
//!    emptied block is returned to the caller, allocated.
//!
//! Deferral (Linux's `defer_compaction` / `compaction_deferred`): after a failure the
//! next 2^shift requests skip compaction (`compaction_skipped_deferred`), the shift
//! growing by one per failure up to 6; a success resets it.
//!
//! Cost: one `compaction_cycles` per attempt (the scanners) plus
//! `migrate_cycles_per_page` per migrated page. Counters: `compaction_attempts`,
//! `compaction_success`, `compaction_fail`, `pages_migrated`.

use super::OsEvent;
use super::{OsStats, Shootdown};
use crate::addr::{FRAME_SHIFT, FRAME_SIZE};
use crate::mem::{Memory, Movable};
use crate::walk::move_leaf;
use std::collections::HashMap;

/// Blocks examined per compaction attempt at most.
pub const MAX_CANDIDATES: usize = 64;

/// Compaction settings (the cost of an attempt and of each migrated page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactCost {
    /// Cycles of one attempt (the migrate and free scanners).
    pub attempt_cycles: u64,
    /// Cycles to migrate one 4 KiB page (copy, unmap, remap, TLB shootdown).
    pub migrate_cycles_per_page: u64,
}

/// Linux's compaction deferral state (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct Deferral {
    shift: u32,
    considered: u64,
}

/// Largest deferral shift (COMPACT_MAX_DEFER_SHIFT).
pub const MAX_DEFER_SHIFT: u32 = 6;

impl Deferral {
    /// True if this request should skip compaction.
    pub fn deferred(&mut self) -> bool {
        if self.shift == 0 {
            return false;
        }
        self.considered += 1;
        if self.considered >= 1 << self.shift {
            self.considered = 0;
            return false;
        }
        true
    }

    fn failed(&mut self) {
        self.considered = 0;
        self.shift = (self.shift + 1).min(MAX_DEFER_SHIFT);
    }

    fn succeeded(&mut self) {
        *self = Deferral::default();
    }
}

/// [`compact`] unless deferred by earlier failures (`defer`); updates the deferral.
pub fn compact_deferred(
    mem: &mut Memory,
    order: u32,
    cost: CompactCost,
    defer: &mut Deferral,
    stats: &mut OsStats,
    shootdowns: &mut Vec<Shootdown>,
) -> Option<u64> {
    if defer.deferred() {
        stats.event(OsEvent::CompactionSkippedDeferred);
        return None;
    }
    let r = compact(mem, order, cost, stats, shootdowns);
    match r {
        Some(_) => defer.succeeded(),
        None => defer.failed(),
    }
    r
}

/// Tries to free one aligned block of 2^`order` frames by migration; on success the
/// block is allocated to the caller and its first frame returned. Charges the cost and
/// counts events in `stats`; pushes a shootdown per migrated page.
pub fn compact(
    mem: &mut Memory,
    order: u32,
    cost: CompactCost,
    stats: &mut OsStats,
    shootdowns: &mut Vec<Shootdown>,
) -> Option<u64> {
    stats.os_cycles += cost.attempt_cycles;
    stats.event(OsEvent::CompactionAttempts);
    match try_compact(mem, order) {
        Some((pfn, moved, n)) => {
            stats.event(OsEvent::CompactionSuccess);
            stats.add(OsEvent::PagesMigrated, n);
            stats.os_cycles += n * cost.migrate_cycles_per_page;
            for (asid, va) in moved {
                shootdowns.push((asid, va, va + FRAME_SIZE));
            }
            Some(pfn)
        }
        None => {
            stats.event(OsEvent::CompactionFail);
            None
        }
    }
}

/// What a successful compaction produced: the block, the (asid, va) of each migrated
/// user page, and the number of frames migrated (external ones included).
type Compacted = (u64, Vec<(u16, u64)>, u64);

fn try_compact(mem: &mut Memory, order: u32) -> Option<Compacted> {
    let size = 1u64 << order;
    let mut free_in: HashMap<u64, u64> = HashMap::new();
    let mut pieces: HashMap<u64, Vec<(u64, u32)>> = HashMap::new();
    for (pfn, o) in mem.buddy.free_pieces_below(order) {
        *free_in.entry(pfn >> order).or_default() += 1 << o;
        pieces.entry(pfn >> order).or_default().push((pfn, o));
    }
    let mut cands: Vec<(u64, u64)> = free_in.into_iter().collect();
    cands.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let total_free = mem.buddy.free_frames();
    for &(block, free) in cands.iter().take(MAX_CANDIDATES) {
        let used = size - free;
        if total_free - free < used {
            continue;
        }
        let first = block << order;
        // With NUMA nodes (mem/numa.rs) a block never spans two nodes.
        if first + size > mem.buddy.frames() || !mem.buddy.one_node(first, size) {
            continue;
        }
        let mut is_free = vec![false; size as usize];
        for &(p, o) in &pieces[&block] {
            for i in 0..(1u64 << o) {
                is_free[(p - first + i) as usize] = true;
            }
        }
        let mut owners = Vec::with_capacity(used as usize);
        let mut movable = true;
        for i in 0..size {
            if is_free[i as usize] {
                continue;
            }
            match mem.owner(first + i) {
                Some(o) => owners.push((first + i, o)),
                None => {
                    movable = false;
                    break;
                }
            }
        }
        if !movable {
            continue;
        }
        // Isolate the block's free pieces, then migrate every used frame out of it.
        for &(p, o) in &pieces[&block] {
            let taken = mem.buddy.take(p, o);
            debug_assert!(taken, "census piece {p}/{o} not free");
        }
        let mut moved = Vec::new();
        let n = owners.len() as u64;
        for (pfn, owner) in owners {
            let new = mem.buddy.alloc(0).expect("free frames outside the block were counted");
            debug_assert!(new >> order != block);
            match owner {
                Movable::External => {
                    mem.rmap.set_external(pfn, false);
                    mem.rmap.set_external(new, true);
                }
                Movable::Page { asid, va } => {
                    let (fmt, root) = mem.spaces[&asid];
                    move_leaf(mem, fmt, root, va, new << FRAME_SHIFT).expect("owner checked against the page table");
                    moved.push((asid, va));
                }
            }
        }
        return Some((first, moved, n));
    }
    None
}
