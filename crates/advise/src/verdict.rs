//! The measured speed-up of interleaved 4 KiB / THP pairs, its spread, and the verdict a
//! person can act on. Pure functions: no timing happens here, so the tests feed synthetic
//! measurements.

use serde::Serialize;

/// The measured speed-up (4 KiB time / THP time) over pairs of interleaved runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Measured {
    /// Median of the per-pair ratios.
    pub speedup: f64,
    /// Smallest per-pair ratio.
    pub low: f64,
    /// Largest per-pair ratio.
    pub high: f64,
    /// Pairs measured.
    pub runs: usize,
    /// Every pair's ratio, in the order run.
    pub ratios: Vec<f64>,
    /// A distribution-free confidence interval of the median ratio (order statistics of
    /// the pairs, [`median_interval`]): low, high, and its confidence (0..1).
    pub median_low: f64,
    /// High end of that interval.
    pub median_high: f64,
    /// Its confidence: at least 0.90 from 5 pairs on (5: 0.94, min–max), less with fewer.
    pub median_confidence: f64,
    /// Peak RSS of the 4 KiB way, bytes: the median over its runs of each run's `VmHWM`
    /// (child.rs `Run::rss_max`).
    pub rss_4k: u64,
    /// Peak RSS of the main THP way, bytes (the same median).
    pub rss_thp: u64,
}

/// Gains smaller than this (as a fraction) are "no measurable gain" even when resolved:
/// 2 % is below what a run-to-run spread of a few per cent on a shared machine can
/// separate from scheduling effects (assumed).
pub const NEGLIGIBLE: f64 = 0.02;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Per-pair ratios `t4k[i] / tthp[i]`, their median and min–max. `None` when there is no
/// pair or a time is not positive.
pub fn measure(t4k: &[f64], tthp: &[f64]) -> Option<Measured> {
    let n = t4k.len().min(tthp.len());
    if n == 0 || t4k.iter().chain(tthp).any(|&t| t.is_nan() || t <= 0.0) {
        return None;
    }
    let ratios: Vec<f64> = (0..n).map(|i| t4k[i] / tthp[i]).collect();
    let mut sorted = ratios.clone();
    let speedup = median(&mut sorted);
    let (median_low, median_high, median_confidence) = median_interval(&sorted);
    Some(Measured {
        speedup,
        low: sorted[0],
        high: sorted[n - 1],
        runs: n,
        ratios,
        median_low,
        median_high,
        median_confidence,
        rss_4k: 0,
        rss_thp: 0,
    })
}

/// The confidence an order-statistic interval of the median must reach.
pub const MEDIAN_CONFIDENCE: f64 = 0.90;

/// A confidence interval of the median of `sorted` (ascending) that assumes nothing about
/// the distribution, only independent rounds: [x₍ⱼ₎, x₍ₙ₋ⱼ₊₁₎] with the largest j whose
/// coverage 1 − 2·P(B ≤ j − 1), B ~ Binomial(n, ½), is still at least
/// [`MEDIAN_CONFIDENCE`] (the sign-test interval; Conover, *Practical Nonparametric
/// Statistics*, § 3.2). Fewer than 5 values reach less: the min–max and its coverage.
/// Returns (low, high, coverage); NaN for no values.
pub fn median_interval(sorted: &[f64]) -> (f64, f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, 0.0);
    }
    // cdf = P(B ≤ j − 1), grown one term at a time; the pmf in logs so that a large n
    // does not underflow 2⁻ⁿ.
    let mut ln_pmf = -(n as f64) * std::f64::consts::LN_2;
    let mut cdf = ln_pmf.exp();
    let mut j = 1;
    while j < n.div_ceil(2) {
        let next = ln_pmf + ((n - (j - 1)) as f64).ln() - (j as f64).ln();
        if 1.0 - 2.0 * (cdf + next.exp()) < MEDIAN_CONFIDENCE {
            break;
        }
        ln_pmf = next;
        cdf += next.exp();
        j += 1;
    }
    (sorted[j - 1], sorted[n - j], 1.0 - 2.0 * cdf)
}

/// Whether the median ratio is resolved: its [`median_interval`] reaches
/// [`MEDIAN_CONFIDENCE`] and its half-width is at most `half_width` of the median.
pub fn resolved(m: &Measured, half_width: f64) -> bool {
    m.median_confidence >= MEDIAN_CONFIDENCE && (m.median_high - m.median_low) / 2.0 <= half_width * m.speedup
}

