use super::{fresh_attrs, map_new_page, FaultCtx, OsStats};
use crate::addr::PageSize;
use crate::error::ModelError;

/// Every touched region backed by pages of one size, like hugetlbfs for the whole
/// address space: a fault maps the aligned page of `page_size` containing the address.
#[derive(Clone, Debug)]
pub struct Fixed {
    /// The size of every page.
    pub page_size: PageSize,
    /// Counters.
    pub stats: OsStats,
}

impl Fixed {
    /// A policy backing everything with `page_size` pages.
    pub fn new(page_size: PageSize) -> Fixed {
        Fixed {
            page_size,
            stats: OsStats::default(),
        }
    }
}

impl super::OsPolicy for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    super::policy_fields!(stats);

    fn unmap_align(&self) -> PageSize {
        self.page_size
    }

    /// Maps a fresh page of the configured size at the faulting address: young, and
    /// dirty if the access was a store (no kernel's policy: the neutral choice).
    fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        let attrs = fresh_attrs(ctx.kind);
        map_new_page(&mut ctx, self.page_size, attrs, &mut self.stats)
    }
}
