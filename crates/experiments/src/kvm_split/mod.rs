//! `mmulab reproduce kvm-split`: the "Optimize S2 page splitting" RFC (seed 004) on the
//! model of KVM's eager stage-2 splitting (`mmulab_model::kvm`).
//!
//! Every combination of a 64 GiB and a 1 GiB memslot, backings 4K / THP / hugetlb 1G,
//! granules 4K / 16K / 64K, both scenarios (enable dirty logging; clear-dirty-log) and the
//! three split-walker variants is counted and priced ([`SplitCost`]). A 64 GiB slot is
//! extrapolated from real walks of 1, 2 and 3 GiB slots (`kvm::measure`; exact, checked
//! against full walks in `model/tests/it/kvm_split.rs`); a 1 GiB slot is walked in full.
//! The seed's savings are averages over the 4K, 16K and 64K granules of a 64 GB VM, so
//! the comparison averages mmulab's 64 GiB rows the same way.

use mmulab_model::addr::PageSize;
use mmulab_model::kvm::{measure, Backing, Case, Granule, Scenario, SplitCost, SplitCounts, Variant};
use mmulab_model::ModelError;
use mmulab_plot::{Axis, Color, Figure, Panel, Series, Style};
use mmulab_sim::pool::Pool;
use serde::Serialize;
use std::fmt::Write as _;

pub mod fit;

/// The slot sizes reproduced.
pub const SLOTS: [u64; 2] = [64 << 30, 1 << 30];

/// One measured combination.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Slot size in bytes.
    pub slot_bytes: u64,
    /// Host backing (`4K`, `THP`, `hugetlb-1G`).
    pub backing: &'static str,
    /// Stage-2 granule (`4K`, `16K`, `64K`).
    pub granule: &'static str,
    /// `enable` or `clear-dirty-log`.
    pub scenario: &'static str,
    /// `vanilla`, `skip-level3` or `skip-children`.
    pub variant: &'static str,
    /// Entries visited by every walk (split, unlinked builds, write-protect).
    pub visits: u64,
    /// Modelled time in nanoseconds.
    pub time_ns: f64,
    /// Percent of vanilla's time saved (0 for vanilla).
    pub saving_vs_vanilla: f64,
    /// `eager_split_chunk_size` used, bytes.
    pub chunk_bytes: u64,
    /// True if extrapolated from 1, 2 and 3 GiB walks.
    pub extrapolated: bool,
    /// Entries the split walker visited, per kernel level 0..3.
    pub split_visits: [u64; 4],
    /// Split-walker callbacks.
    pub split_callbacks: u64,
    /// Entries visited building unlinked subtrees.
    pub build_visits: u64,
    /// Entries visited by the write-protect walks.
    pub wp_visits: u64,
    /// Blocks split.
    pub blocks_split: u64,
    /// Pages taken from the split cache.
    pub pages_taken: u64,
    /// Descriptors written (splits and write-protection).
    pub descriptors_written: u64,
    /// TLB invalidations by IPA and level.
    pub tlbi_ipa: u64,
    /// VMID-wide invalidations.
    pub tlbi_vmid: u64,
    /// Split-cache top-ups.
    pub topups: u64,
}

/// The seed's figure for one scenario, backing and variant beside mmulab's.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// `enable` or `clear-dirty-log`.
    pub scenario: &'static str,
    /// Host backing.
    pub backing: &'static str,
    /// `skip-level3` (the seed's (a)) or `skip-children` (its (b)).
    pub variant: &'static str,
    /// The seed's saving, percent (AmpereOne, 64 GB VM, mean of 4K/16K/64K pages).
    pub seed: f64,
    /// mmulab's saving for the 64 GiB slot, mean of the three granules, percent.
    pub mmulab: f64,
    /// Both save (or both lose).
    pub same_direction: bool,
    /// Why the two differ.
    pub note: String,
}

/// The whole reproduction.
#[derive(Clone, Debug, Serialize)]
pub struct KvmSplit {
    /// Every measured combination.
    pub rows: Vec<Row>,
    /// The seed's figures beside mmulab's.
    pub comparison: Vec<Comparison>,
    /// The costs fitted on the clear-dirty-log figures, the others predicted with intervals.
    pub fit: fit::Fit,
}

