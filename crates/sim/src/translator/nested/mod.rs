//! The nested (two-stage) translator of a virtualized core: a guest's stage-1 tables
//! (any format, at guest-physical addresses in the guest's memory) over a host's
//! stage-2 tables (ARMv8-A stage 2, EPT, or x86-64 tables as AMD NPT).
//!
//! The walk is the two-dimensional walk of Bhargava et al., "Accelerating
//! two-dimensional page walks for virtualized systems" (ASPLOS 2008), as the Arm ARM
//! describes stage 2 (D8.2: every stage-1 table address is an IPA translated by stage 2
//! before it is read) and Intel's SDM §29.3.2 (EPT translates the guest-physical
//! address of each guest paging structure and the final one):
//!
//! * for each guest level from the start level: translate the guest table's
//!   guest-physical address through stage 2 (stage-2 TLB, else a stage-2 walk with its
//!   own page-walk caches), then read the guest descriptor (one stage-1 reference);
//! * translate the guest leaf's output (the final guest-physical address) the same way.
//!
//! A cold 4-level × 4-level walk reads 4 × (4 + 1) + 4 = 24 descriptors.
//!
//! Caches, each from config: the combined TLB (the core's TLB hierarchy) holds guest
//! virtual → host physical at the smaller of the two page sizes (a 2 MiB guest page over
//! 4 KiB host pages is cached as 4 KiB pieces: the host may place the 4 KiB pieces
//! anywhere); the stage-1 page-walk caches hold guest tables by guest-virtual prefix:
//! under NPT and Arm's stage 2 as their guest-physical address (which stage 2 still
//! translates: AMD's design in the paper above), under EPT as their host-physical
//! address (Intel's paging-structure caches hold combined entries, SDM 28.3.1: a hit
//! needs no stage-2 translation of the cached table; an EPT invalidation drops them,
//! 28.3.3); the stage-2 page-walk caches hold stage-2 tables by guest-physical
//! prefix; the stage-2-only TLB (`vm.s2tlb`, the Cortex-A76/A55 "IPA cache", gem5's
//! stage-2 TLB, the "nested TLB" of the paper) holds guest physical → host physical.
//!
//! Faults: a guest walk that finds no usable leaf raises [`Stop::Fault`] (the guest's
//! policy maps it); a stage-2 walk that finds none raises [`Stop::HostFault`] (the
//! host's backing policy maps it); either way the machine resumes this translator,
//! which walks again from the start.

use super::{add_tlb_levels, Stop, Translator};
use crate::stats::{Report, Stats};
use crate::system::stage2::VMID;
use crate::system::System;
use crate::SimError;
use mmulab_model::addr::{Asid, PageSize};
use mmulab_model::cost::WalkCost;
use mmulab_model::pt::{Format, Pte};
use mmulab_model::tlb::{Hierarchy, TlbSpec};
use mmulab_model::translation::{Attrs, Translation};
use mmulab_model::walk::{group_of, translate, translate_recorded, Pwc, WalkReads};
use mmulab_trace::{AccessKind, MemRef};

mod cache;

/// Faults one access may take (guest and stage-2 together: up to one per guest table
/// and the final address at each stage) before the policies are deemed broken.
const MAX_ATTEMPTS: u8 = 16;

/// Counters of one nested translator.
#[derive(Clone, Debug, Default)]
struct Counters {
    kinds: [u64; 3],
    ifetches_untranslated: u64,
    /// Two-dimensional walks (a faulting walk and the walk after it count as two).
    walks: u64,
    /// Guest descriptors read, by guest level.
    s1_reads: [u64; 4],
    /// Stage-2 descriptors read, by stage-2 level.
    s2_reads: [u64; 4],
    /// Walks by the guest level they started at.
    start_levels: [u64; 8],
    /// Guest-physical addresses translated through stage 2.
    s2_translations: u64,
    /// Stage-2 walks.
    s2_walks: u64,
    /// Accessed/dirty updates of leaf descriptors (both stages).
    ad_updates: u64,
    /// Stores that found a writable but clean combined-TLB entry (the walk after it
    /// sets the guest dirty bit), as a stage-1 core counts them.
    dirty_writes: u64,
    /// With data caches: cycles of walk reads in the caches and memory, and reads that
    /// missed every level, by stage (0: guest descriptors, 1: stage-2 descriptors).
    cache_cycles: [u64; 2],
    cache_mem_reads: [u64; 2],
}

