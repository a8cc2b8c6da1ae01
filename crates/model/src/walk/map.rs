//! Writing and reading leaf mappings through the walker. Only OS policies (and drivers
//! and hypervisors modelled as such) call these: they are the only writers of leaves.

use super::{walk, Action, Visit, Visitor, WalkCounts, WalkFlags};
use crate::addr::PageSize;
use crate::error::ModelError;
use crate::mem::Memory;
use crate::pt::{Format, Pte};
use crate::translation::Attrs;

/// A leaf found in a page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Virtual base.
    pub va: u64,
    /// Physical base.
    pub pa: u64,
    /// Size of the leaf.
    pub size: PageSize,
    /// Level it sits at.
    pub level: usize,
    /// Its bits.
    pub attrs: Attrs,
}

struct MapVisitor {
    fmt: Format,
    target: usize,
    /// Virtual base of the mapping (to place each entry of a group).
    va: u64,
    pa: u64,
    attrs: Attrs,
    /// True when the leaf is a group of entries (contiguous bit / repeated entries).
    group: bool,
    error: Option<ModelError>,
}

impl Visitor for MapVisitor {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        match (v.pte, v.level == self.target) {
            (Pte::Invalid, true) => {
                // One entry, or each entry of a group in turn (the walk visits every
                // entry of the range): ARMv8 entries hold their own piece's address,
                // ARMv7 large pages and supersections the group's base.
                let pa = if self.group && !self.fmt.repeated() {
                    self.pa + (v.va - self.va)
                } else {
                    self.pa
                };
                let raw = self.fmt.encode_leaf(v.level, pa, self.attrs);
                mem.pt.write(v.table, v.index, raw);
                if self.group {
                    Action::Continue
                } else {
                    Action::Stop
                }
            }
            (Pte::Invalid, false) => {
                let entries = self.fmt.levels()[v.level + 1].entries();
                match mem.alloc_table(entries) {
                    Ok(child) => {
                        mem.pt.write(v.table, v.index, self.fmt.encode_table(v.level, child));
                        Action::Continue
                    }
                    Err(e) => {
                        self.error = Some(e);
                        Action::Stop
                    }
                }
            }
            (Pte::Leaf { pa, .. }, _) => {
                self.error = Some(ModelError::Conflict(format!(
                    "va {:#x} is already mapped by a {} leaf at level {} (pa {pa:#x})",
                    v.va,
                    crate::addr::PageSize::from_shift(v.span.trailing_zeros()).map_or("?".into(), |p| p.to_string()),
                    v.level
                )));
                Action::Stop
            }
            (Pte::Table(_), _) => {
                self.error = Some(ModelError::Conflict(format!(
                    "cannot map a {} leaf at {:#x}: a lower-level table exists there",
                    PageSize::from_shift(v.span.trailing_zeros()).map_or("?".into(), |p| p.to_string()),
                    v.va
                )));
                Action::Stop
            }
        }
    }
}

/// Maps `[va, va + size)` to `pa` with one leaf of `size`, creating tables as needed.
/// A size the format maps as a group ([`Format::contig`]: ARMv8 contiguous-bit 64K/32M/2M/1G,
/// ARMv7 64K large pages and 16M supersections) writes every entry of the group, marked
/// with [`Attrs::CONTIG`]. On a conflict part of a group may have been written.
pub fn map_leaf(
    mem: &mut Memory,
    fmt: Format,
    root: u64,
    va: u64,
    pa: u64,
    size: PageSize,
    attrs: Attrs,
) -> Result<WalkCounts, ModelError> {
    let target = fmt
        .leaf_level(size)
        .ok_or_else(|| ModelError::Config(format!("{} has no {size} leaf", fmt.arch_name())))?;
    if va & size.offset_mask() != 0 || pa & size.offset_mask() != 0 {
        return Err(ModelError::Conflict(format!(
            "{size} mapping of va {va:#x} to pa {pa:#x} is not aligned"
        )));
    }
    let group = fmt.entries_for(target, size).is_some_and(|n| n > 1);
    if pa.saturating_add(size.bytes()) > fmt.max_pa() {
        return Err(ModelError::Config(format!(
            "pa {pa:#x} is beyond what {} descriptors can address",
            fmt.arch_name()
        )));
    }
    let attrs = if group {
        attrs.with(Attrs::CONTIG)
    } else {
        attrs.without(Attrs::CONTIG)
    };
    let mut v = MapVisitor {
        fmt,
        target,
        va,
        pa,
        attrs,
        group,
        error: None,
    };
    let mut counts = WalkCounts::default();
    // Tables are seen by the visitor only at the target level, where they conflict.
    let flags = WalkFlags::LEAF.union(WalkFlags::TABLE_PRE);
    walk(
        mem,
        fmt,
        root,
        0,
        va,
        va + size.bytes(),
        flags,
        &mut TargetOnlyTables(&mut v),
        &mut counts,
    );
    match v.error {
        Some(e) => Err(e),
        None => {
            if size == PageSize::K4 && !group {
                mem.rmap.set(pa >> crate::addr::FRAME_SHIFT, root, va);
            }
            Ok(counts)
        }
    }
}

