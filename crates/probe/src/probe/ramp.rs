//! What a level's figure means, and the shape of the rise after it.
//!
//! A TLB level's `entries` is where misses **begin** in a random chase (the onset): on
//! this machine the L2's onset is 2,150–2,300 pages though CPUID reports 3,072 entries,
//! and three independent probes agree (issue #25): the replacement and set mapping make
//! some pages miss well before the array is full. One number hides how fast misses then
//! grow, so the probe also reports the **ramp**: at each sweep point from the last one on
//! the plateau on, the share of the level's rise (`after − before` of its knee) that the
//! excess time per access has reached, and the first point where it reaches [`FULL`]
//! (about one miss per access, in time; exact counters, where the target has them, count
//! misses instead of timing them).
//!
//! Also: repeated refinements. Refining a knee bisects a noisy predicate; one bisection on
//! a noisy boundary lands a page or two off (runs here said 71 and 73 for the 72-entry L1).
//! The probe bisects [`REFINEMENTS`] times with independent fresh mappings and takes the
//! median; all of them are reported, so a reader sees whether they agree.

use serde::Serialize;

use crate::knee::Knee;

/// The share of the rise taken as "misses on every access" (assumed: 90 %, above the
/// noise of a timed point and below the rise's level, which the knee takes as a median).
pub const FULL: f64 = 0.9;

/// Independent bisections per knee on a noisy target (their median is kept).
pub const REFINEMENTS: usize = 3;

/// The ramp after a level's onset.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Ramp {
    /// (pages, share of the rise reached) from the last plateau point on, up to and
    /// including the first point at [`FULL`] (or the end of the sweep).
    pub points: Vec<(usize, f64)>,
    /// The first sweep point where the rise reached [`FULL`]; `None`: not within the sweep.
    pub full_pages: Option<usize>,
}

/// The ramp of knee `k` on a series (`x` pages, `excess` time per access).
pub fn ramp(x: &[usize], excess: &[f64], k: &Knee) -> Ramp {
    let rise = k.after - k.before;
    let mut r = Ramp::default();
    if rise.is_nan() || rise <= 0.0 {
        return r;
    }
    for j in k.lo..x.len().min(excess.len()) {
        let share = (excess[j] - k.before) / rise;
        r.points.push((x[j], share));
        if j > k.lo && share >= FULL {
            r.full_pages = Some(x[j]);
            break;
        }
    }
    r
}

/// The median of the refinements (the lower middle one for an even count).
pub fn median_pages(v: &[usize]) -> usize {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get(s.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// One line for the text output.
pub fn describe(level: usize, onset: usize, r: &Ramp) -> String {
    let shape: Vec<String> = r
        .points
        .iter()
        // Rounded first, then + 0.0: a share just below zero (noise) prints "0 %", not "-0 %".
        .map(|(p, s)| format!("{p} {:.0} %", (s * 100.0).clamp(-99.0, 999.0).round() + 0.0))
        .collect();
    let full = match r.full_pages {
        Some(p) => format!(
            "reach {:.0} % of the level's miss cost at {p} pages ({:.2}× the onset)",
            FULL * 100.0,
            p as f64 / onset.max(1) as f64
        ),
        None => format!(
            "do not reach {:.0} % of the level's miss cost within the sweep",
            FULL * 100.0
        ),
    };
    format!(
        "  L{level}: misses begin past {onset} pages (the onset, not necessarily the capacity) and {full}; ramp: {}",
        shape.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knee(lo: usize, before: f64, after: f64) -> Knee {
        Knee {
            lo,
            hi: lo + 1,
            x_lo: 0.0,
            x_hi: 0.0,
            before,
            after,
            jump: 0.0,
        }
    }

    #[test]
    fn the_ramp_runs_from_the_onset_to_the_first_full_point() {
        // Plateau at 1, rise to 11: shares (excess − 1) / 10 = 0, 0.3, 0.7, 0.95, 1.
        let x = [100, 200, 300, 400, 500, 600];
        let e = [1.0, 1.0, 4.0, 8.0, 10.5, 11.0];
        let r = ramp(&x, &e, &knee(1, 1.0, 11.0));
        assert_eq!(r.points.len(), 4, "{r:?}");
        assert_eq!(r.points[0], (200, 0.0));
        assert!((r.points[2].1 - 0.7).abs() < 1e-12);
        assert_eq!(r.full_pages, Some(500));
        // 500 / 200 = 2.5× the onset.
        assert!(
            describe(2, 200, &r).contains("(2.50× the onset)"),
            "{}",
            describe(2, 200, &r)
        );
        // A ramp that never gets there says so.
        let r = ramp(&x[..4], &e[..4], &knee(1, 1.0, 11.0));
        assert_eq!(r.full_pages, None);
        assert!(describe(2, 200, &r).contains("do not reach"));
    }

    /// A share of −0.4 % (noise below the plateau) rounds to zero and prints "0 %".
    /// Checked: without the rounding it printed "-0 %".
    #[test]
    fn a_share_just_below_zero_prints_as_zero() {
        let r = Ramp {
            points: vec![(100, -0.004), (200, 1.0)],
            full_pages: Some(200),
        };
        let d = describe(1, 100, &r);
        assert!(d.contains("ramp: 100 0 %, 200 100 %"), "{d}");
    }

    #[test]
    fn the_median_of_refinements_outvotes_one_stray() {
        assert_eq!(median_pages(&[72, 73, 72]), 72);
        assert_eq!(median_pages(&[71, 72, 73]), 72);
        assert_eq!(median_pages(&[72]), 72);
    }
}
