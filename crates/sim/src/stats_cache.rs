//! Statistics of the data caches (`[caches]`): what the hierarchy counted, the cycles
//! data references spent in it, their JSON (`caches` in `sim --json`, docs/output.md)
//! and their table section.

use crate::report::{percent, thousands, Table};
use crate::stats::{Report, Stats};
use mmulab_model::cache::{CacheStats, Caches};
use serde_json::{json, Map, Value};

/// The data caches' part of [`Stats`].
#[derive(Clone, Debug, Default)]
pub struct CacheReport {
    /// Per level and memory (reads, writes).
    pub stats: CacheStats,
    /// Cycles data references spent in the caches and memory (walk reads' cycles are in
    /// the walk cycles).
    pub data_cycles: u64,
}

impl Report for Caches {
    fn report(&self, s: &mut Stats) {
        if let Some(c) = &mut s.caches {
            c.stats = self.stats();
        }
    }
}

impl CacheReport {
    /// `caches` of the JSON report.
    pub fn to_json(&self) -> Value {
        let mut v = Map::new();
        for (name, n) in &self.stats.levels {
            v.insert(
                name.clone(),
                json!({
                    "data_hits": n.data_hits,
                    "data_misses": n.data_misses,
                    "walk_hits": n.walk_hits,
                    "walk_misses": n.walk_misses,
                    "writebacks": n.writebacks,
                }),
            );
        }
        v.insert(
            "memory".into(),
            json!({ "reads": self.stats.mem_reads, "writes": self.stats.mem_writes }),
        );
        v.insert("data_cycles".into(), json!(self.data_cycles));
        Value::Object(v)
    }

    /// The table section of the text report.
    pub fn text(&self) -> String {
        let mut t = Table::new(&[
            "cache",
            "data hits",
            "data misses",
            "data miss rate",
            "walk hits",
            "walk misses",
            "walk miss rate",
            "writebacks",
        ]);
        for (name, n) in &self.stats.levels {
            t.row(vec![
                name.clone(),
                thousands(n.data_hits),
                thousands(n.data_misses),
                percent(n.data_misses, n.data_hits + n.data_misses),
                thousands(n.walk_hits),
                thousands(n.walk_misses),
                percent(n.walk_misses, n.walk_hits + n.walk_misses),
                thousands(n.writebacks),
            ]);
        }
        format!(
            "\n{}memory: {} reads, {} writes; data reference cycles {}\n",
            t.render(),
            thousands(self.stats.mem_reads),
            thousands(self.stats.mem_writes),
            thousands(self.data_cycles)
        )
    }
}
