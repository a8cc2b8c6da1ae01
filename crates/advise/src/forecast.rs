//! What advise says about its own prediction: the interval it prints (from the model's
//! calibration error and the sampling), whether the simulated THP run got the huge pages
//! the measured ones did, and when it predicts no gain or withholds a prediction.
//!
//! Contract: pure functions of numbers the caller measured or simulated; nothing is
//! printed or read here.

use serde::Serialize;

/// The two-sided level of the printed interval.
pub const LEVEL: f64 = 0.90;

/// z for [`LEVEL`] under a normal error (two-sided 90 %).
const Z90: f64 = 1.645;

/// σ of a normal error whose mean absolute value is 1 (√(π/2)): a calibration's mean
/// absolute error in points times this is its σ.
const SIGMA_PER_MEAN_ABS: f64 = 1.2533;

/// The smallest σ of the interval, speed-up points (assumed: the run-to-run noise of a
/// median of pairs on this machine at low load, ±1–2 points, docs/advise.md § Noise; a
/// prediction is not more certain than the measurement it predicts).
pub const MIN_SIGMA_PP: f64 = 1.0;

/// A prediction's interval and where its width comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// Lower end (speed-up).
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Two-sided level (0.9).
    pub level: f64,
    /// σ from the model's calibration error, points.
    pub model_sigma_pp: f64,
    /// σ from the sampling (the spread of the trace's parts), points (0: a whole run).
    pub sampling_sigma_pp: f64,
    /// How it was made, one sentence.
    pub how: String,
}

/// The 90 % interval around `speedup`: σ_model is the larger of the calibration's mean
/// absolute speed-up error scaled to a normal σ and its worst error taken as the 90 %
/// bound (`worst / 1.645`); σ_sampling is the predicted gain times the relative standard
/// error of the simulated saving over the trace's parts ([`relative_se`]); the two add in
/// quadrature, floored at [`MIN_SIGMA_PP`]. Assumed: errors are normal and independent.
pub fn interval(speedup: f64, mean_pp: f64, worst_pp: f64, sampling_rel_se: f64) -> Interval {
    let fin = |x: f64| if x.is_finite() { x.max(0.0) } else { 0.0 };
    let model = (fin(mean_pp) * SIGMA_PER_MEAN_ABS).max(fin(worst_pp) / Z90);
    let gain_pp = (speedup - 1.0).abs() * 100.0;
    let sampling = gain_pp * fin(sampling_rel_se);
    let sigma = (model * model + sampling * sampling).sqrt().max(MIN_SIGMA_PP);
    let half = Z90 * sigma / 100.0;
    Interval {
        low: (speedup - half).max(0.01),
        high: speedup + half,
        level: LEVEL,
        model_sigma_pp: model,
        sampling_sigma_pp: sampling,
        how: format!(
            "90 % interval, ±1.645 σ with σ = {sigma:.1} points: the model's calibration error σ {model:.1} (mean {:.1}, worst {:.1} points over its benchmarks), the sampling's σ {sampling:.1}, at least {MIN_SIGMA_PP:.0} (assumed timing noise)",
            fin(mean_pp),
            fin(worst_pp)
        ),
    }
}

/// The relative standard error of the mean of `parts` (per part of the trace: the saving
/// per reference, 4 KiB walk cycles minus huge-page walk cycles), as a share of the mean:
/// sd / √k / |mean|. 0 for fewer than 2 parts or a mean of 0 (nothing saved: the
/// interval's width then comes from the model).
pub fn relative_se(parts: &[f64]) -> f64 {
    let k = parts.len();
    if k < 2 {
        return 0.0;
    }
    let mean = parts.iter().sum::<f64>() / k as f64;
    if mean.abs() < 1e-12 {
        return 0.0;
    }
    let var = parts.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1) as f64;
    var.sqrt() / (k as f64).sqrt() / mean.abs()
}

/// The huge pages of the simulated THP run beside the measured ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HugeAgreement {
    /// The measured THP runs' largest `AnonHugePages`, bytes (the run with the most).
    pub measured_peak_bytes: u64,
    /// Bytes mapped by 2 MiB pages at the end of the simulated THP run.
    pub simulated_bytes: u64,
    /// simulated / measured (`null` when nothing was measured).
    pub ratio: Option<f64>,
    /// Within 5 % of each other (both 0 counts as agreeing).
    pub agree: bool,
    /// What a disagreement means, when they disagree.
    pub note: Option<String>,
}

