//! The TLB probe: one algorithm over any [`Target`].
//!
//! 1. **4K series**: for each of `repeats` fresh 4 KiB-backed mappings, time a random
//!    dependent chase over the first N pages (one line per page, rotating in-page offset)
//!    for N swept geometrically up to `max_pages`, with the dense baseline subtracted; the
//!    median over mappings gives the curve.
//! 2. **Knees** of that curve ([`crate::knee`]); a knee where the dense baseline jumps too is
//!    a data-cache effect and is rejected. Each kept knee is refined by bisection between
//!    its sweep points (fresh mappings, medians) and becomes a TLB level.
//! 3. **2M series** (4 KiB stride over 2 MiB pages, backing verified per mapping): at 1.5×
//!    each level's entries, which level services the access tells whether that level holds
//!    the 2 MiB pages ([`classify`]).
//! 4. **2M-stride series** (one slot per 2 MiB page), when a level caches 2 MiB pages, to
//!    exercise the levels above it.
//!
//! Counters, when the target has them, are read along the 4K series and confirm knees.
//! When they are exact per-level miss counts (a simulated core), they replace steps 2 and
//! the knee refinement: each level's capacity is where its misses first appear
//! ([`counted`]).

pub mod classify;
pub mod counted;
pub mod hypervisor;
pub mod machine;
pub mod plot;
pub mod ramp;
pub mod report;
pub mod reported;

use serde::Serialize;

use crate::error::{ProbeError, Result};
use crate::knee::{self, median, Knee};
use crate::target::{Backing, Stride, Target, VerifiedBacking};
pub use report::{LevelResult, ProbeReport, RejectedKnee};

/// Which 2 MiB backing to test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HugeChoice {
    /// THP if usable, else hugetlbfs if a pool exists.
    Auto,
    /// Only THP.
    Thp,
    /// Only hugetlbfs.
    Hugetlb,
    /// Do not test 2 MiB pages.
    None,
}

/// Probe parameters.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeConfig {
    /// Smallest number of pages in the sweep.
    pub min_pages: usize,
    /// Largest number of pages in the sweep.
    pub max_pages: usize,
    /// Sweep points per doubling of the page count.
    pub points_per_octave: u32,
    /// Fresh mappings per sweep (the median is taken over them).
    pub repeats: usize,
    /// Dependent accesses per timed pass.
    pub steps: usize,
    /// Fresh mappings per bisection step when refining a knee.
    pub refine_repeats: usize,
    /// Which 2 MiB backing to test.
    pub huge: HugeChoice,
    /// Largest number of 2 MiB pages in the 2M-stride series.
    pub huge_stride_max: usize,
    /// Run the 2M-stride series even when no level needs it (for the plot).
    pub always_huge_stride: bool,
    /// Seed of every random choice.
    pub seed: u64,
    /// The target is noise-free (a simulated core): refine each knee to one page, and
    /// count as high any point above the plateau by more than 0.1 % of the knee's rise
    /// (just past a set-associative level's capacity only one set misses, a small rise).
    /// Real machines keep this off: their noise needs the coarser rule.
    pub exact: bool,
}

impl ProbeConfig {
    /// The default run (about half a minute on a 2-core VM).
    pub fn standard() -> Self {
        ProbeConfig {
            min_pages: 4,
            max_pages: 8192,
            points_per_octave: 6,
            repeats: 7,
            steps: 200_000,
            refine_repeats: 5,
            huge: HugeChoice::Auto,
            huge_stride_max: 256,
            always_huge_stride: true,
            seed: 0x5EED,
            exact: false,
        }
    }
    /// The run for a simulated (deterministic) target: one mapping per point, short
    /// chases, exact knees.
    pub fn simulated() -> Self {
        ProbeConfig {
            points_per_octave: 6,
            repeats: 1,
            steps: 4000,
            refine_repeats: 1,
            huge_stride_max: 256,
            always_huge_stride: false,
            exact: true,
            ..Self::standard()
        }
    }
    /// The quick run (a few seconds).
    pub fn quick() -> Self {
        ProbeConfig {
            points_per_octave: 4,
            repeats: 3,
            steps: 60_000,
            refine_repeats: 3,
            huge_stride_max: 128,
            always_huge_stride: false,
            ..Self::standard()
        }
    }
    fn validate(&self) -> Result<()> {
        if self.min_pages < 2 || self.max_pages < self.min_pages * 8 {
            return Err(ProbeError::Invalid(format!(
                "sweep {}..{} pages: need min ≥ 2 and max ≥ 8 × min",
                self.min_pages, self.max_pages
            )));
        }
        if self.repeats == 0 || self.steps < 1000 || self.points_per_octave == 0 || self.refine_repeats == 0 {
            return Err(ProbeError::Invalid(
                "repeats, refine repeats and points per octave must be ≥ 1, steps ≥ 1000".into(),
            ));
        }
        Ok(())
    }
}

