//! The machine's side of a virtual machine (`[vm]`; docs/virtualization.md): building
//! the guest (its memory and OS policy as a [`System`]), the host context in it
//! (system/stage2.rs), the virtualized cores ([`Nested`] translators), and the fault loop that
//! hands a guest fault to the guest's policy and a stage-2 fault to the host's. Apart
//! from `Machine::access`'s branch for a machine without stage-1 cores, the non-nested
//! path does not change.

use super::requesters::Requesters;
use super::Machine;
use crate::config::MachineSpec;
use crate::system::stage2::HostCtx;
use crate::system::System;
use crate::translator::{Nested, Stop, Translator};
use crate::SimError;
use mmulab_model::mem::Memory;
use mmulab_model::os::OsPolicy;
use mmulab_trace::MemRef;

impl Machine {
    /// A machine whose cores run a guest: guest memory `vm.memory` with the `[os]`
    /// policy, host memory `memory.size` with the `vm.backing` policy.
    pub(super) fn new_nested(spec: MachineSpec) -> Result<Machine, SimError> {
        let vm = spec.vm.clone().expect("a nested machine has [vm]");
        crate::config::limits::check_host(&spec)?;
        let mut mem = Memory::new(vm.guest_bytes)?;
        let mut vcpus: Vec<Nested> = (0..spec.cores)
            .map(|_| {
                Nested::new(
                    spec.tlbs.clone(),
                    spec.data_entry,
                    spec.instr_entry,
                    spec.format,
                    &spec.pwc_entries,
                    vm.stage2,
                    &vm.pwc_entries,
                    vm.s2tlb.clone(),
                    spec.cost,
                )
            })
            .collect();
        let mut os = spec.os.build(spec.format).map_err(SimError::Config)?;
        os.set_zero_page(spec.zero_page);
        let mut bg = super::background::Background::new(&spec, &mut mem);
        bg.set_os_ticks(mmulab_model::os::OsPolicy::has_tick(&os));
        let caches = super::cache::build_for(&spec, &mut vcpus);
        let mut sys = System::new(mem, os, spec.format, spec.cost.fault_latency);
        sys.host = Some(Box::new(HostCtx::new(&vm, spec.memory_bytes, spec.cost.fault_latency)?));
        let mut m = Machine {
            req: Requesters {
                vcpus,
                ..Default::default()
            },
            caches,
            mem_trace: None,
            pipeline: false,
            regions: None,
            region_cuts: super::RegionCuts::default(),
            sys,
            references: 0,
            next_tick: bg.next_tick(0),
            bg,
            spec,
        };
        m.next_tick = m.next_due(0);
        Ok(m)
    }

    /// The virtualized cores' translators (empty without `[vm]`).
    pub fn vcpus(&self) -> &[Nested] {
        &self.req.vcpus
    }

    /// [`Machine::access`] on a machine with `[vm]` (counted, background work done);
    /// with data caches, the access's reads and data through them afterwards
    /// (translator/nested_cache.rs).
    #[cold]
    #[inline(never)]
    pub(super) fn access_nested(&mut self, r: &MemRef) -> Result<(), SimError> {
        let n = self.req.vcpus.len();
        let core = r.core as usize % n;
        let mut res = if self.caches.is_some() {
            self.req.vcpus[core].access_rec(&mut self.sys, r)
        } else {
            self.req.vcpus[core].access(&mut self.sys, r)
        };
        loop {
            match res {
                Ok(()) => break,
                Err(Stop::Error(e)) => return Err(*e),
                Err(Stop::Fault { upto, attempt }) => {
                    self.fault(r)?;
                    res = self.req.vcpus[core].resume(&mut self.sys, r, upto, attempt);
                }
                Err(Stop::HostFault {
                    gpa,
                    write,
                    upto,
                    attempt,
                }) => {
                    self.host_fault(gpa, write, Some(core))?;
                    res = self.req.vcpus[core].resume(&mut self.sys, r, upto, attempt);
                }
            }
        }
        if let Some(caches) = self.caches.as_deref_mut() {
            self.req.vcpus[core].cache_access(caches, core, r);
        }
        Ok(())
    }

    /// Lets the host map guest-physical `gpa` (for a write if `write`) and drops what
    /// its changes made stale from every virtualized core (only from `core`, the
    /// faulting one, for a flush KVM makes on the local CPU).
    pub(super) fn host_fault(&mut self, gpa: u64, write: bool, core: Option<usize>) -> Result<(), SimError> {
        let host = self.sys.host.as_deref_mut().expect("a nested machine has a host");
        host.fault(gpa, write)?;
        for &(_, start, end) in &host.shootdowns {
            for (i, c) in self.req.vcpus.iter_mut().enumerate() {
                if !host.local || core.is_none_or(|k| k == i) {
                    c.invalidate_stage2(start, end);
                }
            }
        }
        Ok(())
    }

    /// Turns dirty logging on if it is due after `now` references
    /// (`[vm.dirty_log]`): the host write-protects (and splits) the slot, then a
    /// VMID-wide flush (`kvm_flush_remote_tlbs_memslot`) drops every core's combined
    /// entries, stage-2 TLB entries and stage-2 walk caches. The guest's counts so far
    /// are kept as the "before" of the report.
    pub(super) fn dirty_log_tick(&mut self, now: u64) -> Result<(), SimError> {
        let Some(host) = self.sys.host.as_deref_mut() else {
            return Ok(());
        };
        if !host.dirty_log_due(now)? {
            return Ok(());
        }
        for c in &mut self.req.vcpus {
            c.flush_vmid();
        }
        let mut before = crate::stats::dirty_log::Phase::of(&self.stats());
        // The reference being simulated is counted already; it comes after.
        before.references = now;
        if let Some(l) = self.sys.host.as_deref_mut().and_then(|h| h.log.as_mut()) {
            l.before = Some(before);
        }
        Ok(())
    }

    /// The reference count dirty logging turns on after, while it is off.
    pub(super) fn dirty_log_pending(&self) -> Option<u64> {
        self.sys.host.as_deref()?.log.as_ref()?.pending_at()
    }
}
