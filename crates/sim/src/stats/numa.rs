//! The `numa` part of a run's statistics (docs/output.md): each fake node's range, its
//! pages now in use and the numastat counters of the allocations placed on it.

use super::report::{thousands, Table};
use mmulab_model::addr::FRAME_SHIFT;
use mmulab_model::mem::numa::NodeCounters;
use mmulab_model::mem::Memory;
use serde::Serialize;
use serde_json::{json, Value};

/// One node.
#[derive(Clone, Debug, Serialize)]
pub struct NodeStats {
    /// Node id.
    pub id: usize,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// 4 KiB pages in the node.
    pub pages: u64,
    /// 4 KiB pages allocated now (user pages, page tables, pinned frames).
    pub allocated_pages: u64,
    /// The node's fallback list (zonelist order).
    pub fallback: Vec<usize>,
    /// numastat counters of the allocations the policy made (`alloc_frames` counts
    /// 4 KiB pages, the others allocations).
    #[serde(flatten)]
    pub counters: NodeCounters,
}

/// The NUMA emulation's statistics.
#[derive(Clone, Debug)]
pub struct NumaStats {
    /// `numa.fake` as configured.
    pub fake: usize,
    /// `numa.policy`.
    pub policy: String,
    /// The policy's nodes.
    pub policy_nodes: Vec<usize>,
    /// Weighted interleave's weights (empty: all 1).
    pub weights: Vec<u8>,
    /// The node of each core (empty: all on node 0).
    pub cpus: Vec<usize>,
    /// The nodes.
    pub nodes: Vec<NodeStats>,
}

impl NumaStats {
    /// Each node's numastat counters less `before`'s (warm-up subtraction); the nodes'
    /// allocated pages are the state at the end.
    pub(crate) fn less_counters(&mut self, before: &NumaStats) {
        use super::Delta;
        for (n, b) in self.nodes.iter_mut().zip(&before.nodes) {
            let c = &mut n.counters;
            let p = &b.counters;
            let mmulab_model::mem::numa::NodeCounters {
                alloc_frames,
                numa_hit,
                numa_miss,
                numa_foreign,
                interleave_hit,
                local_node,
                other_node,
            } = c;
            alloc_frames.less(&p.alloc_frames);
            numa_hit.less(&p.numa_hit);
            numa_miss.less(&p.numa_miss);
            numa_foreign.less(&p.numa_foreign);
            interleave_hit.less(&p.interleave_hit);
            local_node.less(&p.local_node);
            other_node.less(&p.other_node);
        }
    }

    /// The statistics of `mem`'s nodes now; `None` without `[numa]`.
    pub fn collect(mem: &Memory) -> Option<NumaStats> {
        let n = mem.numa.as_ref()?;
        let cfg = n.config();
        let nodes = n
            .ranges()
            .iter()
            .enumerate()
            .map(|(id, &(lo, hi))| NodeStats {
                id,
                start: lo << FRAME_SHIFT,
                end: hi << FRAME_SHIFT,
                pages: hi - lo,
                allocated_pages: (hi - lo) - mem.buddy.free_frames_in(lo, hi),
                fallback: n.zonelist(id).to_vec(),
                counters: n.counters()[id].clone(),
            })
            .collect();
        Some(NumaStats {
            fake: cfg.fake,
            policy: cfg.mode.name().to_string(),
            policy_nodes: n.mask().to_vec(),
            weights: cfg.weights.clone(),
            cpus: cfg.cpus.clone(),
            nodes,
        })
    }

    /// The `numa` object of the JSON report.
    pub fn to_json(&self) -> Value {
        let sum = |f: fn(&NodeStats) -> u64| self.nodes.iter().map(f).sum::<u64>();
        json!({
            "fake": self.fake,
            "policy": self.policy,
            "policy_nodes": self.policy_nodes,
            "weights": self.weights,
            "cpus": self.cpus,
            "nodes": self.nodes,
            "allocated_pages": sum(|n| n.allocated_pages),
            "alloc_frames": sum(|n| n.counters.alloc_frames),
            "interleave_hit": sum(|n| n.counters.interleave_hit),
            "numa_miss": sum(|n| n.counters.numa_miss),
        })
    }

    /// The table report's section.
    pub fn text(&self) -> String {
        let mut t = Table::new(&[
            "node",
            "start",
            "end",
            "MiB",
            "in use",
            "allocated",
            "hit",
            "miss",
            "interleave hit",
        ]);
        for n in &self.nodes {
            t.row(vec![
                n.id.to_string(),
                format!("{:#x}", n.start),
                format!("{:#x}", n.end),
                thousands((n.end - n.start) >> 20),
                thousands(n.allocated_pages),
                thousands(n.counters.alloc_frames),
                thousands(n.counters.numa_hit),
                thousands(n.counters.numa_miss),
                thousands(n.counters.interleave_hit),
            ]);
        }
        format!(
            "\nnuma: {} fake nodes, policy {} (pages of 4 KiB; allocated = pages placed by the policy)\n{}",
            self.nodes.len(),
            self.policy,
            t.render()
        )
    }
}
