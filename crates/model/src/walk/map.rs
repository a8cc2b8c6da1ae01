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
    pa: u64,
    attrs: Attrs,
    error: Option<ModelError>,
}

impl Visitor for MapVisitor {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        match (v.pte, v.level == self.target) {
            (Pte::Invalid, true) => {
                let raw = self.fmt.encode_leaf(v.level, self.pa, self.attrs);
                mem.pt.write(v.table, v.index, raw);
                Action::Stop
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
        return Err(ModelError::Conflict(format!("{size} mapping of va {va:#x} to pa {pa:#x} is not aligned")));
    }
    let mut v = MapVisitor { fmt, target, pa, attrs, error: None };
    let mut counts = WalkCounts::default();
    // Tables are seen by the visitor only at the target level, where they conflict.
    let flags = WalkFlags::LEAF.union(WalkFlags::TABLE_PRE);
    walk(mem, fmt, root, 0, va, va + size.bytes(), flags, &mut TargetOnlyTables(&mut v), &mut counts);
    match v.error {
        Some(e) => Err(e),
        None => Ok(counts),
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
    walk(mem, fmt, root, 0, va, va + 1, WalkFlags::LEAF, &mut f, &mut WalkCounts::default());
    f.found.map(|(l, t, i, r)| (l, t, i as usize, r))
}

/// The leaf mapping `va`, if any (a software walk: not counted as hardware references).
pub fn lookup(mem: &mut Memory, fmt: Format, root: u64, va: u64) -> Option<Mapping> {
    let (level, _, _, raw) = find_leaf(mem, fmt, root, va)?;
    match fmt.decode(level, raw) {
        Pte::Leaf { pa, attrs } => {
            let size = fmt.leaf_size(level);
            Some(Mapping { va: va & !size.offset_mask(), pa, size, level, attrs })
        }
        _ => None,
    }
}

/// Removes the leaf mapping `va`; returns what it mapped.
pub fn unmap_leaf(mem: &mut Memory, fmt: Format, root: u64, va: u64) -> Option<Mapping> {
    let m = lookup(mem, fmt, root, va)?;
    let (_, table, index, _) = find_leaf(mem, fmt, root, va)?;
    mem.pt.write(table, index, 0);
    Some(m)
}

/// Rewrites the attribute bits of the leaf mapping `va` (e.g. setting dirty).
pub fn set_leaf_attrs(mem: &mut Memory, fmt: Format, root: u64, va: u64, attrs: Attrs) -> Option<Mapping> {
    let m = lookup(mem, fmt, root, va)?;
    let (_, table, index, _) = find_leaf(mem, fmt, root, va)?;
    mem.pt.write(table, index, fmt.encode_leaf(m.level, m.pa, attrs));
    Some(Mapping { attrs, ..m })
}