/// What the prediction contributes to the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct PredictedBrief {
    /// Predicted speed-up.
    pub speedup: f64,
    /// Translation share of the 4 KiB run's time (0..1).
    pub translation_share: f64,
    /// The guest runs over 4 KiB host pages: THP cannot widen the TLB's reach.
    pub guest_4k_backing: bool,
}

fn pct(x: f64) -> f64 {
    (x - 1.0) * 100.0
}

/// The verdict. `huge_pages_seen`: whether the THP runs were seen holding huge pages
/// (`Some(false)`: they got none; `None`: not verified, e.g. the program ended before the
/// first sample).
pub fn verdict(m: &Measured, p: Option<&PredictedBrief>, huge_pages_seen: Option<bool>) -> String {
    let half = (m.high - m.low) / 2.0 * 100.0;
    let gain = pct(m.speedup);
    if huge_pages_seen == Some(false) {
        return format!(
            "the THP runs got no huge pages (AnonHugePages stayed 0), so the {gain:+.1} % difference is noise, not THP: \
             the program's memory does not come from malloc arenas large enough for 2 MiB pages, or THP is \
             unavailable; nothing to enable"
        );
    }
    let why_none = match p {
        Some(p) if p.guest_4k_backing && p.translation_share >= 0.05 => format!(
            ": in this guest the host backs memory with 4 KiB pages, so THP shortens walks but cannot widen the TLB's reach (predicted {:+.1} %)",
            pct(p.speedup)
        ),
        Some(p) if p.translation_share < 0.05 => format!(
            ": address translation is only {:.1} % of the run time (the working set fits the TLB)",
            p.translation_share * 100.0
        ),
        Some(p) => format!(" (predicted {:+.1} %)", pct(p.speedup)),
        None => String::new(),
    };
    // One pair has no spread: its "± 0.0 %" would claim a certainty one run cannot give.
    if m.runs < 2 {
        return format!(
            "one pair only: {gain:+.1} %, with no spread to tell it from noise; run with --runs 3 or more for a verdict{why_none}"
        );
    }
    if m.low > 1.0 && gain >= NEGLIGIBLE * 100.0 {
        return format!("THP gains {gain:.1} % ± {half:.1} %: enable it for this program");
    }
    if m.high < 1.0 && -gain >= NEGLIGIBLE * 100.0 {
        return format!(
            "THP slows this program by {:.1} % ± {half:.1} %: keep 4 KiB pages for it",
            -gain
        );
    }
    // Resolved but small, or a spread narrow enough to rule out a gain of NEGLIGIBLE.
    if (m.low > 1.0 || m.high < 1.0) || (m.high - 1.0) < NEGLIGIBLE {
        return format!(
            "no measurable gain ({gain:+.1} %, pairs from {:+.1} % to {:+.1} %){why_none}",
            pct(m.low),
            pct(m.high)
        );
    }
    // The spread includes no change and reaches gains above NEGLIGIBLE: more pairs. The
    // half-width of a min–max range narrows roughly as 1/sqrt(n) (assumed), so reaching
    // NEGLIGIBLE needs about n·(half/NEGLIGIBLE)² pairs.
    let want = ((m.runs as f64) * (half / (NEGLIGIBLE * 100.0)).powi(2) - 1e-6).ceil() as usize;
    format!(
        "the spread (±{half:.1} %) cannot resolve a gain below {:.1} %: run with --runs {} (on a quieter machine if you can){why_none}",
        (m.high - 1.0) * 100.0,
        want.max(m.runs + 1)
    )
}

