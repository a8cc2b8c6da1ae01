//! `mmulab reproduce nested` (issue 20, item 6; docs/virtualization.md): translation in
//! a virtual machine on the model of this machine, an AMD EPYC Zen 4 core in a KVM guest
//! (machines/vm/epyc-zen4-kvm.toml).
//!
//! * The 2 × 2 table: GUPS and a pointer chase in the guest, guest pages 4K / 2M (the
//!   guest's policy `base` / `fixed` 2M) × host backing 4K / hugetlbfs 2M, beside the same
//!   runs on the bare core (no `[vm]`): walk references per last-level TLB miss (guest
//!   and stage-2), translation cycles per reference.
//! * The known result (Bhargava et al., ASPLOS 2008; Pham et al., "Large pages and
//!   lightweight memory management in virtualized environments", MICRO 2015): large
//!   pages help only when both stages use them — checked as "2M over 2M costs less than
//!   half of either mixed case".
//! * A simulated probe of the virtualized core over both host backings: over 4 KiB host
//!   pages it finds `caches_2m = false`, as `mmulab probe` did on this machine
//!   (docs/probe.md), because the combined TLB entry is no larger than the host page.
//!
//! It runs the probe (`mmulab_probe`) against the simulated core; the simulation runs go
//! through `mmulab_sim` as `mmulab sim` does.

use mmulab_plot::{Axis, Figure, Panel, Series, Style, PALETTE};
use mmulab_sim::config::from_toml;
use mmulab_sim::{Session, SessionOptions, Stats};
use serde::Serialize;

use mmulab_probe::probe::{self, ProbeConfig};
use mmulab_probe::target::sim::SimTarget;
use mmulab_probe::{ProbeError, Result};

/// The modelled machine (this one): machines/vm/epyc-zen4-kvm.toml.
pub const MACHINE: &str = include_str!("../../../machines/vm/epyc-zen4-kvm.toml");

/// The workloads: (id, spec). GUPS without its table's initialisation (`init=off`):
/// the runs stay at 2 M references each instead of 136 M (the 134 M initialising stores
/// would be simulated as warm-up in every guest and host configuration).
pub const WORKLOADS: [(&str, &str); 2] = [
    ("gups", "gups:table=1GiB,refs=2M,init=off"),
    ("chase", "chase:pages=65536,refs=2M"),
];

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Workload id.
    pub workload: String,
    /// Guest page size (`4K` or `2M`).
    pub guest: String,
    /// Host backing (`4K`, `2M`), or `native` for the bare core.
    pub host: String,
    /// References simulated.
    pub references: u64,
    /// Last-level TLB misses.
    pub tlb_misses: u64,
    /// Walks (misses plus the walks repeated after faults).
    pub walks: u64,
    /// Guest (stage-1) descriptors read.
    pub stage1_refs: u64,
    /// Stage-2 descriptors read (0 native).
    pub stage2_refs: u64,
    /// All walk references per last-level TLB miss.
    pub refs_per_miss: f64,
    /// Translation cycles (TLB lookups and walks) per reference.
    pub cycles_per_ref: f64,
}

/// The probe of the virtualized core over one host backing.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeRow {
    /// Host backing (`4K`, `2M`).
    pub host: String,
    /// Per data-TLB level: (name, 4 KiB entries found, `caches_2m`).
    pub levels: Vec<(String, usize, Option<bool>)>,
}

/// The whole reproduction.
#[derive(Clone, Debug, Serialize)]
pub struct NestedResult {
    /// Every run, workload by workload: the four nested cases then the two native ones.
    pub rows: Vec<Row>,
    /// Per workload: true if 2M over 2M costs less than half of either mixed case.
    pub both_stages_needed: Vec<(String, bool)>,
    /// The simulated probes.
    pub probe: Vec<ProbeRow>,
}

fn err(e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Invalid(format!("reproduce nested: {e}"))
}

