//! Memslots: ranges of guest-physical memory KVM maps (`struct kvm_memory_slot`: base
//! gfn, number of pages, flags), checked as `__kvm_set_memory_region` checks them
//! (`virt/kvm/kvm_main.c`): page-aligned, inside the VM's IPA space, not overlapping
//! another slot.

use crate::ModelError;

/// `KVM_MEM_LOG_DIRTY_PAGES`: the slot logs dirty pages.
pub const KVM_MEM_LOG_DIRTY_PAGES: u32 = 1 << 0;
/// `KVM_MEM_READONLY`: the guest may not write the slot.
pub const KVM_MEM_READONLY: u32 = 1 << 1;

/// One memslot. Frame numbers count 4 KiB frames (`PAGE_SIZE` of a 4K host; the model
/// keeps 4 KiB dirty-bitmap bits at every granule, as the seed's test does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memslot {
    /// Slot id.
    pub id: u32,
    /// First guest frame number.
    pub base_gfn: u64,
    /// Number of 4 KiB pages.
    pub pages: u64,
    /// `KVM_MEM_*` flags.
    pub flags: u32,
}

impl Memslot {
    /// First guest-physical address.
    pub fn start(&self) -> u64 {
        self.base_gfn << 12
    }
    /// One past the last guest-physical address.
    pub fn end(&self) -> u64 {
        (self.base_gfn + self.pages) << 12
    }
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.pages << 12
    }
}

/// The memslots of one VM.
#[derive(Clone, Debug)]
pub struct Memslots {
    /// Bits of intermediate physical address the VM has (`kvm_phys_shift`).
    pub ipa_bits: u32,
    slots: Vec<Memslot>,
}

impl Memslots {
    /// No slots, in an IPA space of `ipa_bits` (32..=48; KVM's default is 40).
    pub fn new(ipa_bits: u32) -> Result<Memslots, ModelError> {
        if !(32..=48).contains(&ipa_bits) {
            return Err(ModelError::Config(format!(
                "ipa_bits = {ipa_bits}: the stage-2 IPA size must be 32..=48 bits"
            )));
        }
        Ok(Memslots {
            ipa_bits,
            slots: Vec::new(),
        })
    }

    /// Adds `s`: an error names the slot and the address if it is empty, extends past the
    /// IPA space or overlaps another slot.
    pub fn add(&mut self, s: Memslot) -> Result<(), ModelError> {
        if s.pages == 0 {
            return Err(ModelError::Config(format!(
                "memslot {}: it has no pages; give it at least one 4 KiB page",
                s.id
            )));
        }
        let limit = 1u64 << self.ipa_bits;
        if !matches!(s.base_gfn.checked_add(s.pages), Some(e) if e <= limit >> 12) {
            return Err(ModelError::Config(format!(
                "memslot {}: guest-physical {:#x}..+{:#x} reaches past the {}-bit IPA space (ends at {limit:#x}); \
                 move or shrink the slot",
                s.id,
                s.base_gfn << 12,
                s.pages << 12,
                self.ipa_bits
            )));
        }
        if let Some(o) = self.slots.iter().find(|o| o.id == s.id) {
            return Err(ModelError::Config(format!(
                "memslot {}: the id is taken by the slot at {:#x}",
                s.id,
                o.start()
            )));
        }
        if let Some(o) = self.slots.iter().find(|o| s.start() < o.end() && o.start() < s.end()) {
            return Err(ModelError::Config(format!(
                "memslot {} ({:#x}..{:#x}) overlaps memslot {} ({:#x}..{:#x}) from {:#x}; slots must not overlap",
                s.id,
                s.start(),
                s.end(),
                o.id,
                o.start(),
                o.end(),
                s.start().max(o.start())
            )));
        }
        self.slots.push(s);
        Ok(())
    }

    /// The slot holding guest-physical address `gpa`; an error names the address.
    pub fn find(&self, gpa: u64) -> Result<&Memslot, ModelError> {
        self.slots
            .iter()
            .find(|s| s.start() <= gpa && gpa < s.end())
            .ok_or_else(|| {
                ModelError::Config(format!(
                    "guest-physical address {gpa:#x} is outside every memslot ({} slots); add a slot that covers it",
                    self.slots.len()
                ))
            })
    }

    /// The slot with id `id`.
    pub fn get(&self, id: u32) -> Option<&Memslot> {
        self.slots.iter().find(|s| s.id == id)
    }

    /// Every slot, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &Memslot> {
        self.slots.iter()
    }
}
