use super::{anon_attrs, map_new_page, FaultCtx, OsStats};
use crate::error::ModelError;

/// Every page of the format's base size (4 KiB; 16 or 64 KiB with those ARMv8 granules),
/// allocated and mapped at first touch.
#[derive(Clone, Debug, Default)]
pub struct Base {
    /// Counters.
    pub stats: OsStats,
    /// Reclaim under memory pressure.
    pub reclaim: super::ReclaimConfig,
    /// Linux's zero page for read faults (`os.zero_page`; zero.rs).
    pub zero_page: bool,
}

impl super::OsPolicy for Base {
    fn name(&self) -> &'static str {
        "base"
    }

    super::policy_fields!(stats, reclaim);

    fn set_zero_page(&mut self, on: bool) -> bool {
        self.zero_page = on;
        true
    }

    /// Maps a fresh base page at the faulting address, young (and dirty as
    /// `do_anonymous_page` maps it, with `zero_page`: then a read maps the zero page and a
    /// store to it copies it; zero.rs).
    fn fault(&mut self, mut ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        if self.zero_page && super::zero::fault(&mut ctx, &mut self.stats)? {
            return Ok(());
        }
        let page = ctx.space.fmt.base_page();
        // With zero pages off, `base` is also FreeBSD's base pages (the freebsd
        // experiment's baseline; docs/config.md `os.zero_page`): a read fault's page is
        // mapped clean, as FreeBSD's pmap_enter maps it. Linux's THP policies map it dirty
        // (`anon_attrs`, do_anonymous_page).
        let attrs = if self.zero_page {
            anon_attrs(ctx.kind, true)
        } else {
            super::fresh_attrs(ctx.kind)
        };
        map_new_page(&mut ctx, page, attrs, &mut self.stats)
    }
}
