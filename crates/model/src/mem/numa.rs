//! NUMA emulation (`numa=fake=N`) and Linux's memory policies over it.
//!
//! * **Nodes.** [`fake_split`] splits memory as the arm64 NUMA emulation patch does
//!   (`numa_emu_init` in drivers/base/numa_emulation.c of the Raspberry Pi kernel
//!   tree, "numa: Add simple generic NUMA emulation", T. Ursulin / M. Canal, June 2024;
//!   reference/mechanisms.md §3): N capped at `MAX_NUMNODES`, span = first..last byte
//!   of memory, chunk = floor(span / N) rounded down to `PAGE_SIZE` (the granule's
//!   base page: 4, 16 or 64 KiB), node i =
//!   `[start + i·chunk, start + (i+1)·chunk)`, the last node takes the remainder.
//!   Each node's frames are a buddy allocator of their own ([`Buddy::alloc_in`]: no
//!   block crosses a node boundary).
//! * **Cores.** The patch registers memory only; arm64 maps each CPU to the node its
//!   device-tree node names, and with none `early_map_cpu_to_node` (drivers/base/
//!   arch_numa.c) falls back to node 0: by default every core is on node 0. A config
//!   may place cores explicitly.
//! * **Fallback order.** When the chosen node has no free block of the order, the
//!   allocation walks that node's zonelist, built as `build_zonelists` /
//!   `find_next_best_node` (mm/page_alloc.c) build it: the node itself, then by
//!   distance (emulated nodes: 10 local, 20 remote, arch_numa's default table), `+1`
//!   for nodes below it ("prefer the next node"), `+PENALTY_FOR_NODE_WITH_CPUS` for
//!   nodes with cores, times `MAX_NUMNODES`, plus `node_load` (raised by 1 for the
//!   first node of each distance group, so equal groups rotate). With cores on node 0
//!   only, node 0's list is 0, 1, …, N−1 and node k's is k, k+1, …, N−1, 1, …, k−1, 0.
//! * **Policies** (mm/mempolicy.c `alloc_pages_mpol`, `policy_nodemask`): local (the
//!   running core's node, then its zonelist), preferred (the first node of `nodes`,
//!   then its zonelist), bind (the local node's zonelist restricted to `nodes`; no
//!   node outside), interleave and weighted interleave (the node chosen by
//!   `interleave_nid` / `weighted_interleave_nid` from the interleave index, then its
//!   zonelist). The index of a fault in a VMA is `get_vma_policy`'s
//!   `(vm_pgoff >> order) + ((addr - vm_start) >> (PAGE_SHIFT + order))`
//!   ([`interleave_index`]); a huge page (THP, mTHP folio, FreeBSD reservation) is
//!   one unit at its order. Allocations outside a VMA (page tables) use the task's
//!   counter (`interleave_nodes`, `weighted_interleave_nodes`).
//! * **Counters** per node, as `zone_statistics` and `alloc_pages_mpol` count them
//!   (/sys/devices/system/node/nodeN/numastat): `numa_hit`, `numa_miss`,
//!   `numa_foreign`, `interleave_hit`, `local_node`, `other_node` (one per
//!   allocation), and the frames allocated there.
//!
//! * **Huge pages at a fault** ([`Numa::alloc_thp`]): `alloc_pages_mpol`'s THP case.
//!   A PMD-order page under a policy that is not an interleave tries the local (or
//!   preferred) node alone (`__GFP_THISNODE`); a fault without direct reclaim in its
//!   gfp (defrag `madvise` outside a `MADV_HUGEPAGE` VMA, the default) then falls back
//!   to base pages rather than take a remote huge page.
//!
//! Not modelled: the local node's own compaction before a THP fault that may reclaim
//! goes remote (here it goes to the other nodes at once, then compacts), per-VMA policies (`mbind`: one policy for the
//! whole machine, as `numactl --interleave=all` or the downstream `numa_policy=`
//! cmdline sets it), watermarks per node, and compaction's own node: direct
//! compaction (os/compact.rs) picks a block inside one node but migrates pages to the
//! lowest free frame anywhere, and the block it frees goes to the faulting policy
//! without the memory policy's choice (nor its counters). The fault paths of every
//! OS policy, swap-in and page tables go through the policy; memory aging and the
//! GPU driver take the lowest free block as before.

