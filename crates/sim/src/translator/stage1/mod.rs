//! The stage-1 translator of a CPU core: a TLB hierarchy, page-walk caches and the
//! hardware walker over one page-table format.
//!
//! Order of events for one reference: look up the TLB path for its kind; on a hit fill
//! the levels looked up before it; on a full miss walk (page-walk caches, then
//! descriptor reads), and if the walk faults raise the fault to the machine (whose OS
//! maps the page and shoots down stale entries) and walk again; fill every level on the
//! path. Stores need a writable, dirty translation: a clean one gets its dirty bit set
//! (counted as an A/D update), a read-only one faults.

mod ad;

use super::core_cache::CachedCore;
use super::host::{Host, NO_ROOT};
use super::{add_tlb_levels, Stop, Translator};
use crate::stats::{Report, Stats};
use crate::system::System;
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::cost::WalkCost;
use mmulab_model::mem::Memory;
use mmulab_model::pt::Format;
use mmulab_model::tlb::{Hierarchy, Lookup, TlbSpec};
use mmulab_model::translation::{Attrs, Translation};
use mmulab_model::walk::{set_leaf_attrs, translate, translate_recorded, Pwc, WalkReads, WalkResult};
use mmulab_trace::{AccessKind, MemRef};

mod cache;

/// Walk attempts one access may make (a fault between each) before the policy is
/// deemed broken.
const MAX_ATTEMPTS: u8 = 3;

/// Counters of one stage-1 translator.
#[derive(Clone, Debug, Default)]
struct WalkCounters {
    /// References by kind, indexed by `AccessKind as usize`.
    kinds: [u64; 3],
    /// Instruction fetches not translated because no TLB level serves instructions.
    ifetches_untranslated: u64,
    /// Hardware walks (a faulting walk and the walk after the fault count as two).
    walks: u64,
    /// Descriptors read by walks.
    walk_reads: u64,
    /// Walks by start level (a start level is below the format's levels, at most 8).
    start_levels: [u64; 8],
    /// Dirty bits written for stores that hit a clean TLB entry.
    dirty_writes: u64,
    /// Accessed/dirty updates of leaf descriptors.
    ad_updates: u64,
    /// Software A/D (`machine.ad = "software"`): Access flag faults taken.
    af_faults: u64,
    /// Software A/D: permission faults on stores to writable-clean pages taken.
    dirty_faults: u64,
}

/// One core's stage-1 translation hardware.
#[derive(Clone, Debug)]
pub struct Stage1 {
    /// TLB levels.
    pub tlbs: Hierarchy,
    /// Page-walk caches.
    pub pwc: Pwc,
    fmt: Format,
    /// `fmt.va_bits()`: addresses at or beyond 2^va_bits cannot be walked.
    va_bits: u32,
    has_instr_path: bool,
    cost: WalkCost,
    counters: WalkCounters,
    /// Host-side speed helpers of this core (never change a result).
    host: Host,
    /// With data caches (`[caches]`): walks record their descriptor reads here, which
    /// the machine then sends through the caches (stage1_cache.rs). Boxed: the
    /// translator without caches stays the size it was.
    pub(super) rec: Box<WalkReads>,
    /// Whether walks record (`[caches]` present).
    pub(super) cached: bool,
    /// The data-cache path's clock, cycles and miss slots (core_cache.rs).
    cc: super::core_cache::CoreCache,
    /// Accessed and dirty bits kept by software (`machine.ad = "software"`; ad.rs).
    soft_ad: bool,
}

impl Stage1 {
    /// A core with TLB levels `tlbs` (entered at `data_entry` and `instr_entry`) and
    /// page-walk caches of `pwc_entries` over format `fmt`.
    pub(crate) fn new(
        tlbs: Vec<TlbSpec>,
        data_entry: usize,
        instr_entry: Option<usize>,
        fmt: Format,
        pwc_entries: &[usize],
        cost: WalkCost,
    ) -> Stage1 {
        let tlbs = Hierarchy::new(tlbs, data_entry, instr_entry.unwrap_or(data_entry));
        let host = Host::new(fmt);
        Stage1 {
            tlbs,
            pwc: Pwc::new(fmt, pwc_entries),
            fmt,
            va_bits: fmt.va_bits(),
            has_instr_path: instr_entry.is_some(),
            cost,
            counters: WalkCounters::default(),
            host,
            rec: Box::default(),
            cached: false,
            cc: Default::default(),
            soft_ad: false,
        }
    }

