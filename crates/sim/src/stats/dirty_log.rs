//! What dirty logging (`[vm.dirty_log]`, system/dirty_log.rs) adds to a nested run's
//! statistics: the split work, the fault path's counts, and the guest's TLB misses,
//! walks and walk references before logging turned on and after (docs/output.md
//! `vm.dirty_log`).

use super::Stats;
use crate::config::vm::DirtyLogSpec;
use mmulab_model::kvm::SplitCounts;
use serde_json::{json, Value};

/// The counts of the stage-2 fault path while logging is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Write faults on write-protected stage-2 entries (each logs its page dirty).
    pub write_faults: u64,
    /// Translation faults that mapped one page.
    pub page_faults: u64,
    /// Blocks replaced by a table on a write fault (no eager split).
    pub blocks_broken: u64,
    /// TLB invalidations by IPA on every CPU (break-before-make of a block).
    pub tlbi_ipa: u64,
    /// Invalidations of one IPA and the stage-1 entries on the faulting CPU only
    /// (`__kvm_tlb_flush_vmid_ipa_nsh`, after a permission is relaxed).
    pub tlbi_local: u64,
}

/// The guest's counts over one part of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Phase {
    /// Trace references.
    pub references: u64,
    /// Misses per combined-TLB level (as `tlb` in the report).
    pub tlb_misses: Vec<u64>,
    /// Two-dimensional walks.
    pub walks: u64,
    /// Guest descriptors read by walks.
    pub stage1_refs: u64,
    /// Stage-2 descriptors read by walks.
    pub stage2_refs: u64,
}

impl Phase {
    /// The counts in `s` (a nested machine's statistics so far).
    pub(crate) fn of(s: &Stats) -> Phase {
        let (r1, r2) = s.nested.as_ref().map_or((0, 0), |n| (n.stage1_refs(), n.stage2_refs()));
        Phase {
            references: s.counters.references,
            tlb_misses: s.levels.iter().map(|l| l.counts.misses).collect(),
            walks: s.counters.walks,
            stage1_refs: r1,
            stage2_refs: r2,
        }
    }

    /// Counters less `b`'s (an earlier part of the same run).
    pub(crate) fn less(&mut self, b: &Phase) {
        self.references = self.references.saturating_sub(b.references);
        for (x, y) in self.tlb_misses.iter_mut().zip(&b.tlb_misses) {
            *x = x.saturating_sub(*y);
        }
        self.walks = self.walks.saturating_sub(b.walks);
        self.stage1_refs = self.stage1_refs.saturating_sub(b.stage1_refs);
        self.stage2_refs = self.stage2_refs.saturating_sub(b.stage2_refs);
    }

    fn to_json(&self, names: &[String]) -> Value {
        let misses: serde_json::Map<String, Value> = names
            .iter()
            .zip(&self.tlb_misses)
            .map(|(n, m)| (n.clone(), json!(m)))
            .collect();
        json!({
            "references": self.references,
            "tlb_misses": misses,
            "walks": self.walks,
            "walk_refs_guest": self.stage1_refs,
            "walk_refs_stage2": self.stage2_refs,
        })
    }
}

/// Dirty logging's statistics.
#[derive(Clone, Debug)]
pub struct DirtyLogStats {
    /// The configuration.
    pub spec: DirtyLogSpec,
    /// The reference count logging turned on after (`None`: the run ended first).
    pub on_at: Option<u64>,
    /// The write-protect and split work (at turn-on).
    pub split: SplitCounts,
    /// The fault path's counts.
    pub faults: FaultCounts,
    /// Pages of the slot logged dirty (the state at the end).
    pub pages_dirty: u64,
    /// The guest before logging turned on (all of the run if it never did).
    pub before: Phase,
    /// The guest after.
    pub after: Phase,
}

impl DirtyLogStats {
    /// Counters less their values in `p` (a warm-up's snapshot); `pages_dirty` is the
    /// state at the end.
    pub(crate) fn less(&mut self, p: &DirtyLogStats) {
        self.split = self.split.zip(&p.split, u64::saturating_sub);
        let (f, g) = (&mut self.faults, &p.faults);
        f.write_faults = f.write_faults.saturating_sub(g.write_faults);
        f.page_faults = f.page_faults.saturating_sub(g.page_faults);
        f.blocks_broken = f.blocks_broken.saturating_sub(g.blocks_broken);
        f.tlbi_ipa = f.tlbi_ipa.saturating_sub(g.tlbi_ipa);
        f.tlbi_local = f.tlbi_local.saturating_sub(g.tlbi_local);
        self.before.less(&p.before);
        self.after.less(&p.after);
    }

    /// The `vm.dirty_log` object of the JSON report; `names` are the TLB levels'.
    pub(crate) fn to_json(&self, names: &[String]) -> Value {
        let s = &self.split;
        let g = self.spec.granule;
        let blocks: serde_json::Map<String, Value> = (0..4)
            .filter(|&l| s.blocks_split[l] > 0)
            .map(|l| {
                // Kernel level 1 holds the largest block, level 2 the next.
                let sizes = g.block_sizes();
                let size = sizes[(l + sizes.len()).saturating_sub(3).min(sizes.len() - 1)];
                (size.to_string(), json!(s.blocks_split[l]))
            })
            .collect();
        json!({
            "at": self.spec.at,
            "start": self.spec.start,
            "bytes": self.spec.end - self.spec.start,
            "granule": g.name(),
            "eager_split_chunk": self.spec.chunk,
            "split_walker": self.spec.variant.name(),
            "turned_on_after": self.on_at,
            "split": {
                "blocks_split": blocks,
                "split_calls": s.split_calls,
                "write_protect_calls": s.wp_calls,
                "write_protect_writes": s.wp_writes,
                "entries_visited": s.visits(),
                "table_pages_taken": s.pages_taken,
                "descriptors_written": s.descriptors_written,
                "tlbi_ipa": s.tlbi_ipa,
                "tlbi_vmid": s.tlbi_vmid,
                "cache_topups": s.topups,
            },
            "write_faults": self.faults.write_faults,
            "page_faults": self.faults.page_faults,
            "blocks_broken": self.faults.blocks_broken,
            "fault_tlbi_ipa": self.faults.tlbi_ipa,
            "fault_tlbi_local": self.faults.tlbi_local,
            "pages_dirty": self.pages_dirty,
            "before": self.before.to_json(names),
            "after": self.after.to_json(names),
        })
    }

    /// The line `mmulab sim` prints.
    pub(crate) fn text(&self) -> String {
        let t = super::report::thousands;
        let last = |p: &Phase| p.tlb_misses.last().copied().unwrap_or(0);
        let on = match self.on_at {
            Some(n) => format!("on after {} references", t(n)),
            None => format!("never on (at = {} is past the run)", t(self.spec.at)),
        };
        format!(
            "dirty logging ({on}): {} blocks split, {} write faults, {} pages dirty; last-level TLB misses {} before, {} after; walk refs {} before, {} after\n",
            t(self.split.blocks_split.iter().sum()),
            t(self.faults.write_faults),
            t(self.pages_dirty),
            t(last(&self.before)),
            t(last(&self.after)),
            t(self.before.stage1_refs + self.before.stage2_refs),
            t(self.after.stage1_refs + self.after.stage2_refs),
        )
    }
}