use super::Buddy;
use crate::addr::{FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use crate::space::Vma;

/// `MAX_NUMNODES` = 1 << `CONFIG_NODES_SHIFT`; arm64's Kconfig default shift is 4.
pub const MAX_NUMNODES: usize = 16;
/// `LOCAL_DISTANCE` (include/linux/topology.h).
const LOCAL_DISTANCE: u32 = 10;
/// `REMOTE_DISTANCE`: arch_numa's default distance between two nodes with no
/// firmware table (`numa_alloc_distance`).
const REMOTE_DISTANCE: u32 = 20;
/// `PENALTY_FOR_NODE_WITH_CPUS` (include/linux/topology.h).
const PENALTY_FOR_NODE_WITH_CPUS: u32 = 1;

/// A memory policy (`numactl` / `set_mempolicy` mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `MPOL_LOCAL`, the default: the running core's node first.
    Local,
    /// `MPOL_BIND`: only the nodes of the mask, nearest first.
    Bind,
    /// `MPOL_PREFERRED`: the mask's first node first, then any.
    Preferred,
    /// `MPOL_INTERLEAVE`: pages spread over the mask by interleave index.
    Interleave,
    /// `MPOL_WEIGHTED_INTERLEAVE`: as interleave, `weights[n]` pages per node per round.
    WeightedInterleave,
}

impl Mode {
    /// Config names, in the order of the variants.
    pub const NAMES: [&'static str; 5] = ["local", "bind", "preferred", "interleave", "weighted-interleave"];

    /// The mode of a config name.
    pub fn parse(name: &str) -> Option<Mode> {
        const ALL: [Mode; 5] = [
            Mode::Local,
            Mode::Bind,
            Mode::Preferred,
            Mode::Interleave,
            Mode::WeightedInterleave,
        ];
        Mode::NAMES.iter().position(|&n| n == name).map(|i| ALL[i])
    }

    /// The config name.
    pub fn name(self) -> &'static str {
        Mode::NAMES[self as usize]
    }

    /// True for the two interleave modes.
    pub fn interleaves(self) -> bool {
        matches!(self, Mode::Interleave | Mode::WeightedInterleave)
    }
}

/// The validated NUMA settings (`[numa]`, docs/numa.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumaConfig {
    /// `numa=fake=N` as given (capped at [`MAX_NUMNODES`] when the nodes are made).
    pub fake: usize,
    /// The policy.
    pub mode: Mode,
    /// The policy's nodes, ascending and distinct; empty means every node.
    pub nodes: Vec<usize>,
    /// Weighted interleave's weight of each node (1..=255); empty means 1 each.
    pub weights: Vec<u8>,
    /// The node of each core; empty means every core on node 0.
    pub cpus: Vec<usize>,
    /// The kernel's `PAGE_SIZE` in bytes (4, 16 or 64 KiB): node boundaries are
    /// multiples of it.
    pub page_bytes: u64,
}

