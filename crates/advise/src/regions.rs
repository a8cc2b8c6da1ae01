//! Where huge pages pay: the per-region table of `mmulab advise` (issue 50 item 1). The
//! simulated 4 KiB and THP runs count per trace VMA (`sim --regions`,
//! stats/regions.rs): walk cycles, faults by page size, resident and touched bytes.
//! Each region gets
//!
//! - its share of the THP gain: the predicted translation-time saving of the whole run,
//!   split in proportion to the region's simulated walk-cycle saving (4 KiB run less THP
//!   run; the model's time is fitted on whole runs, not regions, so this split is
//!   an attribution, not a separate prediction), plus the fault time THP changes there
//!   (the measured cost of a 4 KiB and of a 2 MiB fault times the region's faults);
//! - the extra resident memory THP costs there (THP run's resident bytes less the 4 KiB
//!   run's, at the end of the simulated runs) and its bloat (resident but never touched
//!   in the THP run);
//!
//! sorted by gain per MiB of extra resident memory: gains that cost no extra memory
//! first (by gain), then the regions that cost memory (by gain per MiB), then those with
//! neither gain nor cost.

use mmulab_sim::stats::regions::RegionStats;
use serde::Serialize;

use super::faults::FaultCosts;

/// One region of the table.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Region {
    /// The mapped file or `[heap]`, `[stack]`, `anonymous`, or `outside VMAs` (addresses the
    /// recording's VMA samples never held).
    pub name: String,
    /// First address (`null` for the outside entry).
    pub start: Option<u64>,
    /// One past the last (`null` for the outside entry).
    pub end: Option<u64>,
    /// Size in bytes (0 for the outside entry).
    pub bytes: u64,
    /// References into it (of the recording).
    pub references: u64,
    /// Simulated walk cycles of the 4 KiB run and of the THP run there.
    pub walk_cycles: (u64, u64),
    /// Its share of the whole run's simulated walk-cycle saving (may be negative).
    pub saving_share: f64,
    /// Predicted seconds THP saves there: its share of the translation saving plus the
    /// fault time THP saves there (negative: THP costs time there).
    pub gain_s: f64,
    /// Fault seconds there: (4 KiB run, THP run), from the measured fault costs.
    pub fault_s: (f64, f64),
    /// Faults there: (4 KiB run, THP run, of which 2 MiB pages).
    pub faults: (u64, u64, u64),
    /// Resident bytes THP adds there (THP run less 4 KiB run, at the end).
    pub extra_rss_bytes: i64,
    /// Resident but never touched there in the THP run (at the end; 0 at least).
    pub bloat_bytes: u64,
    /// `gain_s` per MiB of `extra_rss_bytes` (`null`: no extra memory).
    pub gain_s_per_mib: Option<f64>,
}

