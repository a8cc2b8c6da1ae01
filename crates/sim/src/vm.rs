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

use crate::config_vm::VmSpec;
use crate::stats::{Report, Stats};
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::mem::Memory;
use mmulab_model::os::{FaultCtx, Os, Shootdown};
use mmulab_model::space::AddressSpace;
use mmulab_model::tlb::TlbStats;
use mmulab_trace::AccessKind;
use serde_json::{json, Value};

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
        Ok(HostCtx {
            mem,
            space,
            os,
            guest_bytes: vm.guest_bytes,
            shootdowns: Vec::new(),
            fault_latency,
            faults: 0,
        })
    }

    /// The stage-2 root table (host-physical).
    #[inline]
    pub(crate) fn root(&self) -> u64 {
        self.space.root
    }

    /// A stage-2 fault at guest-physical `gpa`: the host policy maps it (as a write: the
    /// host backs guest RAM writable). The ranges it changed are left in `shootdowns`.
    pub(crate) fn fault(&mut self, gpa: u64) -> Result<(), SimError> {
        if gpa >= self.guest_bytes {
            return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                "guest-physical address {gpa:#x} is outside the guest's memory (vm.memory = {:#x} bytes): the guest's page tables point past its RAM",
                self.guest_bytes
            ))));
        }
        self.faults += 1;
        self.shootdowns.clear();
        self.os.handle_fault(FaultCtx {
            mem: &mut self.mem,
            space: &mut self.space,
            va: gpa,
            kind: AccessKind::Store,
            shootdowns: &mut self.shootdowns,
        })?;
        Ok(())
    }
}

/// What a nested run adds to the statistics (summed over cores; the host's side set
/// once).
#[derive(Clone, Debug, Default)]
pub struct NestedStats {
    /// The stage-2 format's name.
    pub stage2: String,
    /// `vm.backing` as written.
    pub backing: String,
    /// Guest descriptors read by walks, by guest level.
    pub stage1_refs_by_level: Vec<u64>,
    /// Stage-2 descriptors read, by stage-2 level (guest table pointers and final
    /// guest-physical addresses alike).
    pub stage2_refs_by_level: Vec<u64>,
    /// Guest-physical addresses translated through stage 2 (each guest table read and
    /// each final address), with or without the stage-2 TLB.
    pub stage2_translations: u64,
    /// Stage-2 walks (translations the stage-2 TLB did not serve).
    pub stage2_walks: u64,
    /// The stage-2 TLB's counts, if there is one.
    pub s2tlb: Option<TlbStats>,
    /// Stage-2 page-walk-cache lookups and hits by stage-2 level.
    pub pwc2_lookups: u64,
    /// Hits by level.
    pub pwc2_hits: Vec<u64>,
    /// Stage-2 faults (the host policy mapped guest memory).
    pub host_faults: u64,
    /// Cycles of those faults (`os.fault_latency` each).
    pub host_fault_cycles: u64,
    /// Host pages mapping guest memory, by size.
    pub host_mapped: [u64; 9],
    /// Host bytes backing guest memory.
    pub host_resident_bytes: u64,
    /// With data caches (`[caches]`): the walk reads' share of the caches by stage;
    /// none without (and no `walk_caches` key in the JSON).
    pub walk_caches: Option<WalkCacheSplit>,
}

/// Where a nested walk's reads hit, by stage (index 0: guest descriptors, 1: stage-2
/// descriptors); their per-level hits and misses are in `caches` with every other
/// walk read's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCacheSplit {
    /// Cycles of the stage's reads in the caches and memory.
    pub cycles: [u64; 2],
    /// The stage's reads that missed every level (served by memory).
    pub memory_reads: [u64; 2],
}

impl NestedStats {
    /// Zeroed, shaped for guest format levels `g` and stage-2 levels `h`.
    pub(crate) fn new(vm: &VmSpec, g: usize) -> NestedStats {
        let h = vm.stage2.levels().len();
        NestedStats {
            stage2: vm.stage2.arch_name().into(),
            backing: vm.backing.clone(),
            stage1_refs_by_level: vec![0; g],
            stage2_refs_by_level: vec![0; h],
            pwc2_hits: vec![0; h - 1],
            s2tlb: vm.s2tlb.as_ref().map(|_| TlbStats::default()),
            ..Default::default()
        }
    }

