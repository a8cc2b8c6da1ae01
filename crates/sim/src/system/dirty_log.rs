//! KVM/arm64 dirty logging on the nested machine's own stage-2 tables (`[vm.dirty_log]`,
//! docs/virtualization.md): what a live migration's first step does to a running guest.
//!
//! At reference `at` the host turns logging on for one memslot as
//! `kvm_arch_commit_memory_region` does without manual protect: the model's
//! [`Splitter`] (the `kvm-split` reproduction's code, model/src/kvm) write-protects the
//! slot (`kvm_mmu_wp_memory_region`), flushes the VMID, and, with an eager-split chunk,
//! splits every block of it (`kvm_mmu_split_memory_region`), all on the tables the
//! guest's walks read. From then on every stage-2 fault in the slot takes KVM's logging
//! path (`user_mem_abort` with `memslot_is_logging`, arch/arm64/kvm/mmu.c):
//!
//! * a write to a write-protected page: `kvm_pgtable_stage2_relax_perms` makes that one
//!   page writable and flushes its IPA on the faulting CPU only
//!   (`__kvm_tlb_flush_vmid_ipa_nsh`, which drops the CPU's combined entries too);
//!   `mark_page_dirty` logs it;
//! * a write to a write-protected block (no eager split): `force_pte` maps one page
//!   (`kvm_pgtable_stage2_map`); its walker meets the block and `stage2_map_walk_leaf`
//!   replaces it by a new table (break-before-make: a TLBI by IPA) holding only that
//!   page. The block's other pages are mapped lazily, each by its own fault;
//! * a translation fault: one page is mapped, writable only for a write ("Only actually
//!   map the page as writable if this was a write fault"). Where the host has not yet
//!   backed the page, the host's policy backs it first (`gfn_to_pfn` faults the host's
//!   own page, which may be a huge page); the stage-2 entry is still one page.
//!
//! Logging stays on to the end of the run (the log is never cleared or turned off).

use crate::config::vm::DirtyLogSpec;
use crate::stats::dirty_log::{FaultCounts, Phase};
use crate::SimError;
use mmulab_model::kvm::Splitter;
use mmulab_model::mem::Memory;
use mmulab_model::os::{FaultCtx, Os, Shootdown};
use mmulab_model::space::AddressSpace;
use mmulab_model::translation::Attrs;
use mmulab_model::walk::{lookup, map_leaf, set_leaf_attrs, unmap_leaf};
use mmulab_trace::AccessKind;
use std::collections::HashMap;

/// Dirty logging of one memslot.
pub(crate) struct DirtyLog {
    pub(crate) spec: DirtyLogSpec,
    /// The write-protect and split operations and their counts.
    pub(crate) splitter: Splitter,
    /// The reference count logging turned on at (`None`: not yet).
    pub(crate) on_at: Option<u64>,
    /// The guest's counts when it turned on.
    pub(crate) before: Option<Phase>,
    /// The fault path's counts.
    pub(crate) faults: FaultCounts,
    /// Blocks whose stage-2 entry is gone (broken by a write fault, or never mapped as
    /// a block while logging): base guest-physical address → (host-physical base,
    /// bytes). Their pages fault in one at a time onto the same host frames.
    broken: HashMap<u64, (u64, u64)>,
    /// One bit per page of the slot: logged dirty.
    dirty: Vec<u64>,
}

/// What a stage-2 fault in a logged slot changed that cached translations may hold.
pub(crate) enum Flush {
    /// Nothing was cached (a translation fault).
    None,
    /// One page's permission on the faulting CPU (`__kvm_tlb_flush_vmid_ipa_nsh`).
    Local(u64, u64),
    /// A range on every CPU (break-before-make of a block).
    Broadcast(u64, u64),
}

impl DirtyLog {
    /// Logging of `spec`'s slot, not yet on.
    pub(crate) fn new(spec: DirtyLogSpec) -> Result<DirtyLog, SimError> {
        let splitter = Splitter::new(spec.granule, spec.variant, spec.chunk).map_err(SimError::Model)?;
        let pages = (spec.end - spec.start) / spec.granule.page().bytes();
        Ok(DirtyLog {
            spec,
            splitter,
            on_at: None,
            before: None,
            faults: FaultCounts::default(),
            broken: HashMap::new(),
            dirty: vec![0; pages.div_ceil(64) as usize],
        })
    }

    /// The reference count logging turns on after, while it is off.
    pub(crate) fn pending_at(&self) -> Option<u64> {
        self.on_at.is_none().then_some(self.spec.at)
    }

    /// Turns logging on (`kvm_arch_commit_memory_region` with `KVM_MEM_LOG_DIRTY_PAGES`,
    /// no manual protect): write-protect the slot, flush the VMID, split it if eager
    /// splitting is on. The caller flushes every CPU's cached translations of the VMID.
    pub(crate) fn turn_on(&mut self, mem: &mut Memory, root: u64, now: u64) -> Result<(), SimError> {
        self.splitter
            .enable_dirty_logging(mem, root, self.spec.start, self.spec.end)
            .map_err(SimError::Model)?;
        self.on_at = Some(now);
        Ok(())
    }