/// One measured curve.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// `"4K"`, `"2M"` (4 KiB stride over 2 MiB pages) or `"2M-stride"`.
    pub name: String,
    /// Backing requested.
    pub backing: Backing,
    /// Slot stride.
    pub stride: Stride,
    /// Sweep points: pages touched (slots).
    pub x: Vec<usize>,
    /// Median chase time per access.
    pub chase: Vec<f64>,
    /// Median baseline time per access.
    pub baseline: Vec<f64>,
    /// Median of (chase − baseline): translation cost per access.
    pub excess: Vec<f64>,
    /// Spread of the excess over mappings (max − min).
    pub spread: Vec<f64>,
    /// Median counter values per access, one vector per counter of the target.
    pub counters: Vec<Vec<f64>>,
    /// Backing verified on each mapping.
    pub mappings: Vec<VerifiedBacking>,
    /// Mappings whose backing was as requested (only those are used).
    pub mappings_ok: usize,
}

/// Progress sink: a phase description and overall fraction done.
pub type Progress<'a> = &'a mut dyn FnMut(&str, f64);

/// Geometric sweep points from `min` to `max` inclusive.
pub fn sweep_points(min: usize, max: usize, per_octave: u32) -> Vec<usize> {
    let mut v = vec![min];
    let r = 2f64.powf(1.0 / per_octave as f64);
    let mut f = min as f64;
    loop {
        f *= r;
        let n = (f.round() as usize).max(v[v.len() - 1] + 1);
        if n >= max {
            break;
        }
        v.push(n);
    }
    v.push(max);
    v
}

/// One repeat's measurement at one size: (chase cycles per access, baseline cycles per
/// access, counter values).
type Sample = (f64, f64, Vec<f64>);

/// Measure one series over fresh mappings.
#[allow(clippy::too_many_arguments)]
pub fn run_series(
    t: &mut dyn Target,
    name: &str,
    backing: Backing,
    stride: Stride,
    xs: &[usize],
    repeats: usize,
    steps: usize,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<Series> {
    let max = *xs.last().ok_or_else(|| ProbeError::Invalid("empty sweep".into()))?;
    let ncnt = t.info().counters.len();
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); xs.len()];
    let mut mappings = Vec::new();
    let mut rng = crate::rng::Rng::new(seed);
    for r in 0..repeats {
        let vb = t.map(backing, stride, max, seed.wrapping_add(r as u64 * 7919))?;
        let ok = vb.ok;
        mappings.push(vb);
        if ok {
            let mut order: Vec<usize> = (0..xs.len()).collect();
            rng.shuffle(&mut order);
            for (k, &i) in order.iter().enumerate() {
                let m = t.measure(xs[i], steps.max(xs[i] * 4), rng.next_u64())?;
                samples[i].push((m.chase, m.baseline, m.counters));
                progress((r as f64 + (k + 1) as f64 / xs.len() as f64) / repeats as f64);
            }
        } else {
            progress((r + 1) as f64 / repeats as f64);
        }
    }
    let col = |i: usize, f: &dyn Fn(&Sample) -> f64| -> Vec<f64> { samples[i].iter().map(f).collect() };
    let mut s = Series {
        name: name.into(),
        backing,
        stride,
        x: xs.to_vec(),
        chase: vec![],
        baseline: vec![],
        excess: vec![],
        spread: vec![],
        counters: vec![vec![]; ncnt],
        mappings_ok: mappings.iter().filter(|m| m.ok).count(),
        mappings,
    };
    for i in 0..xs.len() {
        let ex = col(i, &|m| m.0 - m.1);
        s.chase.push(median(&col(i, &|m| m.0)));
        s.baseline.push(median(&col(i, &|m| m.1)));
        s.excess.push(median(&ex));
        let (lo, hi) = ex
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        s.spread.push(if ex.is_empty() { f64::NAN } else { hi - lo });
        for c in 0..ncnt {
            s.counters[c].push(median(&col(i, &|m| m.2.get(c).copied().unwrap_or(f64::NAN))));
        }
    }
    Ok(s)
}