    /// Accessed and dirty bits kept by software, with faults (ad.rs), or by the walker.
    pub(crate) fn set_software_ad(&mut self, on: bool) {
        self.soft_ad = on;
    }

    /// Prefetches into the host cache what a walk of `r` would read (no simulated
    /// effect).
    #[inline]
    pub(crate) fn prefetch(&self, r: &MemRef) {
        self.host.prefetch(r);
    }

    /// Walks so far.
    #[inline]
    pub(crate) fn walks(&self) -> u64 {
        self.counters.walks
    }

    /// The full lookup of one reference along its TLB path, the walk after a full
    /// miss, and the fills (see the module documentation for the order of events):
    /// one copy specialised for TLB levels that are all LRU with power-of-two set
    /// counts ([`Hierarchy::lru_pow2`]), one for any others. (The choice is made out of
    /// line, in [`Stage1::access_miss_plain`] and [`Stage1::access_miss_rec`], rather
    /// than in the run loop, whose code it would otherwise crowd; the copy's own test of
    /// the shape right after it folds into this one.)
    ///
    /// With data caches the walk records its reads, in a copy of its own
    /// ([`Stage1::access_miss_rec`]): the miss path of a machine without caches is the
    /// code it was. The choice is inlined at the caller: made inside an out-of-line
    /// function, it cost that function's register saves on every miss.
    #[inline(always)]
    pub(super) fn access_miss(&mut self, sys: &mut System, r: &MemRef, instr: bool) -> Result<(), Stop> {
        if self.cached {
            self.access_miss_rec(sys, r, instr)
        } else {
            self.access_miss_plain(sys, r, instr)
        }
    }

    /// [`Stage1::access_miss`] of a machine without data caches.
    #[inline(never)]
    fn access_miss_plain(&mut self, sys: &mut System, r: &MemRef, instr: bool) -> Result<(), Stop> {
        if self.tlbs.is_lru_pow2() {
            self.access_miss_as::<true, false>(sys, r, instr)
        } else {
            self.access_miss_as::<false, false>(sys, r, instr)
        }
    }

    /// [`Stage1::access_miss`] of a machine with data caches: the walk records its
    /// descriptor reads, and is inlined here rather than called (one call, its register
    /// saves and reloads, less per walk; on a machine with caches nearly every TLB miss
    /// walks).
    #[inline(never)]
    fn access_miss_rec(&mut self, sys: &mut System, r: &MemRef, instr: bool) -> Result<(), Stop> {
        if self.tlbs.is_lru_pow2() {
            self.access_miss_as::<true, true>(sys, r, instr)
        } else {
            self.access_miss_as::<false, true>(sys, r, instr)
        }
    }

    /// [`Stage1::access_miss`] for one shape of TLB levels (`FAST`: see there), with
    /// walks recording their reads if `REC` (the data-cache path).
    #[inline(always)]
    fn access_miss_as<const FAST: bool, const REC: bool>(
        &mut self,
        sys: &mut System,
        r: &MemRef,
        instr: bool,
    ) -> Result<(), Stop> {
        let tlbs = &mut self.tlbs;
        let look = lookup_as::<FAST>(tlbs, r.addr, r.asid, instr);
        match look.hit {
            Some((level, slot)) => {
                // Whether the hit was behind the entry level is taken first, right after
                // the lookup's returns, where the compiler can resolve it on each (an
                // entry-level hit has length 1). Tested after the store check instead, it
                // stayed a branch on a value: cachegrind counted 0.19 more mispredictions
                // per GUPS update with 2 MiB pages (0.70 against 0.51).
                let refill = look.len > 1;
                if r.kind == AccessKind::Store
                    && !tlbs.levels()[level].attrs_at(slot).has(Attrs::WRITABLE | Attrs::DIRTY)
                {
                    let t = tlbs.entry(level, slot, r.asid);
                    let path = tlbs.path(instr);
                    let mut p = [0u8; mmulab_model::tlb::MAX_DEPTH];
                    p[..look.len].copy_from_slice(&path[..look.len]);
                    return self.store_to_clean(sys, r, &p[..look.len], slot, t);
                }
                if refill {
                    let t = tlbs.entry(level, slot, r.asid);
                    fill_path_as::<FAST>(tlbs, instr, look.len - 1, &t, r.addr);
                }
                Ok(())
            }
            None => self.walk_fill::<FAST, REC>(sys, r, instr, look.len),
        }
    }

