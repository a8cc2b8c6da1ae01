//! Statistics of the data caches (`[caches]`): what the hierarchy counted, the cycles
//! data references spent in it, their JSON (`caches` in `sim --json`, docs/output.md)
//! and their table section.

use super::report::{percent, thousands, Table};
use super::{Report, Stats};
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
    /// Per core, when it was done: its clock (base cycles, TLB, walks, data latency
    /// less what its miss slots overlapped) or its last miss's return, whichever is
    /// later (translator/mlp.rs).
    pub core_cycles: Vec<u64>,
    /// The DRAM's counters and its clock in MHz, when main memory is a DRAM model.
    pub dram: Option<(mmulab_model::dram::DramStats, f64, String)>,
}

impl Report for Caches {
    fn report(&self, s: &mut Stats) {
        if let Some(c) = &mut s.caches {
            c.stats = self.stats();
            if let Some(d) = self.backend().as_any().downcast_ref::<mmulab_model::dram::Dram>() {
                c.dram = Some((d.stats(), d.spec().clock_mhz, d.spec().name.clone()));
            }
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
        v.insert("core_cycles".into(), json!(self.core_cycles));
        v.insert("elapsed_cycles".into(), json!(self.elapsed_cycles()));
        Value::Object(v)
    }

    /// What was counted after `before` (a snapshot of the same run): the region-of-interest
    /// split of `Stats::since`. Counters, cycles and each core's clock are differences. The
    /// DRAM's span starts where the snapshot's last burst ended (the first request after
    /// it may have arrived a little earlier, while that burst was in flight).
    pub fn since(&self, before: &CacheReport) -> CacheReport {
        let mut c = self.clone();
        for ((_, x), (_, y)) in c.stats.levels.iter_mut().zip(&before.stats.levels) {
            x.data_hits -= y.data_hits;
            x.data_misses -= y.data_misses;
            x.walk_hits -= y.walk_hits;
            x.walk_misses -= y.walk_misses;
            x.writebacks -= y.writebacks;
        }
        c.stats.mem_reads -= before.stats.mem_reads;
        c.stats.mem_writes -= before.stats.mem_writes;
        c.data_cycles -= before.data_cycles;
        for (x, y) in c.core_cycles.iter_mut().zip(&before.core_cycles) {
            *x -= y;
        }
        if let (Some((d, _, _)), Some((b, _, _))) = (c.dram.as_mut(), before.dram.as_ref()) {
            d.reads -= b.reads;
            d.writes -= b.writes;
            d.row_hits -= b.row_hits;
            d.row_misses -= b.row_misses;
            d.row_conflicts -= b.row_conflicts;
            for (x, y) in d.per_bank.iter_mut().zip(&b.per_bank) {
                *x -= y;
            }
            for (x, y) in d.per_rank.iter_mut().zip(&b.per_rank) {
                *x -= y;
            }
            d.bytes -= b.bytes;
            d.beyond_capacity -= b.beyond_capacity;
            d.read_latency -= b.read_latency;
            d.write_latency -= b.write_latency;
            d.act_wait_cycles -= b.act_wait_cycles;
            d.wtr_wait_cycles -= b.wtr_wait_cycles;
            d.write_drains -= b.write_drains;
            if b.requests() > 0 {
                d.first_arrival = if d.requests() > 0 { b.last_end } else { u64::MAX };
                if d.requests() == 0 {
                    d.last_end = 0;
                }
            }
        }
        c
    }

    /// The slowest core's cycles: the run's elapsed time on the cores' clocks.
    pub fn elapsed_cycles(&self) -> u64 {
        self.core_cycles.iter().copied().max().unwrap_or(0)
    }

    /// `dram` of the JSON report (a machine with `[dram]`): row hits, misses and
    /// conflicts, requests per rank and per bank, bytes, bandwidth over the span of the
    /// requests, mean latency in DRAM cycles, and what held requests back (activates
    /// for tRRD/tFAW/refresh, reads for tWTR; write-buffer drains).
    pub fn dram_json(&self) -> Option<Value> {
        let (s, mhz, name) = self.dram.as_ref()?;
        Some(json!({
            "profile": name,
            "reads": s.reads,
            "writes": s.writes,
            "row_hits": s.row_hits,
            "row_misses": s.row_misses,
            "row_conflicts": s.row_conflicts,
            "row_hit_rate": s.row_hit_rate(),
            "per_rank": s.per_rank,
            "per_bank": s.per_bank,
            "bytes": s.bytes,
            "span_cycles": s.span(),
            "bandwidth_gbs": s.bandwidth_gbs(*mhz),
            "mean_latency_cycles": s.mean_latency(),
            "beyond_capacity": s.beyond_capacity,
            "act_wait_cycles": s.act_wait_cycles,
            "wtr_wait_cycles": s.wtr_wait_cycles,
            "write_drains": s.write_drains,
        }))
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
            "\n{}memory: {} reads, {} writes; data reference cycles {}\nelapsed {} cycles (the slowest core's clock)\n",
            t.render(),
            thousands(self.stats.mem_reads),
            thousands(self.stats.mem_writes),
            thousands(self.data_cycles),
            thousands(self.elapsed_cycles())
        )
    }
}
