//! Address spaces: one page table (root and format) per address-space id.

use crate::addr::Asid;
use crate::error::ModelError;
use crate::mem::Memory;
use crate::pt::Format;

/// One process's translation context.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    /// Its id (TLB entries are tagged with it).
    pub asid: Asid,
    /// The page-table format.
    pub fmt: Format,
    /// Physical address of the root table.
    pub root: u64,
}

impl AddressSpace {
    /// A new, empty address space with its root table allocated in `mem`.
    pub fn new(asid: Asid, fmt: Format, mem: &mut Memory) -> Result<AddressSpace, ModelError> {
        let root = mem.alloc_table(fmt.levels()[0].entries())?;
        Ok(AddressSpace { asid, fmt, root })
    }
}
