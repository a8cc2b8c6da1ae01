//! Statistics: the machine's raw counters and the report exported as JSON and tables.
//! Models count; this module aggregates (per level across cores) and names things.
//!
//! Every part of the statistics a component adds is a type of its own here ([`Counters`],
//! [`nested::NestedStats`], [`cache::CacheReport`], [`time::TimeStats`],
//! [`numa::NumaStats`], [`gpu::GpuStats`]); [`report`] renders them as tables.
//! [`Stats::since`] (since.rs) takes a warm-up's snapshot away from each, counter by
//! counter: the machine's own counters are declared once, in `counters!` (counters.rs), which
//! generates both the struct and its subtraction, so a counter cannot be added without
//! being subtracted.

pub mod cache;
mod counters;
pub mod dirty_log;
pub mod gpu;
pub mod nested;
pub mod numa;
pub mod regions;
pub mod report;
mod since;
pub mod time;

pub use counters::Counters;
pub use since::Delta;

use crate::config::MachineSpec;
use mmulab_model::addr::PageSize;
use mmulab_model::tlb::TlbStats;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// What a run's region of interest was, in trace references (JSON `roi`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoiInfo {
    /// References skipped (fewer than asked if the source ended).
    pub skipped: u64,
    /// References simulated as warm-up.
    pub warmup: u64,
    /// References measured.
    pub measured: u64,
    /// Extra lookups of straddling references in the measured part (each piece after a
    /// reference's first counts as a reference in the statistics).
    pub straddle_pieces: u64,
}

/// Per-level TLB figures summed over cores.
#[derive(Clone, Debug, Serialize)]
pub struct LevelStats {
    /// Level name.
    pub name: String,
    /// True for a last-level TLB (no `next`): its misses start walks.
    pub last_level: bool,
    /// True for a part of the STLB Mosmodel counts (its H and M): a last level, or a
    /// level whose `next` chain reaches a last level through same-cycle parts only
    /// (`latency = 0`, docs/catalog.md), like Skylake's `stlb` before `stlb-1g`.
    #[serde(skip)]
    pub stlb: bool,
    /// Counts.
    #[serde(flatten)]
    pub counts: TlbStats,
    /// Compulsory misses (first fills of a translation-entry key), when counted
    /// (`sim --compulsory`, run/roi.rs); absent from the JSON otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compulsory: Option<u64>,
}

/// A run's results.
#[derive(Clone, Debug)]
pub struct Stats {
    /// Raw machine counters.
    pub counters: Counters,
    /// TLB levels in config order.
    pub levels: Vec<LevelStats>,
    /// Page-walk-cache hits by level, summed over cores.
    pub pwc_hits: Vec<u64>,
    /// PWC lookups.
    pub pwc_lookups: u64,
    /// Pages mapped by size.
    pub mapped: [u64; 9],
    /// Resident bytes.
    pub resident_bytes: u64,
    /// Live page-table pages.
    pub page_tables: usize,
    /// OS policy name.
    pub policy: String,
    /// The OS policy's counters (promotions, demotions, collapses, events…).
    pub os: mmulab_model::os::OsStats,
    /// Share of free memory in free 2 MiB blocks at collection time.
    pub free_2m_share: f64,
    /// Distinct touched 4 KiB pages × 4 KiB, if tracked (time series, reproduce).
    pub touched_bytes: Option<u64>,
    /// The largest resident − touched bytes of the run (after every fault and tick, and
    /// at the end), if touched pages are tracked.
    pub peak_bloat_bytes: Option<i64>,
    /// The largest resident bytes of the run (after every fault and tick, and at the
    /// end), if touched pages are tracked.
    pub peak_resident_bytes: Option<u64>,
    /// Frames pinned by `memory.age`.
    pub pinned_frames: u64,
    /// False when the statistics cover only part of the input (the run was stopped by
    /// `request_stop` or by an error); the JSON then carries `"complete": false`
    /// (a finished run's JSON has no `complete` key, so its bytes stay as they were).
    pub complete: bool,
    /// What a nested run (`[vm]`) adds: per-stage walk references, the stage-2 caches,
    /// the host's backing.
    pub nested: Option<nested::NestedStats>,
    /// GPUs' statistics (machine/gpu.rs), in the order they were attached; none for a CPU-only
    /// machine, whose JSON then has no `gpu` key.
    pub gpu: Vec<gpu::GpuStats>,
    /// The data caches' counters (a machine with `[caches]`), else none and no `caches`
    /// key in the JSON.
    pub caches: Option<cache::CacheReport>,
    /// True if accessed/dirty bits are kept by software: the JSON then has `ad_faults`.
    pub soft_ad: bool,
    /// Simulated time and the kernel thread's background work, if the machine has a
    /// clock (`machine.clock_mhz`): the JSON then has `time` and `kernel`.
    pub time: Option<time::TimeStats>,
    /// Fake NUMA nodes (`[numa]`); none without, and the JSON then has no
    /// `numa` key.
    pub numa: Option<numa::NumaStats>,
    /// The region of interest, when the run had one (run/roi.rs); JSON `roi`.
    pub roi: Option<RoiInfo>,
    /// The warm-up's own statistics, when the run had one (run/roi.rs); JSON `warmup`.
    pub warmup: Option<Box<Stats>>,
    /// Per-region counters, when counted (`SessionOptions::regions`); JSON `regions`.
    pub regions: Option<Vec<regions::RegionStats>>,
    /// References outside the user address space that the reader dropped, when the run
    /// dropped them (`SessionOptions::outside_user` = drop, `--outside-user drop`): over
    /// the whole trace, skipped and warm-up references included. JSON `outside_user`.
    pub outside_user: Option<mmulab_trace::user_space::Dropped>,
}

