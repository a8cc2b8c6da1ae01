/// What a reference does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum AccessKind {
    /// A data read.
    Load = 0,
    /// A data write (a read-modify-write counts as one store).
    Store = 1,
    /// An instruction fetch.
    IFetch = 2,
}

impl AccessKind {
    /// Decodes the numeric code used by mmulab's own format (0 load, 1 store, 2 ifetch).
    pub fn from_code(code: u8) -> Option<AccessKind> {
        match code {
            0 => Some(AccessKind::Load),
            1 => Some(AccessKind::Store),
            2 => Some(AccessKind::IFetch),
            _ => None,
        }
    }

    /// True for loads and stores.
    pub fn is_data(self) -> bool {
        !matches!(self, AccessKind::IFetch)
    }
}

/// One memory reference. It is translated at its start address only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRef {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Access size in bytes (0 when the format does not say).
    pub size: u16,
    /// Load, store or instruction fetch.
    pub kind: AccessKind,
    /// The hardware thread / core that issued it (index into the machine's cores).
    pub core: u16,
    /// The address space (process) it belongs to.
    pub asid: u16,
}

impl MemRef {
    /// A reference on core 0, address space 0.
    pub fn new(addr: u64, kind: AccessKind, size: u16) -> MemRef {
        MemRef {
            addr,
            size,
            kind,
            core: 0,
            asid: 0,
        }
    }
}
