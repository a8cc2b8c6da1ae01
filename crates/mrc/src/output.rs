//! The curve as CSV and as a picture.

use crate::Curve;
use mmulab_plot::{Axis, Color, Figure, Panel, Series, Style};
use std::io::Write;

const COLOURS: [Color; 6] = [
    Color(0x1f, 0x77, 0xb4),
    Color(0xd6, 0x27, 0x28),
    Color(0x2c, 0xa0, 0x2c),
    Color(0x94, 0x67, 0xbd),
    Color(0xff, 0x7f, 0x0e),
    Color(0x44, 0x44, 0x44),
];

impl Curve {
    /// CSV, one row per point: `kind,sets,ways,entries,misses,miss_ratio`; `kind` is
    /// `fully_associative` (sets 1, ways = entries), `set_associative` or `sampled`
    /// (the SHARDS estimate of the fully associative curve).
    pub fn csv(&self) -> String {
        let mut v = Vec::new();
        self.write_csv(&mut v).expect("writing to memory");
        String::from_utf8(v).expect("the CSV is ASCII")
    }

    /// [`Curve::csv`] written to `w` as it is formatted (a 16 M-point curve is never
    /// held as text).
    pub fn write_csv(&self, mut w: impl Write) -> std::io::Result<()> {
        writeln!(w, "kind,sets,ways,entries,misses,miss_ratio")?;
        for p in &self.curve {
            writeln!(
                w,
                "fully_associative,1,{0},{0},{1},{2}",
                p.entries, p.misses, p.miss_ratio
            )?;
        }
        for c in &self.set_associative {
            for p in &c.curve {
                writeln!(
                    w,
                    "set_associative,{},{},{},{},{}",
                    c.sets, p.ways, p.entries, p.misses, p.miss_ratio
                )?;
            }
        }
        if let Some(sm) = &self.sampled {
            for p in &sm.curve {
                writeln!(w, "sampled,1,{0},{0},{1},{2}", p.entries, p.misses, p.miss_ratio)?;
            }
        }
        w.flush()
    }
}

/// The miss-ratio axis for `ratios`, so that any curve is readable: from 0 to a little
/// above the highest ratio (at most 100 %), or a log axis when the positive ratios span
/// more than a factor of 100 (a curve that falls from 90 % to 0.01 % would otherwise lie
/// flat on the bottom for most of its length).
pub fn ratio_axis(ratios: impl Iterator<Item = f64>) -> Axis {
    let v: Vec<f64> = ratios.filter(|r| r.is_finite() && *r >= 0.0).collect();
    let hi = v.iter().copied().fold(0.0, f64::max);
    let lo = v.iter().copied().filter(|&r| r > 0.0).fold(f64::INFINITY, f64::min);
    if hi <= 0.0 {
        return Axis::linear("miss ratio").range(0.0, 1.0).percent();
    }
    if hi / lo > 100.0 {
        return Axis::log("miss ratio (log)")
            .range(lo / 1.5, (hi * 1.5).min(1.0))
            .percent();
    }
    Axis::linear("miss ratio").range(0.0, (hi * 1.1).min(1.0)).percent()
}

/// The curves on one panel: miss ratio over TLB entries (log scale).
pub fn figure(c: &Curve, title: &str) -> Figure {
    let max = c.curve.len().max(2) as f64;
    let all = c
        .curve
        .iter()
        .chain(c.sampled.iter().flat_map(|s| s.curve.iter()))
        .map(|p| p.miss_ratio)
        .chain(
            c.set_associative
                .iter()
                .flat_map(|s| s.curve.iter().map(|p| p.miss_ratio)),
        );
    let mut p = Panel::new(
        format!(
            "level {} · {} pages · {} references",
            c.level, c.page_size, c.references
        ),
        Axis::log("TLB entries").range(1.0, max),
        ratio_axis(all),
    );
    let fa = c.curve.iter().map(|p| (p.entries as f64, p.miss_ratio)).collect();
    p.series
        .push(Series::new("fully associative", Style::Line, COLOURS[0], fa));
    for (i, s) in c.set_associative.iter().enumerate() {
        let pts = s.curve.iter().map(|p| (p.entries as f64, p.miss_ratio)).collect();
        p.series.push(Series::new(
            format!("{} sets", s.sets),
            Style::Line,
            COLOURS[(i + 1) % COLOURS.len()],
            pts,
        ));
    }
    if let Some(sm) = &c.sampled {
        let pts = sm.curve.iter().map(|p| (p.entries as f64, p.miss_ratio)).collect();
        p.series.push(Series::new(
            format!("SHARDS rate {}", sm.rate),
            Style::Dashed,
            COLOURS[5],
            pts,
        ));
    }
    Figure::new(title, (720, 480), vec![p])
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmulab_plot::Scale;

    #[test]
    fn the_ratio_axis_fits_the_curve() {
        // Ratios between 0.1 % and 0.4 %: 0 to 0.44 % (a 0-100 % axis drew them flat).
        let a = ratio_axis([0.004, 0.002, 0.001].into_iter());
        assert_eq!(a.scale, Scale::Linear);
        let (lo, hi) = a.range.unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 0.0044).abs() < 1e-12, "{hi}");
        // 90 % down to 0.01 %: a span of 9000, a log axis from 0.0067 % to 100 %.
        let a = ratio_axis([0.9, 0.1, 0.0001, 0.0].into_iter());
        assert_eq!(a.scale, Scale::Log);
        let (lo, hi) = a.range.unwrap();
        assert!((lo - 0.0001 / 1.5).abs() < 1e-15 && hi == 1.0, "{lo} {hi}");
        // All zero (or none): the plain 0-100 % axis.
        assert_eq!(ratio_axis([0.0].into_iter()).range, Some((0.0, 1.0)));
        assert_eq!(ratio_axis(std::iter::empty()).range, Some((0.0, 1.0)));
    }
}