    /// A store hit a translation that is not writable-dirty. Writable-clean: the
    /// hardware sets the dirty bit in the descriptor and in every copy this core's TLB
    /// levels hold, and refills the levels above the hit (other cores' copies stay
    /// clean until a store finds them). Read-only: a permission fault; after the OS
    /// decides (e.g. demotion) and its shootdowns drop stale entries, the walk runs
    /// afresh and fills the whole path.
    #[cold]
    fn store_to_clean(
        &mut self,
        sys: &mut System,
        r: &MemRef,
        path: &[u8],
        hit_slot: usize,
        t: Translation,
    ) -> Result<(), Stop> {
        let hit_level = path[path.len() - 1] as usize;
        if !t.attrs.has(Attrs::WRITABLE) {
            return Err(Stop::Fault {
                upto: path.len() as u8,
                attempt: 0,
            });
        }
        if self.soft_ad {
            return self.soft_dirty_on_hit(sys, r, path.len(), t);
        }
        let si = sys.space(r.asid)?;
        let root = sys.root(si);
        let attrs = t.attrs.with(Attrs::DIRTY | Attrs::ACCESSED);
        set_leaf_attrs(&mut sys.mem, self.fmt, root, r.addr, attrs);
        self.counters.ad_updates += 1;
        self.counters.dirty_writes += 1;
        let t = Translation { attrs, ..t };
        let tlbs = &mut self.tlbs;
        tlbs.set_attrs(hit_level, hit_slot, t.attrs);
        tlbs.add_attrs(r.addr, r.asid, Attrs::DIRTY | Attrs::ACCESSED);
        tlbs.fill(&path[..path.len() - 1], &t, r.addr);
        Ok(())
    }

    /// A hardware walk for `r` and the fill of the first `upto` TLB levels of the path
    /// for its kind (`instr`) with its translation. The common case — a leaf whose
    /// accessed bit (and, for a store, writable and dirty bits) is already set — is this
    /// short path; faults, accessed/dirty updates and the walks after a fault are in
    /// [`Stage1::walk_slow`]. (Each branch fills on its own, so the fast one passes the
    /// translation straight from the walk to the fill.)
    #[inline(always)]
    fn walk_fill<const FAST: bool, const REC: bool>(
        &mut self,
        sys: &mut System,
        r: &MemRef,
        instr: bool,
        upto: usize,
    ) -> Result<(), Stop> {
        if r.addr >> self.va_bits != 0 {
            return Err(self.beyond_va(r).into());
        }
        let root = match self.host.root_cache {
            (asid, root) if asid == r.asid as u32 => root,
            _ => root_of(sys, &mut self.host, r.asid)?,
        };
        let res = self.walk_from::<REC>(&mut sys.mem, root, r);
        // The walk is counted on each branch rather than before them: then the fast
        // branch keeps the translation in registers instead of the whole result in memory.
        if let Some(t) = res.leaf {
            let need = if r.kind == AccessKind::Store {
                Attrs::ACCESSED | Attrs::DIRTY | Attrs::WRITABLE
            } else {
                Attrs::ACCESSED
            };
            if t.attrs.has(need) {
                self.count_walk(r, &res);
                fill_path_inline_as::<FAST>(&mut self.tlbs, instr, upto, &t, r.addr);
                return Ok(());
            }
        }
        self.count_walk(r, &res);
        self.walk_slow(sys, r, res, instr, upto, 0)
    }

