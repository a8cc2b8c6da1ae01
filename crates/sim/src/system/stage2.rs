//! The host side of a virtual machine (`[vm]`, docs/virtualization.md): the host's
//! physical memory, the one stage-2 address space whose "virtual" addresses are the
//! guest's physical addresses, and the host's policy (`vm.backing`) that writes the
//! stage-2 leaves. The guest's own [`crate::System`] (its OS policy over guest-physical
//! memory, its page tables at guest-physical addresses) is unchanged; it holds this
//! context in `System::host`. A stage-2 fault goes to the host policy here as a stage-1
//! fault goes to the guest's (the machine hands it over; the translator never calls a
//! policy). KVM's own stage-2 fault path is `kvm_handle_guest_abort` → `user_mem_abort`
//! (arch/arm64/kvm/mmu.c), which maps at the largest size the backing's VMA allows
//! (`vma_pagesize`, hugetlb or THP): that is what the host policy's own fault does here.

use crate::config::vm::VmSpec;
use crate::stats::{Report, Stats};
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::mem::Memory;
use mmulab_model::os::{FaultCtx, Os, Shootdown};
use mmulab_model::space::AddressSpace;
use mmulab_trace::AccessKind;

/// The address-space id of the stage-2 tables (one VM: one VMID).
pub(crate) const VMID: Asid = 0;

/// The host of one guest: its memory, the stage-2 address space and the backing policy.
pub(crate) struct HostCtx {
    /// Host physical memory (stage-2 tables in it).
    pub(crate) mem: Memory,
    /// The stage-2 address space: guest-physical `[0, guest_bytes)` as one VMA.
    pub(crate) space: AddressSpace,
    /// The backing policy.
    pub(crate) os: Os,
    /// Guest-physical bytes.
    pub(crate) guest_bytes: u64,
    /// Guest-physical ranges whose stage-2 translations the last fault changed.
    pub(crate) shootdowns: Vec<Shootdown>,
    /// True if the last fault's `shootdowns` need flushing on the faulting CPU only.
    pub(crate) local: bool,
    /// Dirty logging (`[vm.dirty_log]`), if configured.
    pub(crate) log: Option<super::dirty_log::DirtyLog>,
    fault_latency: u32,
    faults: u64,
}

impl HostCtx {
    /// The host of a guest described by `vm`, with `host_bytes` of memory.
    pub(crate) fn new(vm: &VmSpec, host_bytes: u64, fault_latency: u32) -> Result<HostCtx, SimError> {
        let mut mem = Memory::new(host_bytes)?;
        let mut space = AddressSpace::new(VMID, vm.stage2, &mut mem)?;
        // The guest's RAM is one anonymous mapping in the VMM (QEMU madvises it
        // MADV_HUGEPAGE), which THP may back with huge pages.
        space.add_vma(0, vm.guest_bytes, true)?;
        let os = vm.host_os.build(vm.stage2).map_err(SimError::Config)?;
        let log = vm.dirty_log.map(super::dirty_log::DirtyLog::new).transpose()?;
        Ok(HostCtx {
            mem,
            space,
            os,
            guest_bytes: vm.guest_bytes,
            shootdowns: Vec::new(),
            local: false,
            log,
            fault_latency,
            faults: 0,
        })
    }

    /// The stage-2 root table (host-physical).
    #[inline]
    pub(crate) fn root(&self) -> u64 {
        self.space.root
    }