/// One virtualized core's translation hardware.
#[derive(Clone, Debug)]
pub struct Nested {
    /// The combined (guest virtual → host physical) TLB levels.
    pub tlbs: Hierarchy,
    /// The stage-2-only TLB (guest physical → host physical), if configured.
    s2tlb: Option<Hierarchy>,
    /// Stage-1 page-walk caches (guest tables by guest-virtual prefix).
    pub pwc1: Pwc,
    /// Stage-2 page-walk caches (stage-2 tables by guest-physical prefix).
    pub pwc2: Pwc,
    guest: Format,
    stage2: Format,
    has_instr_path: bool,
    cost: WalkCost,
    c: Counters,
    /// With data caches (`[caches]`): the host-physical addresses of this access's
    /// descriptor reads and of its data (nested_cache.rs). Boxed: the translator
    /// without caches stays small.
    rec: Box<cache::NestedReads>,
    /// Whether walks record (`[caches]` present).
    cached: bool,
    /// The data-cache path's clock, cycles and miss slots (core_cache.rs).
    cc: super::core_cache::CoreCache,
}

/// The outcome of translating one guest-physical address through stage 2.
type S2 = Result<Translation, Stop>;

impl Nested {
    /// A virtualized core: combined TLB levels `tlbs` (entered at `data_entry` and
    /// `instr_entry`), stage-1 page-walk caches `pwc1` over guest format `guest`, stage-2
    /// page-walk caches `pwc2` and stage-2 TLB `s2tlb` over `stage2`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        tlbs: Vec<TlbSpec>,
        data_entry: usize,
        instr_entry: Option<usize>,
        guest: Format,
        pwc1: &[usize],
        stage2: Format,
        pwc2: &[usize],
        s2tlb: Option<TlbSpec>,
        cost: WalkCost,
    ) -> Nested {
        Nested {
            tlbs: Hierarchy::new(tlbs, data_entry, instr_entry.unwrap_or(data_entry)),
            s2tlb: s2tlb.map(|t| Hierarchy::new(vec![t], 0, 0)),
            pwc1: Pwc::new(guest, pwc1),
            pwc2: Pwc::new(stage2, pwc2),
            guest,
            stage2,
            has_instr_path: instr_entry.is_some(),
            cost,
            c: Counters::default(),
            rec: Box::default(),
            cached: false,
            cc: Default::default(),
        }
    }

    /// Walks so far.
    pub(crate) fn walks(&self) -> u64 {
        self.c.walks
    }

    /// Cycles of the dirty-bit writes of stores to clean entries: one
    /// `walk.mem_latency` each (not through the data caches), as on a stage-1 core.
    fn dirty_write_cycles(&self) -> u64 {
        self.c.dirty_writes * self.cost.mem_latency as u64
    }

    /// Guest and stage-2 descriptors read so far.
    pub fn refs(&self) -> (u64, u64) {
        (self.c.s1_reads.iter().sum(), self.c.s2_reads.iter().sum())
    }

    /// Translates guest-physical `gpa` through stage 2 for a write if `write`
    /// ([`Nested::stage2_read`]); a write to a read-only stage-2 page (dirty logging
    /// write-protected it) is a stage-2 permission fault.
    fn stage2(&mut self, sys: &mut System, gpa: u64, write: bool, upto: u8, attempt: u8) -> S2 {
        let t = self.stage2_read(sys, gpa, upto, attempt)?;
        if write && !t.attrs.has(Attrs::WRITABLE) {
            return Err(Stop::HostFault {
                gpa,
                write,
                upto,
                attempt: attempt + 1,
            });
        }
        Ok(t)
    }

    /// Translates guest-physical `gpa` through stage 2: the stage-2 TLB, else a stage-2
    /// walk (its page-walk caches, then descriptor reads in host memory); sets the
    /// stage-2 access flag if the leaf lacks it. Returns the stage-2 translation.
    fn stage2_read(&mut self, sys: &mut System, gpa: u64, upto: u8, attempt: u8) -> S2 {
        self.c.s2_translations += 1;
        if let Some(t) = self.s2tlb.as_mut() {
            let look = t.lookup(gpa, VMID, false);
            if let Some((level, slot)) = look.hit {
                return Ok(t.entry(level, slot, VMID));
            }
        }
        let Some(host) = sys.host.as_deref_mut() else {
            return Err(SimError::Config("a nested core on a machine without [vm]".into()).into());
        };
        if gpa >= host.guest_bytes {
            // The host's fault handler names the address and the key.
            return Err(Stop::HostFault {
                gpa,
                write: false,
                upto,
                attempt: attempt + 1,
            });
        }
        let root = host.root();
        let res = if self.cached {
            let mut reads = WalkReads::default();
            let res = translate_recorded(&mut host.mem, self.stage2, root, VMID, gpa, &mut self.pwc2, &mut reads);
            self.rec.stage2_reads(self.stage2, &reads);
            res
        } else {
            translate(&mut host.mem, self.stage2, root, VMID, gpa, &mut self.pwc2)
        };
        self.c.s2_walks += 1;
        for l in res.start_level..res.start_level + res.reads as usize {
            self.c.s2_reads[l & 3] += 1;
        }
        let Some(mut t) = res.leaf else {
            return Err(Stop::HostFault {
                gpa,
                write: false,
                upto,
                attempt: attempt + 1,
            });
        };
        if !t.attrs.has(Attrs::ACCESSED) {
            // FEAT_HAFDBS / EPT A bit: the walker sets the access flag.
            let (table, index, level) = res.leaf_at.expect("a leaf has a location");
            let raw = host.mem.pt.read(table, index);
            t.attrs = t.attrs.with(Attrs::ACCESSED);
            host.mem
                .pt
                .write(table, index, self.stage2.with_attrs(level, raw, t.attrs));
            self.c.ad_updates += 1;
        }
        if let Some(s2) = self.s2tlb.as_mut() {
            s2.fill_path(false, 1, &t, gpa);
        }
        Ok(t)
    }

    /// The two-dimensional walk for `r` and the fill of the first `upto` combined-TLB
    /// levels on its path.
    fn walk(&mut self, sys: &mut System, r: &MemRef, upto: u8, attempt: u8) -> Result<(), Stop> {
        let va = r.addr;
        let g = self.guest;
        if va >> g.va_bits() != 0 {
            return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "address {va:#x} is beyond the {}-bit virtual address space of the guest's {} page tables",
                g.va_bits(),
                g.arch_name()
            )))
            .into());
        }
        self.c.walks += 1;
        let si = sys.space(r.asid)?;
        let root = sys.root(si);
        let (start, mut table) = self.pwc1.lookup(va, r.asid).unwrap_or((0, root));
        self.c.start_levels[start & 7] += 1;
        let levels = g.levels();
        let mut leaf = None;
        // EPT: a guest walk-cache hit gives the table's host-physical address.
        let combined = start > 0 && self.stage2 == Format::Ept;
        // Whether stage 2 lets the walker write the table it read last (its access and
        // dirty updates); a combined hit gives no stage-2 permission (EPT: never
        // write-protected here).
        let mut table_writable = true;
        for (level, geom) in levels.iter().enumerate().skip(start) {
            let index = geom.index(va);
            if combined && level == start {
                if self.cached {
                    self.record_combined_read(sys, table, index);
                }
            } else {
                // The guest table's address is guest-physical: stage 2 first.
                let h = self.stage2(sys, table, false, upto, attempt)?;
                table_writable = h.attrs.has(Attrs::WRITABLE);
                if self.cached {
                    self.record_guest_read(sys, &h, table, index);
                }
            }
            let raw = sys.mem.pt.read(table, index);
            self.c.s1_reads[level & 3] += 1;
            match g.decode(level, raw) {
                Pte::Table(child) => {
                    self.pwc1.fill(level, va, r.asid, child);
                    table = child;
                }
                Pte::Leaf { pa, attrs } => {
                    let span_va = va & !(geom.span() - 1);
                    let (tva, tpa, size) = match group_of(&sys.mem.pt, g, table, index, level, raw) {
                        Some((gsize, gpa)) => (span_va & !gsize.offset_mask(), gpa, gsize),
                        None => (span_va, pa, g.leaf_size(level)),
                    };
                    leaf = Some((tva, tpa, size, attrs, table, index, level));
                    break;
                }
                Pte::Invalid => break,
            }
        }
        let store = r.kind == AccessKind::Store;
        let Some((tva, tpa, gsize, mut attrs, table, index, level)) =
            leaf.filter(|l| !store || l.3.has(Attrs::WRITABLE))
        else {
            return Err(Stop::Fault {
                upto,
                attempt: attempt + 1,
            });
        };
        let gpa = tpa + (va - tva);
        let h = self.stage2(sys, gpa, store, upto, attempt)?;
        let mut want = Attrs::ACCESSED;
        if store {
            want |= Attrs::DIRTY;
        }
        if !attrs.has(want) {
            if !table_writable {
                // The walker's update writes the guest's table: a stage-2 permission
                // fault on it (KVM takes a permission fault on a stage-1 walk as a
                // write, `kvm_is_write_fault`).
                return Err(Stop::HostFault {
                    gpa: table + 8 * index as u64,
                    write: true,
                    upto,
                    attempt: attempt + 1,
                });
            }
            attrs = attrs.with(want);
            let raw = sys.mem.pt.read(table, index);
            sys.mem.pt.write(table, index, g.with_attrs(level, raw, attrs));
            self.c.ad_updates += 1;
        }
        let hpa = h.pa + (gpa - h.va);
        self.rec.data_pa = hpa;
        let size: PageSize = gsize.min(h.size);
        let t = Translation {
            va: va & !size.offset_mask(),
            pa: hpa & !size.offset_mask(),
            size,
            asid: r.asid,
            // A combined entry lets a store through only if both stages do.
            attrs: if h.attrs.has(Attrs::WRITABLE) {
                attrs
            } else {
                attrs.without(Attrs::WRITABLE)
            },
        };
        self.tlbs.fill_path(r.kind == AccessKind::IFetch, upto as usize, &t, va);
        Ok(())
    }

    /// Drops every cached stage-2 translation of guest-physical `[start, end)`: the
    /// stage-2 TLB and page-walk caches by range, and every combined entry (which of
    /// them came through the range is not known: Arm's `TLBI IPAS2E1IS` is followed by
    /// `TLBI VMALLE1IS` for the same reason, `kvm_tlb_flush_vmid_ipa`).
    pub(crate) fn invalidate_stage2(&mut self, start: u64, end: u64) {
        if let Some(t) = self.s2tlb.as_mut() {
            t.invalidate_range(VMID, start, end);
        }
        self.pwc2.invalidate_range(VMID, start, end);
        self.tlbs.flush();
        if self.stage2 == Format::Ept {
            // Combined paging-structure-cache entries came through stage 2 too.
            self.pwc1.flush();
        }
    }

    /// Drops everything cached for the VMID (`TLBI VMALLS12E1IS`, KVM's
    /// `__kvm_tlb_flush_vmid`): combined entries, the stage-2 TLB, both stages' walk
    /// caches.
    pub(crate) fn flush_vmid(&mut self) {
        if let Some(t) = self.s2tlb.as_mut() {
            t.flush();
        }
        self.pwc2.flush();
        self.pwc1.flush();
        self.tlbs.flush();
    }
}

