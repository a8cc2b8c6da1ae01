//! The cost model: per-machine latencies that turn counted events into cycles.
//! Absolute cycles are an estimate; ratios between configurations are the product.

use serde::{Deserialize, Serialize};

/// Latencies of the translation path, in cycles. TLB lookup latencies are per level
/// (in each level's spec).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WalkCost {
    /// Cycles of one page-table memory reference during a walk.
    pub mem_latency: u32,
    /// Cycles of a page-walk-cache lookup (charged once per walk when PWCs exist).
    pub pwc_latency: u32,
    /// Cycles the OS spends handling one page fault (not part of translation cycles;
    /// reported separately).
    pub fault_latency: u32,
}

impl Default for WalkCost {
    fn default() -> Self {
        WalkCost {
            mem_latency: 30,
            pwc_latency: 1,
            fault_latency: 1000,
        }
    }
}
