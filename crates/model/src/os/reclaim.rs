//! Memory pressure: reclaim when an allocation fails (or free memory falls below the
//! `min_free_pages` watermark at a fault), for the policies `base`, `thp`,
//! `khugepaged` and `mthp`. (`reservation` breaks reservations instead; `fixed` has no
//! fallback.) In the order Linux's direct reclaim applies them:
//!
//! 1. The THP shrinker (policy `thp`/`khugepaged`, shrinker.rs): folios left partly
//!    mapped and underused huge pages (more zero-filled base pages than
//!    `khugepaged.max_ptes_none`) are split and their zero-filled pages freed, as
//!    mm/huge_memory.c `deferred_split_scan` does.
//! 2. Swap-out of cold pages by a clock (second-chance) scan over the leaves of every
//!    live address space ([`swap_out`]): a leaf whose accessed bit is set loses it (and
//!    its translation is shot down, like arm64's `ptep_clear_flush_young`, so the next
//!    use walks and sets the bit again); a leaf whose bit is still clear when the hand
//!    comes back is evicted: its entry becomes invalid, its range is shot down, its
//!    frame freed, and a swap slot `(asid, page)` remembers its data is in swap. A
//!    huge page or a contiguous group chosen for eviction is split first (Linux splits
//!    a THP before swap-out; counted as `thp_splits`) and all its pages go to swap.
//! 3. Only when reclaim frees nothing is the out-of-memory error raised.
//!
//! A later reference to a swapped page faults; the fault is a major fault
//! (`swap_ins`, `swap_in_cycles` charged) that maps a fresh base page with the data.
//! While any page of a range is in swap, no huge page or folio covering that range is
//! created (its entries are not empty, as in Linux), and khugepaged skips the range.
//!
//! Counters (OsStats.events): `swap_outs`, `swap_ins`, `thp_splits`,
//! `reclaim_runs`, `reclaim_young_cleared`, `thp_underused_split`.

use super::OsEvent;
use super::{OsStats, Shootdown};
use crate::addr::{Asid, PageSize};
use crate::mem::Memory;
use crate::pt::{Format, Pte};
use crate::translation::Attrs;
use crate::walk::{group_of, unmap_leaf, walk, Action, Visit, Visitor, WalkCounts, WalkFlags};

/// Reclaim settings: the `[os.reclaim]` config section itself (docs/config.md; every
/// key optional, defaulting to [`ReclaimConfig::default`]), validated by the sim crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReclaimConfig {
    /// Reclaim under memory pressure; off (the default, so runs that fit in memory and
    /// the out-of-memory contract stay as they were): an allocation failure is an error
    /// at once.
    pub enabled: bool,
    /// Free frames below which a fault reclaims first (the min watermark).
    pub min_free_pages: u64,
    /// Frames one reclaim run tries to free (SWAP_CLUSTER_MAX = 32 in Linux).
    pub batch_pages: u64,
    /// Cycles of a major fault reading one page back from swap.
    pub swap_in_cycles: u64,
    /// Cycles to write one page to swap.
    pub swap_out_cycles_per_page: u64,
}

impl Default for ReclaimConfig {
    fn default() -> Self {
        ReclaimConfig {
            enabled: false,
            min_free_pages: 64,
            batch_pages: 32,
            swap_in_cycles: 100_000,
            swap_out_cycles_per_page: 5_000,
        }
    }
}

/// One unit the clock looks at: a leaf, or a whole contiguous group.
struct Unit {
    va: u64,
    size: PageSize,
}

struct Clock {
    fmt: Format,
    want: u64,
    victims: Vec<Unit>,
    victim_pages: u64,
    young: Vec<Unit>,
    scanned: u64,
    limit: u64,
    next: Option<u64>,
}

impl Visitor for Clock {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        let Pte::Leaf { attrs, pa } = v.pte else {
            return Action::Continue;
        };
        // The zero pages are not on an LRU list: reclaim never takes them (zero.rs).
        if mem.zero.contains_pa(pa) {
            return Action::Continue;
        }
        let (size, n) = match group_of(&mem.pt, self.fmt, v.table, v.index, v.level, v.raw) {
            Some((g, _)) if v.va & g.offset_mask() != 0 => return Action::Continue,
            Some((g, _)) => (g, self.fmt.contig(v.level).map_or(1, |c| c.0)),
            None => (self.fmt.leaf_size(v.level), 1),
        };
        let mut young = attrs.has(Attrs::ACCESSED);
        for i in 1..n {
            if let Pte::Leaf { attrs: a, .. } = self.fmt.decode(v.level, mem.pt.read(v.table, v.index + i)) {
                young |= a.has(Attrs::ACCESSED);
            }
        }
        self.scanned += 1;
        if young {
            for i in 0..n {
                let raw = mem.pt.read(v.table, v.index + i);
                if let Pte::Leaf { attrs: a, .. } = self.fmt.decode(v.level, raw) {
                    mem.pt.write(
                        v.table,
                        v.index + i,
                        self.fmt.with_attrs(v.level, raw, a.without(Attrs::ACCESSED)),
                    );
                }
            }
            self.young.push(Unit { va: v.va, size });
        } else {
            self.victims.push(Unit { va: v.va, size });
            self.victim_pages += size.bytes() >> 12;
        }
        if self.victim_pages >= self.want || self.scanned >= self.limit {
            self.next = Some(v.va + size.bytes());
            return Action::Stop;
        }
        Action::Continue
    }
}