impl Translator for Nested {
    fn access(&mut self, sys: &mut System, r: &MemRef) -> Result<(), Stop> {
        let kind = r.kind;
        self.c.kinds[kind as usize] += 1;
        let instr = kind == AccessKind::IFetch;
        if instr && !self.has_instr_path {
            self.c.ifetches_untranslated += 1;
            return Ok(());
        }
        let look = self.tlbs.lookup(r.addr, r.asid, instr);
        match look.hit {
            Some((level, slot)) => {
                let t = self.tlbs.entry(level, slot, r.asid);
                self.rec.data_pa = t.pa + (r.addr - t.va);
                if kind == AccessKind::Store && !t.attrs.has(Attrs::WRITABLE | Attrs::DIRTY) {
                    // A store to a clean (or read-only) entry: the walk sets the guest's
                    // dirty bit or faults; the stale copies go first. A writable entry's
                    // dirty-bit write is counted and charged one `walk.mem_latency`, as a
                    // stage-1 core charges it (`Stage1::store_to_clean`), beside the
                    // reads of the walk.
                    if t.attrs.has(Attrs::WRITABLE) {
                        self.c.dirty_writes += 1;
                    }
                    self.tlbs.invalidate_range(r.asid, t.va, t.va + t.size.bytes());
                    return self.walk(sys, r, look.len as u8, 0);
                }
                if look.len > 1 {
                    let path = self.tlbs.path(instr);
                    let mut p = [0u8; mmulab_model::tlb::MAX_DEPTH];
                    p[..look.len - 1].copy_from_slice(&path[..look.len - 1]);
                    self.tlbs.fill(&p[..look.len - 1], &t, r.addr);
                }
                Ok(())
            }
            None => self.walk(sys, r, look.len as u8, 0),
        }
    }

