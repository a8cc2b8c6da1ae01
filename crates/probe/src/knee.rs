//! Knee finding on a sweep curve: where does time per access step up?
//!
//! Input: sweep points `x` (pages touched, increasing) and `y` (time per access above the
//! dense baseline, one robust value per point). A *knee* is the onset of a rise that is
//! (a) larger than both an absolute floor and five times the point-to-point noise, and
//! (b) persistent (the next point stays high), after which the curve either flattens into a
//! new plateau or keeps rising to the end. The knee lies between sweep points `lo` and `hi`;
//! the probe then refines it by bisection with [`Knee::is_high`] as the predicate.
//!
//! Contract: pure function of its inputs; never panics on any input (NaN points are
//! ignored by the statistics, too-short curves give no knee).

use serde::Serialize;

/// One detected rise.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knee {
    /// Index of the last point on the plateau before the rise.
    pub lo: usize,
    /// Index of the first point of the rise (`lo + 1`).
    pub hi: usize,
    /// `x[lo]`.
    pub x_lo: f64,
    /// `x[hi]`.
    pub x_hi: f64,
    /// Plateau level before the rise (median of its points).
    pub before: f64,
    /// Level after the rise (median of the next plateau, or the last point if the curve
    /// keeps rising).
    pub after: f64,
    /// Rise threshold used: a point is "high" above `before + jump`.
    pub jump: f64,
}

impl Knee {
    /// The predicate for refinement: is a value above this knee's plateau?
    pub fn is_high(&self, y: f64) -> bool {
        y > self.before + self.jump
    }
}

/// Median of finite values (NaN if none).
/// The dense baseline's level just before knee `k` and after it, or `None` when the
/// baseline does not rise there. "After" is the larger of the baseline right after the
/// knee and a little further on (from 1.3× the knee's footprint): the chase and the
/// baseline reach a data-cache capacity at slightly different footprints (their lines
/// map to sets differently), so a cache step can show in the chase a few points before
/// it shows in the baseline.
pub fn baseline_rise(x: &[f64], baseline: &[f64], k: &Knee) -> (f64, f64) {
    let nb = baseline.len();
    let before = median(&baseline[k.lo.saturating_sub(1)..=k.lo]);
    let near = median(&baseline[k.hi..(k.hi + 2).min(nb)]);
    let j = x
        .iter()
        .position(|&v| v >= 1.3 * k.x_hi)
        .unwrap_or(nb.saturating_sub(1))
        .max(k.hi);
    let later = median(&baseline[j..(j + 2).min(nb)]);
    (before, near.max(later))
}

pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Robust noise of a curve: 1.4826 × median |Δy| / √2 between neighbours.
pub fn noise(y: &[f64]) -> f64 {
    let d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let m = median(&d);
    if m.is_finite() {
        1.4826 * m / std::f64::consts::SQRT_2
    } else {
        0.0
    }
}

/// Find the knees of `y(x)`; `floor` is the smallest rise that counts (in y's unit).
pub fn find_knees(x: &[f64], y: &[f64], floor: f64) -> Vec<Knee> {
    let n = x.len().min(y.len());
    let mut knees = Vec::new();
    if n < 4 {
        return knees;
    }
    let jump = floor.max(5.0 * noise(&y[..n]));
    let mut start = 0; // first index of the current plateau
    let mut j = 1;
    while j + 1 < n {
        let level = median(&y[start..j]);
        let high = |k: usize| y[k].is_finite() && y[k] > level + jump;
        if high(j) && high(j + 1) {
            // A persistent rise begins at j. Walk to where it flattens.
            let mut m = j;
            while m + 1 < n && (y[m + 1] - y[m]) > jump {
                m += 1;
            }
            let flat_end = (m + 3).min(n);
            let after = median(&y[m..flat_end]);
            knees.push(Knee {
                lo: j - 1,
                hi: j,
                x_lo: x[j - 1],
                x_hi: x[j],
                before: level,
                after,
                jump,
            });
            start = m;
            j = m + 1;
        } else {
            j += 1;
        }
    }
    knees
}