/// The seed's figures (seed 004, Bras, 29 May 2026): (scenario, backing, (a), (b)), where
/// (a) = skip levels and (b) = skip levels and skip children node; (1) = manual protect
/// (KVM_CLEAR_DIRTY_LOG), (2) = dirty-log enable.
pub const SEED: [(Scenario, Backing, f64, f64); 6] = [
    (Scenario::ClearDirtyLog, Backing::Pages, 26.7, 25.3),
    (Scenario::ClearDirtyLog, Backing::Thp, 13.2, 11.9),
    (Scenario::ClearDirtyLog, Backing::Hugetlb1G, 14.3, 13.2),
    (Scenario::Enable, Backing::Pages, 33.1, 35.0),
    (Scenario::Enable, Backing::Thp, 11.9, 10.7),
    (Scenario::Enable, Backing::Hugetlb1G, 13.4, 13.2),
];

/// `eager_split_chunk_size` per granule (`KVM_CAP_ARM_EAGER_SPLIT_CHUNK_SIZE`; `reproduce
/// kvm-split --eager-split-chunk-size GRANULE=SIZE`): the reproduction's default, the
/// granule's level-2 block ([`Case::default_chunk`]), unless set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunks {
    set: Vec<(Granule, u64)>,
}

/// The flag the chunk sizes come from, as errors name it.
pub const CHUNK_FLAG: &str = "--eager-split-chunk-size";

impl Chunks {
    /// Parses `GRANULE=SIZE` values (`4K=1G`, `16K=32M`, `64K=0`). SIZE is 0 (off, the
    /// kernel's default) or a block size of the granule, as the kernel's
    /// `kvm_vm_ioctl_enable_cap` (arch/arm64/kvm/arm.c) accepts only `new_cap == 0 ||
    /// kvm_is_block_size_supported(new_cap)`; anything else is an error naming the flag,
    /// the value and the sizes allowed.
    pub fn parse(values: &[String]) -> Result<Chunks, String> {
        let mut set: Vec<(Granule, u64)> = Vec::new();
        for v in values {
            let Some((g, size)) = v.split_once('=') else {
                return Err(format!(
                    "{CHUNK_FLAG} {v:?}: write GRANULE=SIZE, e.g. 4K=1G (granules 4K, 16K, 64K)"
                ));
            };
            let granule = Granule::ALL
                .into_iter()
                .find(|x| x.name().eq_ignore_ascii_case(g.trim()))
                .ok_or_else(|| format!("{CHUNK_FLAG} {v}: {g:?} is not a stage-2 granule; use 4K, 16K or 64K"))?;
            let allowed = || {
                let sizes: Vec<String> = granule.block_sizes().iter().map(|b| b.to_string()).collect();
                format!("0 (off) or {}", sizes.join(", "))
            };
            let bytes = match size.trim() {
                "0" => 0,
                t => match PageSize::parse(t) {
                    Ok(p) if granule.block_sizes().contains(&p) => p.bytes(),
                    _ => {
                        return Err(format!(
                            "{CHUNK_FLAG} {v}: {size:?} is not a block size of the {} granule (eager_split_chunk_size, KVM_CAP_ARM_EAGER_SPLIT_CHUNK_SIZE); use {}",
                            granule.name(),
                            allowed()
                        ))
                    }
                },
            };
            if set.iter().any(|(x, _)| *x == granule) {
                return Err(format!(
                    "{CHUNK_FLAG} {v}: the {} granule's chunk size is given twice",
                    granule.name()
                ));
            }
            set.push((granule, bytes));
        }
        Ok(Chunks { set })
    }

    /// The chunk size for granule `g`, bytes.
    pub fn get(&self, g: Granule) -> u64 {
        self.set
            .iter()
            .find(|(x, _)| *x == g)
            .map_or_else(|| Case::default_chunk(g), |&(_, b)| b)
    }
}

/// Runs every combination on `pool`, with the default chunk sizes.
pub fn run(pool: Pool) -> Result<KvmSplit, ModelError> {
    run_with(pool, &Chunks::default())
}