/// The table: regions of the 4 KiB run `base` and the THP run `huge` (the same list:
/// both runs installed the same VMAs), `names` (start, name) from the recording's VMA
/// samples, the predicted whole-run translation saving `translation_saving_s` (seconds)
/// and the measured fault costs. Regions neither run referenced or faulted are left out.
pub fn table(
    base: &[RegionStats],
    huge: &[RegionStats],
    names: &[(u64, String)],
    translation_saving_s: f64,
    costs: Option<&FaultCosts>,
    fault_scale: f64,
) -> Vec<Region> {
    let huge_index = mmulab_model::addr::PageSize::M2.index();
    let total: i64 = base
        .iter()
        .zip(huge)
        .map(|(b, h)| b.walk_cycles as i64 - h.walk_cycles as i64)
        .sum();
    let mut out: Vec<Region> = base
        .iter()
        .zip(huge)
        .filter(|(b, h)| b.references + h.references + b.faults() + h.faults() > 0)
        .map(|(b, h)| {
            let saving = b.walk_cycles as i64 - h.walk_cycles as i64;
            let share = if total != 0 { saving as f64 / total as f64 } else { 0.0 };
            let faults = (b.faults(), h.faults(), h.faults_by_size[huge_index]);
            let fault_s = costs.map_or((0.0, 0.0), |c| {
                (
                    c.time_s(faults.0, 0) * fault_scale,
                    c.time_s(faults.1, faults.2) * fault_scale,
                )
            });
            let fault_saved = costs.map_or(0.0, |c| c.saved_s(faults.0, faults.1, faults.2)) * fault_scale;
            let gain_s = share * translation_saving_s + fault_saved;
            let extra = h.resident_bytes - b.resident_bytes;
            let name = if b.outside {
                "outside VMAs".to_string()
            } else {
                names
                    .iter()
                    .find(|(s, _)| *s == b.start)
                    .map(|(_, n)| n.clone())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "anonymous".to_string())
            };
            Region {
                name,
                start: (!b.outside).then_some(b.start),
                end: (!b.outside).then_some(b.end),
                bytes: b.end - b.start,
                references: b.references,
                walk_cycles: (b.walk_cycles, h.walk_cycles),
                saving_share: share,
                gain_s,
                fault_s,
                faults,
                extra_rss_bytes: extra,
                bloat_bytes: (h.resident_bytes - h.touched_bytes as i64).max(0) as u64,
                gain_s_per_mib: (extra > 0).then(|| gain_s / (extra as f64 / (1 << 20) as f64)),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        rank(a)
            .partial_cmp(&rank(b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.start.cmp(&b.start))
    });
    out
}

/// The allocations of one size (issue 50 item 7: a program that maps and frees memory
/// in a loop has regions that come and go; reported by allocation size instead).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BySize {
    /// The allocation's length, bytes (whole pages).
    pub bytes: u64,
    /// Allocations of that length the program made.
    pub count: u64,
    /// At how many distinct addresses (an allocation loop reuses one).
    pub addresses: u64,
    /// The gain of the table's regions that are such an allocation, seconds.
    pub gain_s: f64,
    /// Their extra resident bytes under THP.
    pub extra_rss_bytes: i64,
}

/// Allocations smaller than this are left out of [`by_size`] (assumed: one 2 MiB page;
/// THP cannot map a smaller one huge).
pub const BY_SIZE_MIN: u64 = 2 << 20;