    /// A stage-2 fault at guest-physical `gpa`, for a write if `write`: the host policy
    /// maps it (as a write: the host backs guest RAM writable), or, in a slot with dirty
    /// logging on, KVM's logging path does (system/dirty_log.rs). The ranges it changed
    /// are left in `shootdowns` (to flush on the faulting CPU only if `local`).
    pub(crate) fn fault(&mut self, gpa: u64, write: bool) -> Result<(), SimError> {
        if gpa >= self.guest_bytes {
            return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "guest-physical address {gpa:#x} is outside the guest's memory (vm.memory = {:#x} bytes): the guest's page tables point past its RAM",
                self.guest_bytes
            ))));
        }
        self.faults += 1;
        self.shootdowns.clear();
        self.local = false;
        if let Some(log) = self.log.as_mut().filter(|l| l.covers(gpa)) {
            let mut policy = 0;
            let flush = log.fault(
                &mut self.mem,
                &mut self.space,
                &mut self.os,
                gpa,
                write,
                &mut self.shootdowns,
                &mut policy,
            )?;
            match flush {
                super::dirty_log::Flush::None => {}
                super::dirty_log::Flush::Local(s, e) => {
                    self.shootdowns.push((VMID, s, e));
                    self.local = self.shootdowns.len() == 1;
                }
                super::dirty_log::Flush::Broadcast(s, e) => self.shootdowns.push((VMID, s, e)),
            }
            return Ok(());
        }
        self.os.handle_fault(FaultCtx {
            mem: &mut self.mem,
            space: &mut self.space,
            va: gpa,
            kind: AccessKind::Store,
            shootdowns: &mut self.shootdowns,
        })?;
        Ok(())
    }

    /// Turns dirty logging on now (after `now` references) if it is due; true if it did
    /// (the caller flushes every CPU's cached translations of the VMID).
    pub(crate) fn dirty_log_due(&mut self, now: u64) -> Result<bool, SimError> {
        let root = self.space.root;
        match self.log.as_mut() {
            Some(l) if l.pending_at().is_some_and(|at| at <= now) => {
                l.turn_on(&mut self.mem, root, now)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl Report for HostCtx {
    /// The host's faults and the pages backing guest memory.
    fn report(&self, s: &mut Stats) {
        {
            let Some(n) = s.nested.as_mut() else { return };
            n.host_faults += self.faults;
            n.host_fault_cycles += self.faults * self.fault_latency as u64;
            let os = self.os.stats();
            n.host_mapped = os.mapped;
            n.host_resident_bytes = os.resident_bytes;
        }
        if let Some(l) = &self.log {
            // The requesters reported first: `s` holds the guest's counts so far.
            let now = crate::stats::dirty_log::Phase::of(s);
            let (before, after) = match &l.before {
                Some(b) => {
                    let mut a = now.clone();
                    a.less(b);
                    (b.clone(), a)
                }
                None => (
                    now,
                    crate::stats::dirty_log::Phase {
                        tlb_misses: vec![0; s.levels.len()],
                        ..Default::default()
                    },
                ),
            };
            if let Some(n) = s.nested.as_mut() {
                n.dirty_log = Some(crate::stats::dirty_log::DirtyLogStats {
                    spec: l.spec,
                    on_at: l.on_at,
                    split: l.splitter.counts,
                    faults: l.faults,
                    pages_dirty: l.pages_dirty(),
                    before,
                    after,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_physical_address_outside_guest_memory_is_an_error_naming_it() {
        let text = "[machine]\narch = \"x86_64\"\n[memory]\nsize = \"64MiB\"\n[[tlb]]\nname = \"l1\"\nserves = \"data\"\nentries = 8\nways = 8\npage_sizes = [\"4K\"]\n[vm]\nmemory = \"16MiB\"\n";
        let spec = crate::config::from_toml(text, None, &[]).unwrap();
        let vm = spec.vm.clone().unwrap();
        let mut h = HostCtx::new(&vm, spec.memory_bytes, 1).unwrap();
        // Inside: the host maps one 4 KiB page.
        h.fault(0xff_f000, true).unwrap();
        assert_eq!(h.os.stats().mapped[mmulab_model::addr::PageSize::K4.index()], 1);
        // Just past the end: an error naming the address and the key.
        let e = h.fault(16 << 20, true).unwrap_err().to_string();
        assert!(e.contains("0x1000000") && e.contains("vm.memory"), "{e}");
    }
}