/// Splits `[start, end)` (bytes) into `n` fake nodes as `numa_emu_init` does; `n` is
/// capped at [`MAX_NUMNODES`] (the patch's `numa_emu_cmdline`). The chunk is rounded
/// down to the kernel's `PAGE_SIZE`, `page` bytes (4, 16 or 64 KiB by the granule), so no
/// base page straddles two nodes. A chunk smaller than one page is an error naming
/// `numa.fake`.
pub fn fake_split(start: u64, end: u64, n: usize, page: u64) -> Result<Vec<(u64, u64)>, ModelError> {
    if n == 0 {
        return Err(ModelError::Config(
            "numa.fake = 0: give the number of fake nodes (1 to 16), or leave out [numa]".into(),
        ));
    }
    debug_assert!(page.is_power_of_two() && page >= FRAME_SIZE);
    let n = n.min(MAX_NUMNODES) as u64;
    // size = DIV_ROUND_DOWN_ULL(end - start + 1, emu_nodes) with `end` the last byte;
    // size = PAGE_ALIGN_DOWN(size).
    let chunk = ((end - start) / n) & !(page - 1);
    if chunk < page {
        return Err(ModelError::Config(format!(
            "numa.fake = {n}: {} bytes of memory split {n} ways leave nodes smaller than one {} KiB page; \
             use at most {} nodes or more memory",
            end - start,
            page >> 10,
            (end - start) / page
        )));
    }
    Ok((0..n)
        .map(|i| {
            let s = start + i * chunk;
            // `if (i == (emu_nodes - 1) && e != end) e = end;`
            (s, if i == n - 1 { end } else { s + chunk })
        })
        .collect())
}

/// The interleave index of the unit of `2^order` pages at `addr` in a VMA
/// (`get_vma_policy`, mm/mempolicy.c): `(vm_pgoff >> order) + ((addr - vm_start) >>
/// (page_shift + order))`, with `vm_pgoff` in pages of `1 << page_shift` bytes.
pub fn interleave_index(vm_pgoff: u64, vm_start: u64, addr: u64, order: u32, page_shift: u32) -> u64 {
    (vm_pgoff >> order) + ((addr - vm_start) >> (page_shift + order))
}

/// `interleave_nid`: the `ilx mod |mask|`-th node of `mask` (ascending node ids; the
/// older kernels' `offset_il_node`).
pub fn interleave_nid(mask: &[usize], ilx: u64) -> usize {
    mask[(ilx % mask.len() as u64) as usize]
}

/// `weighted_interleave_nid`: `target = ilx mod Σweights`, then walk the mask from its
/// first node, each node taking `weights[node]` consecutive indices.
pub fn weighted_interleave_nid(mask: &[usize], weights: &[u8], ilx: u64) -> usize {
    let w = |n: usize| weights.get(n).copied().unwrap_or(1).max(1) as u64;
    let total: u64 = mask.iter().map(|&n| w(n)).sum();
    let mut target = ilx % total;
    for &n in mask {
        if target < w(n) {
            return n;
        }
        target -= w(n);
    }
    unreachable!("target < total weight")
}

/// Every node's fallback list, as `build_zonelists` builds them in node order with
/// `find_next_best_node` (module doc); `has_cpus[n]` says whether a core is on node n.
pub fn zonelists(has_cpus: &[bool]) -> Vec<Vec<usize>> {
    let n = has_cpus.len();
    let dist = |a: usize, b: usize| if a == b { LOCAL_DISTANCE } else { REMOTE_DISTANCE };
    let mut load = vec![0u32; n];
    (0..n)
        .map(|local| {
            let mut used = vec![false; n];
            let mut order = Vec::with_capacity(n);
            let mut prev = local;
            while order.len() < n {
                let best = if !used[local] {
                    local
                } else {
                    (0..n)
                        .filter(|&c| !used[c])
                        .min_by_key(|&c| {
                            let mut val = dist(local, c) + u32::from(c < local);
                            if has_cpus[c] {
                                val += PENALTY_FOR_NODE_WITH_CPUS;
                            }
                            (val * MAX_NUMNODES as u32 + load[c], c)
                        })
                        .expect("a node is left")
                };
                used[best] = true;
                // `node_load[node] += 1` (mm/page_alloc.c since 6.x; 5.16's
                // `+= nr_online_nodes` tied a node below with the CPU node at 16 nodes).
                if dist(local, best) != dist(local, prev) {
                    load[best] += 1;
                }
                order.push(best);
                prev = best;
            }
            order
        })
        .collect()
}