    /// The hardware walk of `r` from `root`; with `REC` (the data-cache path) it also
    /// records its descriptor reads in `self.rec`.
    #[inline(always)]
    fn walk_from<const REC: bool>(&mut self, mem: &mut Memory, root: u64, r: &MemRef) -> WalkResult {
        if REC {
            translate_recorded(mem, self.fmt, root, r.asid, r.addr, &mut self.pwc, &mut self.rec)
        } else {
            translate(mem, self.fmt, root, r.asid, r.addr, &mut self.pwc)
        }
    }

    /// [`Stage1::walk_fill`] recording the walk's descriptor reads (the data-cache
    /// path) with the general TLB fill: the walk after a permission fault on a TLB hit
    /// ([`Translator::resume`]); the miss path has its own copy inlined
    /// ([`Stage1::access_miss_rec`]). Out of line, so that the resume of a machine
    /// without caches stays the code it was.
    #[inline(never)]
    fn walk_fill_rec(&mut self, sys: &mut System, r: &MemRef, instr: bool, upto: usize) -> Result<(), Stop> {
        self.walk_fill::<false, true>(sys, r, instr, upto)
    }

    /// The walk would index with the low bits only: refuse instead of aliasing.
    #[cold]
    fn beyond_va(&self, r: &MemRef) -> SimError {
        SimError::Model(mmulab_model::ModelError::Conflict(format!(
            "address {:#x} is beyond the {}-bit virtual address space of {} page tables (move the trace or workload base, e.g. base=0x40000000)",
            r.addr,
            self.fmt.va_bits(),
            self.fmt.arch_name()
        )))
    }

    /// Counts walk `res` of `r` (walks, reads, start level; the report derives the
    /// cycles from them) and remembers where its leaf is in the host's walk memo.
    #[inline(always)]
    fn count_walk(&mut self, r: &MemRef, res: &WalkResult) {
        let c = &mut self.counters;
        c.walks += 1;
        c.walk_reads += res.reads;
        c.start_levels[res.start_level & 7] += 1;
        if let Some((_, _, level)) = res.leaf_at {
            self.host.remember_leaf(r, res.leaf_host, level);
        }
    }

    /// The rest of an access after walk `res` (attempt `attempt`) found no usable leaf:
    /// a fault (no leaf, or a store to a read-only page) is raised; a leaf without the
    /// accessed (or a store's dirty) bit gets it set; then the first `upto` levels of
    /// the path are filled.
    #[cold]
    #[inline(never)]
    fn walk_slow(
        &mut self,
        sys: &mut System,
        r: &MemRef,
        res: WalkResult,
        instr: bool,
        upto: usize,
        attempt: u8,
    ) -> Result<(), Stop> {
        let t = match res.leaf {
            // A write to a read-only page (a permission fault), or no leaf.
            Some(t) if r.kind == AccessKind::Store && !t.attrs.has(Attrs::WRITABLE) => None,
            Some(t) => Some(t),
            None => None,
        };
        let Some(t) = t else {
            return Err(Stop::Fault {
                upto: upto as u8,
                attempt: attempt + 1,
            });
        };
        // The walker sets the accessed bit, and for a store to a writable page the
        // dirty bit too, in one descriptor update.
        let mut want = Attrs::ACCESSED;
        if r.kind == AccessKind::Store && t.attrs.has(Attrs::WRITABLE) {
            want |= Attrs::DIRTY;
        }
        let t = if t.attrs.has(want) {
            t
        } else if self.soft_ad && attempt == 0 {
            let at = res.leaf_at.expect("a leaf has a location");
            return self.soft_ad_fault(sys, r, t, want, at, instr, upto);
        } else if self.soft_ad {
            // The walk after a page fault: the handler installed the entry young (and
            // dirty for a store) itself, as the kernels do (ad.rs); no second fault.
            let (table, index, level) = res.leaf_at.expect("a leaf has a location");
            let raw = sys.mem.pt.read(table, index);
            sys.mem
                .pt
                .write(table, index, self.fmt.with_attrs(level, raw, t.attrs.with(want)));
            Translation {
                attrs: t.attrs.with(want),
                ..t
            }
        } else {
            let attrs = t.attrs.with(want);
            let (table, index, level) = res.leaf_at.expect("a leaf has a location");
            // Rewrite this descriptor's bits only: for a contiguous group `t.pa` is the
            // group's base, not this entry's address.
            let raw = sys.mem.pt.read(table, index);
            sys.mem.pt.write(table, index, self.fmt.with_attrs(level, raw, attrs));
            self.counters.ad_updates += 1;
            Translation { attrs, ..t }
        };
        self.tlbs.fill_path(instr, upto, &t, r.addr);
        Ok(())
    }
}

