//! The page-table walker: one machinery for translation, mapping, promotion scans and
//! stage-2 splitting.
//!
//! [`walk`] visits every descriptor covering `[start, end)` from a given table and level,
//! in address order, calling the [`Visitor`] for the kinds of visit its [`WalkFlags`]
//! ask for — the design of KVM's `kvm_pgtable_walk`:
//!
//! * a table descriptor: `TABLE_PRE` callback, then (unless the callback said
//!   [`Action::SkipChildren`] or the child level is skipped) the child table is walked,
//!   then the `TABLE_POST` callback;
//! * a leaf or invalid descriptor: `LEAF` callback; then the descriptor is read again,
//!   and if the callback turned it into a table (mapping, splitting) the walk descends
//!   into it.
//!
//! Every descriptor read is counted in [`WalkCounts::reads`]: that is the walk's memory
//! references, which the cost model prices.

mod map;
mod pwc;
mod translate;

pub use map::{lookup, map_leaf, move_leaf, set_leaf_attrs, unmap_leaf, Mapping};
pub use pwc::{Pwc, PwcStats};
pub use translate::{translate, translate_recorded, translate_visitor, ReadSink, WalkReads, WalkResult};

use crate::addr::PageSize;
use crate::mem::PtMem;
use crate::pt::{Format, PageTableFormat, Pte, WithFormat};
use crate::translation::Attrs;

/// Which visits a walk makes and which levels it skips.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkFlags {
    bits: u8,
    /// Bit L set: never descend into tables of level L (e.g. skip level 3 when splitting).
    pub skip_levels: u8,
}

impl WalkFlags {
    /// Visit leaf and invalid descriptors.
    pub const LEAF: WalkFlags = WalkFlags {
        bits: 1,
        skip_levels: 0,
    };
    /// Visit table descriptors before their children.
    pub const TABLE_PRE: WalkFlags = WalkFlags {
        bits: 2,
        skip_levels: 0,
    };
    /// Visit table descriptors after their children.
    pub const TABLE_POST: WalkFlags = WalkFlags {
        bits: 4,
        skip_levels: 0,
    };

    /// Both sets of flags.
    pub const fn union(self, o: WalkFlags) -> WalkFlags {
        WalkFlags {
            bits: self.bits | o.bits,
            skip_levels: self.skip_levels | o.skip_levels,
        }
    }
    /// These flags, and never descend into tables of `level`.
    pub const fn skip_level(self, level: usize) -> WalkFlags {
        WalkFlags {
            bits: self.bits,
            skip_levels: self.skip_levels | (1 << level),
        }
    }
    #[inline]
    fn has(self, f: WalkFlags) -> bool {
        self.bits & f.bits != 0
    }
}

/// What a visit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VisitKind {
    /// A leaf or invalid descriptor.
    Leaf,
    /// A table descriptor, before its children.
    TablePre,
    /// A table descriptor, after its children.
    TablePost,
}

/// What the visitor sees.
#[derive(Clone, Copy, Debug)]
pub struct Visit {
    /// Kind of visit.
    pub kind: VisitKind,
    /// Level of the descriptor (0 = root).
    pub level: usize,
    /// Virtual address of the start of the range the descriptor maps.
    pub va: u64,
    /// Bytes the descriptor maps.
    pub span: u64,
    /// The raw descriptor.
    pub raw: u64,
    /// The decoded descriptor.
    pub pte: Pte,
    /// Physical address of the table holding it.
    pub table: u64,
    /// Its index in that table.
    pub index: usize,
}

/// What the visitor wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Go on.
    Continue,
    /// Do not descend into this table: after `TablePre`, or after a `Leaf` callback that
    /// installed a table whose children need no visit (KVM's skip-children RFC).
    SkipChildren,
    /// End the walk now.
    Stop,
}

/// A walk callback. It may rewrite descriptors through `mem` (the walker re-reads a leaf
/// descriptor after its callback).
pub trait Visitor {
    /// Called for each visit the flags ask for.
    fn visit(&mut self, v: &Visit, mem: &mut crate::mem::Memory) -> Action;
}

/// Counts of one or more walks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCounts {
    /// Descriptors read (memory references of the walk).
    pub reads: u64,
    /// Callbacks made.
    pub visits: u64,
    /// Descriptors read, per level (index 0 = root).
    pub reads_per_level: [u64; crate::pt::MAX_LEVELS],
}

