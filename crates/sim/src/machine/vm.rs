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
        Ok(Machine {
            req: Requesters {
                vcpus,
                ..Default::default()
            },
            caches,
            mem_trace: None,
            pipeline: false,
            regions: None,
            sys,
            references: 0,
            next_tick: bg.next_tick(0),
            bg,
            spec,
        })
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
                Err(Stop::HostFault { gpa, upto, attempt }) => {
                    self.host_fault(gpa)?;
                    res = self.req.vcpus[core].resume(&mut self.sys, r, upto, attempt);
                }
            }
        }
        if let Some(caches) = self.caches.as_deref_mut() {
            self.req.vcpus[core].cache_access(caches, core, r);
        }
        Ok(())
    }

    /// Lets the host's policy map guest-physical `gpa` and drops what its changes made
    /// stale from every virtualized core.
    pub(super) fn host_fault(&mut self, gpa: u64) -> Result<(), SimError> {
        let host = self.sys.host.as_deref_mut().expect("a nested machine has a host");
        host.fault(gpa)?;
        for &(_, start, end) in &host.shootdowns {
            for c in &mut self.req.vcpus {
                c.invalidate_stage2(start, end);
            }
        }
        Ok(())
    }
}