/// The TLB lookup for one shape of levels: with `FAST` (chosen by
/// `Stage1::access_miss`) through the hierarchy's [`Hierarchy::lru_pow2`] view, which
/// exists only for the shape it is specialised for; otherwise the general lookup.
#[inline(always)]
fn lookup_as<const FAST: bool>(tlbs: &mut Hierarchy, va: u64, asid: Asid, instr: bool) -> Lookup {
    if FAST {
        match tlbs.lru_pow2() {
            Some(mut v) => v.lookup(va, asid, instr),
            None => lookup_general(tlbs, va, asid, instr),
        }
    } else {
        tlbs.lookup(va, asid, instr)
    }
}

/// [`Hierarchy::fill_path`] for one shape of levels (`FAST`: see [`lookup_as`]).
#[inline(always)]
fn fill_path_as<const FAST: bool>(tlbs: &mut Hierarchy, instr: bool, upto: usize, t: &Translation, va: u64) {
    if FAST {
        match tlbs.lru_pow2() {
            Some(mut v) => v.fill_path(instr, upto, t, va),
            None => fill_general(tlbs, instr, upto, t, va),
        }
    } else {
        tlbs.fill_path(instr, upto, t, va)
    }
}

/// [`Hierarchy::fill_path_inline`] for one shape of levels (`FAST`: see [`lookup_as`]).
#[inline(always)]
fn fill_path_inline_as<const FAST: bool>(tlbs: &mut Hierarchy, instr: bool, upto: usize, t: &Translation, va: u64) {
    if FAST {
        match tlbs.lru_pow2() {
            Some(mut v) => v.fill_path_inline(instr, upto, t, va),
            None => fill_general(tlbs, instr, upto, t, va),
        }
    } else {
        tlbs.fill_path_inline(instr, upto, t, va)
    }
}

/// The general lookup where `FAST` was chosen for a hierarchy without the view (never:
/// the choice is made from the same hierarchy's shape), kept out of the fast copy.
#[cold]
#[inline(never)]
fn lookup_general(tlbs: &mut Hierarchy, va: u64, asid: Asid, instr: bool) -> Lookup {
    tlbs.lookup(va, asid, instr)
}

/// The general fill where `FAST` was chosen for a hierarchy without the view (never, as
/// for [`lookup_general`]).
#[cold]
#[inline(never)]
fn fill_general(tlbs: &mut Hierarchy, instr: bool, upto: usize, t: &Translation, va: u64) {
    tlbs.fill_path(instr, upto, t, va)
}

/// The root table of `asid` (its space created on first use), remembered in the host's
/// root cache.
#[cold]
fn root_of(sys: &mut System, host: &mut Host, asid: Asid) -> Result<u64, SimError> {
    let si = sys.space(asid)?;
    let root = sys.root(si);
    host.root_cache = (asid as u32, root);
    Ok(root)
}

impl Translator for Stage1 {
    /// The common case — the entry level's most recent entry covers the address (runs
    /// of references to one page) — is inlined into the run loop; everything else is
    /// in `Stage1::access_miss`.
    #[inline(always)]
    fn access(&mut self, sys: &mut System, r: &MemRef) -> Result<(), Stop> {
        let kind = r.kind;
        self.counters.kinds[kind as usize] += 1;
        let instr = kind == AccessKind::IFetch;
        if instr && !self.has_instr_path {
            self.counters.ifetches_untranslated += 1;
            return Ok(());
        }
        // Fast path: same result as the full lookup, fewer steps.
        let entry = self.tlbs.entry_level(instr);
        if let Some(attrs) = entry.mru_hit(r.addr, r.asid) {
            if kind != AccessKind::Store || attrs.has(Attrs::WRITABLE | Attrs::DIRTY) {
                return Ok(());
            }
            // A store to a clean entry: undo the count and take the full path.
            entry.undo_mru_hit();
        }
        self.access_miss(sys, r, instr)
    }

