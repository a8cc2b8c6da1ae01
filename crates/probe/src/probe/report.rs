//! The probe's result: per-level findings, how each was obtained, what could not be tested,
//! and the measured curves. Serialized as the `--json` object (fields documented in
//! docs/probe.md) and printed as a table.

use std::fmt::Write as _;

use serde::Serialize;

use super::hypervisor::Hypervisor;
use super::reported::Reported;
use super::{ProbeConfig, Series};
use crate::knee::{self, Knee};
use crate::target::{Backing, TargetInfo, TimeUnit};

/// One TLB level found.
#[derive(Clone, Debug, Serialize)]
pub struct LevelResult {
    /// 1 = the level closest to the core.
    pub level: usize,
    /// Entries for 4 KiB pages: the largest page count whose chase still hits this level.
    pub entries: usize,
    /// The sweep points the knee was found between, before refinement.
    pub sweep_bracket: [usize; 2],
    /// How `entries` was obtained: `"timing"`, `"timing, confirmed by counters"`, or
    /// `"timing (counters disagree: ...)"`.
    pub method: String,
    /// Extra time per access once this level misses (the knee's rise).
    pub miss_cost: f64,
    /// Unit of `miss_cost`.
    pub unit: String,
    /// Whether the level holds 2 MiB pages: `true`, `false`, or `null` if not determined.
    pub caches_2m: Option<bool>,
    /// The evidence for `caches_2m`, or why it is `null`.
    pub caches_2m_how: String,
    /// For a level that does not hold 2 MiB pages: does it hold the 4 KiB piece touched
    /// (splinter, `true`) or nothing (`false`)? `null` if not determined.
    pub splinters_2m: Option<bool>,
    /// 2 MiB entries (from the 2 MiB-stride sweep), when measured.
    pub entries_2m: Option<usize>,
    /// Sweep points between which the level's miss counter crossed 0.5 per access.
    pub counter_knee: Option<[usize; 2]>,
    /// The independent refinements whose median is `entries` (empty: not refined by
    /// timing).
    pub refinements: Vec<usize>,
    /// The rise after the onset (`entries`): its shape and where it is complete.
    pub ramp: super::ramp::Ramp,
}

impl LevelResult {
    /// A level from a refined knee.
    pub fn new(level: usize, entries: usize, k: &Knee, unit: &TimeUnit) -> Self {
        LevelResult {
            level,
            entries,
            sweep_bracket: [k.x_lo as usize, k.x_hi as usize],
            method: "timing".into(),
            miss_cost: k.after - k.before,
            unit: unit.label().into(),
            caches_2m: None,
            caches_2m_how: String::new(),
            splinters_2m: None,
            entries_2m: None,
            counter_knee: None,
            refinements: Vec::new(),
            ramp: Default::default(),
        }
    }
}

/// A rise that was not taken as a TLB level.
#[derive(Clone, Debug, Serialize)]
pub struct RejectedKnee {
    /// Sweep points it lies between.
    pub between: [usize; 2],
    /// Its height.
    pub rise: f64,
    /// Why it was rejected.
    pub reason: String,
}

/// Everything the probe found.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    /// What was probed.
    pub target: TargetInfo,
    /// `"timing"` or `"timing+counters"` (counters confirmed at least one level).
    pub method: String,
    /// Data-TLB levels, ordered from the core outwards.
    pub levels: Vec<LevelResult>,
    /// Rises not taken as TLB levels, with the reason.
    pub rejected_knees: Vec<RejectedKnee>,
    /// The 2 MiB backing tested, if any.
    pub huge_backing: Option<Backing>,
    /// What could not be tested, with the reason.
    pub untested: Vec<String>,
    /// TLB sizes the CPU reports about itself (CPUID), for comparison only — never used.
    pub reported: Vec<Reported>,
    /// Hypervisor detection on a native target (`null` on a simulated one): a guest's
    /// `caches_2m` describes its own 2 MiB mappings, not the TLB's entry sizes.
    pub hypervisor: Option<Hypervisor>,
    /// The measured curves.
    pub series: Vec<Series>,
    /// Parameters of the run.
    pub config: ProbeConfig,
    /// Wall time of the probe, seconds.
    pub elapsed_s: f64,
}