/// Compares the simulated THP run's huge pages with the measured peak. `sampled`: the
/// recording holds only windows or a prefix, whose references touch part of the memory
/// (a 2 MiB range nobody touched in a window is not faulted in the simulation), and no
/// touches between its windows (an mmtrace sampled recording has them: its simulated runs
/// fault in what the whole run touched, so a shortfall is not the sampling's).
pub fn huge_agreement(measured_peak: u64, simulated: u64, sampled: bool) -> HugeAgreement {
    let ratio = (measured_peak > 0).then(|| simulated as f64 / measured_peak as f64);
    let agree = match ratio {
        Some(r) => (r - 1.0).abs() <= 0.05,
        None => simulated == 0,
    };
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let note = (!agree).then(|| {
        if measured_peak == 0 {
            format!(
                "the simulated THP run mapped {:.0} MiB in huge pages where the measured ones got none: the prediction's THP run is not the measured one",
                mib(simulated)
            )
        } else if simulated < measured_peak && sampled {
            format!(
                "the simulated THP run mapped {:.0} MiB in huge pages of the {:.0} MiB the measured ones held: the recording's windows touched only part of the memory, so the saving of the rest is missing from the prediction",
                mib(simulated),
                mib(measured_peak)
            )
        } else {
            format!(
                "the simulated THP run mapped {:.0} MiB in huge pages where the measured ones held {:.0} MiB at most: the model's THP policy did not do what this kernel did (see `mmulab check-kernel`), or the measured peak fell between two smaps samples (every 5 ms or more)",
                mib(simulated),
                mib(measured_peak)
            )
        }
    });
    HugeAgreement {
        measured_peak_bytes: measured_peak,
        simulated_bytes: simulated,
        ratio,
        agree,
        note,
    }
}

/// Why the prediction is withheld (no number is invented), if it is: a sampled recording
/// with fewer than `few` windows.
pub fn withheld(mode: &str, windows: Option<u64>, few: u64) -> Option<String> {
    match windows {
        Some(w) if mode == "sampled" && w < few => Some(format!(
            "the recording holds only {w} windows (fewer than {few}): too few to stand for the run; give a shorter period (--sample W/PERIOD) or record with mmtrace"
        )),
        _ => None,
    }
}

/// Why no gain is predicted although the model would give one: the measured THP runs got
/// no huge pages (e.g. a JVM heap, which malloc's madvise does not reach, under THP
/// `madvise`), so nothing of the simulated saving happens in them.
pub fn no_gain(thp_verified: Option<bool>) -> Option<String> {
    (thp_verified == Some(false)).then(|| {
        "the THP runs got no huge pages (AnonHugePages stayed 0): no gain predicted from THP; the program's large memory is not madvised (THP mode madvise) or not anonymous".to_string()
    })
}

/// The extra resident memory THP costs, predicted beside measured (issue 50 item 4).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bloat {
    /// Measured: the THP way's peak RSS minus the 4 KiB way's, bytes (medians over runs).
    pub measured_extra_bytes: i64,
    /// Predicted: the simulated THP run's peak resident minus the simulated 4 KiB run's,
    /// bytes (`null`: withheld, see `why`).
    pub predicted_extra_bytes: Option<i64>,
    /// The simulated THP run's largest resident − touched bytes (huge pages whose 4 KiB
    /// pieces the program never touched), bytes.
    pub simulated_peak_bloat_bytes: i64,
    /// (predicted − measured) / measured 4 KiB peak RSS, per cent (`null` when withheld).
    pub error_pct_of_rss: Option<f64>,
    /// Why the prediction is withheld, or what it rests on.
    pub why: String,
}

/// What the simulated memory rests on: the whole run, or sampled windows with every
/// page's first touch between them (as complete as the whole run for memory: the
/// resident set is built by the faults, and the touches fault every page the program
/// touched), or part of the run only (a prefix, or windows without touches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every reference of the run.
    Whole,
    /// Sampled windows and the first touch of every page between them.
    Touches,
    /// A prefix, or windows alone.
    Part,
}

