//! Accessed and dirty bits kept by software (`machine.ad = "software"`): cores without
//! hardware updates of the Access flag and dirty state (ARMv7; ARMv8.0 cores such as
//! the Cortex-A53/A57/A72, before ARMv8.1's FEAT_HAFDBS).
//!
//! * A walk that finds a leaf whose accessed flag is clear raises an Access flag fault
//!   instead of setting the flag. The kernel's handler sets it and allocates nothing
//!   (Linux arm64: `do_page_fault` → `handle_mm_fault` → `handle_pte_fault`, which
//!   applies `pte_mkyoung` (and for a write to a writable entry `pte_mkdirty`) through
//!   `ptep_set_access_flags`; FreeBSD arm64: `pmap_fault`, case `ISS_DATA_DFSC_AFF_L*`,
//!   sets `ATTR_AF`; Linux ARMv7: `L_PTE_YOUNG` is a software bit and the hardware
//!   entry stays invalid until it is set, arch/arm/mm/proc-v7-2level.S
//!   `cpu_v7_set_pte_ext`). One fault sets both bits if the access is a store.
//! * A store to a writable but clean page raises a Permission fault: without hardware
//!   dirty-bit management a clean writable entry is mapped read-only (arm64: `PTE_WRITE`
//!   is the DBM bit used as a software "writable" and `PTE_RDONLY`, AP[2], stays set
//!   until `pte_mkdirty`; FreeBSD arm64: `ATTR_SW_DBM` with `ATTR_S1_AP_RO`, cleared by
//!   `pmap_fault`'s permission-fault case; ARMv7: `L_PTE_DIRTY` clear → `PTE_EXT_APX`).
//!   The handler sets the dirty state and invalidates this core's stale read-only entry
//!   (`__ptep_set_access_flags`: "Invalidate a stale read-only entry",
//!   `local_flush_tlb_page` in current kernels).
//!
//! A page fault's handler installs its new entry young, and dirty if the access was a
//! store (x86-64's `PAGE_*` protections include `_PAGE_ACCESSED`, arm64's
//! `PROT_DEFAULT` has `PTE_AF`; `do_anonymous_page` applies `pte_mkdirty` for a write;
//! FreeBSD's `pmap_enter` sets `ATTR_AF`, and clears `ATTR_S1_AP_RO` only for a write):
//! the walk retried after a page fault sets what the access needs without a second
//! fault. (mmulab's policies map some pages old; the walker's hardware update covers
//! that on the hardware path, this rule on the software one.)
//!
//! Each fault is counted apart from page faults (`af_faults`, `dirty_faults`), charged
//! the fault latency (`os.fault_latency`), and followed by the retried access's walk.
//! The handler only rewrites the descriptor's A/D bits, as the hardware would have; it
//! does not reach the OS policy, which maps nothing here.

use super::{Stage1, Stop};
use crate::system::System;
use mmulab_model::translation::{Attrs, Translation};
use mmulab_model::walk::translate;
use mmulab_trace::{AccessKind, MemRef};