/// Where counters exist, check each level's knee against the crossing of its miss counter
/// (counter `i` counts misses of level `i+1`) at 0.5 per access.
pub fn confirm_with_counters(levels: &mut [LevelResult], a: &Series, names: &[String]) {
    let xf: Vec<f64> = a.x.iter().map(|&v| v as f64).collect();
    for (i, l) in levels.iter_mut().enumerate() {
        let Some(c) = a.counters.get(i) else { continue };
        match knee::crossing(&xf, c, 0.5) {
            Some((lo, hi)) => {
                l.counter_knee = Some([lo as usize, hi as usize]);
                let e = l.entries as f64;
                if lo <= e * 1.25 && hi >= e / 1.25 {
                    l.method = format!("timing, confirmed by counters ({})", names[i]);
                } else {
                    l.method = format!(
                        "timing (counters disagree: {} crossed 0.5/access between {lo} and {hi})",
                        names[i]
                    );
                }
            }
            None => l.method = format!("timing (counter {} never crossed 0.5/access)", names[i]),
        }
    }
}

fn yn(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

impl ProbeReport {
    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "target: {}", self.target.name);
        let _ = writeln!(s, "method: {}", self.method);
        match &self.target.counters_note {
            Some(n) if self.target.counters.is_empty() => {
                let _ = writeln!(s, "counters: none ({n})");
            }
            _ => {
                let _ = writeln!(s, "counters: {}", self.target.counters.join(", "));
            }
        }
        if let Some(h) = &self.hypervisor {
            let what = match (h.present, &h.vendor) {
                (true, Some(v)) => format!("{v} (a guest)"),
                (true, None) => "present, unnamed (a guest)".to_string(),
                (false, _) => "none detected".to_string(),
            };
            let _ = writeln!(s, "hypervisor: {what}; {}", h.evidence.join("; "));
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "level  entries(4K)  sweep bracket   miss cost   caches 2M  method");
        for l in &self.levels {
            let _ = writeln!(
                s,
                "L{:<5} {:>11}  {:>6}..{:<6}  {:>6.2} {:<4} {:>9}  {}",
                l.level,
                l.entries,
                l.sweep_bracket[0],
                l.sweep_bracket[1],
                l.miss_cost,
                l.unit,
                yn(l.caches_2m),
                l.method
            );
        }
        for l in self.levels.iter().filter(|l| !l.ramp.points.is_empty()) {
            let _ = writeln!(s, "{}", super::ramp::describe(l.level, l.entries, &l.ramp));
            if l.refinements.len() > 1 {
                let _ = writeln!(s, "      refinements {:?}, median {}", l.refinements, l.entries);
            }
        }
        if self.levels.is_empty() {
            let _ = writeln!(
                s,
                "(no TLB knee found in {}..{} pages)",
                self.config.min_pages, self.config.max_pages
            );
        }
        let _ = writeln!(s);
        if let Some(b) = self.huge_backing {
            let _ = writeln!(s, "2 MiB pages tested with {}:", b.label());
        }
        for l in &self.levels {
            let mut extra = String::new();
            if let Some(sp) = l.splinters_2m {
                extra = format!(
                    " [{}]",
                    if sp {
                        "splinters: holds the 4 KiB piece"
                    } else {
                        "bypass"
                    }
                );
            }
            if let Some(e) = l.entries_2m {
                extra.push_str(&format!(" [2 MiB entries ≈ {e}]"));
            }
            let _ = writeln!(
                s,
                "  L{} caches 2M = {}: {}{}",
                l.level,
                yn(l.caches_2m),
                l.caches_2m_how,
                extra
            );
        }
        if let Some(note) = self.hypervisor.as_ref().and_then(|h| h.caches_2m_note.as_ref()) {
            if !self.levels.is_empty() {
                let _ = writeln!(s, "  caches 2M under a hypervisor: {note}");
            }
        }
        for r in &self.rejected_knees {
            let _ = writeln!(
                s,
                "rejected rise {}..{} pages (+{:.2}): {}",
                r.between[0], r.between[1], r.rise, r.reason
            );
        }
        for u in &self.untested {
            let _ = writeln!(s, "untested: {u}");
        }
        if !self.reported.is_empty() {
            let _ = writeln!(s, "\nreported by the CPU (CPUID; shown for comparison, not used):");
            for r in &self.reported {
                let _ = writeln!(s, "  reported {:<28} {}", r.what, r.value);
            }
        }
        for ser in &self.series {
            let bad: Vec<&str> = ser.mappings.iter().filter(|m| !m.ok).map(|m| m.how.as_str()).collect();
            let _ = writeln!(
                s,
                "series {:<10} {} mappings, {} verified{}",
                ser.name,
                ser.mappings.len(),
                ser.mappings_ok,
                if bad.is_empty() {
                    String::new()
                } else {
                    format!(" (unverified: {})", bad[0])
                }
            );
        }
        let _ = writeln!(s, "elapsed: {:.1} s (huge: {:?})", self.elapsed_s, self.config.huge);
        s
    }
}