/// What every component of a machine implements to report its counters: it adds
/// them into a [`Stats`] (sums over cores add; shared state sets its fields). The
/// machine asks each component in turn (`Machine::stats`); nothing here reads a
/// machine's internals.
pub trait Report {
    /// Adds this component's counters to `s`.
    fn report(&self, s: &mut Stats);
}

impl Stats {
    /// Statistics with nothing counted yet, shaped for `spec` (its TLB levels, its
    /// page-table levels).
    pub fn empty(spec: &MachineSpec) -> Stats {
        let pt_levels = spec.format.levels().len();
        Stats {
            counters: Counters::new(spec.tlbs.len(), pt_levels),
            levels: spec
                .tlbs
                .iter()
                .enumerate()
                .map(|(i, t)| LevelStats {
                    name: t.name.clone(),
                    last_level: t.next.is_none(),
                    stlb: in_stlb(&spec.tlbs, i),
                    counts: TlbStats::default(),
                    compulsory: None,
                })
                .collect(),
            pwc_hits: vec![0; pt_levels.saturating_sub(1)],
            pwc_lookups: 0,
            mapped: [0; 9],
            resident_bytes: 0,
            page_tables: 0,
            policy: String::new(),
            os: Default::default(),
            free_2m_share: 0.0,
            touched_bytes: None,
            peak_bloat_bytes: None,
            peak_resident_bytes: None,
            pinned_frames: 0,
            complete: true,
            nested: spec.vm.as_ref().map(|vm| nested::NestedStats::new(vm, pt_levels)),
            gpu: Vec::new(),
            caches: spec.caches.as_ref().map(|_| Default::default()),
            soft_ad: spec.ad_software,
            time: None,
            numa: None,
            roi: None,
            warmup: None,
            regions: None,
            outside_user: None,
        }
    }

    /// Misses of last-level TLBs (Mosmodel's M).
    pub fn stlb_misses(&self) -> u64 {
        self.levels
            .iter()
            .filter(|l| l.last_level)
            .map(|l| l.counts.misses)
            .sum()
    }

    /// Hits of the STLB (Mosmodel's H): of every last-level TLB and of the same-cycle
    /// parts looked up before it (a split STLB such as Skylake's `stlb` + `stlb-1g` or
    /// the Cortex-A73's `l2` + `l2-huge` hits in either part).
    pub fn stlb_hits(&self) -> u64 {
        self.levels.iter().filter(|l| l.stlb).map(|l| l.counts.hits).sum()
    }

    /// Translation cycles: TLB lookups plus walks.
    pub fn translation_cycles(&self) -> u64 {
        self.counters.tlb_cycles + self.counters.walk_cycles
    }

