//! The regression behind the runtime model: Gaussian elimination, least squares, the
//! non-negative fit that drops uninformative terms, t statistics and the serial curve's
//! interpolation. Written here (not a library) for the reason the model's docs give: a
//! few unknowns over a few dozen points.

use super::{NT, TERMS};

/// Solves `A x = b` (n × n, row-major) by Gaussian elimination with partial pivoting;
/// `None` if singular.
pub(super) fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
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
pub(super) type Rows = [([f64; NT], f64)];

/// Least squares of the target on the features in `keep` (plus an intercept if
/// `intercept`); the solution starts with the intercept when there is one.
pub(super) fn ols(rows: &Rows, keep: &[usize], intercept: bool) -> Option<Vec<f64>> {
    let row = |x: &[f64; NT]| {
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
pub(super) fn fit_nonneg(
    rows: &Rows,
    candidates: &[usize],
    intercept: bool,
    dropped: &mut Vec<String>,
) -> Result<(f64, [f64; NT]), String> {
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
            dropped.push(format!("{} (never varied)", TERMS[j]));
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
        let as_target: Vec<([f64; NT], f64)> = rows.iter().map(|r| (r.0, r.0[j])).collect();
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
            dropped.push(format!("{} (determined by the other features)", TERMS[j]));
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
                TERMS[keep[i]],
                sol[i + off],
                t[i]
            ));
            keep.remove(i);
            continue;
        }
        let mut coef = [0.0; NT];
        for (i, &j) in keep.iter().enumerate() {
            coef[j] = sol[i + off];
        }
        return Ok((if intercept { sol[0] } else { 0.0 }, coef));
    }
}

/// t statistics of the kept features' coefficients (coefficient / standard error, from
/// the residual variance and the diagonal of (AᵀA)⁻¹); +∞ for an exact fit.
pub(super) fn t_stats(rows: &Rows, keep: &[usize], intercept: bool, sol: &[f64]) -> Vec<f64> {
    let off = intercept as usize;
    let k = keep.len() + off;
    let row = |x: &[f64; NT]| {
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

/// Piecewise-linear interpolation of `curve` (sorted by x) at `x`: flat below the first
/// point, continued with `slope_past(x_last)` past the last.
pub(super) fn interpolate(curve: &[(f64, f64)], x: f64, slope_past: impl Fn(f64) -> f64) -> f64 {
    let (Some(first), Some(last)) = (curve.first(), curve.last()) else {
        return f64::NAN;
    };
    if x <= first.0 {
        return first.1;
    }
    if x >= last.0 {
        return last.1 + slope_past(last.0) * (x - last.0);
    }
    let i = curve.partition_point(|p| p.0 <= x);
    let (a, b) = (curve[i - 1], curve[i]);
    if b.0 - a.0 <= 0.0 {
        return b.1;
    }
    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
}