/// Where a user page is allocated: its VMA and address (the interleave index's input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct At {
    /// `vm_start`.
    pub vm_start: u64,
    /// `vm_pgoff` in 4 KiB pages.
    pub vm_pgoff: u64,
    /// The unit's (aligned) virtual address.
    pub addr: u64,
}

impl At {
    /// A unit at `addr` of an anonymous VMA: `do_mmap` sets a private anonymous
    /// mapping's `vm_pgoff` to `addr >> PAGE_SHIFT`. (In 4 KiB units the index is the
    /// same for a 16 or 64 KiB kernel: both terms shift by the same total.)
    pub fn anon(vma: &Vma, addr: u64) -> At {
        At {
            vm_start: vma.start,
            vm_pgoff: vma.start >> FRAME_SHIFT,
            addr,
        }
    }
}

/// One node's counters (numastat's names).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NodeCounters {
    /// 4 KiB frames allocated on the node (cumulative).
    pub alloc_frames: u64,
    /// Allocations placed on the node the policy preferred.
    pub numa_hit: u64,
    /// Allocations placed here though another node was preferred.
    pub numa_miss: u64,
    /// Allocations preferred here but placed on another node.
    pub numa_foreign: u64,
    /// Interleave allocations placed on the node the interleave chose.
    pub interleave_hit: u64,
    /// Allocations placed here for a core on this node.
    pub local_node: u64,
    /// Allocations placed here for a core on another node.
    pub other_node: u64,
}

/// The emulated nodes, the policy and the counters, owned by [`super::Memory`].
#[derive(Clone, Debug)]
pub struct Numa {
    cfg: NumaConfig,
    /// Frame ranges `[start, end)` of the nodes.
    ranges: Vec<(u64, u64)>,
    zonelists: Vec<Vec<usize>>,
    /// The policy's nodes (every node when the config gives none).
    mask: Vec<usize>,
    /// The core whose fault is being served (`numa_node_id()`'s CPU).
    cpu: usize,
    /// `current->il_prev`, `current->il_weight` of the task counter.
    il_prev: usize,
    il_weight: u8,
    counters: Vec<NodeCounters>,
}

impl Numa {
    /// Nodes over `bytes` of memory starting at physical address 0. Node numbers in
    /// `cfg` must be below the node count (config validation checks it, naming keys).
    pub fn new(cfg: NumaConfig, bytes: u64) -> Result<Numa, ModelError> {
        let ranges: Vec<(u64, u64)> = fake_split(0, bytes, cfg.fake, cfg.page_bytes)?
            .into_iter()
            .map(|(s, e)| (s >> FRAME_SHIFT, e >> FRAME_SHIFT))
            .collect();
        let n = ranges.len();
        let bad = cfg.nodes.iter().chain(&cfg.cpus).find(|&&x| x >= n);
        if let Some(x) = bad {
            return Err(ModelError::Config(format!(
                "numa: node {x} does not exist ({n} nodes: 0..{})",
                n - 1
            )));
        }
        let mut has_cpus = vec![false; n];
        if cfg.cpus.is_empty() {
            has_cpus[0] = true;
        }
        for &c in &cfg.cpus {
            has_cpus[c] = true;
        }
        let mask = if cfg.nodes.is_empty() {
            (0..n).collect()
        } else {
            cfg.nodes.clone()
        };
        Ok(Numa {
            zonelists: zonelists(&has_cpus),
            counters: vec![NodeCounters::default(); n],
            ranges,
            mask,
            cpu: 0,
            il_prev: MAX_NUMNODES - 1,
            il_weight: 0,
            cfg,
        })
    }

    /// The settings.
    pub fn config(&self) -> &NumaConfig {
        &self.cfg
    }

    /// The nodes' frame ranges `[start, end)`.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Node `n`'s fallback list.
    pub fn zonelist(&self, n: usize) -> &[usize] {
        &self.zonelists[n]
    }