/// Median excess at `pages` over `repeats` fresh 4K mappings.
fn point(t: &mut dyn Target, pages: usize, cfg: &ProbeConfig, seed: u64) -> Result<f64> {
    let mut v = Vec::new();
    for r in 0..cfg.refine_repeats {
        let s = seed.wrapping_add(r as u64 * 104_729);
        t.map(Backing::Base, Stride::Page4K, pages, s)?;
        let m = t.measure(pages, cfg.steps.max(pages * 4), s ^ 0xABCD)?;
        v.push(m.chase - m.baseline);
    }
    Ok(median(&v))
}

/// Bisect between a knee's sweep points: the largest page count still on the plateau.
fn refine(t: &mut dyn Target, k: &Knee, cfg: &ProbeConfig, seed: u64) -> Result<usize> {
    let (mut lo, mut hi) = (k.x_lo as usize, k.x_hi as usize);
    let mut i = 0u64;
    let tolerance = if cfg.exact { 1 } else { (lo / 64).max(1) };
    while hi - lo > tolerance {
        let mid = lo + (hi - lo) / 2;
        if k.is_high(point(t, mid, cfg, seed.wrapping_add(i))?) {
            hi = mid;
        } else {
            lo = mid;
        }
        i += 1;
    }
    Ok(lo)
}

