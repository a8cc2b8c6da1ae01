//! Where a panel's legend goes: the corner of the plotting area whose box, the size the
//! legend will take, covers the least of what the panel draws. Upper left wins ties, as
//! it was always placed before (so figures whose upper left is free stay as they were).

use crate::{Panel, Scale, Style};

/// A corner of the plotting area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Corner {
    UpperLeft,
    UpperRight,
    LowerRight,
    LowerLeft,
}

/// The share (0 to 1) of the way from `lo` to `hi` that `v` lies, on the axis's scale.
fn frac(scale: Scale, lo: f64, hi: f64, v: f64) -> f64 {
    match scale {
        Scale::Linear => (v - lo) / (hi - lo),
        Scale::Log => (v / lo).ln() / (hi / lo).ln(),
    }
}

/// The corner for `p`'s legend, the data ranges being `xs` and `ys` and the plotting area
/// `plot_px` pixels wide and high. The legend box is estimated from its entries: 20 px a
/// line and 8 px a character plus 40 px for the swatch (the renderer's 15 px font).
pub(crate) fn corner(p: &Panel, xs: (f64, f64), ys: (f64, f64), plot_px: (u32, u32)) -> Corner {
    let named: Vec<&str> = p
        .series
        .iter()
        .filter(|s| !s.name.is_empty())
        .map(|s| s.name.as_str())
        .collect();
    let chars = named.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let w = ((40 + 8 * chars) as f64 / plot_px.0.max(1) as f64).min(1.0) + 0.02;
    let h = ((10 + 20 * named.len()) as f64 / plot_px.1.max(1) as f64).min(1.0) + 0.02;
    let fx = |x: f64| frac(p.x.scale, xs.0, xs.1, x);
    let fy = |y: f64| frac(p.y.scale, ys.0, ys.1, y);
    // What is drawn, as samples in the unit square.
    let mut samples: Vec<(f64, f64)> = Vec::new();
    let nbars = p.series.iter().filter(|s| s.style == Style::Bars).count().max(1) as f64;
    let mut bar = 0.0;
    for s in &p.series {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|q| q.0.is_finite() && q.1.is_finite())
            .filter(|q| (p.x.scale == Scale::Linear || q.0 > 0.0) && (p.y.scale == Scale::Linear || q.1 > 0.0))
            .map(|&(x, y)| (fx(x), fy(y)))
            .collect();
        match s.style {
            Style::Markers => samples.extend(&pts),
            Style::Line | Style::LineWithMarkers | Style::Dashed => {
                samples.extend(pts.first());
                for seg in pts.windows(2) {
                    let (a, b) = (seg[0], seg[1]);
                    let n = (((b.0 - a.0).hypot(b.1 - a.1)) / 0.01).ceil().clamp(1.0, 1000.0) as usize;
                    samples.extend((1..=n).map(|k| {
                        let t = k as f64 / n as f64;
                        (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t)
                    }));
                }
            }
            Style::Bars => {
                // Bars stand side by side around each x (the renderer's layout), from the
                // base (0, or the bottom) up to y.
                let width = 0.8 / nbars;
                let x0 = -0.4 + bar * width;
                bar += 1.0;
                let base = fy(ys.0.max(0.0).min(ys.1));
                for q in &s.points {
                    for dx in [0.0, 0.5, 1.0] {
                        let x = fx(q.0 + x0 + width * dx);
                        let (lo, hi) = (base.min(fy(q.1)), base.max(fy(q.1)));
                        samples.extend((0..=20).map(|k| (x, lo + (hi - lo) * k as f64 / 20.0)));
                    }
                }
            }
        }
    }
    let covered = |c: Corner| {
        // The box's x and y spans in the unit square.
        let (xr, yr) = match c {
            Corner::UpperLeft => ((0.0, w), (1.0 - h, 1.0)),
            Corner::UpperRight => ((1.0 - w, 1.0), (1.0 - h, 1.0)),
            Corner::LowerRight => ((1.0 - w, 1.0), (0.0, h)),
            Corner::LowerLeft => ((0.0, w), (0.0, h)),
        };
        let inside = |v: f64, (lo, hi): (f64, f64)| v >= lo && v <= hi;
        samples.iter().filter(|&&(x, y)| inside(x, xr) && inside(y, yr)).count()
    };
    let mut best = Corner::UpperLeft;
    let mut least = covered(best);
    for c in [Corner::UpperRight, Corner::LowerRight, Corner::LowerLeft] {
        let n = covered(c);
        if n < least {
            (best, least) = (c, n);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Axis, Series};

    fn panel(series: Vec<Series>) -> Panel {
        let mut p = Panel::new("", Axis::linear("x"), Axis::linear("y"));
        p.series = series;
        p
    }

    #[test]
    fn a_falling_curve_leaves_the_upper_right_free() {
        // A miss-ratio curve: high at the left, low at the right. The upper left is
        // covered; the upper right is empty.
        let pts = (0..=100).map(|i| (i as f64, 1.0 - i as f64 / 100.0)).collect();
        let p = panel(vec![Series::new(
            "fully associative",
            Style::Line,
            crate::Color(0, 0, 0),
            pts,
        )]);
        assert_eq!(corner(&p, (0.0, 100.0), (0.0, 1.0), (600, 400)), Corner::UpperRight);
    }

    #[test]
    fn a_rising_curve_keeps_the_upper_left() {
        let pts = (0..=100).map(|i| (i as f64, i as f64 / 100.0)).collect();
        let p = panel(vec![Series::new("rising", Style::Line, crate::Color(0, 0, 0), pts)]);
        assert_eq!(corner(&p, (0.0, 100.0), (0.0, 1.0), (600, 400)), Corner::UpperLeft);
    }

    #[test]
    fn tall_bars_everywhere_but_low_at_the_right_put_it_there() {
        // Four categories: the first three bars reach the top, the last is short; the
        // lower corners are under bars, so the upper right (over the short bar) wins.
        let pts = vec![(0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (3.0, 0.1)];
        let p = panel(vec![Series::new("build", Style::Bars, crate::Color(0, 0, 0), pts)]);
        assert_eq!(corner(&p, (-0.5, 3.5), (0.0, 1.1), (600, 400)), Corner::UpperRight);
    }

    #[test]
    fn a_log_axis_is_measured_on_its_own_scale() {
        // Two points at the top, x = 1 and x = 60 of 1..100: on a linear axis 60 lies at
        // 0.6 of the width (the upper right is free), on a log axis at 0.89 (under the
        // upper right's box), so the legend goes to the lower right.
        let pts = vec![(1.0, 1.0), (60.0, 1.0)];
        let mut p = panel(vec![Series::new("curve", Style::Markers, crate::Color(0, 0, 0), pts)]);
        assert_eq!(corner(&p, (1.0, 100.0), (0.0, 1.0), (600, 400)), Corner::UpperRight);
        p.x.scale = Scale::Log;
        assert_eq!(corner(&p, (1.0, 100.0), (0.0, 1.0), (600, 400)), Corner::LowerRight);
    }
}