/// The `--set` overrides of one case: guest page size, host backing (`None`: no VM).
/// Private pages in every case (`os.zero_page=false` under `base`): HPCC writes its table and a
/// pointer chase its ring before the measured part, so no page of theirs is the shared
/// zero page when it starts (without this, #23's zero-page default made every chase page
/// one guest frame, and each GUPS page fault twice inside the measurement).
fn sets(guest: &str, host: Option<&str>) -> Vec<String> {
    let mut v = match guest {
        // `fixed` maps every page privately already (it has no zero page to turn off).
        "2M" => vec!["os.policy=fixed".to_string(), "os.page_size=2M".into()],
        _ => vec!["os.policy=base".to_string(), "os.zero_page=false".into()],
    };
    match host {
        Some("2M") => v.push("vm.backing=hugetlb-2M".into()),
        Some(h) => v.push(format!("vm.backing={h}")),
        None => v.push("vm.enabled=false".into()),
    }
    v
}

fn one(workload: (&str, &str), guest: &str, host: Option<&str>) -> Result<Row> {
    let spec = from_toml(MACHINE, None, &sets(guest, host)).map_err(err)?;
    let mut src = mmulab_trace::workload::parse(workload.1).map_err(err)?;
    let s: Stats = Session::simulate(spec, &mut *src, SessionOptions::default()).map_err(err)?;
    let (s1, s2) = s
        .nested
        .as_ref()
        .map_or((s.counters.walk_reads, 0), |n| (n.stage1_refs(), n.stage2_refs()));
    let misses = s.stlb_misses();
    let refs = s.counters.references;
    Ok(Row {
        workload: workload.0.into(),
        guest: guest.into(),
        host: host.unwrap_or("native").into(),
        references: refs,
        tlb_misses: misses,
        walks: s.counters.walks,
        stage1_refs: s1,
        stage2_refs: s2,
        refs_per_miss: if misses > 0 {
            (s1 + s2) as f64 / misses as f64
        } else {
            0.0
        },
        cycles_per_ref: if refs > 0 {
            s.translation_cycles() as f64 / refs as f64
        } else {
            0.0
        },
    })
}

/// Runs everything (about 12 simulations of 2M references and two quick probes).
pub fn run_all() -> Result<NestedResult> {
    let mut rows = Vec::new();
    let mut both = Vec::new();
    for w in WORKLOADS {
        for guest in ["4K", "2M"] {
            for host in ["4K", "2M"] {
                rows.push(one(w, guest, Some(host))?);
            }
        }
        for guest in ["4K", "2M"] {
            rows.push(one(w, guest, None)?);
        }
        let c = |g: &str, h: &str| {
            rows.iter()
                .find(|r| r.workload == w.0 && r.guest == g && r.host == h)
                .map_or(0.0, |r| r.cycles_per_ref)
        };
        both.push((w.0.to_string(), 2.0 * c("2M", "2M") < c("4K", "2M").min(c("2M", "4K"))));
    }
    let mut probes = Vec::new();
    for host in ["4K", "2M"] {
        let backing = if host == "2M" {
            "vm.backing=hugetlb-2M"
        } else {
            "vm.backing=4K"
        };
        let spec = from_toml(MACHINE, None, &[backing.to_string()]).map_err(err)?;
        let mut t = SimTarget::new(&format!("epyc-zen4-kvm, host {host}"), spec);
        let report = probe::run(&mut t, &ProbeConfig::quick(), &mut |_, _| {})?;
        probes.push(ProbeRow {
            host: host.into(),
            levels: report
                .levels
                .iter()
                .map(|l| (format!("L{}", l.level), l.entries, l.caches_2m))
                .collect(),
        });
    }
    Ok(NestedResult {
        rows,
        both_stages_needed: both,
        probe: probes,
    })
}

