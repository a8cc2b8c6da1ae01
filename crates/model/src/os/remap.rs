//! Page-table surgery the superpage policies share (contiguous-bit and repeated-entry
//! groups are reported as one mapping of the group's size), built on the public walker API
//! (`walk` with visitor flags, `map_leaf`, `lookup`): enumerate leaves, clear a range,
//! drop the table under a superpage-sized range so one large leaf can replace it, and
//! tear down a whole address space. Nothing here allocates or frees user frames: the
//! callers own frames and decide.

use crate::addr::PageSize;
use crate::mem::Memory;
use crate::pt::{Format, Pte};
use crate::walk::{group_of, walk, Action, Mapping, Visit, Visitor, WalkCounts, WalkFlags};

struct Collect {
    fmt: Format,
    out: Vec<Mapping>,
}

impl Visitor for Collect {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if let Pte::Leaf { pa, attrs } = v.pte {
            // A valid contiguous / repeated group is one mapping, reported at its first entry.
            match group_of(&mem.pt, self.fmt, v.table, v.index, v.level, v.raw) {
                Some((size, gpa)) => {
                    if v.va & size.offset_mask() == 0 {
                        self.out.push(Mapping {
                            va: v.va,
                            pa: gpa,
                            size,
                            level: v.level,
                            attrs,
                        });
                    }
                }
                None => self.out.push(Mapping {
                    va: v.va,
                    pa,
                    size: self.fmt.leaf_size(v.level),
                    level: v.level,
                    attrs,
                }),
            }
        }
        Action::Continue
    }
}

/// Every leaf mapping any byte of `[start, end)`, in address order (a software walk).
pub fn leaves(mem: &mut Memory, fmt: Format, root: u64, start: u64, end: u64) -> Vec<Mapping> {
    let mut c = Collect { fmt, out: Vec::new() };
    walk(
        mem,
        fmt,
        root,
        0,
        start,
        end,
        WalkFlags::LEAF,
        &mut c,
        &mut WalkCounts::default(),
    );
    c.out
}

struct Zero {
    root: u64,
}

impl Visitor for Zero {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if let Pte::Leaf { pa, .. } = v.pte {
            mem.pt.write(v.table, v.index, 0);
            if v.span == crate::addr::FRAME_SIZE {
                mem.rmap.clear_if(pa >> crate::addr::FRAME_SHIFT, self.root, v.va);
            }
        }
        Action::Continue
    }
}

/// Clears every leaf mapping any byte of `[start, end)`; returns what they mapped.
/// Two passes: groups are recognised before any of their entries is cleared (clearing
/// the first entry of a contiguous group would make the rest look like single pages).
pub fn clear_leaves(mem: &mut Memory, fmt: Format, root: u64, start: u64, end: u64) -> Vec<Mapping> {
    let out = leaves(mem, fmt, root, start, end);
    walk(
        mem,
        fmt,
        root,
        0,
        start,
        end,
        WalkFlags::LEAF,
        &mut Zero { root },
        &mut WalkCounts::default(),
    );
    out
}

struct DropTable {
    level: usize,
    dropped: Option<u64>,
}

impl Visitor for DropTable {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if v.level == self.level {
            if let Pte::Table(child) = v.pte {
                mem.pt.write(v.table, v.index, 0);
                self.dropped = Some(child);
            }
            return Action::Stop;
        }
        Action::Continue
    }
}

/// Removes the (empty) table under the descriptor that would map `va` with a leaf of
/// `size`, so a leaf of `size` can be installed there. The caller must have cleared
/// the table's leaves first. Returns true if a table was dropped.
pub fn drop_table(mem: &mut Memory, fmt: Format, root: u64, va: u64, size: PageSize) -> bool {
    let Some(level) = fmt.leaf_level(size) else {
        return false;
    };
    let mut d = DropTable { level, dropped: None };
    walk(
        mem,
        fmt,
        root,
        0,
        va,
        va + 1,
        WalkFlags::TABLE_PRE.union(WalkFlags::LEAF),
        &mut d,
        &mut WalkCounts::default(),
    );
    match d.dropped {
        Some(t) => {
            mem.free_table(t);
            true
        }
        None => false,
    }
}

/// What occupies an aligned range of one superpage size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeState {
    /// Valid 4 KiB-or-smaller leaves inside the range (mapped base pages).
    pub small: u64,
    /// True if one leaf of the range's size (or larger) maps it.
    pub large: bool,
}

/// Counts what maps the aligned range `[va, va + size)`.
pub fn range_state(mem: &mut Memory, fmt: Format, root: u64, va: u64, size: PageSize) -> RangeState {
    let mut s = RangeState::default();
    for m in leaves(mem, fmt, root, va, va + size.bytes()) {
        if m.size >= size {
            s.large = true;
        } else {
            s.small += m.size.bytes() / crate::addr::FRAME_SIZE;
        }
    }
    s
}

struct Tables {
    out: Vec<u64>,
}

impl Visitor for Tables {
    fn visit(&mut self, v: &Visit, _mem: &mut Memory) -> Action {
        if let Pte::Table(child) = v.pte {
            self.out.push(child);
        }
        Action::Continue
    }
}

/// Clears every leaf of the address space and frees all its page tables including the
/// root. Returns the leaves (whose frames the caller frees).
pub fn teardown(mem: &mut Memory, fmt: Format, root: u64) -> Vec<Mapping> {
    let top = fmt.levels()[0];
    let end = top.span().saturating_mul(top.entries() as u64);
    let maps = clear_leaves(mem, fmt, root, 0, end);
    let mut t = Tables { out: Vec::new() };
    walk(
        mem,
        fmt,
        root,
        0,
        0,
        end,
        WalkFlags::TABLE_POST,
        &mut t,
        &mut WalkCounts::default(),
    );
    for table in t.out {
        mem.free_table(table);
    }
    mem.unregister_space(root);
    mem.free_table(root);
    maps
}