/// The largest `x` whose `y` is below `thr`, before the first point at or above it (for
/// counter curves: misses per access crossing e.g. 0.5). `None` if never crossed.
pub fn crossing(x: &[f64], y: &[f64], thr: f64) -> Option<(f64, f64)> {
    let k = y.iter().position(|&v| v >= thr)?;
    if k == 0 {
        return None;
    }
    Some((x[k - 1], x[k]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn sweep() -> Vec<f64> {
        let mut v = Vec::new();
        let mut f = 4.0f64;
        while f <= 8192.0 {
            v.push(f.round());
            f *= 2f64.powf(0.25);
        }
        v
    }

    /// A step curve: level `levels[i]` once x exceeds `edges[i-1]`, plus uniform noise.
    fn curve(x: &[f64], edges: &[f64], levels: &[f64], noise_amp: f64, seed: u64) -> Vec<f64> {
        let mut r = Rng::new(seed);
        x.iter()
            .map(|&xi| {
                let k = edges.iter().filter(|&&e| xi > e).count();
                levels[k] + noise_amp * ((r.next_u64() % 1000) as f64 / 1000.0 - 0.5)
            })
            .collect()
    }

    fn brackets(k: &Knee, e: f64) -> bool {
        k.x_lo <= e && e < k.x_hi
    }

    #[test]
    fn clean_two_level_steps() {
        let x = sweep();
        let y = curve(&x, &[72.0, 3072.0], &[0.0, 2.0, 20.0], 0.0, 1);
        let k = find_knees(&x, &y, 0.1);
        assert_eq!(k.len(), 2, "{k:?}");
        assert!(brackets(&k[0], 72.0) && brackets(&k[1], 3072.0), "{k:?}");
        assert!((k[0].after - 2.0).abs() < 1e-9);
    }

    #[test]
    fn noisy_steps_still_found() {
        let x = sweep();
        for seed in 0..20 {
            let y = curve(&x, &[64.0, 1536.0], &[0.0, 1.5, 15.0], 0.3, seed);
            let k = find_knees(&x, &y, 0.1);
            assert_eq!(k.len(), 2, "seed {seed}: {k:?}");
            assert!(brackets(&k[0], 64.0) && brackets(&k[1], 1536.0), "seed {seed}: {k:?}");
        }
    }

    #[test]
    fn flat_or_noisy_plateau_has_no_knee() {
        let x = sweep();
        assert!(find_knees(&x, &vec![1.0; x.len()], 0.1).is_empty());
        for seed in 0..20 {
            let y = curve(&x, &[], &[3.0], 0.4, seed);
            assert!(find_knees(&x, &y, 0.1).is_empty(), "seed {seed}");
        }
    }

    #[test]
    fn single_spike_is_not_a_knee() {
        let x = sweep();
        let mut y = vec![1.0; x.len()];
        y[20] = 9.0;
        assert!(find_knees(&x, &y, 0.1).is_empty());
    }

    #[test]
    fn close_knees_are_separated() {
        let x = sweep();
        // 32 and 48 entries: about two sweep points apart.
        let y = curve(&x, &[32.0, 48.0], &[0.0, 2.0, 6.0], 0.05, 3);
        let k = find_knees(&x, &y, 0.1);
        assert_eq!(k.len(), 2, "{k:?}");
        assert!(brackets(&k[0], 32.0) && brackets(&k[1], 48.0), "{k:?}");
    }

    #[test]
    fn ramp_after_onset_is_one_knee() {
        // A rise that never flattens (walk cost growing with footprint) is one knee at its onset.
        let x = sweep();
        let y: Vec<f64> = x
            .iter()
            .map(|&v| if v <= 2048.0 { 3.0 } else { 3.0 + (v - 2048.0) / 300.0 })
            .collect();
        let k = find_knees(&x, &y, 0.2);
        assert_eq!(k.len(), 1, "{k:?}");
        assert!(brackets(&k[0], 2048.0), "{k:?}");
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        assert!(find_knees(&[], &[], 0.1).is_empty());
        assert!(find_knees(&[1.0, 2.0], &[0.0, 5.0], 0.1).is_empty());
        let x = sweep();
        let y = vec![f64::NAN; x.len()];
        assert!(find_knees(&x, &y, 0.1).is_empty());
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn counter_crossing() {
        let x = [10.0, 20.0, 40.0, 80.0];
        let y = [0.0, 0.01, 0.9, 1.0];
        assert_eq!(crossing(&x, &y, 0.5), Some((20.0, 40.0)));
        assert_eq!(crossing(&x, &[1.0; 4], 0.5), None);
    }

    #[test]
    fn baseline_rise_looks_a_little_ahead() {
        let x: Vec<f64> = (0..60).map(|i| 16.0 * 2f64.powf(i as f64 / 8.0)).collect();
        // The chase's excess steps up at ~450 pages; the baseline steps up at ~560.
        let excess: Vec<f64> = x.iter().map(|&v| if v > 450.0 { 3.0 } else { 1.0 }).collect();
        let late: Vec<f64> = x.iter().map(|&v| if v > 560.0 { 2.5 } else { 1.1 }).collect();
        let flat: Vec<f64> = x.iter().map(|_| 1.1).collect();
        let far: Vec<f64> = x.iter().map(|&v| if v > 2000.0 { 2.5 } else { 1.1 }).collect();
        let k = find_knees(&x, &excess, 0.25).into_iter().next().expect("knee");
        let (b0, b1) = baseline_rise(&x, &late, &k);
        assert!(
            b1 - b0 > 1.0,
            "a baseline step 1.25x later is the same cache effect: {b0} -> {b1}"
        );
        let (b0, b1) = baseline_rise(&x, &flat, &k);
        assert!(b1 - b0 < 0.01);
        let (b0, b1) = baseline_rise(&x, &far, &k);
        assert!(b1 - b0 < 0.01, "a baseline step 4x later is unrelated: {b0} -> {b1}");
    }
}