    /// True if logging is on and covers guest-physical `gpa`.
    pub(crate) fn covers(&self, gpa: u64) -> bool {
        self.on_at.is_some() && (self.spec.start..self.spec.end).contains(&gpa)
    }

    /// Pages logged dirty.
    pub(crate) fn pages_dirty(&self) -> u64 {
        self.dirty.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// The host-physical address of `page` if it lies in a block whose stage-2 entry
    /// is gone.
    fn broken_block(&self, page: u64) -> Option<u64> {
        self.spec.granule.block_sizes().iter().find_map(|b| {
            let base = page & !b.offset_mask();
            match self.broken.get(&base) {
                Some(&(pa, n)) if n == b.bytes() => Some(pa + (page - base)),
                _ => None,
            }
        })
    }

    fn mark_dirty(&mut self, page: u64) {
        let i = (page - self.spec.start) / self.spec.granule.page().bytes();
        self.dirty[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// A stage-2 fault at `gpa` in the logged slot (see the module doc); `write` if the
    /// access writes (a store, or the walker's access/dirty update of a guest
    /// descriptor). `policy` backs a page the host has not backed yet; `policy_faults`
    /// counts those.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fault(
        &mut self,
        mem: &mut Memory,
        space: &mut AddressSpace,
        os: &mut Os,
        gpa: u64,
        write: bool,
        shootdowns: &mut Vec<Shootdown>,
        policy_faults: &mut u64,
    ) -> Result<Flush, SimError> {
        let fmt = space.fmt;
        let root = space.root;
        let g = self.spec.granule.page();
        let page = gpa & !g.offset_mask();
        // S2AP read (+ write and dirty for a writable page), access flag set: what
        // `stage2_set_prot_attr` writes for a page `user_mem_abort` maps.
        let attrs = if write {
            Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED)
        } else {
            Attrs(Attrs::USER | Attrs::ACCESSED)
        };
        match lookup(mem, fmt, root, gpa) {
            Some(m) if m.attrs.has(Attrs::WRITABLE) => {
                // Another CPU made it writable first, flushing only its own TLB: this
                // CPU's read-only copy faulted. The kernel's relax_perms finds nothing to
                // change and still flushes the IPA on this CPU (its `-EAGAIN` case).
                self.faults.tlbi_local += 1;
                Ok(Flush::Local(page, page + g.bytes()))
            }
            Some(_) if !write => Ok(Flush::None),
            Some(m) if m.size == g => {
                // kvm_pgtable_stage2_relax_perms: S2AP write on the one page.
                set_leaf_attrs(mem, fmt, root, page, m.attrs.with(Attrs::WRITABLE | Attrs::DIRTY));
                self.faults.write_faults += 1;
                self.faults.tlbi_local += 1;
                self.mark_dirty(page);
                Ok(Flush::Local(page, page + g.bytes()))
            }
            Some(m) => {
                // A write-protected block: stage2_map_walk_leaf breaks it (TLBI by IPA)
                // into a new table holding the one page; the rest come lazily.
                unmap_leaf(mem, fmt, root, page);
                self.broken.insert(m.va, (m.pa, m.size.bytes()));
                map_leaf(mem, fmt, root, page, m.pa + (page - m.va), g, attrs).map_err(SimError::Model)?;
                self.faults.write_faults += 1;
                self.faults.blocks_broken += 1;
                self.faults.tlbi_ipa += 1;
                self.mark_dirty(page);
                Ok(Flush::Broadcast(m.va, m.va + m.size.bytes()))
            }
            None => {
                match self.broken_block(page) {
                    Some(pa) => {
                        map_leaf(mem, fmt, root, page, pa, g, attrs).map_err(SimError::Model)?;
                    }
                    None => {
                        // The host backs it as its policy does (maybe with a huge page).
                        *policy_faults += 1;
                        os.handle_fault(FaultCtx {
                            mem,
                            space,
                            va: page,
                            kind: AccessKind::Store,
                            shootdowns,
                        })?;
                        let m = lookup(mem, fmt, root, page).ok_or_else(|| {
                            SimError::Model(mmulab_model::ModelError::Conflict(format!(
                                "the host's policy left guest-physical {page:#x} unmapped after a fault"
                            )))
                        })?;
                        if m.size == g {
                            set_leaf_attrs(mem, fmt, root, page, attrs);
                        } else {
                            // Never visible as a block: the stage-2 entry is one page.
                            unmap_leaf(mem, fmt, root, page);
                            self.broken.insert(m.va, (m.pa, m.size.bytes()));
                            map_leaf(mem, fmt, root, page, m.pa + (page - m.va), g, attrs).map_err(SimError::Model)?;
                        }
                    }
                };
                self.faults.page_faults += 1;
                if write {
                    self.mark_dirty(page);
                }
                Ok(Flush::None)
            }
        }
    }
}