/// Passes table visits to the inner visitor only at the target level (where a table is
/// a conflict); above it, tables are simply descended.
struct TargetOnlyTables<'a>(&'a mut MapVisitor);

impl Visitor for TargetOnlyTables<'_> {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if matches!(v.pte, Pte::Table(_)) && v.level != self.0.target {
            return Action::Continue;
        }
        self.0.visit(v, mem)
    }
}

struct FindLeaf {
    found: Option<(usize, u64, u64, u64)>, // level, table, index, raw
}

impl Visitor for FindLeaf {
    fn visit(&mut self, v: &Visit, _mem: &mut Memory) -> Action {
        if matches!(v.pte, Pte::Leaf { .. }) {
            self.found = Some((v.level, v.table, v.index as u64, v.raw));
        }
        Action::Stop
    }
}

fn find_leaf(mem: &mut Memory, fmt: Format, root: u64, va: u64) -> Option<(usize, u64, usize, u64)> {
    let mut f = FindLeaf { found: None };
    walk(
        mem,
        fmt,
        root,
        0,
        va,
        va + 1,
        WalkFlags::LEAF,
        &mut f,
        &mut WalkCounts::default(),
    );
    f.found.map(|(l, t, i, r)| (l, t, i as usize, r))
}

fn mapping_at(mem: &Memory, fmt: Format, va: u64, level: usize, table: u64, index: usize, raw: u64) -> Option<Mapping> {
    let Pte::Leaf { pa, attrs } = fmt.decode(level, raw) else {
        return None;
    };
    let (size, pa) = super::group_of(&mem.pt, fmt, table, index, level, raw).unwrap_or((fmt.leaf_size(level), pa));
    Some(Mapping {
        va: va & !size.offset_mask(),
        pa,
        size,
        level,
        attrs,
    })
}

/// The leaf mapping `va`, if any (a software walk: not counted as hardware references).
/// A valid contiguous or repeated group is reported as one mapping of the group's size
/// (its `attrs` are those of the entry covering `va`).
pub fn lookup(mem: &mut Memory, fmt: Format, root: u64, va: u64) -> Option<Mapping> {
    let (level, table, index, raw) = find_leaf(mem, fmt, root, va)?;
    mapping_at(mem, fmt, va, level, table, index, raw)
}

/// Removes the leaf mapping `va` (every entry of its group); returns what it mapped.
pub fn unmap_leaf(mem: &mut Memory, fmt: Format, root: u64, va: u64) -> Option<Mapping> {
    let (level, table, index, raw) = find_leaf(mem, fmt, root, va)?;
    let m = mapping_at(mem, fmt, va, level, table, index, raw)?;
    let n = fmt.entries_for(level, m.size).unwrap_or(1);
    let first = index & !(n - 1);
    for i in first..first + n {
        mem.pt.write(table, i, 0);
    }
    if m.size == PageSize::K4 {
        mem.rmap.clear_if(m.pa >> crate::addr::FRAME_SHIFT, root, m.va);
    }
    Some(m)
}

/// Moves the 4 KiB leaf at `va` (not part of a contiguous group) to the frame at
/// `new_pa`, keeping every attribute bit (page migration); the reverse map follows.
/// Returns the old mapping, or `None` (nothing changed) if `va` has no such leaf.
pub fn move_leaf(mem: &mut Memory, fmt: Format, root: u64, va: u64, new_pa: u64) -> Option<Mapping> {
    let (level, table, index, raw) = find_leaf(mem, fmt, root, va)?;
    let m = mapping_at(mem, fmt, va, level, table, index, raw)?;
    if m.size != PageSize::K4 || m.attrs.has(Attrs::CONTIG) || fmt.leaf_size(level) != PageSize::K4 {
        return None;
    }
    mem.pt.write(table, index, fmt.encode_leaf(level, new_pa, m.attrs));
    mem.rmap.clear_if(m.pa >> crate::addr::FRAME_SHIFT, root, m.va);
    mem.rmap.set(new_pa >> crate::addr::FRAME_SHIFT, root, m.va);
    Some(m)
}

/// Rewrites the attribute bits of the leaf descriptor covering `va` (e.g. setting
/// dirty); group membership and address are kept.
pub fn set_leaf_attrs(mem: &mut Memory, fmt: Format, root: u64, va: u64, attrs: Attrs) -> Option<Mapping> {
    let (level, table, index, raw) = find_leaf(mem, fmt, root, va)?;
    let m = mapping_at(mem, fmt, va, level, table, index, raw)?;
    let new = fmt.with_attrs(level, raw, attrs);
    mem.pt.write(table, index, new);
    Some(Mapping {
        attrs: Attrs((attrs.0 & !Attrs::CONTIG) | (m.attrs.0 & Attrs::CONTIG)),
        ..m
    })
}
