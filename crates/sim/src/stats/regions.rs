//! What a run with per-region counting (`SessionOptions::regions`, machine/regions.rs)
//! adds to the statistics: for each VMA the trace declared, the references into it,
//! the walk cycles they cost, the faults taken there by the page size each mapped, the
//! bytes made resident there and the distinct 4 KiB pages touched there (docs/output.md
//! § Regions). References outside every VMA are counted in a last entry with
//! `outside: true`.

use mmulab_model::addr::PageSize;
use serde_json::{json, Map, Value};

/// One region's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegionStats {
    /// First address (0 for the outside entry).
    pub start: u64,
    /// One past the last address (0 for the outside entry).
    pub end: u64,
    /// True for the entry of references outside every VMA.
    pub outside: bool,
    /// References whose address lies in the region.
    pub references: u64,
    /// Walk cycles those references cost (the translators' walk cycles before and
    /// after each one: `counters.walk_cycles` summed over the regions is the run's).
    pub walk_cycles: u64,
    /// Faults taken at addresses in the region, by the largest page size the fault
    /// mapped (indexed by `PageSize::index`; a fault that mapped nothing new, e.g. a
    /// write to the zero page's mapping that only replaced it, counts at 4 KiB).
    pub faults_by_size: [u64; 9],
    /// Resident bytes the region gained at its faults less what unmaps in it freed
    /// (background work and exits are not attributed to a region).
    pub resident_bytes: i64,
    /// Distinct 4 KiB pages touched in the region × 4 KiB (at the end of the run).
    pub touched_bytes: u64,
}

impl RegionStats {
    /// Faults of every size.
    pub fn faults(&self) -> u64 {
        self.faults_by_size.iter().sum()
    }

    /// The JSON object of docs/output.md § Regions.
    pub fn to_json(&self) -> Value {
        let faults: Map<String, Value> = PageSize::ALL
            .iter()
            .filter(|p| self.faults_by_size[p.index()] > 0)
            .map(|p| (p.to_string(), json!(self.faults_by_size[p.index()])))
            .collect();
        let mut v = json!({
            "start": format!("{:#x}", self.start),
            "end": format!("{:#x}", self.end),
            "bytes": self.end - self.start,
            "references": self.references,
            "walk_cycles": self.walk_cycles,
            "faults": faults,
            "resident_bytes": self.resident_bytes,
            "touched_bytes": self.touched_bytes,
        });
        if self.outside {
            v["outside"] = json!(true);
            v["start"] = Value::Null;
            v["end"] = Value::Null;
        }
        v
    }
}

/// The text table of `sim --regions`: one line per region that was referenced or
/// faulted, in address order (the outside entry last), with its share of the run's
/// `walk_cycles`.
pub fn text(regions: &[RegionStats], walk_cycles: u64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "regions: {:>18} {:>10} {:>12} {:>7} {:>10} {:>10} {:>10}",
        "start", "MiB", "references", "walk %", "faults", "resident", "touched"
    );
    let mib = |b: i64| format!("{:.1}", b as f64 / (1 << 20) as f64);
    for r in regions.iter().filter(|r| r.references > 0 || r.faults() > 0) {
        let share = if walk_cycles > 0 {
            100.0 * r.walk_cycles as f64 / walk_cycles as f64
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "         {:>18} {:>10} {:>12} {:>7.1} {:>10} {:>10} {:>10}",
            if r.outside {
                "outside VMAs".to_string()
            } else {
                format!("{:#x}", r.start)
            },
            if r.outside {
                "-".to_string()
            } else {
                mib((r.end - r.start) as i64)
            },
            r.references,
            share,
            r.faults(),
            mib(r.resident_bytes),
            mib(r.touched_bytes as i64)
        );
    }
    out
}