    /// The JSON report (docs/output.md documents every field).
    pub fn to_json(&self) -> Value {
        let c = &self.counters;
        let mut tlb = Map::new();
        for l in &self.levels {
            tlb.insert(l.name.clone(), serde_json::to_value(l).expect("serializable"));
        }
        let mut pages = Map::new();
        for p in PageSize::ALL {
            if self.mapped[p.index()] > 0 {
                pages.insert(p.to_string(), json!(self.mapped[p.index()]));
            }
        }
        let mut v = json!({
            "references": c.references,
            "loads": c.loads(),
            "stores": c.stores(),
            "ifetches": c.ifetches(),
            "ifetches_untranslated": c.ifetches_untranslated,
            "tlb": tlb,
            "walks": {
                "count": c.walks,
                "memory_refs": c.walk_reads,
                "refs_per_walk": if c.walks > 0 { c.walk_reads as f64 / c.walks as f64 } else { 0.0 },
                "start_level": c.walk_start_level,
                "pwc": { "lookups": self.pwc_lookups, "hits_by_level": self.pwc_hits },
            },
            "faults": c.faults,
            "ad_updates": c.ad_updates,
            "shootdowns": c.shootdowns,
            "touches": c.touches,
            "cycles": {
                "translation": self.translation_cycles(),
                "tlb_lookup": c.tlb_cycles,
                "walk": c.walk_cycles,
                "per_reference": if c.references > 0 { self.translation_cycles() as f64 / c.references as f64 } else { 0.0 },
                "os_faults": c.fault_cycles,
            },
            "mosmodel": {
                "walk_cycles": c.walk_cycles,
                "stlb_misses": self.stlb_misses(),
                "stlb_hits": self.stlb_hits(),
            },
            "memory": {
                "policy": self.policy,
                "resident_bytes": self.resident_bytes,
                "pages": pages,
                "page_table_pages": self.page_tables,
                "resident_by_size": PageSize::ALL.iter().filter(|p| self.os.resident_by_size[p.index()] > 0)
                    .map(|p| (p.to_string(), json!(self.os.resident_by_size[p.index()]))).collect::<Map<_, _>>(),
                "touched_bytes": self.touched_bytes,
                "bloat_bytes": self.touched_bytes.map(|t| self.resident_bytes as i64 - t as i64),
                "peak_bloat_bytes": self.peak_bloat_bytes,
                "peak_resident_bytes": self.peak_resident_bytes,
                "free_2m_share": self.free_2m_share,
                "pinned_frames": self.pinned_frames,
            },
            "os": {
                "promotions": sizes(&self.os.promotions),
                "demotions": sizes(&self.os.demotions),
                "collapses": self.os.collapses,
                "os_cycles": self.os.os_cycles,
                "events": self.os.events,
                // Linux's own names (/proc/vmstat thp_*, hugepages-<size>kB/<stat>).
                "kernel": self.os.kernel_counters().into_iter().map(|(k, n)| (k, json!(n))).collect::<Map<_, _>>(),
            },
        });
        if !self.complete {
            v["complete"] = json!(false);
        }
        if let Some(n) = &self.nested {
            let w = &mut v["walks"];
            w["stage1_refs"] = json!(n.stage1_refs());
            w["stage2_refs"] = json!(n.stage2_refs());
            w["stage1_refs_by_level"] = json!(n.stage1_refs_by_level);
            w["stage2_refs_by_level"] = json!(n.stage2_refs_by_level);
            let names: Vec<String> = self.levels.iter().map(|l| l.name.clone()).collect();
            v["vm"] = n.to_json(&names);
        }
        if let Some(c) = &self.caches {
            v["caches"] = c.to_json();
            if let Some(d) = c.dram_json() {
                v["dram"] = d;
            }
        }
        if self.soft_ad {
            v["ad_faults"] = json!({ "access_flag": c.af_faults, "dirty": c.dirty_faults });
        }
        if let Some(t) = &self.time {
            t.add_json(self, &mut v);
        }
        if !self.gpu.is_empty() {
            v["gpu"] = serde_json::to_value(&self.gpu).expect("serializable");
        }
        if let Some(n) = &self.numa {
            v["numa"] = n.to_json();
        }
        if let Some(r) = &self.roi {
            v["roi"] = serde_json::to_value(r).expect("serializable");
        }
        if let Some(w) = &self.warmup {
            v["warmup"] = w.to_json();
        }
        if let Some(r) = &self.regions {
            v["regions"] = r.iter().map(regions::RegionStats::to_json).collect();
        }
        if let Some(d) = &self.outside_user {
            v["outside_user"] = json!({
                "dropped": d.count,
                "first_index": d.first.map(|f| f.0),
                "first_addr": d.first.map(|f| format!("{:#x}", f.1)),
                "touches": d.touches,
            });
        }
        v
    }
}

/// Whether level `i` is part of an STLB: every level after it on its `next` chain is a
/// same-cycle part (latency 0) and the chain ends (a last level). The chain is acyclic
/// (config validation).
pub(crate) fn in_stlb(tlbs: &[mmulab_model::tlb::TlbSpec], i: usize) -> bool {
    let mut cur = tlbs[i].next;
    while let Some(j) = cur {
        if tlbs[j].latency != 0 {
            return false;
        }
        cur = tlbs[j].next;
    }
    true
}

/// A per-size counter array as a JSON object of its non-zero entries.
fn sizes(a: &[u64; 9]) -> Value {
    Value::Object(
        PageSize::ALL
            .iter()
            .filter(|p| a[p.index()] > 0)
            .map(|p| (p.to_string(), json!(a[p.index()])))
            .collect(),
    )
}