    /// Attempt 0: the walk after a permission fault on a TLB hit, afresh with the
    /// whole retry budget; later attempts: the walk after a faulting walk.
    fn resume(&mut self, sys: &mut System, r: &MemRef, upto: u8, attempt: u8) -> Result<(), Stop> {
        let instr = r.kind == AccessKind::IFetch;
        let upto = upto as usize;
        if attempt == 0 {
            return if self.cached {
                self.walk_fill_rec(sys, r, instr, upto)
            } else {
                self.walk_fill::<false, false>(sys, r, instr, upto)
            };
        }
        if attempt >= MAX_ATTEMPTS {
            return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "the {} policy left va {:#x} unmapped or read-only for this access after three faults (a policy bug)",
                sys.os.name(),
                r.addr
            )))
            .into());
        }
        let si = sys.space(r.asid)?;
        let root = sys.root(si);
        let res = if self.cached {
            self.walk_from::<true>(&mut sys.mem, root, r)
        } else {
            self.walk_from::<false>(&mut sys.mem, root, r)
        };
        self.count_walk(r, &res);
        self.walk_slow(sys, r, res, instr, upto, attempt)
    }

    fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) {
        self.tlbs.invalidate_range(asid, start, end);
        self.pwc.invalidate_range(asid, start, end);
    }

    fn spaces_changed(&mut self) {
        self.host.root_cache = NO_ROOT;
    }

    /// Each descriptor read `walk.mem_latency`, or with data caches the latency of where
    /// it hit (stage1_cache.rs); the dirty-bit write of a store to a clean entry one
    /// `walk.mem_latency` (it does not go through the caches); each page-walk-cache
    /// lookup `walk.pwc_latency`.
    fn walk_cycles(&self) -> u64 {
        let w = &self.counters;
        let mem = self.cost.mem_latency as u64;
        let reads = if self.cached {
            self.cc.walk_cycles + w.dirty_writes * mem
        } else {
            (w.walk_reads + w.dirty_writes) * mem
        };
        reads
            + if self.pwc.enabled() {
                w.walks * self.cost.pwc_latency as u64
            } else {
                0
            }
    }
}

impl Report for Stage1 {
    /// TLB levels and page-walk caches summed into `s`; cycles derived, not counted on
    /// every reference: each lookup of a level costs its latency; each walk its
    /// descriptor reads and, with page-walk caches, one cache lookup; each dirty-bit
    /// write one memory reference.
    fn report(&self, s: &mut Stats) {
        let w = &self.counters;
        let c = &mut s.counters;
        for (n, k) in c.kinds.iter_mut().zip(w.kinds) {
            *n += k;
        }
        c.ifetches_untranslated += w.ifetches_untranslated;
        c.walks += w.walks;
        c.walk_reads += w.walk_reads;
        for (n, &k) in c.walk_start_level.iter_mut().zip(&w.start_levels) {
            *n += k;
        }
        c.dirty_writes += w.dirty_writes;
        c.ad_updates += w.ad_updates;
        c.af_faults += w.af_faults;
        c.dirty_faults += w.dirty_faults;
        c.fault_cycles += (w.af_faults + w.dirty_faults) * self.cost.fault_latency as u64;
        c.walk_cycles += Translator::walk_cycles(self);
        if self.cached {
            if let Some(cs) = &mut s.caches {
                cs.data_cycles += self.cc.data_cycles;
                cs.core_cycles.push(self.end_cycles());
            }
        }
        add_tlb_levels(&mut s.levels, self.tlbs.levels(), &mut c.tlb_cycles);
        let pwc = self.pwc.stats();
        for (i, h) in pwc.hits.iter().enumerate() {
            s.pwc_hits[i] += h;
        }
        s.pwc_lookups += pwc.lookups;
    }
}
