//! The hardware walk of one address: page-walk caches first, then descriptor reads from
//! the deepest cached table down to the leaf.

use super::{walk, Action, Pwc, Visit, Visitor, WalkCounts, WalkFlags};
use crate::addr::Asid;
use crate::mem::Memory;
use crate::pt::{Format, PageTableFormat, Pte, WithFormat};
use crate::translation::{Attrs, Translation};

/// The outcome of a hardware walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkResult {
    /// The translation, or `None` if the walk reached an invalid descriptor (a fault).
    pub leaf: Option<Translation>,
    /// Descriptors read (memory references).
    pub reads: u64,
    /// Level the walk started at (0 without a page-walk-cache hit).
    pub start_level: usize,
    /// Where the leaf descriptor lives: (table address, index, level), so the walker's
    /// accessed/dirty update can write it without walking again (with
    /// [`Format::with_attrs`]: for a contiguous group the translation's `pa` is the
    /// group's base, not this entry's address).
    pub leaf_at: Option<(u64, usize, usize)>,
    /// The host address of descriptor 0 of the leaf's table (0 without a leaf): for
    /// prefetch hints only ([`crate::mem::PtMem::host_addr`]).
    pub leaf_host: usize,
}

struct TranslateVisitor {
    fmt: Format,
    asid: Asid,
    tables: [(usize, u64); 8],
    ntables: usize,
    leaf: Option<Translation>,
    leaf_at: Option<(u64, usize, usize)>,
}

impl Visitor for TranslateVisitor {
    #[inline]
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        match v.pte {
            Pte::Table(child) => {
                if self.ntables < self.tables.len() {
                    self.tables[self.ntables] = (v.level, child);
                    self.ntables += 1;
                }
                Action::Continue
            }
            Pte::Leaf { pa, attrs } => {
                // A valid contiguous / repeated group is one translation of its size.
                let (va, pa, size) = match super::group_of(&mem.pt, self.fmt, v.table, v.index, v.level, v.raw) {
                    Some((gsize, gpa)) => (v.va & !gsize.offset_mask(), gpa, gsize),
                    None => (v.va, pa, self.fmt.leaf_size(v.level)),
                };
                self.leaf = Some(Translation {
                    va,
                    pa,
                    size,
                    asid: self.asid,
                    attrs,
                });
                self.leaf_at = Some((v.table, v.index, v.level));
                Action::Stop
            }
            Pte::Invalid => Action::Stop,
        }
    }
}

/// Walks `va` in the page table rooted at `root`, using and filling `pwc`.
///
/// The hardware walk is the simulator's hottest path after the TLB lookup, so it is a
/// direct loop over the levels rather than a [`walk`] with a visitor: one descriptor
/// read per level from the deepest cached table, a page-walk-cache fill for each table
/// descriptor read, the group check only for descriptors carrying the contiguous bit.
/// [`translate_visitor`] is the same walk through the generic walker; the test
/// `crates/model/tests/it/walker.rs` requires both to agree (results, reads and cache
/// state) on random page tables of every format.
#[inline(always)]
pub fn translate(mem: &mut Memory, fmt: Format, root: u64, asid: Asid, va: u64, pwc: &mut Pwc) -> WalkResult {
    // One copy of the loop per format, each with its levels and descriptor decoder
    // known at compile time (no format dispatch per level).
    fmt.with(Walk {
        mem,
        root,
        asid,
        va,
        pwc,
        sink: &mut (),
    })
}

/// Where a walk reports each descriptor it reads (table address, index): nowhere (`()`,
/// the plain [`translate`], compiled to nothing), or a [`WalkReads`] (the data-cache
/// path, which sends every descriptor read through the caches after the walk).
pub trait ReadSink {
    /// Descriptor `index` of the table at physical address `table` was read.
    fn read(&mut self, table: u64, index: usize);
}

impl ReadSink for () {
    #[inline(always)]
    fn read(&mut self, _table: u64, _index: usize) {}
}

/// The descriptor reads of one access's walks, in order (a faulting walk's and the
/// retry's together: at most 3 walks of at most 4 levels).
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkReads {
    /// (table address, index) of each read; the first `n` are valid.
    pub reads: [(u64, u32); 12],
    /// Reads recorded (at most 12; more are dropped).
    pub n: usize,
}

