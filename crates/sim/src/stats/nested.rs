//! What a nested run (`[vm]`) adds to the statistics: walk references per stage, the
//! stage-2 TLB and walk caches, the host's faults and backing (docs/output.md `vm`).

use crate::config::vm::VmSpec;
use mmulab_model::tlb::TlbStats;
use serde_json::{json, Value};

/// What a nested run adds to the statistics (summed over cores; the host's side set
/// once).
#[derive(Clone, Debug, Default)]
pub struct NestedStats {
    /// The stage-2 format's name.
    pub stage2: String,
    /// `vm.backing` as written.
    pub backing: String,
    /// Guest descriptors read by walks, by guest level.
    pub stage1_refs_by_level: Vec<u64>,
    /// Stage-2 descriptors read, by stage-2 level (guest table pointers and final
    /// guest-physical addresses alike).
    pub stage2_refs_by_level: Vec<u64>,
    /// Guest-physical addresses translated through stage 2 (each guest table read and
    /// each final address), with or without the stage-2 TLB.
    pub stage2_translations: u64,
    /// Stage-2 walks (translations the stage-2 TLB did not serve).
    pub stage2_walks: u64,
    /// The stage-2 TLB's counts, if there is one.
    pub s2tlb: Option<TlbStats>,
    /// Stage-2 page-walk-cache lookups and hits by stage-2 level.
    pub pwc2_lookups: u64,
    /// Hits by level.
    pub pwc2_hits: Vec<u64>,
    /// Stage-2 faults (the host policy mapped guest memory).
    pub host_faults: u64,
    /// Cycles of those faults (`os.fault_latency` each).
    pub host_fault_cycles: u64,
    /// Host pages mapping guest memory, by size.
    pub host_mapped: [u64; 9],
    /// Host bytes backing guest memory.
    pub host_resident_bytes: u64,
    /// With data caches (`[caches]`): the walk reads' share of the caches by stage;
    /// none without (and no `walk_caches` key in the JSON).
    pub walk_caches: Option<WalkCacheSplit>,
    /// Dirty logging (`[vm.dirty_log]`), if configured.
    pub dirty_log: Option<super::dirty_log::DirtyLogStats>,
}

/// Where a nested walk's reads hit, by stage (index 0: guest descriptors, 1: stage-2
/// descriptors); their per-level hits and misses are in `caches` with every other
/// walk read's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkCacheSplit {
    /// Cycles of the stage's reads in the caches and memory.
    pub cycles: [u64; 2],
    /// The stage's reads that missed every level (served by memory).
    pub memory_reads: [u64; 2],
}

impl NestedStats {
    /// Zeroed, shaped for guest format levels `g` and stage-2 levels `h`.
    pub(crate) fn new(vm: &VmSpec, g: usize) -> NestedStats {
        let h = vm.stage2.levels().len();
        NestedStats {
            stage2: vm.stage2.arch_name().into(),
            backing: vm.backing.clone(),
            stage1_refs_by_level: vec![0; g],
            stage2_refs_by_level: vec![0; h],
            pwc2_hits: vec![0; h - 1],
            s2tlb: vm.s2tlb.as_ref().map(|_| TlbStats::default()),
            ..Default::default()
        }
    }

    /// Guest descriptors read.
    pub fn stage1_refs(&self) -> u64 {
        self.stage1_refs_by_level.iter().sum()
    }

    /// Stage-2 descriptors read.
    pub fn stage2_refs(&self) -> u64 {
        self.stage2_refs_by_level.iter().sum()
    }

    /// The `vm` object of the JSON report (docs/output.md); `tlb_names` are the
    /// combined TLB levels'.
    pub(crate) fn to_json(&self, tlb_names: &[String]) -> Value {
        let pages: serde_json::Map<String, Value> = mmulab_model::addr::PageSize::ALL
            .iter()
            .filter(|p| self.host_mapped[p.index()] > 0)
            .map(|p| (p.to_string(), json!(self.host_mapped[p.index()])))
            .collect();
        let mut v = json!({
            "stage2": self.stage2,
            "backing": self.backing,
            "stage2_translations": self.stage2_translations,
            "stage2_walks": self.stage2_walks,
            "s2tlb": self.s2tlb,
            "pwc2": { "lookups": self.pwc2_lookups, "hits_by_level": self.pwc2_hits },
            "host_faults": self.host_faults,
            "host_fault_cycles": self.host_fault_cycles,
            "host_pages": pages,
            "host_resident_bytes": self.host_resident_bytes,
        });
        if let Some(w) = &self.walk_caches {
            v["walk_caches"] = json!({
                "stage1_cycles": w.cycles[0],
                "stage2_cycles": w.cycles[1],
                "stage1_memory_reads": w.memory_reads[0],
                "stage2_memory_reads": w.memory_reads[1],
            });
        }
        if let Some(d) = &self.dirty_log {
            v["dirty_log"] = d.to_json(tlb_names);
        }
        v
    }
}

/// The lines `mmulab sim` prints for a nested run (after the memory line).
pub(crate) fn text(n: &NestedStats) -> String {
    let t = super::report::thousands;
    let pages: Vec<String> = mmulab_model::addr::PageSize::ALL
        .iter()
        .filter(|p| n.host_mapped[p.index()] > 0)
        .map(|p| format!("{} x {p}", t(n.host_mapped[p.index()])))
        .collect();
    let s2tlb = n.s2tlb.map_or("no stage-2 TLB".to_string(), |s| {
        format!("stage-2 TLB hits {} of {}", t(s.hits), t(s.accesses))
    });
    let caches = n.walk_caches.map_or(String::new(), |w| {
        format!(
            "walk reads in the data caches: guest {} cycles ({} from memory), stage 2 {} cycles ({} from memory)\n",
            t(w.cycles[0]),
            t(w.memory_reads[0]),
            t(w.cycles[1]),
            t(w.memory_reads[1])
        )
    });
    let dirty_log = n.dirty_log.as_ref().map_or(String::new(), |d| d.text());
    format!(
        "nested ({} over {}): walk refs guest {} + stage 2 {}; {} guest-physical translations, {} stage-2 walks, {s2tlb}\nhost ({}): {} MiB backing guest memory in {}; {} stage-2 faults\n{caches}{dirty_log}",
        n.stage2,
        n.backing,
        t(n.stage1_refs()),
        t(n.stage2_refs()),
        t(n.stage2_translations),
        t(n.stage2_walks),
        n.backing,
        n.host_resident_bytes >> 20,
        if pages.is_empty() { "no pages".to_string() } else { pages.join(", ") },
        t(n.host_faults)
    )
}