    fn resume(&mut self, sys: &mut System, r: &MemRef, upto: u8, attempt: u8) -> Result<(), Stop> {
        if attempt >= MAX_ATTEMPTS {
            return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "va {:#x} still faults after {MAX_ATTEMPTS} guest and stage-2 faults (a policy bug)",
                r.addr
            )))
            .into());
        }
        self.walk(sys, r, upto, attempt)
    }

    fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) {
        self.tlbs.invalidate_range(asid, start, end);
        self.pwc1.invalidate_range(asid, start, end);
    }

    fn spaces_changed(&mut self) {}

    /// Each dirty-bit write and descriptor read (either stage) `walk.mem_latency`, or
    /// with data caches the latency of where the read hit (nested_cache.rs); each
    /// page-walk-cache lookup (either stage) `walk.pwc_latency`; each stage-2 TLB lookup
    /// its latency.
    fn walk_cycles(&self) -> u64 {
        let (r1, r2) = self.refs();
        let reads = if self.cached {
            self.cc.walk_cycles
        } else {
            (r1 + r2) * self.cost.mem_latency as u64
        };
        let pwc = (self.pwc1.lookups() + self.pwc2.lookups()) * self.cost.pwc_latency as u64;
        let s2tlb = self.s2tlb.as_ref().map_or(0, |t| {
            let l = &t.levels()[0];
            l.stats().accesses * l.spec().latency as u64
        });
        self.dirty_write_cycles() + reads + pwc + s2tlb
    }
}

