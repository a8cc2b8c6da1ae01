//! The machine: cores (TLB hierarchy + page-walk caches each), physical memory, address
//! spaces and the OS policy, built once from a validated [`MachineSpec`] and fed
//! references one at a time.
//!
//! Order of events for one reference: look up the TLB path for its kind; on a hit fill
//! the levels looked up before it; on a full miss walk (page-walk caches, then
//! descriptor reads), and if the walk faults let the OS map the page, apply its
//! shootdowns and walk again; fill every level on the path. Stores need a writable,
//! dirty translation: a clean one gets its dirty bit set (counted as an A/D update), a
//! read-only one faults to the OS.

use crate::config::{MachineSpec, OsSpec};
use crate::stats::Counters;
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::cost::WalkCost;
use mmulab_model::mem::Memory;
use mmulab_model::os::{Base, FaultCtx, Fixed, Mthp, Os, Reservation, Shootdown, Thp};
use mmulab_model::pt::Format;
use mmulab_model::space::AddressSpace;
use mmulab_model::tlb::Hierarchy;
use mmulab_model::translation::{Attrs, Translation};
use mmulab_model::walk::{set_leaf_attrs, translate, Pwc, WalkResult};
use mmulab_trace::control::{decode_unmap, is_unmap_marker, UnmapMarker};
use mmulab_trace::{AccessKind, MemRef};

/// One core's translation hardware.
#[derive(Clone, Debug)]
pub struct Core {
    /// TLB levels.
    pub tlbs: Hierarchy,
    /// Page-walk caches.
    pub pwc: Pwc,
}

/// A simulated machine.
pub struct Machine {
    pub(crate) spec: MachineSpec,
    pub(crate) cores: Vec<Core>,
    pub(crate) mem: Memory,
    spaces: Vec<Option<AddressSpace>>,
    pub(crate) os: Os,
    fmt: Format,
    /// `fmt.va_bits()`: addresses at or beyond 2^va_bits cannot be walked.
    va_bits: u32,
    /// The root table of the address space walked last: (asid, root), or asid
    /// `u32::MAX` for none. Cleared wherever address spaces can change (creation, exit,
    /// OS faults, unmaps and background work), so it never outlives its space.
    root_cache: (u32, u64),
    cost: WalkCost,
    has_instr_path: bool,
    /// Every core's TLB levels are LRU with power-of-two set counts
    /// ([`Hierarchy::is_lru_pow2`]): misses take the path specialised for that shape.
    tlb_lru_pow2: bool,
    shootdowns: Vec<Shootdown>,
    pub(crate) counters: Counters,
    /// Walks by start level, counted here with no range check (a start level is below
    /// the format's levels, at most 8); [`crate::Stats::collect`] copies them into
    /// `Counters::walk_start_level`.
    pub(crate) start_levels: [u64; 8],
    /// Background work and sampling (crate::background): next reference count at which
    /// `tick` runs; the hot path compares against it and nothing else.
    next_tick: u64,
    pub(crate) bg: crate::background::Background,
    /// An unmap range opened by its start marker: (asid, start).
    unmap_open: Option<(Asid, u64)>,
    /// Host-side only: where the leaf table of a recent walk lives in host memory, per
    /// region of `memo_shift` bits of address (direct-mapped by region), so
    /// [`Machine::prefetch`] can prefetch a coming walk's leaf descriptor with no load
    /// but the memo entry's (no walk of the upper levels, no table lookup). A stale
    /// entry (the table was freed or replaced) only prefetches a useless line: it is
    /// never read for a result.
    walk_memo: Box<[WalkMemo; MEMO_ENTRIES]>,
    memo_shift: u32,
    /// Per page-table level (index masked with 7): the shift and mask of its
    /// descriptor index, as the walk memo stores them (no format dispatch per walk).
    level_index: [(u32, u32); 8],
}

/// One entry of [`Machine`]'s walk memo: region tag (`va >> memo_shift`, asid in the top
/// bits; `u64::MAX` when empty), the host address of its leaf table's descriptors, and
/// the leaf level's index shift and mask.
#[derive(Clone, Copy)]
struct WalkMemo {
    tag: u64,
    base: usize,
    shift: u32,
    mask: u32,
}