impl ReadSink for WalkReads {
    #[inline(always)]
    fn read(&mut self, table: u64, index: usize) {
        if let Some(r) = self.reads.get_mut(self.n) {
            *r = (table, index as u32);
            self.n += 1;
        }
    }
}

/// [`translate`] reporting each descriptor read to `sink`.
#[inline(always)]
pub fn translate_recorded(
    mem: &mut Memory,
    fmt: Format,
    root: u64,
    asid: Asid,
    va: u64,
    pwc: &mut Pwc,
    sink: &mut WalkReads,
) -> WalkResult {
    fmt.with(Walk {
        mem,
        root,
        asid,
        va,
        pwc,
        sink,
    })
}

/// The arguments of one [`translate`], run with the format's type.
struct Walk<'a, S: ReadSink> {
    mem: &'a mut Memory,
    root: u64,
    asid: Asid,
    va: u64,
    pwc: &'a mut Pwc,
    sink: &'a mut S,
}

impl<S: ReadSink> WithFormat for Walk<'_, S> {
    type Output = WalkResult;
    #[inline(always)]
    fn run<F: PageTableFormat>(self) -> WalkResult {
        translate_in::<F, S>(self.mem, self.root, self.asid, self.va, self.pwc, self.sink)
    }
}

/// [`translate`] for format `F`.
#[inline(always)]
fn translate_in<F: PageTableFormat, S: ReadSink>(
    mem: &mut Memory,
    root: u64,
    asid: Asid,
    va: u64,
    pwc: &mut Pwc,
    sink: &mut S,
) -> WalkResult {
    let (start_level, mut table) = pwc.lookup(va, asid).unwrap_or((0, root));
    let levels = F::LEVELS;
    let mut level = start_level;
    let mut reads = 0;
    while level < levels.len() {
        let index = levels[level].index(va);
        let descs = mem.pt.table(table);
        let raw = descs[index];
        reads += 1;
        sink.read(table, index);
        match F::decode(level, raw) {
            Pte::Table(child) => {
                pwc.fill(level, va, asid, child);
                table = child;
                level += 1;
            }
            Pte::Leaf { pa, attrs } => {
                let span_va = va & !(levels[level].span() - 1);
                let grouped = if attrs.has(Attrs::CONTIG) {
                    super::group_of_in::<F>(&mem.pt, table, index, level, raw)
                } else {
                    None
                };
                let (tva, tpa, size) = match grouped {
                    Some((gsize, gpa)) => (span_va & !gsize.offset_mask(), gpa, gsize),
                    None => (span_va, pa, F::leaf_size(level)),
                };
                return WalkResult {
                    leaf: Some(Translation {
                        va: tva,
                        pa: tpa,
                        size,
                        asid,
                        attrs,
                    }),
                    reads,
                    start_level,
                    leaf_at: Some((table, index, level)),
                    leaf_host: descs.as_ptr() as usize,
                };
            }
            Pte::Invalid => break,
        }
    }
    WalkResult {
        leaf: None,
        reads,
        start_level,
        leaf_at: None,
        leaf_host: 0,
    }
}

/// [`translate`] through the generic visitor walker: the reference the fast loop is
/// tested against (same result, same reads, same page-walk-cache fills).
pub fn translate_visitor(mem: &mut Memory, fmt: Format, root: u64, asid: Asid, va: u64, pwc: &mut Pwc) -> WalkResult {
    let (start_level, table) = pwc.lookup(va, asid).unwrap_or((0, root));
    let mut v = TranslateVisitor {
        fmt,
        asid,
        tables: [(0, 0); 8],
        ntables: 0,
        leaf: None,
        leaf_at: None,
    };
    let mut counts = WalkCounts::default();
    walk(
        mem,
        fmt,
        table,
        start_level,
        va,
        va + 1,
        WalkFlags::LEAF.union(WalkFlags::TABLE_PRE),
        &mut v,
        &mut counts,
    );
    for &(level, child) in &v.tables[..v.ntables] {
        pwc.fill(level, va, asid, child);
    }
    let leaf_host = v.leaf_at.and_then(|(t, _, _)| mem.pt.host_addr(t)).unwrap_or(0);
    WalkResult {
        leaf: v.leaf,
        reads: counts.reads,
        start_level,
        leaf_at: v.leaf_at,
        leaf_host,
    }
}