    /// The policy's node mask.
    pub fn mask(&self) -> &[usize] {
        &self.mask
    }

    /// Node `n`'s counters.
    pub fn counters(&self) -> &[NodeCounters] {
        &self.counters
    }

    /// The node of frame `pfn`.
    pub fn node_of(&self, pfn: u64) -> usize {
        self.ranges.partition_point(|r| r.1 <= pfn).min(self.ranges.len() - 1)
    }

    /// The core now running (its node is the local node).
    pub fn set_cpu(&mut self, cpu: usize) {
        self.cpu = cpu;
    }

    /// The local node: the running core's (core indices wrap as the machine's do).
    pub fn local_node(&self) -> usize {
        match self.cfg.cpus.len() {
            0 => 0,
            n => self.cfg.cpus[self.cpu % n],
        }
    }

    /// `interleave_nodes`: the task counter's next node of the mask.
    fn next_node(&mut self) -> usize {
        let next = self
            .mask
            .iter()
            .copied()
            .find(|&m| m > self.il_prev)
            .unwrap_or(self.mask[0]);
        self.il_prev = next;
        next
    }

    /// `weighted_interleave_nodes`: the current node until its weight is used up.
    fn next_weighted_node(&mut self) -> usize {
        if self.il_weight == 0 || !self.mask.contains(&self.il_prev) {
            let n = self.next_node();
            self.il_weight = self.cfg.weights.get(n).copied().unwrap_or(1).max(1);
        }
        self.il_weight -= 1;
        self.il_prev
    }

    /// Allocates `2^order` frames by the policy (`alloc_pages_mpol`): a unit in a VMA
    /// (`at`) or outside one (page tables). Returns the first frame, or `None` when no
    /// allowed node has a free block of the order.
    pub fn alloc(&mut self, buddy: &mut Buddy, order: u32, at: Option<At>) -> Option<u64> {
        let local = self.local_node();
        let ilx = at.map(|a| interleave_index(a.vm_pgoff, a.vm_start, a.addr, order, FRAME_SHIFT));
        let (nid, bind) = match self.cfg.mode {
            Mode::Local => (local, false),
            Mode::Preferred => (self.mask[0], false),
            Mode::Bind => (local, true),
            Mode::Interleave => match ilx {
                Some(i) => (interleave_nid(&self.mask, i), false),
                None => (self.next_node(), false),
            },
            Mode::WeightedInterleave => match ilx {
                Some(i) => (weighted_interleave_nid(&self.mask, &self.cfg.weights, i), false),
                None => (self.next_weighted_node(), false),
            },
        };
        let allowed = |n: &usize| !bind || self.mask.contains(n);
        let zl = &self.zonelists[nid];
        // ac->preferred_zoneref: the first zone of the zonelist the nodemask allows.
        let preferred = *zl.iter().find(|n| allowed(n)).expect("the mask is not empty");
        let (node, pfn) = zl.iter().filter(|n| allowed(n)).find_map(|&n| {
            let (lo, hi) = self.ranges[n];
            buddy.alloc_in(lo, hi, order).map(|p| (n, p))
        })?;
        self.count(node, preferred, local, nid, order);
        Some(pfn)
    }