/// The tables `mmulab reproduce nested` prints.
pub fn table(r: &NestedResult) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "nested translation on machines/vm/epyc-zen4-kvm.toml (AMD EPYC Zen 4 in a KVM guest, NPT)\n"
    );
    let _ = writeln!(
        s,
        "{:<7} {:>5} {:>6} {:>10} {:>9} {:>9} {:>10} {:>11}",
        "work", "guest", "host", "TLB miss", "s1 refs", "s2 refs", "refs/miss", "cycles/ref"
    );
    for x in &r.rows {
        let _ = writeln!(
            s,
            "{:<7} {:>5} {:>6} {:>10} {:>9} {:>9} {:>10.2} {:>11.2}",
            x.workload, x.guest, x.host, x.tlb_misses, x.stage1_refs, x.stage2_refs, x.refs_per_miss, x.cycles_per_ref
        );
    }
    let _ = writeln!(s);
    for (w, yes) in &r.both_stages_needed {
        let _ = writeln!(
            s,
            "{w}: both stages need large pages (2M over 2M < half of either mixed case): {}",
            if *yes { "yes" } else { "no" }
        );
    }
    let _ = writeln!(
        s,
        "\nsimulated probe of the virtualized core (mmulab probe --quick on the model):"
    );
    for p in &r.probe {
        let levels: Vec<String> = p
            .levels
            .iter()
            .map(|(n, e, c)| {
                let c = match c {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "untested",
                };
                format!("{n} {e} entries, caches 2M {c}")
            })
            .collect();
        let _ = writeln!(s, "  host {:<3}: {}", p.host, levels.join("; "));
    }
    let _ = writeln!(
        s,
        "why: a combined (guest-virtual -> host-physical) TLB entry is no larger than the smaller of the\nguest page and the host page; over 4 KiB host pages a guest 2 MiB page is cached as 4 KiB pieces,\nso the probe's 2 MiB curve misses like the 4 KiB one (caches_2m = false, as on this machine,\ndocs/probe.md) while its walks are shorter (the guest walk stops a level early)."
    );
    s
}

/// Bars of translation cycles per reference: one group per (workload, guest page), one
/// bar per host backing (native beside).
pub fn figure(r: &NestedResult) -> Figure {
    let groups: Vec<(String, String)> =
        r.rows
            .iter()
            .map(|x| (x.workload.clone(), x.guest.clone()))
            .fold(Vec::new(), |mut v, k| {
                if !v.contains(&k) {
                    v.push(k);
                }
                v
            });
    let names = groups.iter().map(|(w, g)| format!("{w}, guest {g}")).collect();
    let ymax = r.rows.iter().map(|x| x.cycles_per_ref).fold(0.0, f64::max).max(1e-9) * 1.15;
    let mut p = Panel::new(
        "",
        Axis::categories("workload, guest page", names),
        Axis::linear("translation cycles per reference").range(0.0, ymax),
    );
    for (k, host) in ["4K", "2M", "native"].into_iter().enumerate() {
        let points = groups
            .iter()
            .enumerate()
            .filter_map(|(i, (w, g))| {
                let x = r
                    .rows
                    .iter()
                    .find(|x| &x.workload == w && &x.guest == g && x.host == host)?;
                Some((i as f64, x.cycles_per_ref))
            })
            .collect();
        let label = if host == "native" {
            "no VM".to_string()
        } else {
            format!("host {host}")
        };
        p.series
            .push(Series::new(label, Style::Bars, PALETTE[k % PALETTE.len()], points));
    }
    Figure::new("Nested translation: guest page x host page", (1000, 560), vec![p])
}

/// The table row: `mmulab reproduce nested`.
pub struct NestedExperiment;

impl crate::Experiment for NestedExperiment {
    fn name(&self) -> &'static str {
        "nested"
    }
    fn source(&self) -> &'static str {
        "this machine (KVM guest)"
    }
    fn about(&self) -> &'static str {
        "nested (two-stage) translation on the model of this machine, an AMD EPYC Zen 4 core in a
KVM guest: GUPS and a pointer chase, guest 4K/2M x host 4K/2M (walk references per TLB
miss, translation cycles per reference), whether both stages need large pages, and a
simulated probe of the virtualized core (docs/virtualization.md)."
    }
    fn run(&self, input: &crate::Input) -> anyhow::Result<crate::Output> {
        let r = run_all()?;
        let mut out = crate::Output::new(table(&r), serde_json::to_value(&r)?);
        out.figure = input.figure.then(|| figure(&r));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cases_choose_the_policies() {
        assert_eq!(
            sets("2M", Some("2M")),
            ["os.policy=fixed", "os.page_size=2M", "vm.backing=hugetlb-2M"]
        );
        assert_eq!(
            sets("4K", None),
            ["os.policy=base", "os.zero_page=false", "vm.enabled=false"]
        );
        from_toml(MACHINE, None, &sets("2M", Some("2M"))).unwrap();
    }

    #[test]
    fn the_row_names_its_source_and_draws() {
        use crate::Experiment as _;
        assert_eq!(crate::find("nested").unwrap().name(), NestedExperiment.name());
        assert!(NestedExperiment.draws() && NestedExperiment.options().is_empty());
    }
}