impl Report for Nested {
    /// Combined TLB levels and stage-1 page-walk caches as a stage-1 core reports them;
    /// walk references of both stages in `walks.memory_refs` and per stage in
    /// [`crate::stats::nested::NestedStats`]; cycles: each descriptor read `walk.mem_latency`
    /// (with data caches: the latency of where it hit, nested_cache.rs), each
    /// page-walk-cache lookup (either stage) `walk.pwc_latency`, each stage-2 TLB
    /// lookup its latency, each dirty-bit write `walk.mem_latency`.
    fn report(&self, s: &mut Stats) {
        let w = &self.c;
        let c = &mut s.counters;
        for (n, k) in c.kinds.iter_mut().zip(w.kinds) {
            *n += k;
        }
        c.ifetches_untranslated += w.ifetches_untranslated;
        c.walks += w.walks;
        let (r1, r2) = self.refs();
        c.walk_reads += r1 + r2;
        for (n, &k) in c.walk_start_level.iter_mut().zip(&w.start_levels) {
            *n += k;
        }
        c.dirty_writes += w.dirty_writes;
        c.ad_updates += w.ad_updates;
        let (p1, p2) = (self.pwc1.stats(), self.pwc2.stats());
        c.walk_cycles += Translator::walk_cycles(self);
        if self.cached {
            if let Some(cs) = &mut s.caches {
                cs.data_cycles += self.cc.data_cycles;
                cs.core_cycles.push(super::CachedCore::end_cycles(self));
            }
        }
        add_tlb_levels(&mut s.levels, self.tlbs.levels(), &mut c.tlb_cycles);
        for (i, h) in p1.hits.iter().enumerate() {
            s.pwc_hits[i] += h;
        }
        s.pwc_lookups += p1.lookups;
        let Some(n) = s.nested.as_mut() else { return };
        for (n, &k) in n.stage1_refs_by_level.iter_mut().zip(&w.s1_reads) {
            *n += k;
        }
        for (n, &k) in n.stage2_refs_by_level.iter_mut().zip(&w.s2_reads) {
            *n += k;
        }
        n.stage2_translations += w.s2_translations;
        n.stage2_walks += w.s2_walks;
        n.pwc2_lookups += p2.lookups;
        for (i, h) in p2.hits.iter().enumerate() {
            n.pwc2_hits[i] += h;
        }
        if let (Some(t), Some(acc)) = (&self.s2tlb, n.s2tlb.as_mut()) {
            acc.add(&t.levels()[0].stats());
        }
        if self.cached {
            let split = n.walk_caches.get_or_insert_with(Default::default);
            for (x, y) in split.cycles.iter_mut().zip(w.cache_cycles) {
                *x += y;
            }
            for (x, y) in split.memory_reads.iter_mut().zip(w.cache_mem_reads) {
                *x += y;
            }
        }
    }
}