    /// Guest descriptors read.
    pub fn stage1_refs(&self) -> u64 {
        self.stage1_refs_by_level.iter().sum()
    }

    /// Stage-2 descriptors read.
    pub fn stage2_refs(&self) -> u64 {
        self.stage2_refs_by_level.iter().sum()
    }

    /// The `vm` object of the JSON report (docs/output.md).
    pub(crate) fn to_json(&self) -> Value {
        let pages: serde_json::Map<String, Value> = mmulab_model::addr::PageSize::ALL
            .iter()
            .filter(|p| self.host_mapped[p.index()] > 0)
            .map(|p| (p.to_string(), json!(self.host_mapped[p.index()])))
            .collect();
        let mut v = json!({
            "stage2": self.stage2,
            "backing": self.backing,
            "stage2_translations": self.stage2_translations,
            "stage2_walks": self.stage2_walks,
            "s2tlb": self.s2tlb,
            "pwc2": { "lookups": self.pwc2_lookups, "hits_by_level": self.pwc2_hits },
            "host_faults": self.host_faults,
            "host_fault_cycles": self.host_fault_cycles,
            "host_pages": pages,
            "host_resident_bytes": self.host_resident_bytes,
        });
        if let Some(w) = &self.walk_caches {
            v["walk_caches"] = json!({
                "stage1_cycles": w.cycles[0],
                "stage2_cycles": w.cycles[1],
                "stage1_memory_reads": w.memory_reads[0],
                "stage2_memory_reads": w.memory_reads[1],
            });
        }
        v
    }
}

/// The lines `mmulab sim` prints for a nested run (after the memory line).
pub(crate) fn text(n: &NestedStats) -> String {
    let t = crate::report::thousands;
    let pages: Vec<String> = mmulab_model::addr::PageSize::ALL
        .iter()
        .filter(|p| n.host_mapped[p.index()] > 0)
        .map(|p| format!("{} x {p}", t(n.host_mapped[p.index()])))
        .collect();
    let s2tlb = n.s2tlb.map_or("no stage-2 TLB".to_string(), |s| {
        format!("stage-2 TLB hits {} of {}", t(s.hits), t(s.accesses))
    });
    let caches = n.walk_caches.map_or(String::new(), |w| {
        format!(
            "walk reads in the data caches: guest {} cycles ({} from memory), stage 2 {} cycles ({} from memory)\n",
            t(w.cycles[0]),
            t(w.memory_reads[0]),
            t(w.cycles[1]),
            t(w.memory_reads[1])
        )
    });
    format!(
        "nested ({} over {}): walk refs guest {} + stage 2 {}; {} guest-physical translations, {} stage-2 walks, {s2tlb}\nhost ({}): {} MiB backing guest memory in {}; {} stage-2 faults\n{caches}",
        n.stage2,
        n.backing,
        t(n.stage1_refs()),
        t(n.stage2_refs()),
        t(n.stage2_translations),
        t(n.stage2_walks),
        n.backing,
        n.host_resident_bytes >> 20,
        if pages.is_empty() { "no pages".to_string() } else { pages.join(", ") },
        t(n.host_faults)
    )
}

impl Report for HostCtx {
    /// The host's faults and the pages backing guest memory.
    fn report(&self, s: &mut Stats) {
        let Some(n) = s.nested.as_mut() else { return };
        n.host_faults += self.faults;
        n.host_fault_cycles += self.faults * self.fault_latency as u64;
        let os = self.os.stats();
        n.host_mapped = os.mapped;
        n.host_resident_bytes = os.resident_bytes;
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
        h.fault(0xff_f000).unwrap();
        assert_eq!(h.os.stats().mapped[mmulab_model::addr::PageSize::K4.index()], 1);
        // Just past the end: an error naming the address and the key.
        let e = h.fault(16 << 20).unwrap_err().to_string();
        assert!(e.contains("0x1000000") && e.contains("vm.memory"), "{e}");
    }
}
