//! The cost model of dirty-logging operations: counts × per-operation nanoseconds.
//!
//! Every number is **assumed** (no measurement of these kernel paths on one machine was
//! available); each says what it stands for, so it can be replaced by a measured one. They
//! are orders of magnitude for a ~3 GHz arm64 server core with the tables in cache. The
//! comparison with the seed is about directions and rough sizes, not digits.

use super::{Granule, SplitCounts, Variant};

/// Nanoseconds per counted operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitCost {
    /// An entry read by `__kvm_pgtable_walk` (load, table/leaf test, loop step). Assumed 1.
    pub entry_read: f64,
    /// A walker callback that returns early (indirect call, `kvm_pgtable_visit_ctx`
    /// set-up: the split walker at level 3 or on an invalid entry). Assumed 2.
    pub callback: f64,
    /// A leaf written while building an unlinked subtree (`stage2_map_walker_try_leaf`:
    /// the protection bits, `mm_ops->get_page` on the table page — an atomic refcount
    /// increment — and its two stores, break and make). Assumed 8.
    pub build_leaf: f64,
    /// Any other descriptor store (write-protect, break-before-make). Assumed 1.
    pub write: f64,
    /// A page taken from the split cache (`kvm_mmu_memory_cache_alloc`,
    /// `kvm_account_pgtable_pages`). Assumed 20.
    pub page_take: f64,
    /// Allocating one zeroed page in a top-up, fixed part (`__get_free_page`). Assumed 150.
    pub page_alloc: f64,
    /// Zeroing, per KiB of a page (about 40 GB/s). Assumed 25.
    pub zero_per_kib: f64,
    /// A top-up: `write_unlock`, `cond_resched`, `write_lock` around it. Assumed 200.
    pub topup: f64,
    /// TLBI by IPA and level with its DSBs (`__kvm_tlb_flush_vmid_ipa`); uncontended —
    /// the series' cover letter reports ms-scale broadcast TLBIs under contention, which
    /// is not modelled. Assumed 200.
    pub tlbi_ipa: f64,
    /// A range TLBI (`kvm_tlb_flush_vmid_range`). Assumed 500.
    pub tlbi_range: f64,
    /// A VMID-wide TLBI (`__kvm_tlb_flush_vmid`). Assumed 2000.
    pub tlbi_vmid: f64,
    /// A `kvm_pgtable_stage2_split` or `kvm_pgtable_stage2_wrprotect` call (walk set-up,
    /// the closing `dsb(ishst)`). Assumed 50.
    pub call: f64,
    /// One bitmap word of `KVM_CLEAR_DIRTY_LOG` (`atomic_long_fetch_andnot`, the call to
    /// `kvm_arch_mmu_enable_log_dirty_pt_masked`). Assumed 30.
    pub word: f64,
    /// Skip-children only: testing the skip request at each entry the split walk visits
    /// (the RFC measured about 1% overhead for it). Assumed 0.5.
    pub skip_test: f64,
}

impl Default for SplitCost {
    fn default() -> SplitCost {
        SplitCost {
            entry_read: 1.0,
            callback: 2.0,
            build_leaf: 8.0,
            write: 1.0,
            page_take: 20.0,
            page_alloc: 150.0,
            zero_per_kib: 25.0,
            topup: 200.0,
            tlbi_ipa: 200.0,
            tlbi_range: 500.0,
            tlbi_vmid: 2000.0,
            call: 50.0,
            word: 30.0,
            skip_test: 0.5,
        }
    }
}

/// How many parameters a [`SplitCost`] has ([`SplitCost::NAMES`]).
pub const N_COSTS: usize = 14;

impl SplitCost {
    /// The parameters' names, in [`SplitCost::to_array`] order.
    pub const NAMES: [&'static str; N_COSTS] = [
        "entry_read",
        "callback",
        "build_leaf",
        "write",
        "page_take",
        "page_alloc",
        "zero_per_kib",
        "topup",
        "tlbi_ipa",
        "tlbi_range",
        "tlbi_vmid",
        "call",
        "word",
        "skip_test",
    ];

    /// The parameters as an array, in [`SplitCost::NAMES`] order.
    pub fn to_array(&self) -> [f64; N_COSTS] {
        [
            self.entry_read,
            self.callback,
            self.build_leaf,
            self.write,
            self.page_take,
            self.page_alloc,
            self.zero_per_kib,
            self.topup,
            self.tlbi_ipa,
            self.tlbi_range,
            self.tlbi_vmid,
            self.call,
            self.word,
            self.skip_test,
        ]
    }

    /// The cost from an array in [`SplitCost::NAMES`] order.
    pub fn from_array(a: [f64; N_COSTS]) -> SplitCost {
        SplitCost {
            entry_read: a[0],
            callback: a[1],
            build_leaf: a[2],
            write: a[3],
            page_take: a[4],
            page_alloc: a[5],
            zero_per_kib: a[6],
            topup: a[7],
            tlbi_ipa: a[8],
            tlbi_range: a[9],
            tlbi_vmid: a[10],
            call: a[11],
            word: a[12],
            skip_test: a[13],
        }
    }

    /// How many times each parameter is paid for counts `c` (granule `g`, variant `v`), in
    /// [`SplitCost::NAMES`] order: the time is the dot product with [`SplitCost::to_array`].
    pub fn terms(c: &SplitCounts, g: Granule, v: Variant) -> [f64; N_COSTS] {
        let reads = c.visits() as f64;
        // Build-walk callbacks that wrote a leaf are priced as build_leaf; the ones that
        // installed a table (one per page taken beyond each subtree's root) as callbacks.
        let build_tables = c.pages_taken.saturating_sub(c.blocks_split.iter().sum::<u64>());
        let build_leaves = c.build_walk.callbacks.saturating_sub(build_tables);
        let callbacks = (c.split_walk.callbacks + c.wp_walk.callbacks + build_tables) as f64;
        // Descriptors written outside the builds' leaves (whose two stores build_leaf
        // covers): wp, BBM (2 per split), tables (2 each).
        let other_writes = (c.wp_writes + c.descriptors_written.saturating_sub(2 * build_leaves)) as f64;
        let kib = (g.page().bytes() / 1024) as f64;
        let skip_tests = if v == Variant::SkipChildren {
            c.split_walk.total() as f64
        } else {
            0.0
        };
        [
            reads,
            callbacks,
            build_leaves as f64,
            other_writes,
            c.pages_taken as f64,
            c.pages_allocated as f64,
            c.pages_allocated as f64 * kib,
            c.topups as f64,
            c.tlbi_ipa as f64,
            c.tlbi_range as f64,
            c.tlbi_vmid as f64,
            (c.split_calls + c.wp_calls) as f64,
            c.words as f64,
            skip_tests,
        ]
    }

    /// Modelled time of counts `c` (granule `g`, variant `v`), in nanoseconds.
    pub fn time_ns(&self, c: &SplitCounts, g: Granule, v: Variant) -> f64 {
        dot(&SplitCost::terms(c, g, v), &self.to_array())
    }
}

/// Σ aᵢ·bᵢ.
pub fn dot(a: &[f64; N_COSTS], b: &[f64; N_COSTS]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