/// Runs every combination on `pool` with chunk sizes `chunks`.
pub fn run_with(pool: Pool, chunks: &Chunks) -> Result<KvmSplit, ModelError> {
    let mut cases = Vec::new();
    for slot in SLOTS {
        for scenario in Scenario::ALL {
            for backing in Backing::ALL {
                for granule in Granule::ALL {
                    for variant in Variant::ALL {
                        let case = Case {
                            slot_bytes: slot,
                            backing,
                            granule,
                            scenario,
                            variant,
                            chunk: chunks.get(granule),
                        };
                        cases.push(case);
                        // Extra rows: 1 GiB chunks, where a 1G block is split whole
                        // (force_pte) and skip-children has children to skip.
                        if granule == Granule::K4 && backing == Backing::Hugetlb1G && case.chunk != 1 << 30 {
                            cases.push(Case { chunk: 1 << 30, ..case });
                        }
                    }
                }
            }
        }
    }
    let results = measure_all(&cases, pool)?;
    let cost = SplitCost::default();
    let mut rows = Vec::new();
    for (case, (c, extrapolated)) in cases.iter().zip(&results) {
        let time = cost.time_ns(c, case.granule, case.variant);
        let vanilla = cases
            .iter()
            .zip(&results)
            .find(|(v, _)| {
                v.variant == Variant::Vanilla
                    && Case {
                        variant: case.variant,
                        ..**v
                    } == *case
            })
            .map(|(v, (vc, _))| cost.time_ns(vc, v.granule, v.variant))
            .unwrap_or(time);
        rows.push(row(case, c, *extrapolated, time, vanilla));
    }
    let comparison = compare(&rows, &cases, &results, &cost, chunks);
    let counts: Vec<SplitCounts> = results.iter().map(|(c, _)| *c).collect();
    let fit = fit::fit(&cases, &counts, chunks);
    Ok(KvmSplit { rows, comparison, fit })
}

fn measure_all(cases: &[Case], pool: Pool) -> Result<Vec<(SplitCounts, bool)>, ModelError> {
    pool.map(cases, measure).into_iter().collect()
}

