//! Does a TLB level hold 2 MiB pages? Decided from where the 2 MiB curves sit relative to
//! the 4 KiB curve, pointwise, so data-cache effects (which both curves share) cancel.
//!
//! At x = the first sweep point ≥ 1.5 × entries of level i, the 4 KiB chase misses level i.
//! The cost the access would have if serviced by level s is the 4 KiB excess at x minus
//! the miss steps of levels s..=i (each step measured across its own knee). The 2 MiB
//! curve's value at x is assigned to the nearest of those costs:
//! - serviced by a level above i → level i does not hold the 2 MiB pages;
//! - serviced by level i → it does (it held what 4 KiB entries could not);
//! - serviced by a lower level → that level holds them and level i was never exercised
//!   (the 2 MiB-stride series then decides).

use super::{LevelResult, Series};
use crate::knee;

fn idx_at_least(x: &[usize], v: f64) -> Option<usize> {
    x.iter().position(|&p| p as f64 >= v)
}
fn idx_at_most(x: &[usize], v: usize) -> Option<usize> {
    x.iter().rposition(|&p| p <= v)
}

/// Per level: (index of the last point ≤ entries, index of the first point ≥ 1.5×entries, step).
fn steps(levels: &[LevelResult], a: &Series) -> Vec<Option<(usize, usize, f64)>> {
    levels
        .iter()
        .map(|l| {
            let lo = idx_at_most(&a.x, l.entries)?;
            let hi = idx_at_least(&a.x, 1.5 * l.entries as f64)?;
            Some((lo, hi, a.excess[hi] - a.excess[lo]))
        })
        .collect()
}

/// Decide `caches_2m` (and whether a non-caching level splinters) from the 4 KiB-stride
/// chase over 2 MiB pages (`b`), against the 4 KiB series `a` (same sweep points): across
/// level i's knee (last point ≤ entries to first point ≥ 1.5 × entries) the 4 KiB curve
/// rises by the miss step; if the 2 MiB curve rises by at least 35 % of it, level i missed
/// the 2 MiB pages as it missed 4 KiB ones (`false`; a cheaper 2 MiB walk makes the rise
/// smaller, hence the low bar); if it stays flat, level i held them (`true`) — unless a
/// lower level already held them, in which case level i was never exercised (`null`). A
/// curve that is flat because it already sits a miss step above the 4 KiB curve below
/// capacity is a level that bypasses the huge pages (`false`, not splintering).
pub fn from_4k_stride(levels: &mut [LevelResult], a: &Series, b: &Series) {
    let st = steps(levels, a);
    let noise = knee::noise(&a.excess).max(1e-9);
    let mut held_below: Option<usize> = None;
    for i in 0..levels.len() {
        let Some((lo, hi, step)) = st[i] else {
            levels[i].caches_2m_how = "sweep ends before 1.5 × entries: 2 MiB behaviour not tested".into();
            continue;
        };
        if step < 3.0 * noise || !b.excess[hi].is_finite() || !b.excess[lo].is_finite() {
            levels[i].caches_2m_how = format!("miss step {step:.2} too small against noise {noise:.2}");
            continue;
        }
        let rise_b = b.excess[hi] - b.excess[lo];
        let ratio = rise_b / step;
        let (xl, xh) = (a.x[lo], a.x[hi]);
        let l = &mut levels[i];
        if ratio >= 0.35 {
            l.caches_2m = Some(false);
            l.caches_2m_how = format!(
                "from {xl} to {xh} pages the 2 MiB curve rose {rise_b:.2} against {step:.2} for 4 KiB ({:.0} %): missed like 4 KiB pages",
                ratio * 100.0
            );
            // Splinter (holds the 4 KiB piece touched) or bypass: below capacity, did it hit?
            let (bv, av) = (b.excess[lo], a.excess[lo]);
            l.splinters_2m = Some((bv - av).abs() < (bv - (av + step)).abs());
        } else if (b.excess[lo] - (a.excess[lo] + step)).abs() < (b.excess[lo] - a.excess[lo]).abs() {
            // Flat, but flat at the miss level: the level missed the huge pages even below
            // its capacity — it neither holds them nor splinters them (bypass).
            let l = &mut levels[i];
            l.caches_2m = Some(false);
            l.splinters_2m = Some(false);
            l.caches_2m_how = format!(
                "at {xl} pages (within capacity) the 2 MiB curve already sat a miss step ({step:.2}) above the 4 KiB curve: the level does not cache them (bypass)"
            );
        } else if let Some(j) = held_below {
            l.caches_2m_how = format!(
                "level {} already holds the 2 MiB pages; level {} not exercised by this sweep",
                j + 1,
                i + 1
            );
        } else {
            l.caches_2m = Some(true);
            l.caches_2m_how = format!(
                "from {xl} to {xh} pages the 2 MiB curve rose {rise_b:.2} against {step:.2} for 4 KiB ({:.0} %): held the 2 MiB pages",
                ratio * 100.0
            );
            held_below = Some(i);
        }
    }
}

/// Use the 2 MiB-stride series (`c`, x = 2 MiB pages) for levels above the first one that
/// holds 2 MiB pages: after that level's 2 MiB knee, the rise tells which level services.
pub fn from_2m_stride(levels: &mut [LevelResult], a: &Series, c: &Series, floor: f64) {
    let Some(j) = levels.iter().position(|l| l.caches_2m == Some(true)) else {
        return;
    };
    let xf: Vec<f64> = c.x.iter().map(|&v| v as f64).collect();
    let ks = knee::find_knees(&xf, &c.excess, floor);
    let Some(k) = ks.first() else {
        let max = c.x.last().copied().unwrap_or(0);
        for l in levels.iter_mut().skip(j + 1).filter(|l| l.caches_2m.is_none()) {
            l.caches_2m_how = format!(
                "level {} held all {max} 2 MiB pages of the 2M-stride sweep: level {} not exercised",
                j + 1,
                l.level
            );
        }
        return;
    };
    levels[j].entries_2m = Some(k.x_lo as usize);
    let Some(p) = idx_at_least(&c.x, 1.5 * k.x_hi) else {
        return;
    };
    let rise = c.excess[p] - c.excess[k.lo];
    let st = steps(levels, a);
    // Rise if serviced by level s (> j): sum of the 4K miss steps of levels j..s-1.
    let mut best = (f64::INFINITY, levels.len());
    let mut acc = 0.0;
    for s in (j + 1)..=levels.len() {
        acc += st[s - 1].map(|t| t.2).unwrap_or(0.0);
        let d = (rise - acc).abs();
        if d < best.0 {
            best = (d, s);
        }
    }
    let s = best.1; // 0-based index of the servicing level (levels.len() = walk)
    let nlev = levels.len();
    for (i, l) in levels.iter_mut().enumerate().skip(j + 1) {
        if l.caches_2m.is_some() {
            continue;
        }
        let verdict = i == s;
        if i <= s {
            l.caches_2m = Some(verdict);
            l.caches_2m_how =
                format!(
                "2M-stride sweep: past level {}'s {} 2 MiB entries the cost rose {rise:.2}; nearest to service by {}",
                j + 1,
                k.x_lo,
                if s == nlev { "a page walk".to_string() } else { format!("level {}", s + 1) }
            );
        }
    }
}
