//! The calibrated runtime model (Mosmodel-style, Agbarya et al., MICRO 2020): the time of
//! one memory reference as a linear function of the simulator's translation events,
//!
//! ```text
//! ns/ref = a + b·W + c·M + d·H + e·D
//! ```
//!
//! W walk cycles, M last-level TLB misses, H last-level TLB hits (of references that missed
//! the first level), all per reference from the simulator (`Stats::stlb_misses`,
//! `stlb_hits`, `counters.walk_cycles`); D the data-cache term: the share of references
//! that miss the last-level data cache, which the simulator does not model, so it is
//! written analytically for the calibration benchmarks (uniform random accesses over a
//! footprint F with a cache of C bytes miss with probability max(0, 1 − C/F)).
//!
//! Fitted by least squares on native benchmark runs at several sizes and both page sizes
//! beside the same runs simulated (`calibrate.rs`), in two stages ([`RuntimeModel::fit`]):
//! b, c, d from the differences of each 4 KiB / huge pair (a and e·D cancel there, and
//! with them whatever the data caches do that D does not describe: on a shared host they
//! do a lot), then a and e on the rest. Written here (not a library) because the fit is a
//! few unknowns over a few dozen points: normal equations with partial pivoting are exact
//! enough and keep the model inspectable. Coefficients that come out negative (a
//! translation event cannot save time) or indistinguishable from zero (t < 2) are dropped
//! and the fit is repeated without them, so every kept coefficient is ≥ 0 and supported.
//!
//! For a program, a and e·D are the same under both page sizes (same instructions, same
//! data accesses), so only b, c, d enter the prediction: the translation time saved is
//! b·ΔW + c·ΔM + d·ΔH per reference.

use serde::{Deserialize, Serialize};

/// Feature names, in coefficient order (after the intercept).
pub const FEATURES: [&str; 4] = ["walk_cycles", "llt_misses", "llt_hits", "dcache_misses"];

/// One calibration point: per-reference features and the measured ns per reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// What was run (`latency 64M 4k`, ...).
    pub what: String,
    /// W, M, H, D per reference.
    pub x: [f64; 4],
    /// Measured ns per reference.
    pub y: f64,
}

/// The fitted model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuntimeModel {
    /// a, ns per reference.
    pub intercept: f64,
    /// b, c, d, e: ns per event.
    pub coef: [f64; 4],
    /// Features dropped because their coefficient came out negative or they never varied.
    pub dropped: Vec<String>,
    /// Root-mean-square error of the fit, ns per reference.
    pub rmse_ns: f64,
    /// Mean absolute relative error of the fit (0..).
    pub mean_rel_error: f64,
    /// RMS error of the fitted 4 KiB − huge difference over the pairs, ns per reference.
    #[serde(default)]
    pub delta_rmse_ns: f64,
    /// The points it was fitted on.
    pub points: Vec<Point>,
}

/// Per-reference translation events of one simulated run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Events {
    /// References simulated.
    pub references: u64,
    /// Walk cycles.
    pub walk_cycles: u64,
    /// Last-level TLB misses.
    pub llt_misses: u64,
    /// Last-level TLB hits.
    pub llt_hits: u64,
}

impl Events {
    /// The events of a simulator run.
    pub fn of(s: &mmulab_sim::Stats) -> Events {
        Events {
            references: s.counters.references,
            walk_cycles: s.counters.walk_cycles,
            llt_misses: s.stlb_misses(),
            llt_hits: s.stlb_hits(),
        }
    }
    /// W, M, H per reference, with D given.
    pub fn per_ref(&self, d: f64) -> [f64; 4] {
        let n = self.references.max(1) as f64;
        [
            self.walk_cycles as f64 / n,
            self.llt_misses as f64 / n,
            self.llt_hits as f64 / n,
            d,
        ]
    }
}

