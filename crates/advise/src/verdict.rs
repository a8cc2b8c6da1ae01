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
    Some(Measured {
        speedup,
        low: sorted[0],
        high: sorted[n - 1],
        runs: n,
        ratios,
        rss_4k: 0,
        rss_thp: 0,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_median_and_spread() {
        // Ratios 10/8 = 1.25, 10/10 = 1, 12/10 = 1.2: median 1.2, range 1..1.25.
        let m = measure(&[10.0, 10.0, 12.0], &[8.0, 10.0, 10.0]).unwrap();
        assert_eq!(m.ratios, vec![1.25, 1.0, 1.2]);
        assert_eq!((m.speedup, m.low, m.high, m.runs), (1.2, 1.0, 1.25, 3));
        // Even count: mean of the middle two.
        let m = measure(&[2.0, 3.0], &[2.0, 2.0]).unwrap();
        assert_eq!(m.speedup, 1.25);
        assert!(measure(&[], &[]).is_none());
        assert!(measure(&[1.0], &[0.0]).is_none());
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