const MEMO_ENTRIES: usize = 4096;

/// [`Machine`]'s `root_cache` when empty.
const NO_ROOT: (u32, u64) = (u32::MAX, 0);

#[inline]
fn memo_tag(va: u64, asid: Asid, shift: u32) -> u64 {
    (va >> shift) ^ ((asid as u64) << 48)
}

impl Machine {
    /// Builds a machine.
    pub fn new(spec: MachineSpec) -> Result<Machine, SimError> {
        crate::limits::check_host(&spec)?;
        let mem = Memory::new(spec.memory_bytes)?;
        let instr = spec.instr_entry.unwrap_or(spec.data_entry);
        let cores: Vec<Core> = (0..spec.cores)
            .map(|_| Core {
                tlbs: Hierarchy::new(spec.tlbs.clone(), spec.data_entry, instr),
                pwc: Pwc::new(spec.format, &spec.pwc_entries),
            })
            .collect();
        let os = match spec.os {
            OsSpec::Base => Os::Base(Base::default()),
            OsSpec::Fixed(size) => Os::Fixed(Fixed::new(size)),
            OsSpec::Reservation(ref c) => Os::Reservation(Reservation::new(c.clone())),
            OsSpec::Thp(ref t, ref k) => Os::Thp(Thp::new(t.clone(), k.clone())),
            OsSpec::Khugepaged(ref k) => Os::Thp(Thp::khugepaged_only(k.clone())),
            OsSpec::Mthp(ref c) => Os::Mthp(Mthp::new(c.clone())),
        };
        let mut os = os;
        os.set_reclaim(crate::config_os::reclaim_config(&spec.config.os).map_err(SimError::Config)?);
        let mut mem = mem;
        let bg = crate::background::Background::new(&spec, &mut mem);
        let nlevels = spec.tlbs.len();
        let tlb_lru_pow2 = cores.iter().all(|c| c.tlbs.is_lru_pow2());
        Ok(Machine {
            fmt: spec.format,
            va_bits: spec.format.va_bits(),
            root_cache: NO_ROOT,
            cost: spec.cost,
            has_instr_path: spec.instr_entry.is_some(),
            tlb_lru_pow2,
            cores,
            mem,
            spaces: Vec::new(),
            os,
            shootdowns: Vec::new(),
            counters: Counters::new(nlevels, spec.format.levels().len()),
            start_levels: [0; 8],
            next_tick: bg.next_tick(0),
            bg,
            walk_memo: Box::new(
                [WalkMemo {
                    tag: u64::MAX,
                    base: 0,
                    shift: 0,
                    mask: 0,
                }; MEMO_ENTRIES],
            ),
            level_index: {
                let mut t = [(0, 0); 8];
                for (i, g) in spec.format.levels().iter().enumerate().take(8) {
                    t[i] = (g.shift, (1u32 << g.bits) - 1);
                }
                t
            },
            memo_shift: {
                let l = spec.format.levels();
                l[l.len().saturating_sub(2)].shift
            },
            unmap_open: None,
            spec,
        })
    }