fn row(case: &Case, c: &SplitCounts, extrapolated: bool, time: f64, vanilla: f64) -> Row {
    Row {
        slot_bytes: case.slot_bytes,
        backing: case.backing.name(),
        granule: case.granule.name(),
        scenario: case.scenario.name(),
        variant: case.variant.name(),
        visits: c.visits(),
        time_ns: time.round(),
        saving_vs_vanilla: round1(100.0 * (1.0 - time / vanilla)),
        chunk_bytes: case.chunk,
        extrapolated,
        split_visits: c.split_walk.reads,
        split_callbacks: c.split_walk.callbacks,
        build_visits: c.build_walk.total(),
        wp_visits: c.wp_walk.total(),
        blocks_split: c.blocks_split.iter().sum(),
        pages_taken: c.pages_taken,
        descriptors_written: c.descriptors_written + c.wp_writes,
        tlbi_ipa: c.tlbi_ipa,
        tlbi_vmid: c.tlbi_vmid,
        topups: c.topups,
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// mmulab's mean saving over the granules (64 GiB slot) beside each seed figure.
fn compare(
    rows: &[Row],
    cases: &[Case],
    results: &[(SplitCounts, bool)],
    cost: &SplitCost,
    chunks: &Chunks,
) -> Vec<Comparison> {
    let mut out: Vec<Comparison> = Vec::new();
    for (scenario, backing, a, b) in SEED {
        for (variant, seed) in [(Variant::SkipLevel3, a), (Variant::SkipChildren, b)] {
            let picked: Vec<usize> = (0..cases.len())
                .filter(|&i| {
                    let c = &cases[i];
                    c.slot_bytes == SLOTS[0]
                        && c.scenario == scenario
                        && c.backing == backing
                        && c.variant == variant
                        && c.chunk == chunks.get(c.granule)
                })
                .collect();
            let mmulab = round1(picked.iter().map(|&i| rows[i].saving_vs_vanilla).sum::<f64>() / picked.len() as f64);
            // The share of vanilla time the skipped last-level visits take, mean over granules.
            let share = picked
                .iter()
                .map(|&i| {
                    let vi = (0..cases.len())
                        .find(|&j| {
                            cases[j]
                                == Case {
                                    variant: Variant::Vanilla,
                                    ..cases[i]
                                }
                        })
                        .expect("every case has its vanilla");
                    let v = &results[vi].0;
                    let skipped =
                        v.split_walk.reads[3] as f64 * cost.entry_read + v.split_walk.callbacks as f64 * cost.callback;
                    skipped / cost.time_ns(v, cases[vi].granule, Variant::Vanilla)
                })
                .sum::<f64>()
                / picked.len() as f64;
            // For (b), its difference from (a), mmulab's and the seed's.
            let vs_a = out
                .last()
                .filter(|_| variant == Variant::SkipChildren)
                .map(|p| (mmulab - p.mmulab, b - a));
            out.push(Comparison {
                scenario: scenario.name(),
                backing: backing.name(),
                variant: variant.name(),
                seed,
                mmulab,
                same_direction: (seed > 0.0) == (mmulab > 0.0),
                note: note(backing, seed, mmulab, share, vs_a),
            });
        }
    }
    out
}

/// One sentence on the difference between the seed's saving and mmulab's.
fn note(backing: Backing, seed: f64, mmulab: f64, share: f64, vs_a: Option<(f64, f64)>) -> String {
    let share = 100.0 * share;
    let mut s = match backing {
        Backing::Pages => format!(
            "Nothing is split; the saving is the split walk's level-3 visits, {share:.0}% of modelled vanilla time \
             beside the write-protect walk that still visits every page"
        ),
        _ => format!(
            "The saving is the split walk's descent into each freshly split block ({share:.0}% of modelled vanilla \
             time); building the subtrees, break-before-make TLBIs and cache top-ups stay"
        ),
    };
    let d = mmulab - seed;
    if d.abs() <= 5.0 {
        s += "; within 5 points of the seed";
    } else if d > 0.0 {
        s += "; mmulab saves more, because the seed's timed syscall also pays what the model leaves out (ioctl \
              entry, memslot and bitmap work, lock hand-offs) and the per-entry costs here are assumed";
    } else {
        s += "; mmulab saves less, because its assumed fixed costs (subtree builds, TLBIs, page allocation) \
              outweigh the walk more than on the seed's AmpereOne";
    }
    if let Some((model, seed)) = vs_a {
        let _ = write!(
            s,
            "; (b) − (a) is {model:+.1} points here and {seed:+.1} in the seed: with 2M/32M/512M chunks no split \
             builds a whole tree below level 2, so skip-children skips only what SKIP_LEVEL3 already skips and \
             adds its flag test per visited entry (the 1 GiB-chunk rows show where it saves)"
        );
    }
    s.push('.');
    s
}

/// The result as text tables.
pub fn table(r: &KvmSplit) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "mmulab reproduce kvm-split: seed 004 (Optimize S2 page splitting), KVM eager stage-2 splitting\n"
    );
    let _ = writeln!(
        t,
        "{:>6} {:<11} {:>4} {:>5} {:<15} {:<13} {:>13} {:>14} {:>8}",
        "slot", "backing", "gran", "chunk", "scenario", "variant", "visits", "time ms", "saving"
    );
    for row in &r.rows {
        let _ = writeln!(
            t,
            "{:>5}G {:<11} {:>4} {:>5} {:<15} {:<13} {:>13} {:>14.3} {:>7.1}%{}",
            row.slot_bytes >> 30,
            row.backing,
            row.granule,
            PageSize::from_bytes(row.chunk_bytes).map_or_else(|| row.chunk_bytes.to_string(), |p| p.to_string()),
            row.scenario,
            row.variant,
            row.visits,
            row.time_ns / 1e6,
            row.saving_vs_vanilla,
            if row.extrapolated { "  (extrapolated)" } else { "" }
        );
    }
    let _ = writeln!(
        t,
        "\nSeed vs mmulab (64 GiB slot, saving vs vanilla, mean of 4K/16K/64K granules):"
    );
    let _ = writeln!(
        t,
        "{:<15} {:<11} {:<13} {:>7} {:>7} {:>5}",
        "scenario", "backing", "variant", "seed", "mmulab", "same"
    );
    for c in &r.comparison {
        let _ = writeln!(
            t,
            "{:<15} {:<11} {:<13} {:>6.1}% {:>6.1}% {:>5}\n    {}",
            c.scenario,
            c.backing,
            c.variant,
            c.seed,
            c.mmulab,
            if c.same_direction { "yes" } else { "no" },
            c.note
        );
    }
    t += &fit::table(&r.fit);
    t
}

/// Savings of both variants beside the seed's, one panel per scenario.
pub fn figure(r: &KvmSplit) -> Figure {
    // 4K (the largest savings) last, clear of the legend in the top left corner.
    let order = [Backing::Thp, Backing::Hugetlb1G, Backing::Pages];
    let names: Vec<String> = order.iter().map(|b| b.name().to_string()).collect();
    let mut panels = Vec::new();
    for scenario in Scenario::ALL {
        let mut p = Panel::new(
            format!("{} (64 GiB slot)", scenario.name()),
            Axis::categories("backing", names.clone()),
            Axis::linear("time saved vs vanilla").range(0.0, 1.0).percent(),
        );
        let series = [
            (
                "mmulab skip-level3",
                Variant::SkipLevel3,
                false,
                Color(0x1f, 0x77, 0xb4),
            ),
            ("seed (a)", Variant::SkipLevel3, true, Color(0xae, 0xc7, 0xe8)),
            (
                "mmulab skip-children",
                Variant::SkipChildren,
                false,
                Color(0xd6, 0x27, 0x28),
            ),
            ("seed (b)", Variant::SkipChildren, true, Color(0xff, 0x98, 0x96)),
        ];
        for (name, variant, seed, colour) in series {
            let points = order
                .iter()
                .enumerate()
                .filter_map(|(i, b)| {
                    r.comparison
                        .iter()
                        .find(|c| c.scenario == scenario.name() && c.backing == b.name() && c.variant == variant.name())
                        .map(|c| (i as f64, if seed { c.seed } else { c.mmulab } / 100.0))
                })
                .collect();
            p.series.push(Series::new(name, Style::Bars, colour, points));
        }
        panels.push(p);
    }
    let mut f = Figure::new(
        "kvm-split: time saved against today's split walker",
        (1100, 360),
        panels,
    );
    f.columns = 2;
    f
}

