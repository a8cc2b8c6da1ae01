//! VMA preloading: the VMAs a trace captured (`mmulab record`'s /proc/PID/maps samples,
//! the `vmas` metadata section) installed in the simulated OS before a run, so that the
//! policies see them from the first fault (docs/policies.md). The run loop also installs
//! them when a source reports them later (`run`); preloading matters for `.mlt`
//! files, which may keep their sections anywhere in the file.

use std::path::Path;

use mmulab_trace::TraceMeta;

use crate::machine::{Machine, RegionCuts};
use crate::system::TraceVma;

/// The metadata sections of the trace file at `path`, read up front, as a [`TraceMeta`]
/// (sections only). `None` if the file is not an `.mlt` trace whose sections can be read:
/// other formats report their metadata while they are read, and so does a trace read from
/// a pipe or FIFO (opening it here would consume the bytes the run needs).
pub fn trace_file_meta(path: &Path) -> Option<TraceMeta> {
    if mmulab_trace::is_stream(path) {
        return None;
    }
    let sections = mmulab_trace::format::mlt::read_sections(path).ok()?;
    Some(TraceMeta {
        sections,
        ..Default::default()
    })
}

/// Installs the VMAs of `meta` (every range any sample of its `vmas` section held,
/// `TraceMeta::vmas_union`) in every address
/// space of `m`, existing and future ones. Returns how many it installed (0: `meta`
/// carries none, and `m` is unchanged).
pub fn preload_vmas(m: &mut Machine, meta: &TraceMeta) -> usize {
    let vmas: Vec<TraceVma> = meta.vmas_at_start().iter().map(TraceVma::of).collect();
    if vmas.is_empty() {
        return 0;
    }
    m.set_region_cuts(allocation_cuts(meta));
    m.set_trace_vma_flags(&vmas)
}

/// How the trace's allocations (`allocations` section) refine its regions: their ends
/// strictly inside an anonymous VMA of its samples (where allocations the kernel merged
/// meet; a file mapping is one region whatever was mapped in it), and the allocations
/// that overlap no VMA of the samples (mapped and gone between two).
fn allocation_cuts(meta: &TraceMeta) -> RegionCuts {
    let allocs = meta.allocations();
    if allocs.is_empty() {
        return RegionCuts::default();
    }
    let union = meta.vmas_union();
    let anon: Vec<(u64, u64)> = union
        .iter()
        .filter(|v| v.name.is_empty())
        .map(|v| (v.start, v.end))
        .collect();
    RegionCuts {
        splits: allocs
            .iter()
            .flat_map(|&(a, e)| [a, e])
            .filter(|&p| anon.iter().any(|&(s, e)| s < p && p < e))
            .collect(),
        extra: allocs
            .iter()
            .copied()
            .filter(|&(a, e)| !union.iter().any(|v| v.start < e && a < v.end))
            .collect(),
    }
}
