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
use mmulab_model::os::{Base, FaultCtx, Fixed, Os, Shootdown};
use mmulab_model::pt::Format;
use mmulab_model::space::AddressSpace;
use mmulab_model::tlb::Hierarchy;
use mmulab_model::translation::{Attrs, Translation};
use mmulab_model::walk::{prefetch_walk, set_leaf_attrs, translate, Pwc};
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
    cost: WalkCost,
    has_instr_path: bool,
    shootdowns: Vec<Shootdown>,
    pub(crate) counters: Counters,
}

impl Machine {
    /// Builds a machine.
    pub fn new(spec: MachineSpec) -> Result<Machine, SimError> {
        let mem = Memory::new(spec.memory_bytes)?;
        let instr = spec.instr_entry.unwrap_or(spec.data_entry);
        let cores = (0..spec.cores)
            .map(|_| Core {
                tlbs: Hierarchy::new(spec.tlbs.clone(), spec.data_entry, instr),
                pwc: Pwc::new(spec.format, &spec.pwc_entries),
            })
            .collect();
        let os = match spec.os {
            OsSpec::Base => Os::Base(Base::default()),
            OsSpec::Fixed(size) => Os::Fixed(Fixed::new(size)),
        };
        let nlevels = spec.tlbs.len();
        Ok(Machine {
            fmt: spec.format,
            cost: spec.cost,
            has_instr_path: spec.instr_entry.is_some(),
            cores,
            mem,
            spaces: Vec::new(),
            os,
            shootdowns: Vec::new(),
            counters: Counters::new(nlevels, spec.format.levels().len()),
            spec,
        })
    }

    /// The spec it was built from.
    pub fn spec(&self) -> &MachineSpec {
        &self.spec
    }

    fn space(&mut self, asid: Asid) -> Result<usize, SimError> {
        let i = asid as usize;
        if self.spaces.len() <= i {
            self.spaces.resize(i + 1, None);
        }
        if self.spaces[i].is_none() {
            self.spaces[i] = Some(AddressSpace::new(asid, self.fmt, &mut self.mem)?);
        }
        Ok(i)
    }

    /// Simulates one reference.
    #[inline]
    pub fn access(&mut self, r: &MemRef) -> Result<(), SimError> {
        let c = &mut self.counters;
        c.references += 1;
        let instr = r.kind == AccessKind::IFetch;
        match r.kind {
            AccessKind::Load => c.loads += 1,
            AccessKind::Store => c.stores += 1,
            AccessKind::IFetch => {
                c.ifetches += 1;
                if !self.has_instr_path {
                    c.ifetches_untranslated += 1;
                    return Ok(());
                }
            }
        }
        let core = if self.cores.len() == 1 { 0 } else { r.core as usize % self.cores.len() };
        // Fast path: the entry level's most recent entry covers the address (runs of
        // references to one page). Same result as the full lookup, fewer steps.
        let entry = self.cores[core].tlbs.entry_level(instr);
        if let Some(attrs) = entry.mru_hit(r.addr, r.asid) {
            if r.kind != AccessKind::Store || attrs.has(Attrs::WRITABLE | Attrs::DIRTY) {
                self.counters.tlb_cycles += entry.spec().latency as u64;
                return Ok(());
            }
            // A store to a clean entry: undo the count and take the full path.
            entry.stats.accesses -= 1;
            entry.stats.hits -= 1;
        }
        let look = self.cores[core].tlbs.lookup(r.addr, r.asid, instr);
        self.counters.tlb_cycles += look.cycles;
        let t = match look.hit {
            Some((_level, slot, t)) => {
                let upto = look.len - 1;
                if r.kind == AccessKind::Store && !t.attrs.has(Attrs::WRITABLE | Attrs::DIRTY) {
                    return self.store_to_clean(core, r, &look.path[..look.len], slot, t);
                }
                self.cores[core].tlbs.fill(&look.path[..upto], &t, r.addr);
                return Ok(());
            }
            None => self.walk(core, r)?,
        };
        self.cores[core].tlbs.fill(&look.path[..look.len], &t, r.addr);
        Ok(())
    }

    /// A store hit a translation that is not writable-dirty. Writable-clean: the
    /// hardware sets the dirty bit in the descriptor and in every copy this core's TLB
    /// levels hold, and refills the levels above the hit (other cores' copies stay
    /// clean until a store finds them). Read-only: a permission fault; the OS decides (e.g. demotion) and
    /// its shootdowns drop stale entries; then the walk runs and fills the whole path.
    #[cold]
    fn store_to_clean(&mut self, core: usize, r: &MemRef, path: &[u8], hit_slot: usize, t: Translation) -> Result<(), SimError> {
        let hit_level = path[path.len() - 1] as usize;
        if t.attrs.has(Attrs::WRITABLE) {
            let t = self.set_dirty(r, t)?;
            let tlbs = &mut self.cores[core].tlbs;
            tlbs.levels_mut()[hit_level].set_attrs(hit_slot, t.attrs);
            tlbs.add_attrs(r.addr, r.asid, Attrs::DIRTY | Attrs::ACCESSED);
            tlbs.fill(&path[..path.len() - 1], &t, r.addr);
        } else {
            self.fault(r)?;
            let t = self.walk(core, r)?;
            self.cores[core].tlbs.fill(path, &t, r.addr);
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
        self.counters.walk_cycles += self.cost.mem_latency as u64;
        Ok(Translation { attrs, ..t })
    }

    /// A hardware walk for `r`, with OS faults as needed.
    fn walk(&mut self, core: usize, r: &MemRef) -> Result<Translation, SimError> {
        let si = self.space(r.asid)?;
        for _attempt in 0..3 {
            let root = self.spaces[si].as_ref().map(|s| s.root).unwrap_or_default();
            let pwc_on = self.cores[core].pwc.enabled();
            let res = translate(&mut self.mem, self.fmt, root, r.asid, r.addr, &mut self.cores[core].pwc);
            let c = &mut self.counters;
            c.walks += 1;
            c.walk_reads += res.reads;
            c.walk_start_level[res.start_level] += 1;
            c.walk_cycles += self.cost.walk_cycles(res.reads, pwc_on);
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
    /// effect; see `mmulab_model::walk::prefetch_walk`).
    #[inline]
    pub fn prefetch(&self, r: &MemRef) {
        if let Some(Some(s)) = self.spaces.get(r.asid as usize) {
            prefetch_walk(&self.mem, self.fmt, s.root, r.addr);
        }
    }

    /// Walks so far (the run loop uses the walk rate to decide whether to prefetch).
    #[inline]
    pub fn walks(&self) -> u64 {
        self.counters.walks
    }

    /// Lets the OS handle a fault at `r` and applies its shootdowns.
    fn fault(&mut self, r: &MemRef) -> Result<(), SimError> {
        self.counters.faults += 1;
        self.counters.fault_cycles += self.cost.fault_latency as u64;
        let si = self.space(r.asid)?;
        let space = self.spaces[si].as_mut().expect("space created");
        self.shootdowns.clear();
        self.os.fault(FaultCtx { mem: &mut self.mem, space, va: r.addr, kind: r.kind, shootdowns: &mut self.shootdowns })?;
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