    /// Core `core` of the hot path, unchecked: every core index the machine passes is
    /// `r.core % cores.len()` or 0 (computed in [`Machine::access`]), and `cores`
    /// never changes length after [`Machine::new`].
    #[inline(always)]
    fn core_mut(&mut self, core: usize) -> &mut Core {
        debug_assert!(core < self.cores.len());
        // SAFETY: see above.
        unsafe { self.cores.get_unchecked_mut(core) }
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    /// The index of `asid`'s address space, created on first use.
    #[inline]
    fn space(&mut self, asid: Asid) -> Result<usize, SimError> {
        let i = asid as usize;
        if matches!(self.spaces.get(i), Some(Some(_))) {
            return Ok(i);
        }
        self.new_space(asid)
    }

    #[cold]
    fn new_space(&mut self, asid: Asid) -> Result<usize, SimError> {
        self.root_cache = NO_ROOT;
        let i = asid as usize;
        if self.spaces.len() <= i {
            self.spaces.resize(i + 1, None);
        }
        if self.spaces[i].is_none() {
            let mut s = AddressSpace::new(asid, self.fmt, &mut self.mem)?;
            for &(start, end) in &self.bg.trace_vmas {
                // /proc/PID/maps never lists overlapping VMAs; a damaged list is skipped
                // entry by entry and the inference rule covers the gaps.
                let _ = s.add_vma(start, end, false);
            }
            self.spaces[i] = Some(s);
        }
        Ok(i)
    }

    /// Simulates one reference. The common case — the entry level's most recent entry
    /// covers the address (runs of references to one page) — is inlined into the run
    /// loop; everything else is in `Machine::access_miss`.
    #[inline(always)]
    pub fn access(&mut self, r: &MemRef) -> Result<(), SimError> {
        self.counters.references += 1;
        if self.counters.references >= self.next_tick {
            self.tick()?;
        }
        if self.bg.track_touched {
            self.bg.touch(r);
        }
        let core = if self.cores.len() == 1 {
            0
        } else {
            r.core as usize % self.cores.len()
        };
        self.access_on(core, r)
    }

    /// True if the next `n` references can all take [`Machine::access_plain`]: the
    /// machine has one core, tracks no touched pages, and no background tick falls
    /// among them. (The run loop asks once per batch.)
    #[inline]
    pub fn plain_for(&self, n: usize) -> bool {
        self.cores.len() == 1
            && !self.bg.track_touched
            && self.counters.references.saturating_add(n as u64) < self.next_tick
    }

    /// [`Machine::access`] of a reference [`Machine::plain_for`] admitted (one core, no
    /// tracking, no tick due): the same events without the three per-reference tests.
    #[inline(always)]
    pub fn access_plain(&mut self, r: &MemRef) -> Result<(), SimError> {
        debug_assert!(self.cores.len() == 1 && !self.bg.track_touched && self.counters.references + 1 < self.next_tick);
        self.counters.references += 1;
        self.access_on(0, r)
    }

    /// [`Machine::access`] after the reference is counted and background work is
    /// done: its kind, the most-recent-entry fast path, else the full lookup.
    #[inline(always)]
    fn access_on(&mut self, core: usize, r: &MemRef) -> Result<(), SimError> {
        let kind = r.kind;
        self.counters.kinds[kind as usize] += 1;
        let instr = kind == AccessKind::IFetch;
        if instr && !self.has_instr_path {
            self.counters.ifetches_untranslated += 1;
            return Ok(());
        }
        // Fast path: same result as the full lookup, fewer steps.
        let entry = self.core_mut(core).tlbs.entry_level(instr);
        if let Some(attrs) = entry.mru_hit(r.addr, r.asid) {
            if kind != AccessKind::Store || attrs.has(Attrs::WRITABLE | Attrs::DIRTY) {
                return Ok(());
            }
            // A store to a clean entry: undo the count and take the full path.
            entry.undo_mru_hit();
        }
        self.access_miss(core, r, instr)
    }

    /// The full lookup of one reference along its TLB path, the walk after a full
    /// miss, and the fills (see the module documentation for the order of events):
    /// one copy specialised for TLB levels that are all LRU with power-of-two set
    /// counts (`tlb_lru_pow2`), one for any others. (The choice is made here, out of
    /// line, rather than in the run loop, whose code it would otherwise crowd.)
    #[inline(never)]
    fn access_miss(&mut self, core: usize, r: &MemRef, instr: bool) -> Result<(), SimError> {
        if self.tlb_lru_pow2 {
            self.access_miss_as::<true>(core, r, instr)
        } else {
            self.access_miss_as::<false>(core, r, instr)
        }
    }

    /// [`Machine::access_miss`] for one shape of TLB levels (`FAST`: see there).
    #[inline(always)]
    fn access_miss_as<const FAST: bool>(&mut self, core: usize, r: &MemRef, instr: bool) -> Result<(), SimError> {
        let tlbs = &mut self.core_mut(core).tlbs;
        let look = tlbs.lookup_as::<FAST>(r.addr, r.asid, instr);
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
                    return self.store_to_clean(core, r, instr, &p[..look.len], slot, t);
                }
                if refill {
                    let t = tlbs.entry(level, slot, r.asid);
                    tlbs.fill_path::<FAST>(instr, look.len - 1, &t, r.addr);
                }
                Ok(())
            }
            // Control references (the exit marker, unmap markers) all lie at or above
            // the exit address: one compare on the common path.
            None if r.addr >= crate::background::EXIT_ADDR => self.marker_or_walk(core, r, instr, look.len),
            None => self.walk_fill::<FAST>(core, r, instr, look.len),
        }
    }

    /// A full miss at or above the exit address: the exit or an unmap marker, else an
    /// ordinary address (walked as any other).
    #[cold]
    #[inline(never)]
    fn marker_or_walk(&mut self, core: usize, r: &MemRef, instr: bool, upto: usize) -> Result<(), SimError> {
        const _: () = assert!(crate::background::EXIT_ADDR <= mmulab_trace::control::UNMAP_TAG);
        if r.addr == crate::background::EXIT_ADDR {
            self.exit(r.asid)
        } else if is_unmap_marker(r.addr) {
            self.unmap_marker(r)
        } else {
            self.walk_fill::<false>(core, r, instr, upto)
        }
    }

    /// A store hit a translation that is not writable-dirty. Writable-clean: the
    /// hardware sets the dirty bit in the descriptor and in every copy this core's TLB
    /// levels hold, and refills the levels above the hit (other cores' copies stay
    /// clean until a store finds them). Read-only: a permission fault; the OS decides (e.g. demotion) and
    /// its shootdowns drop stale entries; then the walk runs and fills the whole path.
    #[cold]
    fn store_to_clean(
        &mut self,
        core: usize,
        r: &MemRef,
        instr: bool,
        path: &[u8],
        hit_slot: usize,
        t: Translation,
    ) -> Result<(), SimError> {
        let hit_level = path[path.len() - 1] as usize;
        if t.attrs.has(Attrs::WRITABLE) {
            let t = self.set_dirty(r, t)?;
            let tlbs = &mut self.cores[core].tlbs;
            tlbs.set_attrs(hit_level, hit_slot, t.attrs);
            tlbs.add_attrs(r.addr, r.asid, Attrs::DIRTY | Attrs::ACCESSED);
            tlbs.fill(&path[..path.len() - 1], &t, r.addr);
        } else {
            self.fault(r)?;
            self.walk_fill::<false>(core, r, instr, path.len())?;
        }
        Ok(())
    }

    /// Sets the dirty (and accessed) bit of `t`'s leaf.
    fn set_dirty(&mut self, r: &MemRef, t: Translation) -> Result<Translation, SimError> {
        let si = self.space(r.asid)?;
        let root = self.spaces[si].as_ref().map(|s| s.root).unwrap_or_default();
        let attrs = t.attrs.with(Attrs::DIRTY | Attrs::ACCESSED);
        set_leaf_attrs(&mut self.mem, self.fmt, root, r.addr, attrs);
        self.counters.ad_updates += 1;
        self.counters.dirty_writes += 1;
        Ok(Translation { attrs, ..t })
    }

    /// A hardware walk for `r`, with OS faults as needed, and the fill of the first
    /// `upto` TLB levels of the path for its kind (`instr`) with its translation. The
    /// common case — a leaf whose accessed bit (and, for a store, writable and dirty
    /// bits) is already set — is this short path;
    /// faults, accessed/dirty updates and the walks after a fault are in
    /// [`Machine::walk_slow`]. (Each branch fills on its own, so the fast one passes the
    /// translation straight from the walk to the fill.)
    #[inline(always)]
    fn walk_fill<const FAST: bool>(
        &mut self,
        core: usize,
        r: &MemRef,
        instr: bool,
        upto: usize,
    ) -> Result<(), SimError> {
        if r.addr >> self.va_bits != 0 {
            return Err(self.beyond_va(r));
        }
        let root = match self.root_cache {
            (asid, root) if asid == r.asid as u32 => root,
            _ => self.root_of(r.asid)?,
        };
        let fmt = self.fmt;
        // SAFETY: see `core_mut` (a field borrow beside `self.mem`, so not through it).
        debug_assert!(core < self.cores.len());
        let pwc = &mut unsafe { self.cores.get_unchecked_mut(core) }.pwc;
        let res = translate(&mut self.mem, fmt, root, r.asid, r.addr, pwc);
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
                self.core_mut(core)
                    .tlbs
                    .fill_path_inline::<FAST>(instr, upto, &t, r.addr);
                return Ok(());
            }
        }
        self.count_walk(r, &res);
        self.walk_slow(core, r, res, instr, upto)
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

    /// The root table of `asid` (its space created on first use), remembered in
    /// `root_cache`.
    #[cold]
    fn root_of(&mut self, asid: Asid) -> Result<u64, SimError> {
        let si = self.space(asid)?;
        let root = self.spaces[si].as_ref().map(|s| s.root).unwrap_or_default();
        self.root_cache = (asid as u32, root);
        Ok(root)
    }

    /// One walk of `r` from `root`, counted (walks, reads, start level) and
    /// remembered in the walk memo.
    #[inline]
    fn walk_once(&mut self, core: usize, r: &MemRef, root: u64) -> WalkResult {
        let pwc = &mut self.cores[core].pwc;
        let res = translate(&mut self.mem, self.fmt, root, r.asid, r.addr, pwc);
        self.count_walk(r, &res);
        res
    }

    /// Counts walk `res` of `r` (walks, reads, start level; [`crate::Stats::collect`]
    /// derives the cycles from them) and remembers where its leaf is in the walk memo.
    #[inline(always)]
    fn count_walk(&mut self, r: &MemRef, res: &WalkResult) {
        let c = &mut self.counters;
        c.walks += 1;
        c.walk_reads += res.reads;
        self.start_levels[res.start_level & 7] += 1;
        if let Some((_, _, level)) = res.leaf_at {
            let tag = memo_tag(r.addr, r.asid, self.memo_shift);
            let (shift, mask) = self.level_index[level & 7];
            self.walk_memo[tag as usize % MEMO_ENTRIES] = WalkMemo {
                tag,
                base: res.leaf_host,
                shift,
                mask,
            };
        }
    }

    /// The rest of [`Machine::walk_fill`] after its first walk `res`: a fault (no leaf,
    /// or a store to a read-only page) lets the OS act and walks again, up to three
    /// walks in all; a leaf without the accessed (or a store's dirty) bit gets it set;
    /// then the first `upto` levels of the path are filled.
    #[cold]
    #[inline(never)]
    fn walk_slow(
        &mut self,
        core: usize,
        r: &MemRef,
        mut res: WalkResult,
        instr: bool,
        upto: usize,
    ) -> Result<(), SimError> {
        let t = self.walk_retry(core, r, &mut res)?;
        self.cores[core].tlbs.fill_path::<false>(instr, upto, &t, r.addr);
        Ok(())
    }

    /// The translation [`Machine::walk_slow`] fills: see there.
    #[inline]
    fn walk_retry(&mut self, core: usize, r: &MemRef, res: &mut WalkResult) -> Result<Translation, SimError> {
        let si = self.space(r.asid)?;
        for attempt in 0..3 {
            if attempt > 0 {
                let root = self.spaces[si].as_ref().map(|s| s.root).unwrap_or_default();
                *res = self.walk_once(core, r, root);
            }
            match res.leaf {
                Some(t) if r.kind == AccessKind::Store && !t.attrs.has(Attrs::WRITABLE) => {
                    // A write to a read-only page: a permission fault.
                    self.fault(r)?;
                }
                Some(t) => {
                    // The walker sets the accessed bit, and for a store to a writable
                    // page the dirty bit too, in one descriptor update.
                    let mut want = Attrs::ACCESSED;
                    if r.kind == AccessKind::Store && t.attrs.has(Attrs::WRITABLE) {
                        want |= Attrs::DIRTY;
                    }
                    if !t.attrs.has(want) {
                        let attrs = t.attrs.with(want);
                        let (table, index, level) = res.leaf_at.expect("a leaf has a location");
                        // Rewrite this descriptor's bits only: for a contiguous group
                        // `t.pa` is the group's base, not this entry's address.
                        let raw = self.mem.pt.read(table, index);
                        self.mem.pt.write(table, index, self.fmt.with_attrs(level, raw, attrs));
                        self.counters.ad_updates += 1;
                        return Ok(Translation { attrs, ..t });
                    }
                    return Ok(t);
                }
                None => self.fault(r)?,
            }
        }
        Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
            "the {} policy left va {:#x} unmapped or read-only for this access after three faults (a policy bug)",
            self.os.name(),
            r.addr
        ))))
    }

    /// Prefetches into the host cache what a walk of `r` would read (no simulated
    /// effect): the leaf descriptor, if the walk memo knows the leaf table of `r`'s region.
    #[inline]
    pub fn prefetch(&self, r: &MemRef) {
        let tag = memo_tag(r.addr, r.asid, self.memo_shift);
        let m = self.walk_memo[tag as usize % MEMO_ENTRIES];
        if m.tag == tag {
            let index = (r.addr >> m.shift) as usize & m.mask as usize;
            mmulab_model::hint::prefetch(m.base.wrapping_add(index * 8));
        }
    }

    /// Walks so far (the run loop uses the walk rate to decide whether to prefetch).
    #[inline]
    pub fn walks(&self) -> u64 {
        self.counters.walks
    }

    /// Background work and time-series samples, every `next_tick` references.
    #[cold]
    fn tick(&mut self) -> Result<(), SimError> {
        self.root_cache = NO_ROOT;
        let now = self.counters.references;
        self.shootdowns.clear();
        self.os.tick(mmulab_model::os::TickCtx {
            mem: &mut self.mem,
            spaces: &mut self.spaces,
            now,
            shootdowns: &mut self.shootdowns,
        })?;
        self.apply_shootdowns();
        if self.bg.sample_due(now) {
            let s = crate::Stats::collect(self);
            self.bg.sample(now, &s);
        }
        self.next_tick = self.bg.next_tick(now);
        Ok(())
    }

    /// Ends address space `asid` (the exit marker reference): the OS frees its memory
    /// and every core drops its translations.
    #[cold]
    fn exit(&mut self, asid: Asid) -> Result<(), SimError> {
        self.root_cache = NO_ROOT;
        if let Some(space) = self.spaces.get_mut(asid as usize).and_then(Option::take) {
            self.os.exit(&mut self.mem, &space);
            for c in &mut self.cores {
                c.tlbs.invalidate_range(asid, 0, u64::MAX);
                c.pwc.invalidate_range(asid, 0, u64::MAX);
            }
            self.bg.forget(asid);
        }
        Ok(())
    }

    /// An unmap marker (mmulab_trace::control): a start opens the range, the end marker
    /// of the same address space unmaps it; malformed or unpaired markers are errors.
    #[cold]
    fn unmap_marker(&mut self, r: &MemRef) -> Result<(), SimError> {
        let bad = |what: String| {
            SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "unmap marker {:#x} (asid {}): {what}",
                r.addr, r.asid
            )))
        };
        match (decode_unmap(r.addr), self.unmap_open) {
            (Some(UnmapMarker::Start(start)), None) => {
                self.unmap_open = Some((r.asid, start));
                Ok(())
            }
            (Some(UnmapMarker::Start(_)), Some((a, s))) => Err(bad(format!(
                "a second start while the range from {s:#x} of asid {a} is open"
            ))),
            (Some(UnmapMarker::End(_)), None) => Err(bad("an end marker without its start marker".into())),
            (Some(UnmapMarker::End(end)), Some((asid, start))) => {
                self.unmap_open = None;
                if asid != r.asid {
                    return Err(bad(format!("the open range belongs to asid {asid}")));
                }
                if end <= start {
                    return Err(bad(format!("the range [{start:#x}, {end:#x}) is empty or inverted")));
                }
                self.unmap(asid, start, end)
            }
            _ => Err(bad("the low 12 bits must be 0 (start) or 1 (end)".into())),
        }
    }

    /// At the end of a trace: an unmap range opened by its start marker and never closed
    /// means the trace was cut between the two markers (or written wrongly); that is an
    /// error rather than a silently skipped unmap.
    pub fn check_markers_closed(&self) -> Result<(), SimError> {
        match self.unmap_open {
            None => Ok(()),
            Some((asid, start)) => Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "the trace ended inside an unmap marker pair: the range from {start:#x} of asid {asid} has a start marker but no end marker (is the trace truncated? see docs/trace-format.md, control references)"
            )))),
        }
    }

    /// Unmaps `[start, end)` of `asid` (munmap): the OS frees the range and every core
    /// drops the translations its shootdowns name. An address space never touched has
    /// nothing to unmap.
    pub fn unmap(&mut self, asid: Asid, start: u64, end: u64) -> Result<(), SimError> {
        self.root_cache = NO_ROOT;
        self.bg.forget_range(asid, start, end);
        let Some(Some(space)) = self.spaces.get_mut(asid as usize) else {
            return Ok(());
        };
        self.shootdowns.clear();
        self.os.unmap(&mut self.mem, space, start, end, &mut self.shootdowns)?;
        self.apply_shootdowns();
        Ok(())
    }

    /// Writes the final time-series sample (if a series is on and the run did not end
    /// exactly on a sample point).
    pub fn finish_series(&mut self) -> Result<(), SimError> {
        let now = self.counters.references;
        if self.bg.series_on() && self.bg.samples.last().map(|s| s.refs) != Some(now) {
            let s = crate::Stats::collect(self);
            self.bg.sample(now, &s);
        }
        self.bg.finish()
    }

    /// Turns on a time series: a sample every `interval` references written as JSON
    /// lines to `out` (see docs/output.md), and tracking of touched pages for bloat.
    pub fn set_series(&mut self, interval: u64, out: Box<dyn std::io::Write + Send>) {
        self.bg.set_series(interval, out);
        self.next_tick = self.bg.next_tick(self.counters.references);
    }

    /// VMAs the trace carries (`mmulab record`'s /proc/PID/maps samples): installed in
    /// every address space, existing ones included; addresses outside them get VMAs by
    /// the inference rule (mmulab_model::space). Returns how many were taken.
    pub fn set_trace_vmas(&mut self, vmas: &[(u64, u64)]) -> usize {
        self.root_cache = NO_ROOT;
        self.bg.trace_vmas = vmas.iter().copied().filter(|(s, e)| s < e).collect();
        for s in self.spaces.iter_mut().flatten() {
            for &(start, end) in &self.bg.trace_vmas {
                let _ = s.add_vma(start, end, false);
            }
        }
        self.bg.trace_vmas.len()
    }

    /// Looks for VMAs in the trace's metadata and installs them once found.
    pub(crate) fn take_trace_vmas(&mut self, src: &dyn mmulab_trace::TraceSource) {
        if let Some(meta) = src.meta() {
            let v: Vec<(u64, u64)> = meta.vmas().iter().map(|v| (v.start, v.end)).collect();
            if !v.is_empty() {
                self.set_trace_vmas(&v);
                self.bg.trace_vmas_seen = true;
            }
        }
    }

    /// Tracks touched 4 KiB pages (for memory bloat) without a time series.
    pub fn track_touched(&mut self) {
        self.bg.track_touched = true;
    }

    /// Time-series samples taken so far.
    pub fn samples(&self) -> &[crate::Sample] {
        &self.bg.samples
    }

    /// The OS policy (its counters and state).
    pub fn os(&self) -> &Os {
        &self.os
    }

    /// Physical memory.
    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    fn apply_shootdowns(&mut self) {
        for &(asid, start, end) in &self.shootdowns {
            self.counters.shootdowns += 1;
            for c in &mut self.cores {
                c.tlbs.invalidate_range(asid, start, end);
                c.pwc.invalidate_range(asid, start, end);
            }
        }
    }

    /// Lets the OS handle a fault at `r` and applies its shootdowns.
    fn fault(&mut self, r: &MemRef) -> Result<(), SimError> {
        self.root_cache = NO_ROOT;
        self.counters.faults += 1;
        self.counters.fault_cycles += self.cost.fault_latency as u64;
        let si = self.space(r.asid)?;
        let space = self.spaces[si].as_mut().expect("space created");
        self.shootdowns.clear();
        self.os.fault(FaultCtx {
            mem: &mut self.mem,
            space,
            va: r.addr,
            kind: r.kind,
            shootdowns: &mut self.shootdowns,
        })?;
        for &(asid, start, end) in &self.shootdowns {
            self.counters.shootdowns += 1;
            for c in &mut self.cores {
                c.tlbs.invalidate_range(asid, start, end);
                c.pwc.invalidate_range(asid, start, end);
            }
        }
        Ok(())
    }
}