impl Stage1 {
    /// A walk found leaf `t` (at `at`: table, index, level) without the bits `want`:
    /// the fault, the handler's update, the retried walk and the fill.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn soft_ad_fault(
        &mut self,
        sys: &mut System,
        r: &MemRef,
        t: Translation,
        want: u16,
        at: (u64, usize, usize),
        instr: bool,
        upto: usize,
    ) -> Result<(), Stop> {
        if !t.attrs.has(Attrs::ACCESSED) {
            self.counters.af_faults += 1;
        } else {
            self.counters.dirty_faults += 1;
        }
        let (table, index, level) = at;
        let raw = sys.mem.pt.read(table, index);
        sys.mem
            .pt
            .write(table, index, self.fmt.with_attrs(level, raw, t.attrs.with(want)));
        self.retry(sys, r, want, instr, upto)
    }

    /// A store hit this core's TLB entry `t`, writable but clean: a permission fault;
    /// the handler sets the dirty bit and drops this core's stale entries for the page;
    /// the store is retried (a walk, then the fill of the `upto` levels of its path).
    #[cold]
    #[inline(never)]
    pub(super) fn soft_dirty_on_hit(
        &mut self,
        sys: &mut System,
        r: &MemRef,
        upto: usize,
        t: Translation,
    ) -> Result<(), Stop> {
        self.counters.dirty_faults += 1;
        let si = sys.space(r.asid)?;
        let root = sys.root(si);
        let want = Attrs::DIRTY | Attrs::ACCESSED;
        mmulab_model::walk::set_leaf_attrs(&mut sys.mem, self.fmt, root, r.addr, t.attrs.with(want));
        let start = r.addr & !t.size.offset_mask();
        self.tlbs.invalidate_range(r.asid, start, start + t.size.bytes());
        self.retry(sys, r, want, false, upto)
    }

    /// The retried access after a handled A/D fault: a fresh walk (counted), which now
    /// finds the bits set, and the fill.
    fn retry(&mut self, sys: &mut System, r: &MemRef, want: u16, instr: bool, upto: usize) -> Result<(), Stop> {
        let si = sys.space(r.asid)?;
        let root = sys.root(si);
        let res = translate(&mut sys.mem, self.fmt, root, r.asid, r.addr, &mut self.pwc);
        self.count_walk(r, &res);
        match res.leaf {
            Some(t) if t.attrs.has(want) && (r.kind != AccessKind::Store || t.attrs.has(Attrs::WRITABLE)) => {
                self.tlbs.fill_path(instr, upto, &t, r.addr);
                Ok(())
            }
            _ => Err(crate::SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "va {:#x}: the accessed/dirty fault handler's update is not visible to the retried walk (a model bug)",
                r.addr
            )))
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Stage1, Stop};
    use crate::config::load_machine;
    use crate::system::System;
    use crate::translator::Translator;
    use mmulab_model::mem::Memory;
    use mmulab_model::translation::Attrs;
    use mmulab_model::walk::{lookup, set_leaf_attrs};
    use mmulab_trace::{AccessKind, MemRef};

    /// One core and its system for catalog machine `name`, with the catalog's `ad`.
    fn core(name: &str) -> (Stage1, System) {
        let spec = load_machine(name, None, &[]).unwrap();
        let mut cpu = Stage1::new(
            spec.tlbs.clone(),
            spec.data_entry,
            spec.instr_entry,
            spec.format,
            &spec.pwc_entries,
            spec.cost,
        );
        cpu.set_software_ad(spec.ad_software);
        let mem = Memory::new(spec.memory_bytes).unwrap();
        let os = spec.os.build(spec.format).unwrap();
        (cpu, System::new(mem, os, spec.format, spec.cost.fault_latency))
    }

    /// An access as the machine makes it: faults go to the OS, then the core resumes.
    fn access(cpu: &mut Stage1, sys: &mut System, r: &MemRef) {
        let mut res = cpu.access(sys, r);
        while let Err(stop) = res {
            match stop {
                Stop::Fault { upto, attempt } => {
                    sys.fault(r).unwrap();
                    res = cpu.resume(sys, r, upto, attempt);
                }
                _ => panic!("unexpected stop"),
            }
        }
    }

    /// The Access flag fault. Hand-derived: (1) a load faults, the OS maps the page, the
    /// walk after the page fault finds it young (walks 2, no A/D fault); (2) reclaim's
    /// clock clears the accessed bit and drops the translation (as
    /// `ptep_clear_flush_young`, done here by hand); (3) the next load misses and walks
    /// (walk 3): on the Cortex-A53 (ARMv8.0, software) the clear flag is an Access flag
    /// fault, the handler sets it and the load is retried (walk 4): af_faults = 1; on
    /// the Cortex-A76 (FEAT_HAFDBS) the walker sets it: no fault, walks = 3. Fails if the
    /// A53's catalog value or the software rule is removed.
    #[test]
    fn access_flag_fault_on_a53_none_on_a76() {
        let va = 0x4000_0000;
        let r = MemRef::new(va, AccessKind::Load, 8);
        for (name, af, walks) in [("cortex-a53", 1, 4), ("cortex-a76", 0, 3)] {
            let (mut cpu, mut sys) = core(name);
            access(&mut cpu, &mut sys, &r);
            assert_eq!((cpu.counters.walks, cpu.counters.af_faults), (2, 0), "{name}");
            let si = sys.space(0).unwrap();
            let root = sys.root(si);
            let fmt = sys.spaces[si].as_ref().unwrap().fmt;
            let m = lookup(&mut sys.mem, fmt, root, va).unwrap();
            assert!(m.attrs.has(Attrs::ACCESSED), "{name}: the page fault maps it young");
            set_leaf_attrs(&mut sys.mem, fmt, root, va, m.attrs.without(Attrs::ACCESSED));
            cpu.invalidate_range(0, va, va + 4096);
            access(&mut cpu, &mut sys, &r);
            assert_eq!(
                (cpu.counters.af_faults, cpu.counters.walks),
                (af, walks),
                "{name}: Access flag faults, walks"
            );
            assert!(lookup(&mut sys.mem, fmt, root, va).unwrap().attrs.has(Attrs::ACCESSED));
        }
    }
}