    /// Allocates a PMD-sized transparent huge page at a fault (`alloc_pages_mpol`'s THP
    /// case, mm/mempolicy.c): under a policy that is not an interleave and whose nodes
    /// allow the local node (preferred: its node), the kernel first tries that node
    /// alone (`__GFP_THISNODE | __GFP_NORETRY`, "the cost of remote accesses would
    /// likely offset THP benefits"); only a fault whose gfp allows direct reclaim
    /// (`vma_thp_gfp_mask`: defrag `always`, or `madvise` / `defer+madvise` in a
    /// `MADV_HUGEPAGE` VMA) retries on the policy's other nodes. Otherwise the fault
    /// falls back to base pages (`None`), which the policy may place remotely.
    pub fn alloc_thp(&mut self, buddy: &mut Buddy, order: u32, at: At, direct_reclaim: bool) -> Option<u64> {
        let local = self.local_node();
        let node = match self.cfg.mode {
            Mode::Interleave | Mode::WeightedInterleave => None,
            Mode::Preferred => Some(self.mask[0]),
            Mode::Local => Some(local),
            Mode::Bind => Some(local).filter(|n| self.mask.contains(n)),
        };
        let Some(node) = node else {
            return self.alloc(buddy, order, Some(at));
        };
        let (lo, hi) = self.ranges[node];
        if let Some(pfn) = buddy.alloc_in(lo, hi, order) {
            self.count(node, node, local, node, order);
            return Some(pfn);
        }
        if !direct_reclaim {
            return None;
        }
        self.alloc(buddy, order, Some(at))
    }

    /// Counts an allocation of `2^order` frames placed on `node` (numastat's counters);
    /// `preferred` is the zonelist's first allowed node, `nid` the policy's choice.
    fn count(&mut self, node: usize, preferred: usize, local: usize, nid: usize, order: u32) {
        let c = &mut self.counters;
        c[node].alloc_frames += 1 << order;
        if node == preferred {
            c[node].numa_hit += 1;
        } else {
            c[node].numa_miss += 1;
            c[preferred].numa_foreign += 1;
        }
        if node == local {
            c[node].local_node += 1;
        } else {
            c[node].other_node += 1;
        }
        if self.cfg.mode.interleaves() && node == nid {
            c[node].interleave_hit += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip() {
        for n in Mode::NAMES {
            assert_eq!(Mode::parse(n).unwrap().name(), n);
        }
        assert!(Mode::parse("default").is_none());
    }

    #[test]
    fn zonelists_with_cpus_on_node_0() {
        // Node 0: itself, then 1..3 (no penalty, ascending). Node 2: itself, then 3
        // (20·16 + 0), then 1 (21·16 + load 1: node 1 led node 0's remote group), then
        // 0 (the +1 below and the CPU penalty: 22·16).
        let z = zonelists(&[true, false, false, false]);
        assert_eq!(z[0], [0, 1, 2, 3]);
        assert_eq!(z[2], [2, 3, 1, 0]);
        assert_eq!(z[3], [3, 1, 2, 0]);
    }

    /// Issue 49, defect 4: 16 fake nodes, cores on node 0. `build_zonelists` raises
    /// `node_load` by 1 for the first node of each distance group; node c ≥ 1 led node
    /// c−1's remote group, so every node but 0 carries load 1 by the time a higher node
    /// builds. Node 2: itself, 3..15 (20·16 + 0 = 320), then 1 (21·16 + 1 = 337), then 0
    /// (22·16 = 352). Node 15: itself, then 1..14 (all 337; ties go to the lower node),
    /// then 0. (Raising the load by nr_online_nodes = 16, as 5.16 did, puts node 1 at
    /// 336 + 16 = 352, tied with node 0, which the lower index wins: …, 0, 1.)
    #[test]
    fn zonelists_with_sixteen_fake_nodes() {
        let mut cpus = [false; 16];
        cpus[0] = true;
        let z = zonelists(&cpus);
        assert_eq!(z[0], (0..16).collect::<Vec<_>>());
        let mut two: Vec<usize> = (2..16).collect();
        two.extend([1, 0]);
        assert_eq!(z[2], two);
        let mut fifteen = vec![15];
        fifteen.extend(1..15);
        fifteen.push(0);
        assert_eq!(z[15], fifteen);
        for (k, l) in z.iter().enumerate().skip(1) {
            let mut want: Vec<usize> = (k..16).collect();
            want.extend(1..k);
            want.push(0);
            assert_eq!(*l, want, "node {k}");
        }
    }
}