/// Evicts cold pages by the clock until `want` frames are freed or the hand has gone
/// twice round every address space. Returns the frames freed.
pub fn swap_out(
    mem: &mut Memory,
    cfg: &ReclaimConfig,
    stats: &mut OsStats,
    shootdowns: &mut Vec<Shootdown>,
    want: u64,
) -> u64 {
    let spaces: Vec<(Asid, Format, u64)> = mem.spaces.iter().map(|(&a, &(f, r))| (a, f, r)).collect();
    if spaces.is_empty() {
        return 0;
    }
    let mut freed = 0;
    let start = spaces.iter().position(|s| s.0 >= mem.swap.hand.0).unwrap_or(0);
    // Two full turns (clear, then evict), plus the part of the first space before the hand.
    for step in 0..=2 * spaces.len() {
        let (asid, fmt, root) = spaces[(start + step) % spaces.len()];
        let from = if asid == mem.swap.hand.0 { mem.swap.hand.1 } else { 0 };
        let top = fmt.levels()[0];
        let end = top.span().saturating_mul(top.entries() as u64);
        let mut c = Clock {
            fmt,
            want: want - freed,
            victims: Vec::new(),
            victim_pages: 0,
            young: Vec::new(),
            scanned: 0,
            limit: 1 << 16,
            next: None,
        };
        walk(
            mem,
            fmt,
            root,
            0,
            from,
            end,
            WalkFlags::LEAF,
            &mut c,
            &mut WalkCounts::default(),
        );
        stats.add(OsEvent::ReclaimYoungCleared, c.young.len() as u64);
        let first = shootdowns.len();
        for u in &c.young {
            shootdowns.push((asid, u.va, u.va + u.size.bytes()));
        }
        for u in c.victims {
            freed += evict(mem, cfg, stats, shootdowns, asid, fmt, root, u);
        }
        coalesce(shootdowns, first);
        match c.next {
            Some(va) => mem.swap.hand = (asid, va),
            None => {
                let next = spaces[(start + step + 1) % spaces.len()].0;
                mem.swap.hand = (next, 0);
            }
        }
        if freed >= want {
            break;
        }
    }
    freed
}

/// Evicts one leaf or group: every base page of it goes to swap; its frames are freed.
#[allow(clippy::too_many_arguments)]
fn evict(
    mem: &mut Memory,
    cfg: &ReclaimConfig,
    stats: &mut OsStats,
    shootdowns: &mut Vec<Shootdown>,
    asid: Asid,
    fmt: Format,
    root: u64,
    u: Unit,
) -> u64 {
    let Some(m) = unmap_leaf(mem, fmt, root, u.va) else {
        return 0;
    };
    let base = fmt.base_page();
    if m.size > base {
        stats.event(OsEvent::ThpSplits);
    }
    super::free_leaf(mem, &m);
    stats.record_unmap(m.size);
    let pages = m.size.bytes() / base.bytes();
    for i in 0..pages {
        mem.swap.slots.insert((asid, m.va + i * base.bytes()));
    }
    stats.add(OsEvent::SwapOuts, pages);
    stats.os_cycles += pages * cfg.swap_out_cycles_per_page;
    shootdowns.push((asid, m.va, m.va + m.size.bytes()));
    m.size.bytes() >> 12
}

/// Merges adjacent entries of `sd[from..]` that cover touching ranges of one address
/// space, so a run of pages costs one range flush instead of one per page.
fn coalesce(sd: &mut Vec<Shootdown>, from: usize) {
    let mut out = from;
    for i in from..sd.len() {
        let cur = sd[i];
        if out > from && sd[out - 1].0 == cur.0 && sd[out - 1].2 == cur.1 {
            sd[out - 1].2 = cur.2;
        } else {
            sd[out] = cur;
            out += 1;
        }
    }
    sd.truncate(out);
}

#[cfg(test)]
mod tests {
    #[test]
    fn coalesce_merges_touching_ranges_of_one_space_only() {
        let mut sd = vec![
            (9, 0, 1),
            (1, 0, 4096),
            (1, 4096, 8192),
            (2, 8192, 12288),
            (1, 12288, 16384),
            (1, 16384, 20480),
        ];
        super::coalesce(&mut sd, 1);
        assert_eq!(sd, vec![(9, 0, 1), (1, 0, 8192), (2, 8192, 12288), (1, 12288, 20480)]);
    }
}