/// Solves `A x = b` (n × n, row-major) by Gaussian elimination with partial pivoting;
/// `None` if singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        let scale = a.iter().map(|r| r[col].abs()).fold(0.0, f64::max).max(1e-300);
        if a[piv][col].abs() <= 1e-12 * scale {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        let pivot_row = a[col].clone();
        for r in col + 1..n {
            let f = a[r][col] / pivot_row[col];
            for (x, p) in a[r][col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

/// Rows of a regression: features (all four) and the target.
type Rows = [([f64; 4], f64)];

/// Least squares of the target on the features in `keep` (plus an intercept if
/// `intercept`); the solution starts with the intercept when there is one.
fn ols(rows: &Rows, keep: &[usize], intercept: bool) -> Option<Vec<f64>> {
    let row = |x: &[f64; 4]| {
        let mut r = if intercept { vec![1.0] } else { vec![] };
        r.extend(keep.iter().map(|&j| x[j]));
        r
    };
    let k = keep.len() + intercept as usize;
    let mut ata = vec![vec![0.0; k]; k];
    let mut aty = vec![0.0; k];
    for (x, y) in rows {
        let r = row(x);
        for i in 0..k {
            aty[i] += r[i] * y;
            for j in 0..k {
                ata[i][j] += r[i] * r[j];
            }
        }
    }
    solve(ata, aty)
}

/// Fits `rows` on the features `candidates`, dropping those that never vary, those the
/// others determine almost exactly (checked in `candidates`' order, the last kept
/// longest), and then those whose coefficient comes out negative (the most negative
/// first). Returns the intercept (0 without one), the coefficients and what was dropped.
fn fit_nonneg(
    rows: &Rows,
    candidates: &[usize],
    intercept: bool,
    dropped: &mut Vec<String>,
) -> Result<(f64, [f64; 4]), String> {
    let mean = |j: usize| rows.iter().map(|r| r.0[j]).sum::<f64>() / rows.len() as f64;
    let varies = |j: usize| {
        let m = if intercept { mean(j) } else { 0.0 };
        rows.iter().any(|r| (r.0[j] - m).abs() > 1e-12)
    };
    let mut keep: Vec<usize> = Vec::new();
    for &j in candidates {
        if varies(j) {
            keep.push(j);
        } else {
            dropped.push(format!("{} (never varied)", FEATURES[j]));
        }
    }
    // A feature the others (and the intercept) determine almost exactly carries nothing
    // of its own (e.g. walk cycles a fixed multiple of last-level misses when walk caches
    // cover every upper level).
    for &j in candidates {
        if keep.len() < 2 || !keep.contains(&j) {
            continue;
        }
        let others: Vec<usize> = keep.iter().copied().filter(|&o| o != j).collect();
        let m = if intercept { mean(j) } else { 0.0 };
        let total: f64 = rows.iter().map(|r| (r.0[j] - m).powi(2)).sum();
        let as_target: Vec<([f64; 4], f64)> = rows.iter().map(|r| (r.0, r.0[j])).collect();
        let Some(sol) = ols(&as_target, &others, intercept) else {
            continue;
        };
        let off = intercept as usize;
        let resid: f64 = rows
            .iter()
            .map(|r| {
                let fit = if intercept { sol[0] } else { 0.0 }
                    + others
                        .iter()
                        .enumerate()
                        .map(|(i, &o)| sol[i + off] * r.0[o])
                        .sum::<f64>();
                (r.0[j] - fit).powi(2)
            })
            .sum();
        if resid <= 1e-9 * total {
            dropped.push(format!("{} (determined by the other features)", FEATURES[j]));
            keep.retain(|&o| o != j);
        }
    }
    // Backward elimination: a coefficient that is negative (a translation event cannot
    // save time) or not distinguishable from zero (t = coefficient / standard error
    // under 2, e.g. a feature whose differences are tiny beside the noise, which would
    // otherwise get an absurd coefficient) is dropped, the weakest first, and the rest
    // refitted.
    loop {
        let sol = ols(rows, &keep, intercept)
            .ok_or("the calibration points do not determine the model (collinear features)")?;
        let off = intercept as usize;
        let t = t_stats(rows, &keep, intercept, &sol);
        let worst = (0..keep.len())
            .filter(|&i| sol[i + off] < 0.0 || t[i] < 2.0)
            .min_by(|&i, &j| t[i].total_cmp(&t[j]));
        if let Some(i) = worst {
            let why = if sol[i + off] < 0.0 {
                "< 0"
            } else {
                "not distinguishable from 0"
            };
            dropped.push(format!(
                "{} (fitted {:.4}, t = {:.1}: {why})",
                FEATURES[keep[i]],
                sol[i + off],
                t[i]
            ));
            keep.remove(i);
            continue;
        }
        let mut coef = [0.0; 4];
        for (i, &j) in keep.iter().enumerate() {
            coef[j] = sol[i + off];
        }
        return Ok((if intercept { sol[0] } else { 0.0 }, coef));
    }
}

/// t statistics of the kept features' coefficients (coefficient / standard error, from
/// the residual variance and the diagonal of (AᵀA)⁻¹); +∞ for an exact fit.
fn t_stats(rows: &Rows, keep: &[usize], intercept: bool, sol: &[f64]) -> Vec<f64> {
    let off = intercept as usize;
    let k = keep.len() + off;
    let row = |x: &[f64; 4]| {
        let mut r = if intercept { vec![1.0] } else { vec![] };
        r.extend(keep.iter().map(|&j| x[j]));
        r
    };
    let mut ata = vec![vec![0.0; k]; k];
    let mut ssr = 0.0;
    for (x, y) in rows {
        let r = row(x);
        let fit: f64 = r.iter().zip(sol).map(|(a, b)| a * b).sum();
        ssr += (y - fit).powi(2);
        for i in 0..k {
            for j in 0..k {
                ata[i][j] += r[i] * r[j];
            }
        }
    }
    let dof = rows.len().saturating_sub(k).max(1) as f64;
    let var = ssr / dof;
    (0..keep.len())
        .map(|i| {
            let mut e = vec![0.0; k];
            e[i + off] = 1.0;
            let inv_ii = solve(ata.clone(), e).map_or(f64::INFINITY, |v| v[i + off]);
            let se = (var * inv_ii).sqrt();
            if se > 0.0 {
                sol[i + off] / se
            } else if sol[i + off] < 0.0 {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        })
        .collect()
}

impl RuntimeModel {
    /// Fits the model in two stages. Points come in pairs (4 KiB, then huge pages, of the
    /// same benchmark and size: `points[2i]`, `points[2i + 1]`). (1) b, c, d from the
    /// pairs' differences, without intercept: a pair shares its instructions and its
    /// data accesses, so a and the data-cache term cancel, and what is left is what the
    /// page size changed — the very quantity advise predicts. (2) a and e on what (1)
    /// leaves of each point's time. Coefficients are kept ≥ 0 (`fit_nonneg`).
    pub fn fit(points: Vec<Point>) -> Result<RuntimeModel, String> {
        if points.len() < 6 || points.len() % 2 != 0 {
            return Err(format!(
                "{} calibration points: the model needs pairs (4 KiB, huge), at least 3",
                points.len()
            ));
        }
        let diffs: Vec<([f64; 4], f64)> = points
            .chunks(2)
            .map(|p| {
                let mut x = [0.0; 4];
                for (j, v) in x.iter_mut().enumerate() {
                    *v = p[0].x[j] - p[1].x[j];
                }
                (x, p[0].y - p[1].y)
            })
            .collect();
        let mut dropped = Vec::new();
        let (_, mut coef) = fit_nonneg(&diffs, &[1, 2, 0], false, &mut dropped)?;
        let rest: Vec<([f64; 4], f64)> = points
            .iter()
            .map(|p| (p.x, p.y - (0..3).map(|j| coef[j] * p.x[j]).sum::<f64>()))
            .collect();
        let (intercept, c2) = match fit_nonneg(&rest, &[3], true, &mut dropped) {
            Ok(v) => v,
            Err(_) => (rest.iter().map(|r| r.1).sum::<f64>() / rest.len() as f64, [0.0; 4]),
        };
        coef[3] = c2[3];
        let mut m = RuntimeModel {
            intercept,
            coef,
            dropped,
            rmse_ns: 0.0,
            mean_rel_error: 0.0,
            delta_rmse_ns: 0.0,
            points,
        };
        let n = m.points.len() as f64;
        let (mut se, mut rel) = (0.0, 0.0);
        for p in &m.points {
            let e = m.ns_per_ref(&p.x) - p.y;
            se += e * e;
            rel += (e / p.y).abs();
        }
        m.rmse_ns = (se / n).sqrt();
        m.mean_rel_error = rel / n;
        let dse: f64 = diffs
            .iter()
            .map(|(x, y)| ((0..3).map(|j| m.coef[j] * x[j]).sum::<f64>() - y).powi(2))
            .sum();
        m.delta_rmse_ns = (dse / diffs.len() as f64).sqrt();
        Ok(m)
    }

    /// Predicted ns per reference.
    pub fn ns_per_ref(&self, x: &[f64; 4]) -> f64 {
        self.intercept + (0..4).map(|j| self.coef[j] * x[j]).sum::<f64>()
    }

    /// Translation time of a run's events, ns (b·W + c·M + d·H over the whole run).
    pub fn translation_ns(&self, e: &Events) -> f64 {
        self.coef[0] * e.walk_cycles as f64 + self.coef[1] * e.llt_misses as f64 + self.coef[2] * e.llt_hits as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs (4 KiB, huge) over a grid of W, M, H, D; the huge point's W, M, H shrink by
    /// factors that differ per point so the differences are not collinear; D is shared.
    fn synthetic(a: f64, c: [f64; 4], noise: f64) -> Vec<Point> {
        let mut pts = Vec::new();
        let mut k = 0;
        for w in [5.0, 20.0, 60.0] {
            for m in [0.2, 0.5, 0.9] {
                for d in [0.0, 0.5] {
                    let h = 1.0 - m + 0.05 * (k % 3) as f64;
                    let four = [w, m, h, d];
                    let f = [
                        0.3 + 0.1 * (k % 4) as f64,
                        0.2 + 0.15 * (k % 3) as f64,
                        0.5 + 0.1 * (k % 5) as f64,
                    ];
                    let huge = [w * f[0], m * f[1], h * f[2], d];
                    for (i, x) in [four, huge].into_iter().enumerate() {
                        let sign = if (k + i) % 2 == 0 { 1.0 } else { -1.0 };
                        let y = a + (0..4).map(|j| c[j] * x[j]).sum::<f64>() + sign * noise;
                        pts.push(Point {
                            what: format!("p{k}.{i}"),
                            x,
                            y,
                        });
                    }
                    k += 1;
                }
            }
        }
        pts
    }

    #[test]
    fn the_fit_recovers_known_coefficients() {
        let m = RuntimeModel::fit(synthetic(1.5, [0.3, 4.0, 2.0, 80.0], 0.0)).unwrap();
        assert!((m.intercept - 1.5).abs() < 1e-6, "{m:?}");
        for (got, want) in m.coef.iter().zip([0.3, 4.0, 2.0, 80.0]) {
            assert!((got - want).abs() < 1e-6, "{:?}", m.coef);
        }
        assert!(
            m.rmse_ns < 1e-6 && m.delta_rmse_ns < 1e-6 && m.dropped.is_empty(),
            "{m:?}"
        );
        // With ±0.01 ns of noise the fit stays close and says how far off it is.
        let m = RuntimeModel::fit(synthetic(1.5, [0.3, 4.0, 2.0, 80.0], 0.01)).unwrap();
        assert!((m.coef[0] - 0.3).abs() < 0.01 && (m.coef[1] - 4.0).abs() < 0.5, "{m:?}");
        assert!(m.rmse_ns > 0.001 && m.rmse_ns < 0.05, "{}", m.rmse_ns);
    }

    #[test]
    fn what_the_page_size_does_not_change_cancels_in_the_pairs() {
        // A data-cache cost the D column does not describe (a different per-pair offset,
        // as a noisy machine's caches give): b, c, d are still exact, because each pair
        // shares it.
        let mut pts = synthetic(1.5, [0.3, 4.0, 2.0, 0.0], 0.0);
        for (i, p) in pts.iter_mut().enumerate() {
            p.y += 37.0 * ((i / 2) % 5) as f64;
        }
        let m = RuntimeModel::fit(pts).unwrap();
        for (got, want) in m.coef[..3].iter().zip([0.3, 4.0, 2.0]) {
            assert!((got - want).abs() < 1e-6, "{:?}", m.coef);
        }
        assert!(m.delta_rmse_ns < 1e-6 && m.rmse_ns > 1.0, "{m:?}");
    }

    #[test]
    fn a_negative_coefficient_is_dropped_and_the_rest_refitted() {
        // H truly costs -1 ns (impossible): dropped, named, and every kept one ≥ 0.
        let m = RuntimeModel::fit(synthetic(5.0, [0.3, 4.0, -1.0, 10.0], 0.0)).unwrap();
        assert_eq!(m.coef[2], 0.0);
        assert!(
            m.dropped.iter().any(|d| d.starts_with("llt_hits") && d.contains("< 0")),
            "{:?}",
            m.dropped
        );
        assert!(m.coef.iter().all(|&c| c >= 0.0));
    }

    #[test]
    fn a_collinear_feature_is_dropped_and_the_rest_fitted() {
        // W = 30·M exactly (every miss one fixed-cost walk): M is dropped, and W's
        // coefficient carries both: y = 1 + 0.3·W + 4·M = 1 + (0.3 + 4/30)·W.
        let mut pts = synthetic(1.0, [0.3, 4.0, 2.0, 10.0], 0.0);
        for p in pts.iter_mut() {
            p.x[0] = 30.0 * p.x[1];
            p.y = 1.0 + 0.3 * p.x[0] + 4.0 * p.x[1] + 2.0 * p.x[2] + 10.0 * p.x[3];
        }
        let m = RuntimeModel::fit(pts).unwrap();
        assert!(
            m.dropped.iter().any(|d| d.starts_with("llt_misses (determined")),
            "{:?}",
            m.dropped
        );
        assert!((m.coef[0] - (0.3 + 4.0 / 30.0)).abs() < 1e-6, "{:?}", m.coef);
        assert!(m.rmse_ns < 1e-6);
    }

    #[test]
    fn a_feature_lost_in_the_noise_is_dropped_not_given_an_absurd_cost() {
        // H's differences are tiny (±0.001) and H costs nothing; the times carry ±0.5 ns
        // of noise uncorrelated with it. Unchecked, least squares gives H a coefficient far
        // from 0 (the noise over a 0.001 step); the t
        // test drops it and W keeps its 0.3.
        let mut pts = synthetic(1.0, [0.3, 0.0, 0.0, 0.0], 0.0);
        for (i, p) in pts.iter_mut().enumerate() {
            p.x[1] = 0.0;
            p.x[2] = 0.5 + if (i / 2) % 3 == 0 && i % 2 == 0 { 0.001 } else { 0.0 };
            // Pair q's difference carries noise ±1 ns; over the six pairs with the H step
            // it averages +1/3 (so H's fitted cost is positive, near 333 ns, t ≈ 0.8).
            let q = i / 2;
            let n = if q % 3 == 0 {
                [1.0, -1.0, 1.0, 1.0, -1.0, 1.0][q / 3]
            } else if q % 2 == 0 {
                1.0
            } else {
                -1.0
            };
            p.y = 1.0 + 0.3 * p.x[0] + if i % 2 == 0 { n / 2.0 } else { -n / 2.0 };
        }
        let m = RuntimeModel::fit(pts).unwrap();
        assert_eq!(m.coef[2], 0.0, "{m:?}");
        assert!(m.dropped.iter().any(|d| d.starts_with("llt_hits")), "{:?}", m.dropped);
        assert!((m.coef[0] - 0.3).abs() < 0.05, "{:?}", m.coef);
    }

    #[test]
    fn too_few_or_unpaired_points_are_refused() {
        let pts = synthetic(1.0, [1.0; 4], 0.0);
        assert!(RuntimeModel::fit(pts[..4].to_vec()).is_err());
        assert!(RuntimeModel::fit(pts[..7].to_vec()).is_err());
    }

    #[test]
    fn translation_time_uses_only_the_translation_terms() {
        let m = RuntimeModel {
            intercept: 100.0,
            coef: [0.5, 10.0, 2.0, 1000.0],
            dropped: vec![],
            rmse_ns: 0.0,
            mean_rel_error: 0.0,
            delta_rmse_ns: 0.0,
            points: vec![],
        };
        // 0.5·100 + 10·3 + 2·7 = 94 ns; a and e do not enter.
        let e = Events {
            references: 1000,
            walk_cycles: 100,
            llt_misses: 3,
            llt_hits: 7,
        };
        assert_eq!(m.translation_ns(&e), 94.0);
    }
}