/// Run the whole probe on a target.
pub fn run(t: &mut dyn Target, cfg: &ProbeConfig, progress: Progress) -> Result<ProbeReport> {
    cfg.validate()?;
    let started = std::time::Instant::now();
    let info = t.info();
    let xs = sweep_points(cfg.min_pages, cfg.max_pages, cfg.points_per_octave);
    // Phase weights for the progress fraction.
    let (w_a, w_r, w_b, w_c) = (0.45, 0.15, 0.25, 0.15);

    let a = run_series(
        t,
        "4K",
        Backing::Base,
        Stride::Page4K,
        &xs,
        cfg.repeats,
        cfg.steps,
        cfg.seed,
        &mut |f| progress("4 KiB sweep", w_a * f),
    )?;
    if a.mappings_ok == 0 {
        return Err(ProbeError::Unavailable(
            "no 4 KiB mapping verified as 4 KiB-backed (smaps)".into(),
        ));
    }
    let xf: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
    // Smallest rise that counts: 25 % of the fastest (L1-cache) access time.
    let floor = 0.25
        * a.baseline
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::INFINITY, f64::min);
    let mut knees = Vec::new();
    let mut rejected = Vec::new();
    for k in knee::find_knees(&xf, &a.excess, floor) {
        // A rise the baseline shares (at least half as high, measured across the same
        // points) is the data cache, not a TLB.
        let (b_before, b_after) = knee::baseline_rise(&xf, &a.baseline, &k);
        if b_after - b_before >= 0.5 * (k.after - k.before) {
            rejected.push(RejectedKnee {
                between: [k.x_lo as usize, k.x_hi as usize],
                rise: k.after - k.before,
                reason: format!(
                    "the dense baseline also rose here ({b_before:.2} → {b_after:.2} {}): a data-cache effect, not a TLB",
                    info.unit.label()
                ),
            });
        } else {
            knees.push(k);
        }
    }

    // A small rise shortly before a much larger one is the onset of the larger one's ramp
    // (partial misses of a non-LRU or set-associative level), not a level of its own.
    let mut i = 0;
    while i + 1 < knees.len() {
        let (r0, r1) = (
            knees[i].after - knees[i].before,
            knees[i + 1].after - knees[i + 1].before,
        );
        if knees[i + 1].x_lo <= 2.0 * knees[i].x_hi && r0 < 0.15 * r1 {
            let k = knees.remove(i);
            rejected.push(RejectedKnee {
                between: [k.x_lo as usize, k.x_hi as usize],
                rise: r0,
                reason: format!(
                    "onset of the larger rise at {}..{} pages (under 15 % of its height)",
                    knees[i].x_lo, knees[i].x_hi
                ),
            });
        } else {
            i += 1;
        }
    }
    // Relative rise: extra time over the time per access before the rise. A walk-cost ramp
    // (page-table data leaving the caches) can pause and resume; its later parts are not
    // TLB levels. Keep a knee only if its relative rise is at least 10 % of the largest and,
    // when it lies within 2× of the previous kept knee, larger than that knee's; at most 3.
    let bmin = a
        .baseline
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    let rel = |k: &Knee| (k.after - k.before) / (k.before.max(0.0) + bmin);
    let top = knees.iter().map(rel).fold(0.0, f64::max);
    let mut kept: Vec<Knee> = Vec::new();
    for k in knees {
        let why = if rel(&k) < 0.1 * top {
            Some("relative rise under 10 % of the largest: a cache or walk-cost effect".to_string())
        } else if kept.last().is_some_and(|p| k.x_lo < 2.0 * p.x_hi && rel(&k) < rel(p)) {
            Some("continues the previous rise (within 2× of it and smaller)".to_string())
        } else if kept.len() == 3 {
            Some("beyond three data-TLB levels".to_string())
        } else {
            None
        };
        match why {
            Some(reason) => rejected.push(RejectedKnee {
                between: [k.x_lo as usize, k.x_hi as usize],
                rise: k.after - k.before,
                reason,
            }),
            None => kept.push(k),
        }
    }
    let knees = kept;
    let mut levels = Vec::new();
    let exact_counters = t.exact_counters() && !info.counters.is_empty();
    let nk = knees.len().max(1);
    if exact_counters {
        // Exact per-level miss counts decide the levels; the timing knees are not used
        // (and their rejections would describe rules that were not applied).
        rejected.clear();
        levels = counted::levels(t, &a, cfg, &info.counters, info.unit, &mut |i| {
            progress(
                &format!("counting level {}", i + 1),
                w_a + w_r * i as f64 / info.counters.len() as f64,
            )
        })?;
    }
    for (i, k) in knees.iter().enumerate().filter(|_| !exact_counters) {
        progress(&format!("refining knee {}", i + 1), w_a + w_r * i as f64 / nk as f64);
        // Refine on a threshold a quarter of the way up to the first high point, so a
        // partial miss rate just below capacity (other pages share the TLB) is not the knee.
        let mut kr = k.clone();
        if cfg.exact {
            // Noise-free target: the plateau is its median (points just past the previous
            // level's capacity sit below it, points just short of this level's knee where
            // one set already overflows sit above it); any rise above 0.1 % of the knee's
            // height is a miss; bisect from the last plateau point that is not high.
            let start = if i == 0 { 0 } else { knees[i - 1].hi };
            let plateau = &a.excess[start..=k.lo.max(start)];
            kr.before = median(plateau);
            kr.jump = 1e-3 * (a.excess[k.hi] - kr.before).abs().max(1e-9);
            let lo = (start..=k.lo.max(start))
                .rev()
                .find(|&j| !kr.is_high(a.excess[j]))
                .unwrap_or(start);
            kr.x_lo = a.x[lo] as f64;
        } else {
            kr.jump = k.jump.max(0.25 * (a.excess[k.hi] - k.before));
        }
        // A noisy target: several independent bisections, their median kept (ramp.rs).
        let n = if cfg.exact { 1 } else { ramp::REFINEMENTS };
        let mut refinements = Vec::with_capacity(n);
        for r in 0..n {
            refinements.push(refine(
                t,
                &kr,
                cfg,
                cfg.seed ^ (0x1000 + i as u64) ^ ((r as u64) << 32),
            )?);
        }
        let entries = ramp::median_pages(&refinements);
        let mut level = LevelResult::new(i + 1, entries, k, &info.unit);
        level.refinements = refinements;
        level.ramp = ramp::ramp(&a.x, &a.excess, k);
        levels.push(level);
    }
    if !exact_counters {
        report::confirm_with_counters(&mut levels, &a, &info.counters);
    }

    // 2 MiB backing.
    let mut untested = Vec::new();
    let huge = match cfg.huge {
        HugeChoice::None => {
            untested.push("2 MiB pages: not requested (--huge none)".to_string());
            None
        }
        HugeChoice::Thp => t
            .check(Backing::Thp)
            .map(|_| Backing::Thp)
            .map_err(|e| untested.push(format!("2 MiB THP: {e}")))
            .ok(),
        HugeChoice::Hugetlb => t
            .check(Backing::Hugetlb)
            .map(|_| Backing::Hugetlb)
            .map_err(|e| untested.push(format!("2 MiB hugetlbfs: {e}")))
            .ok(),
        HugeChoice::Auto => {
            let thp = t.check(Backing::Thp);
            let htlb = t.check(Backing::Hugetlb);
            if let Err(e) = &htlb {
                untested.push(format!("2 MiB hugetlbfs: {e}"));
            }
            match (thp, htlb) {
                (Ok(()), _) => Some(Backing::Thp),
                (Err(e), Ok(())) => {
                    untested.push(format!("2 MiB THP: {e}"));
                    Some(Backing::Hugetlb)
                }
                (Err(e), Err(_)) => {
                    untested.push(format!("2 MiB THP: {e}"));
                    None
                }
            }
        }
    };
    let mut series = vec![a];
    if let Some(hb) = huge {
        let mut b = run_series(
            t,
            "2M",
            hb,
            Stride::Page4K,
            &xs,
            cfg.repeats,
            cfg.steps,
            cfg.seed ^ 0x2222,
            &mut |f| progress("2 MiB sweep (4 KiB stride)", w_a + w_r + w_b * f),
        )?;
        if b.mappings_ok == 0 {
            let why = b.mappings.first().map(|m| m.how.clone()).unwrap_or_default();
            untested.push(format!(
                "2 MiB {}: no mapping verified as 2 MiB-backed ({why})",
                hb.label()
            ));
            b.name = "2M (unverified, unused)".into();
            series.push(b);
        } else {
            classify::from_4k_stride(&mut levels, &series[0], &b);
            series.push(b);
            let need_c =
                levels.iter().any(|l| l.caches_2m == Some(true)) && levels.iter().any(|l| l.caches_2m.is_none());
            if need_c || cfg.always_huge_stride {
                let hx = sweep_points(2, cfg.huge_stride_max.max(16), cfg.points_per_octave);
                let c = run_series(
                    t,
                    "2M-stride",
                    hb,
                    Stride::Page2M,
                    &hx,
                    cfg.repeats.min(3),
                    cfg.steps,
                    cfg.seed ^ 0x3333,
                    &mut |f| progress("2 MiB sweep (2 MiB stride)", w_a + w_r + w_b + w_c * f),
                )?;
                if c.mappings_ok > 0 {
                    classify::from_2m_stride(&mut levels, &series[0], &c, floor);
                }
                series.push(c);
            }
        }
    } else {
        for l in levels.iter_mut() {
            l.caches_2m_how = "2 MiB pages not tested: see `untested`".into();
        }
    }
    progress("done", 1.0);
    let method = if exact_counters {
        "counters"
    } else if levels.iter().any(|l| l.method.contains("counters")) {
        "timing+counters"
    } else {
        "timing"
    };
    let simulated = info.unit == crate::target::TimeUnit::Cycles;
    Ok(ProbeReport {
        target: info,
        method: method.into(),
        levels,
        rejected_knees: rejected,
        huge_backing: huge,
        untested,
        // What the host CPU says about itself is meaningless for a simulated core.
        reported: if simulated { Vec::new() } else { reported::reported() },
        hypervisor: (!simulated).then(hypervisor::detect),
        series,
        config: cfg.clone(),
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sweep_points_are_increasing_and_bounded() {
        let v = sweep_points(4, 8192, 4);
        assert_eq!((v[0], *v.last().unwrap()), (4, 8192));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert!(v.len() > 40 && v.len() < 50, "{}", v.len());
    }
}
