//! What to do (issue 50 item 2): the regions to give huge pages, chosen from the region
//! table (regions.rs), written as actions a user can apply.
//!
//! The set: the table's regions in its order (gains at no extra memory first, then by
//! gain per MiB of extra memory), taken until they hold at least [`KEEP`] of the gain of
//! all regions that gain; regions gaining under [`MINOR`] of it come after all the
//! others (a program's many small mappings gain microseconds each: without the rule
//! they were taken first, costing nothing, and each added a line and a hugetlb page).
//! In that order each region added costs the least memory for what it adds (a greedy
//! knapsack: the fewest MiB for the gain, not always the fewest regions). The actions:
//!
//! - `madvise(p, length, MADV_HUGEPAGE)` for each region, for the program's own code to
//!   call on the mapping after it maps it (THP `madvise` or `always`). The region is named
//!   by its size and name: its address is the recording's, under Valgrind, whose layout
//!   is not the native run's (and ASLR moves it run to run); the recorded range narrowed
//!   to whole 2 MiB pages is given beside (only those can be huge; a region without one
//!   gets no line);
//! - a hugetlb pool, for a program that maps these regions with `MAP_HUGETLB` or from
//!   hugetlbfs: `nr_hugepages` of 2 MiB pages covering every region (each rounded up to
//!   whole pages), and where a region holds a whole 1 GiB page, the 1 GiB pages it holds
//!   and 2 MiB pages for the rest, computed exactly for the set; a pool larger than the
//!   memory available now is said to need reserving at boot;
//! - the glibc setting, `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which madvises every
//!   region malloc maps alike: it is the proposal only when no anonymous or `[heap]`
//!   region left out of the set costs extra memory or loses time under THP.

use serde::Serialize;

use super::regions::Region;

/// The share of the gain the proposal keeps, at least.
pub const KEEP: f64 = 0.9;

/// A gain under this share of the 4 KiB run's time is not worth a proposal (assumed: the
/// 1 % timing noise advise's intervals assume at least).
pub const WORTH: f64 = 0.01;

/// A region gaining under this share of the gain of all regions that gain is minor: it
/// is proposed only when the others do not reach [`KEEP`] (assumed: a hundredth of the
/// gain is within the noise of the region split, regions.rs).
pub const MINOR: f64 = 0.01;

const M2: u64 = 2 << 20;
const G1: u64 = 1 << 30;

/// One region of the proposal.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Chosen {
    /// As in the region table.
    pub name: String,
    /// First address.
    pub start: u64,
    /// One past the last.
    pub end: u64,
}

/// The proposal.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Proposal {
    /// The regions to give huge pages.
    pub regions: Vec<Chosen>,
    /// Their share of the gain of every region that gains (at least [`KEEP`]).
    pub gain_share: f64,
    /// Their predicted gain, seconds.
    pub gain_s: f64,
    /// Predicted extra resident bytes of THP on these regions only.
    pub extra_rss_bytes: i64,
    /// That, as a share of full THP's predicted extra resident bytes (null: full THP
    /// costs none).
    pub extra_rss_share: Option<f64>,
    /// The predicted speed-up of THP on these regions only (null when the whole run's
    /// is withheld).
    pub predicted_speedup: Option<f64>,
    /// The measured speed-up of the proposal (the third way, third.rs; `measured.speedup`);
    /// null where it was not run (`not_measured` says why).
    pub speedup: Option<f64>,
    /// The measured peak RSS of the proposal, bytes (`measured.rss_proposal`); null as
    /// `speedup`.
    pub rss: Option<u64>,
    /// The third way's measurements, beside a 4 KiB and a full-THP run each round.
    pub measured: Option<super::third::ProposalMeasured>,
    /// Why the third way was not run (nothing to choose, a static binary, a region the
    /// shim cannot reach).
    pub not_measured: Option<String>,
    /// Why there is nothing to choose, when one region holds the gain (a program with
    /// one big array), or nothing gains.
    pub nothing_to_choose: Option<String>,
    /// `madvise(…, MADV_HUGEPAGE)` calls, one per region with a whole 2 MiB page.
    pub madvise: Vec<String>,
    /// 2 MiB pages a hugetlb pool needs for the set.
    pub hugetlb_2m_pages: u64,
    /// With 1 GiB pages where a region holds one: (1 GiB pages, 2 MiB pages); null when
    /// no region holds a whole 1 GiB page.
    pub hugetlb_1g: Option<(u64, u64)>,
    /// How to reserve the pool, and whether the memory available now holds it.
    pub hugetlb: String,
    /// Whether `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` does what the proposal asks.
    pub glibc: String,
}