/// The table row: `mmulab reproduce kvm-split`.
pub struct KvmSplitExperiment;

impl crate::Experiment for KvmSplitExperiment {
    fn name(&self) -> &'static str {
        "kvm-split"
    }
    fn source(&self) -> &'static str {
        "004"
    }
    fn about(&self) -> &'static str {
        "seed 004's KVM eager stage-2 splitting: 64 GiB and 1 GiB memslots, backings 4K/THP/
hugetlb 1G, granules 4K/16K/64K, enable dirty logging and KVM_CLEAR_DIRTY_LOG, the
split walker today vs skip-level3 vs skip-children, beside the seed's savings
(docs/kvm-split.md); --plot draws the savings; --eager-split-chunk-size 4K=1G sets a
granule's chunk (0 or one of its block sizes: 4K 2M/1G, 16K 32M, 64K 512M)."
    }
    fn options(&self) -> &'static [crate::Opt] {
        &[crate::Opt {
            flag: CHUNK_FLAG,
            value: Some("GRANULE=SIZE"),
        }]
    }
    fn run(&self, input: &crate::Input) -> anyhow::Result<crate::Output> {
        use anyhow::Context as _;
        let chunks = Chunks::parse(&input.options.eager_split_chunk_size).map_err(anyhow::Error::msg)?;
        let r = run_with(input.pool, &chunks).context("reproduce kvm-split")?;
        let mut out = crate::Output::new(table(&r), serde_json::to_value(&r)?);
        out.figure = input.figure.then(|| figure(&r));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Experiment as _;

    #[test]
    fn chunk_sizes_are_block_sizes_of_their_granule() {
        let c = Chunks::parse(&["4K=1G".into(), "64k=0".into()]).unwrap();
        assert_eq!((c.get(Granule::K4), c.get(Granule::K64)), (1 << 30, 0));
        assert_eq!(c.get(Granule::K16), Case::default_chunk(Granule::K16));
        for (bad, says) in [
            ("4K", "GRANULE=SIZE"),
            ("8K=2M", "not a stage-2 granule"),
            ("16K=2M", "not a block size of the 16K granule"),
        ] {
            let e = Chunks::parse(&[bad.into()]).unwrap_err();
            assert!(e.contains(CHUNK_FLAG) && e.contains(says), "{bad}: {e}");
        }
        let e = Chunks::parse(&["4K=2M".into(), "4K=1G".into()]).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
    }

    #[test]
    fn the_experiment_tabulates_every_case_and_compares_with_the_seed() {
        let options = crate::Options::default();
        let input = crate::Input {
            source: crate::Source::BuiltIn,
            options: &options,
            figure: true,
            pool: Pool::new(2),
        };
        let out = KvmSplitExperiment.run(&input).unwrap();
        let rows = out.json["rows"].as_array().unwrap();
        // 2 slots × 2 scenarios × 3 backings × 3 granules × 3 variants, plus the 1 GiB
        // chunk rows of 4K over hugetlb 1G (2 slots × 2 scenarios × 3 variants).
        assert_eq!(rows.len(), 2 * 2 * 3 * 3 * 3 + 2 * 2 * 3);
        assert!(out.json["comparison"].is_array() || out.json["comparison"].is_object());
        assert!(out.figure.is_some() && !out.table.is_empty());
        let bad = crate::Options {
            eager_split_chunk_size: vec!["4K=3M".into()],
            ..crate::Options::default()
        };
        let e = KvmSplitExperiment
            .run(&crate::Input {
                options: &bad,
                ..input.clone()
            })
            .err()
            .unwrap();
        assert!(e.to_string().contains(CHUNK_FLAG), "{e}");
    }
}
