use super::{map_new_page, FaultCtx, OsStats};
use crate::error::ModelError;

/// Every page of the format's base size (4 KiB; 16 or 64 KiB with those ARMv8 granules),
/// allocated and mapped at first touch.
#[derive(Clone, Debug, Default)]
pub struct Base {
    /// Counters.
    pub stats: OsStats,
    /// Reclaim under memory pressure.
    pub reclaim: super::ReclaimConfig,
}

impl super::OsPolicy for Base {
    fn name(&self) -> &'static str {
        "base"
    }

    super::policy_fields!(stats, reclaim);

    /// Maps a fresh base page at the faulting address.
    fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        let page = ctx.space.fmt.base_page();
        map_new_page(&mut ctx, page, &mut self.stats)
    }
}
