//! One scenario on one slot, walked or extrapolated.

use super::memslot::{Memslot, KVM_MEM_LOG_DIRTY_PAGES};
use super::{Backing, Granule, Scenario, SplitCounts, Stage2, Variant};
use crate::ModelError;

/// 1 GiB, the piece large slots are extrapolated by.
const GIB: u64 = 1 << 30;

/// One measurement: a slot of `slot_bytes` backed by `backing`, tables of `granule`,
/// `scenario` run with split walker `variant` and chunk size `chunk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// Slot size in bytes.
    pub slot_bytes: u64,
    /// Host backing.
    pub backing: Backing,
    /// Stage-2 granule.
    pub granule: Granule,
    /// What user space does.
    pub scenario: Scenario,
    /// Split walker variant.
    pub variant: Variant,
    /// `eager_split_chunk_size` in bytes (0 = off).
    pub chunk: u64,
}

impl Case {
    /// The chunk size the reproduction uses: the granule's level-2 block (2M, 32M, 512M),
    /// the smallest size the capability accepts. Assumed: the seed does not give the
    /// test's `eager-split-size`.
    pub fn default_chunk(g: Granule) -> u64 {
        g.block_sizes().last().expect("every granule has a block size").bytes()
    }
}

/// Runs `case` on a real stage-2 table of the whole slot (based at 1 GiB, where QEMU's
/// arm64 `virt` machine puts RAM).
pub fn measure_walked(case: &Case) -> Result<SplitCounts, ModelError> {
    let slot = Memslot {
        id: 0,
        base_gfn: GIB >> 12,
        pages: case.slot_bytes >> 12,
        flags: KVM_MEM_LOG_DIRTY_PAGES,
    };
    // Last-level tables of a fully split slot, their parents, and slack.
    let tables = case.slot_bytes / (case.granule.page().bytes() / 8) * 2;
    let mut s = Stage2::new(case.granule, case.variant, case.chunk, tables)?;
    s.populate(&slot, case.backing)?;
    match case.scenario {
        Scenario::Enable => s.enable_dirty_logging(&slot)?,
        Scenario::ClearDirtyLog => s.clear_dirty_log(&slot)?,
    }
    Ok(s.splitter.counts)
}

/// Runs `case`; a slot of more than 3 GiB (a whole number of GiB) is extrapolated from
/// real walks of 1, 2 and 3 GiB slots: counts(n) = counts(3) + (n − 3) × (counts(3) −
/// counts(2)). This is exact when the 1 GiB pieces cost alike, which holds because every
/// walk (wp apply chunk, split chunk, 64-page word) starts at the root and every chunk
/// size divides 1 GiB; only the first piece differs (the first top-up), which is why the
/// steps 1→2 and 2→3 are compared and the slot is walked in full if they differ. Returns
/// the counts and whether they were extrapolated.
pub fn measure(case: &Case) -> Result<(SplitCounts, bool), ModelError> {
    if case.slot_bytes <= 3 * GIB || case.slot_bytes % GIB != 0 {
        return Ok((measure_walked(case)?, false));
    }
    let at = |gib: u64| {
        measure_walked(&Case {
            slot_bytes: gib * GIB,
            ..*case
        })
    };
    let (c1, c2, c3) = (at(1)?, at(2)?, at(3)?);
    let step = c3.zip(&c2, |a, b| a.wrapping_sub(b));
    if c2.zip(&c1, |a, b| a.wrapping_sub(b)) != step {
        return Ok((measure_walked(case)?, false));
    }
    let n = case.slot_bytes / GIB - 3;
    Ok((c3.zip(&step, |a, d| a.wrapping_add(d.wrapping_mul(n))), true))
}