/// What THP's page faults do to the outcome, when they matter (issue 50 item 5): the
/// predicted fault seconds of each way `fault_s` (4 KiB, THP; measured fault costs times
/// the faults), the predicted translation saving `translation_s`, the 4 KiB run's time
/// `t4` (s), the THP run's 2 MiB faults `huge_faults`, and the probed p99 of one fault
/// (ns; 4 KiB, 2 MiB). `None` when the fault time THP changes is under 1 % of the run
/// (assumed: advise's timing noise) and under half the translation saving.
pub fn faults_sentence(
    fault_s: (f64, f64),
    translation_s: f64,
    t4: f64,
    huge_faults: u64,
    p99_ns: (Option<f64>, Option<f64>),
) -> Option<String> {
    let d = fault_s.1 - fault_s.0;
    if t4 <= 0.0 || (d.abs() < 0.01 * t4 && d.abs() < 0.5 * translation_s.abs()) {
        return None;
    }
    let us = |ns: f64| ns / 1e3;
    let p99 = match p99_ns {
        (Some(a), Some(b)) => format!("; p99 fault {:.0} µs for 2 MiB, {:.1} µs for 4 KiB", us(b), us(a)),
        (_, Some(b)) => format!("; p99 2 MiB fault {:.0} µs", us(b)),
        _ => String::new(),
    };
    let tr = format!("{:.1} % of run time in translation", 100.0 * translation_s / t4);
    Some(if d > 0.0 {
        let decide = if d > translation_s {
            ": its faults decide the outcome (a short run, or memory touched once; a latency-sensitive start-up pays them first)"
        } else {
            ", less than it saves"
        };
        format!(
            "THP saves {tr} but adds {d:.3} s of page faults ({huge_faults} × 2 MiB, each zeroing 2 MiB){p99}{decide}"
        )
    } else {
        let most = if -d > translation_s {
            ": most of THP's gain is fewer page faults, paid at first touch"
        } else {
            ""
        };
        format!(
            "THP saves {tr} and {:.3} s of page faults ({huge_faults} × 2 MiB instead of 512 × 4 KiB each){p99}{most}",
            -d
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_is_the_sign_test_interval() {
        let v: Vec<f64> = (1..=15).map(f64::from).collect();
        // n = 15: P(B ≤ 3) = (1 + 15 + 105 + 455) / 2^15 = 576/32768, so [x₄, x₁₂] covers
        // 1 − 1152/32768 = 0.9648; [x₅, x₁₁] would cover only 1 − 2·1941/32768 = 0.882.
        let (lo, hi, c) = median_interval(&v);
        assert_eq!((lo, hi), (4.0, 12.0));
        assert!((c - (1.0 - 1152.0 / 32768.0)).abs() < 1e-12, "{c}");
        // n = 5: only the min–max reaches 0.90 (1 − 2/32 = 0.9375).
        let (lo, hi, c) = median_interval(&v[..5]);
        assert_eq!((lo, hi, c), (1.0, 5.0, 0.9375));
        // Many rounds: no underflow, the interval narrows around the middle.
        let w: Vec<f64> = (1..=2000).map(f64::from).collect();
        let (lo, hi, c) = median_interval(&w);
        assert!(c >= MEDIAN_CONFIDENCE && lo > 900.0 && hi < 1100.0, "{lo} {hi} {c}");
        assert!(median_interval(&[]).0.is_nan());
    }

    #[test]
    fn ratios_median_and_spread() {
        // Ratios 10/8 = 1.25, 10/10 = 1, 12/10 = 1.2: median 1.2, range 1..1.25.
        let m = measure(&[10.0, 10.0, 12.0], &[8.0, 10.0, 10.0]).unwrap();
        assert_eq!(m.ratios, vec![1.25, 1.0, 1.2]);
        assert_eq!((m.speedup, m.low, m.high, m.runs), (1.2, 1.0, 1.25, 3));
        // Three pairs: the min–max covers the median with 1 − 2/8 = 0.75 only.
        assert_eq!((m.median_low, m.median_high, m.median_confidence), (1.0, 1.25, 0.75));
        // Even count: mean of the middle two.
        let m = measure(&[2.0, 3.0], &[2.0, 2.0]).unwrap();
        assert_eq!(m.speedup, 1.25);
        assert!(measure(&[], &[]).is_none());
        assert!(measure(&[1.0], &[0.0]).is_none());
    }

    #[test]
    fn the_faults_are_said_when_they_decide() {
        // 4 KiB run 1 s; translation saves 0.02 s (2 %); THP's faults 0.096 s against
        // 0.030 s: +0.066 s, more than the saving: they decide.
        let f = faults_sentence((0.030, 0.096), 0.02, 1.0, 255, (Some(2_400.0), Some(180_000.0))).unwrap();
        assert!(
            f.starts_with("THP saves 2.0 % of run time in translation but adds 0.066 s of page faults (255 × 2 MiB"),
            "{f}"
        );
        assert!(
            f.contains("p99 fault 180 µs for 2 MiB, 2.4 µs for 4 KiB") && f.contains("decide the outcome"),
            "{f}"
        );
        // The same faults against a 0.2 s saving: less than it saves.
        let f = faults_sentence((0.030, 0.096), 0.2, 1.0, 255, (None, None)).unwrap();
        assert!(f.ends_with("less than it saves") && !f.contains("p99"), "{f}");
        // THP saving 0.08 s of faults against 0.01 s of translation: mostly faults.
        let f = faults_sentence((0.09, 0.01), 0.01, 1.0, 40, (None, Some(150_000.0))).unwrap();
        assert!(
            f.contains("and 0.080 s of page faults") && f.contains("most of THP's gain is fewer page faults"),
            "{f}"
        );
        // 5 ms of faults in a 1 s run beside a 0.1 s saving: not said.
        assert_eq!(faults_sentence((0.010, 0.015), 0.1, 1.0, 3, (None, None)), None);
    }

    #[test]
    fn a_clear_gain_says_enable() {
        // Pairs 1.12, 1.14, 1.16: every pair faster under THP, median +14 %, ±2 %.
        let m = measure(&[112.0, 114.0, 116.0], &[100.0, 100.0, 100.0]).unwrap();
        let v = verdict(&m, None, Some(true));
        assert!(v.starts_with("THP gains 14.0 % ± 2.0 %: enable it"), "{v}");
    }

    #[test]
    fn one_pair_gives_no_verdict_only_its_figure() {
        // One pair 4.62 s / 10 s: 0.462, "slows by 53.8 % ± 0.0 %" before; one run cannot
        // say how far it is from noise.
        let m = measure(&[4.62], &[10.0]).unwrap();
        let v = verdict(&m, None, Some(true));
        assert!(v.starts_with("one pair only: -53.8 %") && v.contains("--runs 3"), "{v}");
        assert!(!v.contains("± 0.0"), "{v}");
    }

    #[test]
    fn a_clear_loss_says_keep_4k() {
        let m = measure(&[90.0, 92.0, 91.0], &[100.0, 100.0, 100.0]).unwrap();
        let v = verdict(&m, None, Some(true));
        assert!(v.starts_with("THP slows this program by 9.0 %"), "{v}");
    }

    #[test]
    fn a_narrow_spread_around_one_is_no_gain_with_the_reason() {
        // Ratios 0.995, 1.0, 1.01: the largest gain the pairs allow is 1 % < 2 %.
        let m = measure(&[99.5, 100.0, 101.0], &[100.0, 100.0, 100.0]).unwrap();
        let p = PredictedBrief {
            speedup: 1.001,
            translation_share: 0.01,
            guest_4k_backing: false,
        };
        let v = verdict(&m, Some(&p), Some(true));
        assert!(v.starts_with("no measurable gain"), "{v}");
        assert!(v.contains("the working set fits the TLB"), "{v}");
    }

    #[test]
    fn a_wide_spread_asks_for_more_runs() {
        // Ratios 0.9, 1.0, 1.1: ±10 %; with 3 pairs, 3·(10/2)² = 75 runs to reach ±2 %.
        let m = measure(&[90.0, 100.0, 110.0], &[100.0, 100.0, 100.0]).unwrap();
        let v = verdict(&m, None, Some(true));
        assert!(
            v.starts_with("the spread (±10.0 %) cannot resolve a gain below 10.0 %"),
            "{v}"
        );
        assert!(v.contains("--runs 75"), "{v}");
    }

    #[test]
    fn thp_runs_without_huge_pages_are_said_so() {
        let m = measure(&[112.0, 114.0, 116.0], &[100.0, 100.0, 100.0]).unwrap();
        let v = verdict(&m, None, Some(false));
        assert!(v.starts_with("the THP runs got no huge pages"), "{v}");
    }

    #[test]
    fn a_guest_over_4k_host_pages_is_named() {
        let m = measure(&[100.5, 100.0, 101.0], &[100.0, 100.0, 100.0]).unwrap();
        let p = PredictedBrief {
            speedup: 1.003,
            translation_share: 0.2,
            guest_4k_backing: true,
        };
        let v = verdict(&m, Some(&p), Some(true));
        assert!(v.contains("cannot widen the TLB's reach"), "{v}");
    }
}
