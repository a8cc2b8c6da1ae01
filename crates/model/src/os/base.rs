use super::{map_new_page, FaultCtx, OsStats};
use crate::addr::PageSize;
use crate::error::ModelError;

/// Every page 4 KiB, allocated and mapped at first touch.
#[derive(Clone, Debug, Default)]
pub struct Base {
    /// Counters.
    pub stats: OsStats,
}

impl Base {
    /// Maps a fresh 4 KiB page at the faulting address.
    pub fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        map_new_page(&mut ctx, PageSize::K4, &mut self.stats)
    }
}