/// The recording's `allocations` (`[start, end)`) of [`BY_SIZE_MIN`] or more grouped by
/// length, largest total first, each with the gain and extra memory of the `table`'s
/// regions that are exactly one of them (a region is counted once, however many
/// allocations reused its range).
pub fn by_size(allocations: &[(u64, u64)], table: &[Region]) -> Vec<BySize> {
    let mut groups: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = std::collections::BTreeMap::new();
    for &(a, e) in allocations.iter().filter(|(a, e)| e - a >= BY_SIZE_MIN) {
        groups.entry(e - a).or_default().push((a, e));
    }
    let mut out: Vec<BySize> = groups
        .into_iter()
        .map(|(bytes, mut v)| {
            let count = v.len() as u64;
            v.sort_unstable();
            v.dedup();
            let regions: Vec<&Region> = table
                .iter()
                .filter(|r| v.iter().any(|&(a, e)| r.start == Some(a) && r.end == Some(e)))
                .collect();
            BySize {
                bytes,
                count,
                addresses: v.len() as u64,
                gain_s: regions.iter().map(|r| r.gain_s).sum(),
                extra_rss_bytes: regions.iter().map(|r| r.extra_rss_bytes).sum(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (b.bytes * b.count)
            .cmp(&(a.bytes * a.count))
            .then(a.bytes.cmp(&b.bytes))
    });
    out
}

/// The factor that brings the regions' simulated fault saving `simulated_s` to the run's
/// `run_s` (counted in the native runs, faults.rs): the run's saving is split between
/// the regions in proportion to their simulated savings, an attribution as the walk
/// saving's is. A program that frees and touches memory again (an allocation loop)
/// faults far more natively than its recording shows; the region it reuses gets the
/// difference. 1 where the two differ in sign or the simulation saves nothing.
pub fn fault_scale(run_s: f64, simulated_s: f64) -> f64 {
    if simulated_s.abs() > 0.0 && run_s / simulated_s > 0.0 {
        run_s / simulated_s
    } else {
        1.0
    }
}

/// The order of the table: gains that cost no extra memory (by gain), then regions that
/// cost memory (by gain per MiB), then the rest, no gain and no cost (by gain).
fn rank(r: &Region) -> (u8, f64) {
    match r.gain_s_per_mib {
        None if r.gain_s > 0.0 => (0, -r.gain_s),
        Some(g) => (1, -g),
        None => (2, -r.gain_s),
    }
}

/// Regions the plot names (the rest are one grey series).
const NAMED: usize = 6;

/// The plot of `advise --plot`: each region's predicted gain against the extra resident
/// memory THP costs there, one dot per region; the six that weigh most (share of the
/// largest gain or loss plus share of the largest extra memory) named, the rest grey.
/// Regions under 0.1 % of the largest gain and 64 KiB of memory are left out.
pub fn figure(table: &[Region], title: &str) -> mmulab_plot::Figure {
    use mmulab_plot::{Axis, Color, Figure, Panel, Series, Style, PALETTE};
    let mib = |b: i64| b as f64 / (1u64 << 20) as f64;
    // The regions that matter, named first: by their share of the largest gain or loss
    // plus their share of the largest extra memory (two_regions.c's cold array, all loss
    // and memory, was once left in the grey "more" series behind regions of no gain).
    // Regions under 0.1 % of the largest gain and 64 KiB of memory are not drawn, as the
    // text table does not list them.
    let top_gain = table.iter().map(|r| r.gain_s.abs()).fold(0.0, f64::max);
    let top_extra = table.iter().map(|r| r.extra_rss_bytes.abs()).max().unwrap_or(0) as f64;
    let weight = |r: &Region| {
        (if top_gain > 0.0 { r.gain_s.abs() / top_gain } else { 0.0 })
            + (if top_extra > 0.0 {
                r.extra_rss_bytes.abs() as f64 / top_extra
            } else {
                0.0
            })
    };
    let mut drawn: Vec<&Region> = table
        .iter()
        .filter(|r| r.gain_s.abs() >= 1e-3 * top_gain.max(1e-12) || r.extra_rss_bytes.abs() >= 64 << 10)
        .collect();
    drawn.sort_by(|a, b| weight(b).total_cmp(&weight(a)));
    let mut panel = Panel::new(
        "where THP pays: gain against extra memory, per region",
        Axis::linear("extra resident memory with THP (MiB)"),
        Axis::linear("predicted gain (s)"),
    );
    for (i, r) in drawn.iter().take(NAMED).enumerate() {
        let name = r.name.rsplit('/').next().unwrap_or(&r.name);
        let at = r.start.map_or(String::new(), |s| format!(" {s:#x}"));
        panel.series.push(Series::new(
            format!("{name}{at}"),
            Style::Markers,
            PALETTE[i % PALETTE.len()],
            vec![(mib(r.extra_rss_bytes), r.gain_s)],
        ));
    }
    if drawn.len() > NAMED {
        panel.series.push(Series::new(
            format!("{} more regions", drawn.len() - NAMED),
            Style::Markers,
            Color(150, 150, 150),
            drawn[NAMED..]
                .iter()
                .map(|r| (mib(r.extra_rss_bytes), r.gain_s))
                .collect(),
        ));
    }
    Figure::new(title, (900, 600), vec![panel])
}

/// An anonymous region for tests: `bytes` at `start`, gaining `gain_s`, costing `extra`
/// bytes under THP (all of it bloat).
#[cfg(test)]
pub(crate) fn test_region(start: u64, bytes: u64, gain_s: f64, extra: i64) -> Region {
    Region {
        name: "anonymous".to_string(),
        start: Some(start),
        end: Some(start + bytes),
        bytes,
        references: 1,
        walk_cycles: (0, 0),
        saving_share: 0.0,
        gain_s,
        fault_s: (0.0, 0.0),
        faults: (0, 0, 0),
        extra_rss_bytes: extra,
        bloat_bytes: extra.max(0) as u64,
        gain_s_per_mib: (extra > 0).then(|| gain_s / (extra as f64 / (1 << 20) as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(
        start: u64,
        mib: u64,
        walk: u64,
        faults_4k: u64,
        faults_2m: u64,
        resident: i64,
        touched: u64,
    ) -> RegionStats {
        let mut f = [0; 9];
        f[mmulab_model::addr::PageSize::K4.index()] = faults_4k;
        f[mmulab_model::addr::PageSize::M2.index()] = faults_2m;
        RegionStats {
            start,
            end: start + (mib << 20),
            outside: false,
            references: 1000,
            walk_cycles: walk,
            faults_by_size: f,
            resident_bytes: resident,
            touched_bytes: touched,
        }
    }

    /// The plot draws the regions that matter: beside one that gains and one that costs
    /// 511 MiB, eight that gain 1/10,000 as much and cost nothing are not drawn (they once
    /// took the named series and left the costly one in the grey rest).
    #[test]
    fn the_plot_names_the_costly_region_and_drops_the_negligible() {
        // Eight regions with a walk saving of 1 cycle against the gaining one's 10,000.
        let mut base: Vec<RegionStats> = (0..8)
            .map(|i| region(0x1000_0000 * (i + 1), 1, 1, 0, 0, 0, 0))
            .collect();
        let mut huge: Vec<RegionStats> = (0..8)
            .map(|i| region(0x1000_0000 * (i + 1), 1, 0, 0, 0, 0, 0))
            .collect();
        // The costly one: no walk saving, 512 MiB extra, all untouched.
        base.push(region(0x10_0000_0000, 512, 0, 0, 0, 1 << 20, 1 << 20));
        huge.push(region(0x10_0000_0000, 512, 0, 0, 0, 512 << 20, 1 << 20));
        // One that gains: a walk saving.
        base.push(region(0x20_0000_0000, 64, 10_000, 0, 0, 64 << 20, 64 << 20));
        huge.push(region(0x20_0000_0000, 64, 0, 0, 0, 64 << 20, 64 << 20));
        let t = table(&base, &huge, &[], 0.1, None, 1.0);
        let f = figure(&t, "t");
        let names: Vec<&str> = f.panels[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().any(|n| n.contains("0x1000000000")), "{names:?}");
        assert!(names.iter().any(|n| n.contains("0x2000000000")), "{names:?}");
    }

    /// Three regions: a big array THP fills entirely (saving 600 of the 1,000 walk
    /// cycles saved, no extra memory), a sparse one (saving 300, 3 MiB of extra memory of
    /// which all bloat) and a small one (saving 100, 2 MiB extra). With a 1 s translation
    /// saving and no fault costs: gains 0.6, 0.3, 0.1 s; 0.1 and 0.05 s per MiB; the array
    /// first (a gain at no extra memory), then the two by gain per MiB.
    #[test]
    fn gain_is_split_by_walk_saving_and_sorted_by_gain_per_mib() {
        let mib = 1i64 << 20;
        let base = vec![
            region(0x1000_0000, 64, 700, 16384, 0, 64 * mib, 64 << 20),
            region(0x2000_0000, 4, 400, 256, 0, mib, 1 << 20),
            region(0x3000_0000, 2, 150, 256, 0, mib, 1 << 20),
        ];
        let huge = vec![
            region(0x1000_0000, 64, 100, 0, 32, 64 * mib, 64 << 20),
            region(0x2000_0000, 4, 100, 0, 2, 4 * mib, 1 << 20),
            region(0x3000_0000, 2, 50, 0, 1, 3 * mib, 1 << 20),
        ];
        // A fourth region, nothing saved and nothing extra, sorts last.
        let mut base = base;
        let mut huge = huge;
        base.insert(0, region(0x0800_0000, 1, 50, 1, 0, 4096, 4096));
        huge.insert(0, region(0x0800_0000, 1, 50, 1, 0, 4096, 4096));
        let names = vec![(0x1000_0000, "[heap]".to_string())];
        let t = table(&base, &huge, &names, 1.0, None, 1.0);
        let by = |s: u64| t.iter().find(|r| r.start == Some(s)).unwrap();
        assert_eq!(by(0x1000_0000).name, "[heap]");
        assert_eq!(by(0x2000_0000).name, "anonymous");
        assert!((by(0x1000_0000).gain_s - 0.6).abs() < 1e-12);
        assert!((by(0x2000_0000).gain_s - 0.3).abs() < 1e-12);
        assert!((by(0x3000_0000).gain_s - 0.1).abs() < 1e-12);
        assert_eq!(by(0x2000_0000).extra_rss_bytes, 3 * mib);
        assert_eq!(by(0x2000_0000).bloat_bytes, 3 << 20);
        assert_eq!(by(0x1000_0000).gain_s_per_mib, None);
        assert!((by(0x2000_0000).gain_s_per_mib.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(
            t.iter().map(|r| r.start.unwrap()).collect::<Vec<_>>(),
            vec![0x1000_0000, 0x2000_0000, 0x3000_0000, 0x0800_0000]
        );
        assert_eq!(by(0x2000_0000).faults, (256, 2, 2));
    }

    /// Fault time: 4 KiB faults at 1 µs and 2 MiB ones at 100 µs. A region of 512 4 KiB
    /// faults (512 µs) that THP maps with one 2 MiB fault (100 µs) gains 412 µs there
    /// with no walk saving at all.
    #[test]
    fn fault_time_saved_counts_in_the_gain() {
        let c = FaultCosts {
            ns_per_4k: 1_000.0,
            ns_per_2m: 100_000.0,
            thp_verified: true,
            p99_ns_4k: None,
            p99_ns_2m: None,
        };
        let base = vec![region(0x1000_0000, 2, 100, 512, 0, 2 << 20, 2 << 20)];
        let huge = vec![region(0x1000_0000, 2, 100, 0, 1, 2 << 20, 2 << 20)];
        let t = table(&base, &huge, &[], 0.5, Some(&c), 1.0);
        assert_eq!(t[0].saving_share, 0.0);
        assert!((t[0].gain_s - 412e-6).abs() < 1e-12, "{}", t[0].gain_s);
        assert!((t[0].fault_s.0 - 512e-6).abs() < 1e-12 && (t[0].fault_s.1 - 100e-6).abs() < 1e-12);
        // The native runs counted 40 times the saving (an allocation loop): the region's
        // fault saving is 40 × 412 µs.
        let scale = fault_scale(40.0 * 412e-6, 412e-6);
        assert!((scale - 40.0).abs() < 1e-9);
        let t = table(&base, &huge, &[], 0.5, Some(&c), scale);
        assert!((t[0].gain_s - 40.0 * 412e-6).abs() < 1e-12, "{}", t[0].gain_s);
        // Opposite signs, or nothing simulated: no scaling.
        assert_eq!(fault_scale(-0.1, 0.2), 1.0);
        assert_eq!(fault_scale(0.1, 0.0), 1.0);
    }

    /// An allocation loop: 40 allocations of 48 MiB at one address (the region of the
    /// table that range is), 3 of 8 MiB at three addresses (two of them regions), and
    /// small ones left out. By total: 48 MiB × 40 first; the 8 MiB group's gain and extra
    /// memory are its two regions', the 1 MiB ones are not listed.
    #[test]
    fn allocations_are_grouped_by_size_with_the_regions_they_are() {
        let mib = 1u64 << 20;
        let reg = test_region;
        let a = 0x7000_0000u64;
        let mut allocs: Vec<(u64, u64)> = (0..40).map(|_| (a, a + 48 * mib)).collect();
        allocs.extend([
            (0x1000_0000, 0x1000_0000 + 8 * mib),
            (0x2000_0000, 0x2000_0000 + 8 * mib),
        ]);
        allocs.push((0x3000_0000, 0x3000_0000 + 8 * mib));
        allocs.push((0x4000_0000, 0x4000_0000 + mib));
        let table = vec![
            reg(a, 48 * mib, 0.5, 0),
            reg(0x1000_0000, 8 * mib, 0.02, (2 * mib) as i64),
            reg(0x2000_0000, 8 * mib, 0.01, 0),
            reg(0x4000_0000, mib, 0.3, 0),
        ];
        let g = by_size(&allocs, &table);
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].bytes, g[0].count, g[0].addresses), (48 * mib, 40, 1));
        assert!((g[0].gain_s - 0.5).abs() < 1e-12, "the region counted once");
        assert_eq!((g[1].bytes, g[1].count, g[1].addresses), (8 * mib, 3, 3));
        assert!((g[1].gain_s - 0.03).abs() < 1e-12);
        assert_eq!(g[1].extra_rss_bytes, (2 * mib) as i64);
        assert!(by_size(&[], &table).is_empty());
    }
}