/// The predicted extra RSS of THP against the measured. `sim_4k` and `sim_thp` are the
/// simulated runs' peak resident bytes, `sim_bloat` the THP run's peak resident − touched;
/// `cov`: what the recording holds (a prefix or windows without touches fault part of the
/// memory, so their resident bytes stand for nothing and the prediction is withheld).
pub fn bloat(rss_4k: u64, rss_thp: u64, sim_4k: u64, sim_thp: u64, sim_bloat: i64, cov: Coverage) -> Bloat {
    let measured = rss_thp as i64 - rss_4k as i64;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let predicted = (cov != Coverage::Part).then(|| sim_thp as i64 - sim_4k as i64);
    let basis = match cov {
        Coverage::Whole => "",
        _ => " (the sampled windows and every page's first touch between them: all the memory the run touched)",
    };
    Bloat {
        measured_extra_bytes: measured,
        predicted_extra_bytes: predicted,
        simulated_peak_bloat_bytes: sim_bloat,
        error_pct_of_rss: predicted
            .filter(|_| rss_4k > 0)
            .map(|p| (p - measured) as f64 / rss_4k as f64 * 100.0),
        why: if cov != Coverage::Part {
            format!(
                "simulated peak resident {:.1} MiB (4 KiB) and {:.1} MiB (THP){basis}; the simulation counts the program's anonymous memory only, the measured RSS its files too, which are the same either way",
                mib(sim_4k),
                mib(sim_thp)
            )
        } else {
            format!(
                "withheld: the recording holds a prefix, or sampled windows without the pages touched between them, whose references touched {:.1} MiB in the simulation; the extra RSS of the rest of the run is unknown (record the whole run, or sample with --recorder mmtrace, which records every page's first touch)",
                mib(sim_4k)
            )
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_larger_model_error_and_the_sampling_in_quadrature() {
        // Mean 4 points → σ 5.01; worst 10 → 6.08: the worst decides. No sampling.
        let i = interval(1.20, 4.0, 10.0, 0.0);
        let sigma = 10.0 / 1.645;
        assert!((i.model_sigma_pp - sigma).abs() < 1e-9);
        assert!((i.high - (1.20 + 1.645 * sigma / 100.0)).abs() < 1e-9);
        assert!((i.low - 1.10).abs() < 1e-9, "{}", i.low);
        // A 20-point gain with a 30 % relative standard error adds σ 6 in quadrature.
        let j = interval(1.20, 4.0, 10.0, 0.3);
        assert!((j.sampling_sigma_pp - 6.0).abs() < 1e-9);
        let s = (sigma * sigma + 36.0_f64).sqrt();
        assert!((j.high - (1.20 + 1.645 * s / 100.0)).abs() < 1e-9);
        // No model error, no sampling: the floor.
        let k = interval(1.0, 0.0, 0.0, 0.0);
        assert!((k.high - 1.01645).abs() < 1e-9 && (k.low - 0.98355).abs() < 1e-9);
        // A NaN error (an uncalibrated model) counts as 0, never a NaN interval.
        assert!(interval(1.1, f64::NAN, f64::NAN, f64::NAN).high.is_finite());
    }

    #[test]
    fn the_sampling_error_is_the_standard_error_of_the_parts_mean() {
        // Parts 1, 2, 3: mean 2, sd 1, k 3: SE 1/√3, relative 0.2887.
        assert!((relative_se(&[1.0, 2.0, 3.0]) - 1.0 / 3f64.sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(relative_se(&[5.0, 5.0, 5.0, 5.0]), 0.0);
        assert_eq!(relative_se(&[2.0]), 0.0);
        assert_eq!(relative_se(&[1.0, -1.0]), 0.0);
    }

    #[test]
    fn huge_pages_agree_within_five_percent() {
        let g = 1u64 << 30;
        assert!(huge_agreement(g, g - g / 25, false).agree);
        let off = huge_agreement(g, g / 2, true);
        assert!(!off.agree && off.note.unwrap().contains("windows"));
        let off = huge_agreement(g, 0, false);
        assert!(!off.agree && off.note.unwrap().contains("check-kernel"));
        let none = huge_agreement(0, 4 << 20, false);
        assert!(!none.agree && none.ratio.is_none() && none.note.unwrap().contains("got none"));
        assert!(huge_agreement(0, 0, false).agree);
    }

    #[test]
    fn few_windows_withhold_and_no_huge_pages_predict_no_gain() {
        assert!(withheld("sampled", Some(3), 10).unwrap().contains("only 3 windows"));
        assert_eq!(withheld("sampled", Some(10), 10), None);
        assert_eq!(withheld("whole", Some(1), 10), None);
        assert_eq!(withheld("sampled", None, 10), None);
        assert!(no_gain(Some(false)).is_some());
        assert_eq!(no_gain(Some(true)), None);
        assert_eq!(no_gain(None), None);
    }

    #[test]
    fn thps_extra_rss_is_predicted_from_a_whole_recording_or_windows_with_touches_only() {
        // 100 MiB at 4 KiB, 110 MiB with THP measured; simulated 90 and 98 MiB: +8
        // predicted against +10 measured, 2 MiB under = 2 % of the 4 KiB RSS.
        let m = 1 << 20;
        let b = bloat(100 * m, 110 * m, 90 * m, 98 * m, 3 * m as i64, Coverage::Whole);
        assert_eq!(b.measured_extra_bytes, 10 * m as i64);
        assert_eq!(b.predicted_extra_bytes, Some(8 * m as i64));
        assert!((b.error_pct_of_rss.unwrap() + 2.0).abs() < 1e-12);
        assert_eq!(b.simulated_peak_bloat_bytes, 3 * m as i64);
        // THP can also cost less than nothing (fewer page-table pages): signed.
        assert_eq!(
            bloat(100 * m, 99 * m, 0, 0, 0, Coverage::Whole).measured_extra_bytes,
            -(m as i64)
        );
        // Windows with the touches between them: predicted as from a whole run, and said.
        let t = bloat(100 * m, 110 * m, 90 * m, 98 * m, 0, Coverage::Touches);
        assert_eq!(t.predicted_extra_bytes, Some(8 * m as i64));
        assert!(t.why.contains("first touch"), "{}", t.why);
        // A prefix, or windows alone: withheld, and the reason says so.
        let w = bloat(100 * m, 110 * m, 9 * m, 11 * m, 0, Coverage::Part);
        assert_eq!(w.predicted_extra_bytes, None);
        assert_eq!(w.error_pct_of_rss, None);
        assert!(w.why.starts_with("withheld"), "{}", w.why);
    }
}