/// Walks `[start, end)` from the table at `table` (of `level`) in `fmt`.
// The walker's inputs are the kernel walker's (table, level, range, flags, visitor):
// grouping them in a struct would only rename them at every call site.
#[allow(clippy::too_many_arguments)]
pub fn walk<V: Visitor>(
    mem: &mut crate::mem::Memory,
    fmt: Format,
    table: u64,
    level: usize,
    start: u64,
    end: u64,
    flags: WalkFlags,
    visitor: &mut V,
    counts: &mut WalkCounts,
) -> Action {
    let geom = fmt.levels()[level];
    let span = geom.span();
    let mut va = start;
    while va < end {
        let index = geom.index(va);
        let entry_va = va & !(span - 1);
        let next_va = entry_va.saturating_add(span);
        let mut raw = read(&mem.pt, table, index, counts);
        counts.reads_per_level[level] += 1;
        let mut pte = fmt.decode(level, raw);
        let mut visit = Visit {
            kind: VisitKind::Leaf,
            level,
            va: entry_va,
            span,
            raw,
            pte,
            table,
            index,
        };
        if !matches!(pte, Pte::Table(_)) {
            if flags.has(WalkFlags::LEAF) {
                counts.visits += 1;
                match visitor.visit(&visit, mem) {
                    Action::Stop => return Action::Stop,
                    // The callback installed a table it vouches for: no descent.
                    Action::SkipChildren => {
                        va = next_va;
                        continue;
                    }
                    Action::Continue => {}
                }
                // The callback may have installed a table (map, split): read again.
                raw = mem.pt.read(table, index);
                pte = fmt.decode(level, raw);
                visit.raw = raw;
                visit.pte = pte;
            }
        } else if flags.has(WalkFlags::TABLE_PRE) {
            visit.kind = VisitKind::TablePre;
            counts.visits += 1;
            match visitor.visit(&visit, mem) {
                Action::Stop => return Action::Stop,
                Action::SkipChildren => {
                    va = next_va;
                    continue;
                }
                Action::Continue => {}
            }
            raw = mem.pt.read(table, index);
            pte = fmt.decode(level, raw);
            visit.raw = raw;
            visit.pte = pte;
        }
        if let Pte::Table(child) = pte {
            if flags.skip_levels & (1 << (level + 1)) == 0 {
                let r = walk(mem, fmt, child, level + 1, va, end.min(next_va), flags, visitor, counts);
                if r == Action::Stop {
                    return Action::Stop;
                }
            }
            if flags.has(WalkFlags::TABLE_POST) {
                visit.kind = VisitKind::TablePost;
                counts.visits += 1;
                if visitor.visit(&visit, mem) == Action::Stop {
                    return Action::Stop;
                }
            }
        }
        if next_va == u64::MAX {
            break;
        }
        va = next_va;
    }
    Action::Continue
}

/// The group a leaf belongs to, if it is one entry of a valid group: (group size, group
/// physical base). ARMv7 large pages and supersections are groups by their descriptor
/// type (each entry holds the base; the hardware uses it as such). An ARMv8 contiguous
/// group is valid only when every entry of the aligned group is a leaf carrying the bit,
/// with the same permissions (access and dirty bits may differ: hardware updates one
/// entry), mapping the next piece of one aligned physical range; a group that breaks the
/// rule is UNPREDICTABLE on hardware, and mmulab treats each entry as a page of its own.
/// The check reads the group's other entries without counting them: a TLB that caches
/// groups relies on the contiguous-bit promise, it does not read the neighbours.
pub fn group_of(pt: &PtMem, fmt: Format, table: u64, index: usize, level: usize, raw: u64) -> Option<(PageSize, u64)> {
    fmt.with(GroupOf {
        pt,
        table,
        index,
        level,
        raw,
    })
}

/// The arguments of one [`group_of`], run with the format's type.
struct GroupOf<'a> {
    pt: &'a PtMem,
    table: u64,
    index: usize,
    level: usize,
    raw: u64,
}

impl WithFormat for GroupOf<'_> {
    type Output = Option<(PageSize, u64)>;
    fn run<F: PageTableFormat>(self) -> Self::Output {
        group_of_in::<F>(self.pt, self.table, self.index, self.level, self.raw)
    }
}

/// [`group_of`] for format `F`.
pub(crate) fn group_of_in<F: PageTableFormat>(
    pt: &PtMem,
    table: u64,
    index: usize,
    level: usize,
    raw: u64,
) -> Option<(PageSize, u64)> {
    let Pte::Leaf { pa, attrs } = F::decode(level, raw) else {
        return None;
    };
    if !attrs.has(Attrs::CONTIG) {
        return None;
    }
    let (n, gsize) = F::contig(level)?;
    if F::REPEATED {
        return (pa & gsize.offset_mask() == 0).then_some((gsize, pa));
    }
    let span = F::LEVELS[level].span();
    let first = index & !(n - 1);
    let gpa = pa.checked_sub((index - first) as u64 * span)?;
    if gpa & gsize.offset_mask() != 0 {
        return None;
    }
    let loose = !(Attrs::ACCESSED | Attrs::DIRTY);
    for i in 0..n {
        match F::decode(level, pt.read(table, first + i)) {
            Pte::Leaf { pa: p, attrs: a } if p == gpa + i as u64 * span && (a.0 ^ attrs.0) & loose == 0 => {}
            _ => return None,
        }
    }
    Some((gsize, gpa))
}

#[inline]
fn read(pt: &PtMem, table: u64, index: usize, counts: &mut WalkCounts) -> u64 {
    counts.reads += 1;
    pt.read(table, index)
}