/// The proposal from the region `table` (its order), full THP's predicted extra
/// resident bytes `full_extra`, the 4 KiB run's measured time `t4` (seconds; the
/// proposal's speed-up is `t4 / (t4 − gain)`, null when `withheld`) and the bytes of
/// memory available now.
pub fn propose(table: &[Region], full_extra: i64, t4: f64, withheld: bool, available: Option<u64>) -> Proposal {
    let mut gaining: Vec<&Region> = table.iter().filter(|r| r.gain_s > 0.0 && r.start.is_some()).collect();
    let total: f64 = gaining.iter().map(|r| r.gain_s).sum();
    let negligible = total < WORTH * t4;
    if negligible {
        gaining.clear();
    }
    // Regions that matter first, in the table's order; the minor ones only if those do
    // not reach KEEP. A minor region costs no memory to add (it sorts first for that) but
    // adds a line, a hugetlb page and a size for the shim for nothing.
    let minor = |r: &&Region| r.gain_s < MINOR * total;
    let order = gaining
        .iter()
        .filter(|r| !minor(r))
        .chain(gaining.iter().filter(|r| minor(r)));
    let mut chosen: Vec<&Region> = Vec::new();
    let mut kept = 0.0;
    for r in order {
        if total > 0.0 && kept >= KEEP * total {
            break;
        }
        kept += r.gain_s;
        chosen.push(r);
    }
    let extra: i64 = chosen.iter().map(|r| r.extra_rss_bytes).sum();
    // Regions left out that THP would change: they cost a huge page's worth of memory or
    // more, or lose more than 0.1 % of the run (assumed: a tenth of the timing noise
    // WORTH) there. A smaller cost is no reason to choose (xz's 2 MiB heap lost 0.7 ms of
    // a 1.4 s run beside a 673 MiB region holding the gain).
    let costly_left_out = table
        .iter()
        .filter(|r| !chosen.iter().any(|c| c.start == r.start))
        .any(|r| r.extra_rss_bytes >= M2 as i64 || r.gain_s < -0.1 * WORTH * t4);
    let nothing_to_choose = if negligible {
        Some(format!(
            "the regions that gain from huge pages gain {:.4} s together, under {:.0} % of the 4 KiB run's {:.3} s: nothing worth proposing",
            total,
            WORTH * 100.0,
            t4
        ))
    } else if gaining.is_empty() {
        Some("no region gains from huge pages in the simulation: nothing to propose".to_string())
    } else if !costly_left_out {
        let share = if gaining.len() == chosen.len() {
            "the whole gain".to_string()
        } else {
            format!("{:.1} % of the gain", kept / total * 100.0)
        };
        let mib = |r: &Region| r.bytes as f64 / (1u64 << 20) as f64;
        Some(if chosen.len() == 1 {
            format!(
                "one region holds {share} ({}, {:.1} MiB) and no other costs memory or time under THP: huge pages there are full THP for this program",
                chosen[0].name,
                mib(chosen[0])
            )
        } else {
            format!(
                "{} regions hold {share} ({}) and no other costs memory or time under THP: huge pages there are full THP for this program",
                chosen.len(),
                chosen
                    .iter()
                    .map(|r| format!("{}, {:.1} MiB", r.name, mib(r)))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
    } else {
        None
    };
    let madvise = chosen
        .iter()
        .filter_map(|r| {
            let (s, e) = (r.start?, r.end?);
            let (a, b) = (s.div_ceil(M2) * M2, e / M2 * M2);
            (b > a).then(|| {
                format!(
                    "madvise(p, {:#x}, MADV_HUGEPAGE) on the {:.1} MiB {} mapping (recorded at {s:#x}; its whole 2 MiB pages {a:#x}–{b:#x}; the native address differs)",
                    e - s,
                    (e - s) as f64 / (1u64 << 20) as f64,
                    r.name
                )
            })
        })
        .collect();
    let pages_2m: u64 = chosen.iter().map(|r| r.bytes.div_ceil(M2)).sum();
    let with_1g = chosen.iter().any(|r| r.bytes >= G1).then(|| {
        chosen.iter().fold((0, 0), |(g, m), r| {
            let gs = r.bytes / G1;
            (g + gs, m + (r.bytes - gs * G1).div_ceil(M2))
        })
    });
    let pool = pages_2m * M2;
    let hugetlb = match available {
        Some(a) if pool > a => format!(
            "a pool of {pages_2m} × 2 MiB ({:.0} MiB) is more than the {:.0} MiB available now: reserve it at boot (kernel command line `hugepages={pages_2m}`) or free memory first, then `echo {pages_2m} > /proc/sys/vm/nr_hugepages`",
            pool as f64 / (1 << 20) as f64,
            a as f64 / (1 << 20) as f64
        ),
        _ => format!(
            "`echo {pages_2m} > /proc/sys/vm/nr_hugepages` (as root; for a program that maps these regions with MAP_HUGETLB or from hugetlbfs){}",
            with_1g.map_or(String::new(), |(g, m)| format!(
                "; with 1 GiB pages: {g} × 1 GiB (`echo {g} > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages`, or `hugepagesz=1G hugepages={g}` at boot) and {m} × 2 MiB"
            ))
        ),
    };
    // Anonymous regions (what malloc maps) left out that THP would cost memory or time
    // (as `costly_left_out` counts them).
    let left_out: Vec<&Region> = table
        .iter()
        .filter(|r| r.name == "anonymous" || r.name == "[heap]")
        .filter(|r| !chosen.iter().any(|c| c.start == r.start))
        .filter(|r| r.extra_rss_bytes >= M2 as i64 || r.gain_s < -0.1 * WORTH * t4)
        .collect();
    let glibc = if left_out.is_empty() {
        "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (malloc madvises every region it maps) applies the proposal: no anonymous region left out costs memory or time under THP".to_string()
    } else {
        format!(
            "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 would also madvise {} anonymous region{} the proposal leaves out ({:+.1} MiB, {:+.3} s under THP): use the madvise calls instead",
            left_out.len(),
            if left_out.len() == 1 { "" } else { "s" },
            left_out.iter().map(|r| r.extra_rss_bytes).sum::<i64>() as f64 / (1u64 << 20) as f64,
            left_out.iter().map(|r| r.gain_s).sum::<f64>()
        )
    };
    Proposal {
        regions: chosen
            .iter()
            .map(|r| Chosen {
                name: r.name.clone(),
                start: r.start.unwrap_or(0),
                end: r.end.unwrap_or(0),
            })
            .collect(),
        gain_share: if total > 0.0 && !negligible { kept / total } else { 0.0 },
        gain_s: kept,
        extra_rss_bytes: extra,
        extra_rss_share: (full_extra > 0).then(|| extra as f64 / full_extra as f64),
        predicted_speedup: (!withheld && t4 > kept).then(|| t4 / (t4 - kept)),
        speedup: None,
        rss: None,
        measured: None,
        not_measured: nothing_to_choose.clone(),
        nothing_to_choose,
        madvise,
        hugetlb_2m_pages: pages_2m,
        hugetlb_1g: with_1g,
        hugetlb,
        glibc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::regions::test_region as region;

    /// Gains 0.5 s (no extra memory), 0.3 s (1 MiB extra), 0.15 s (10 MiB extra), 0.05 s
    /// (40 MiB extra), in table order: 90 % of the 1.0 s is 0.9, reached after the third
    /// (0.95): 95 % of the gain for 11 of the 51 MiB extra (21.6 %). The 2 MiB pool:
    /// 1 GiB + 3 MiB + 2 MiB + 5 MiB = 512 + 2 + 1 + 3 pages; with 1 GiB pages the first
    /// region is one 1 GiB page and the others 6 × 2 MiB. With t4 = 2 s the speed-up is
    /// 2 / 1.05. The odd-aligned region's madvise range is narrowed to its whole 2 MiB page.
    #[test]
    fn the_set_keeps_ninety_percent_of_the_gain_at_the_least_memory() {
        let mib = 1u64 << 20;
        let t = vec![
            region(0x4000_0000, 1 << 30, 0.5, 0),
            region(0x8010_0000, 3 * mib, 0.3, mib as i64),
            region(0x9000_0000, 2 * mib, 0.15, 10 * mib as i64),
            region(0xa000_0000, 100 * mib, 0.05, 40 * mib as i64),
        ];
        let p = propose(&t, 51 * mib as i64, 2.0, false, Some(64 << 30));
        assert_eq!(
            p.regions.iter().map(|c| c.start).collect::<Vec<_>>(),
            vec![0x4000_0000, 0x8010_0000, 0x9000_0000]
        );
        assert!((p.gain_share - 0.95).abs() < 1e-12);
        assert_eq!(p.extra_rss_bytes, 11 * mib as i64);
        assert!((p.extra_rss_share.unwrap() - 11.0 / 51.0).abs() < 1e-12);
        assert!((p.predicted_speedup.unwrap() - 2.0 / 1.05).abs() < 1e-12);
        assert_eq!(p.hugetlb_2m_pages, 512 + 2 + 1);
        assert_eq!(p.hugetlb_1g, Some((1, 2 + 1)));
        assert_eq!(p.madvise.len(), 3);
        assert!(p.madvise[1].contains("0x80200000–0x80400000"), "{}", p.madvise[1]);
        assert!(
            p.madvise[1].starts_with("madvise(p, 0x300000, MADV_HUGEPAGE) on the 3.0 MiB"),
            "{}",
            p.madvise[1]
        );
        // The fourth region, left out, is anonymous and costs 40 MiB under THP.
        assert!(
            p.glibc
                .contains("1 anonymous region the proposal leaves out (+40.0 MiB"),
            "{}",
            p.glibc
        );
        assert_eq!(p.nothing_to_choose, None);
        assert_eq!(p.speedup, None);
    }

    /// Small mappings gaining microseconds at no extra memory sort first in the table; they
    /// are not taken while the regions that matter reach 90 %: here the 256 MiB region
    /// holds 0.5 of the 0.5006 s (99.9 %), so it alone is the set, one region: nothing to
    /// choose, its pool 128 pages (not 128 + 3). The 20 minor regions' 0.0006 s are 0.12 %.
    #[test]
    fn minor_regions_are_left_out_while_the_others_keep_ninety_percent() {
        let mut t: Vec<Region> = (0..3).map(|i| region(0x1000 + i * 0x10000, 8192, 0.0002, 0)).collect();
        t.push(region(0x4000_0000, 256 << 20, 0.5, 2 << 20));
        let p = propose(&t, 2 << 20, 2.0, false, None);
        assert_eq!(p.regions.len(), 1);
        assert_eq!(p.regions[0].start, 0x4000_0000);
        assert_eq!(p.hugetlb_2m_pages, 128);
        assert!((p.gain_share - 0.5 / 0.5006).abs() < 1e-12);
        let why = p.nothing_to_choose.as_deref().unwrap();
        assert!(why.contains("one region holds 99.9 % of the gain"), "{why}");
        // Minor regions are still taken when the others fall short of 90 %: 50 regions of
        // 0.0002 s beside one of 0.08 s (total 0.09): the big one holds 89 %, and 5 minor
        // ones bring it to 90 %.
        let mut t: Vec<Region> = (0..50).map(|i| region(0x1000 + i * 0x10000, 8192, 0.0002, 0)).collect();
        t.push(region(0x4000_0000, 256 << 20, 0.08, 2 << 20));
        let p = propose(&t, 2 << 20, 2.0, false, None);
        assert_eq!(p.regions[0].start, 0x4000_0000);
        assert_eq!(p.regions.len(), 1 + 5);
        // Nothing left out costs memory or time: full THP in effect, said.
        let why = p.nothing_to_choose.as_deref().unwrap();
        assert!(why.starts_with("6 regions hold 90.0 % of the gain"), "{why}");
        // Two allocations of a merged VMA (hash_join's two callocs), each half the gain,
        // and nothing left out costs: both are the set, and it is full THP in effect.
        let two = vec![
            region(0x4000_0000, 128 << 20, 0.25, 0),
            region(0x4800_1000, 128 << 20, 0.25, 0),
            region(0x9000_0000, 1 << 20, 0.0, 1 << 20),
        ];
        let p = propose(&two, 1 << 20, 2.0, false, None);
        assert_eq!(p.regions.len(), 2);
        let why = p.nothing_to_choose.as_deref().unwrap();
        assert!(
            why.starts_with("2 regions hold the whole gain (anonymous, 128.0 MiB; anonymous, 128.0 MiB)"),
            "{why}"
        );
        // A left-out region costing a huge page's worth is a choice: measured.
        let mut three = two.clone();
        three[2] = region(0x9000_0000, 96 << 20, 0.001, 3 << 20);
        let p = propose(&three, 3 << 20, 2.0, false, None);
        assert_eq!(p.regions.len(), 2);
        assert_eq!(p.nothing_to_choose, None);
    }

    /// One region gains: nothing to choose, said. A pool larger than the memory available
    /// is said to need reserving at boot.
    #[test]
    fn one_region_is_nothing_to_choose_and_a_pool_too_big_is_said() {
        let t = vec![
            region(0x4000_0000, 512 << 20, 0.4, 192 << 20),
            region(0x1000, 4096, 0.0, 0),
        ];
        let mut t = t;
        // A left-out region losing 0.5 ms of the 1 s run, no extra memory: still no choice.
        t.push(region(0x9000_0000, 2 << 20, -0.0005, 0));
        let p = propose(&t, 192 << 20, 1.0, false, Some(100 << 20));
        assert_eq!(p.regions.len(), 1);
        assert!(p
            .nothing_to_choose
            .as_deref()
            .unwrap()
            .contains("one region holds the whole gain"));
        assert_eq!(p.hugetlb_2m_pages, 256);
        assert!(
            p.hugetlb.contains("reserve it at boot") && p.hugetlb.contains("hugepages=256"),
            "{}",
            p.hugetlb
        );
        assert!(p.glibc.contains("applies the proposal"), "{}", p.glibc);
        assert!(p.madvise[0].contains("512.0 MiB anonymous mapping"), "{}", p.madvise[0]);
        // One region gains but another costs memory under THP (two_regions.c): the gaining
        // one alone is a choice, not full THP.
        let two = vec![
            region(0x4000_0000, 64 << 20, 0.02, 0),
            region(0x8000_0000, 512 << 20, -0.08, 509 << 20),
        ];
        let p = propose(&two, 509 << 20, 1.0, false, None);
        assert_eq!(p.nothing_to_choose, None);
        assert_eq!(p.not_measured, None);
        assert_eq!(p.regions.len(), 1);
        assert_eq!(p.regions[0].start, 0x4000_0000);
        assert_eq!(p.extra_rss_share, Some(0.0));
        let none = propose(&[region(0x1000, 4096, 0.0, 0)], 0, 1.0, false, None);
        assert!(none.regions.is_empty() && none.nothing_to_choose.is_some());
        assert_eq!(none.predicted_speedup, Some(1.0));
        // Gains of 9 ms in a 1 s run: under 1 %, nothing worth proposing.
        let small = propose(&[region(0x20_0000, 2 << 20, 0.009, 0)], 0, 1.0, false, None);
        assert!(small.regions.is_empty());
        assert!(small
            .nothing_to_choose
            .as_deref()
            .unwrap()
            .contains("nothing worth proposing"));
    }
}
