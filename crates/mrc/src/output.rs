//! The curve as CSV and as a picture.

use crate::Curve;
use mmulab_plot::{Axis, Color, Figure, Panel, Series, Style};
use std::fmt::Write as _;

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
        let mut s = String::from("kind,sets,ways,entries,misses,miss_ratio\n");
        for p in &self.curve {
            let _ = writeln!(
                s,
                "fully_associative,1,{0},{0},{1},{2}",
                p.entries, p.misses, p.miss_ratio
            );
        }
        for c in &self.set_associative {
            for p in &c.curve {
                let _ = writeln!(
                    s,
                    "set_associative,{},{},{},{},{}",
                    c.sets, p.ways, p.entries, p.misses, p.miss_ratio
                );
            }
        }
        if let Some(sm) = &self.sampled {
            for p in &sm.curve {
                let _ = writeln!(s, "sampled,1,{0},{0},{1},{2}", p.entries, p.misses, p.miss_ratio);
            }
        }
        s
    }
}

/// The curves on one panel: miss ratio over TLB entries (log scale).
pub fn figure(c: &Curve, title: &str) -> Figure {
    let max = c.curve.len().max(2) as f64;
    let mut p = Panel::new(
        format!(
            "level {} · {} pages · {} references",
            c.level, c.page_size, c.references
        ),
        Axis::log("TLB entries").range(1.0, max),
        Axis::linear("miss ratio").range(0.0, 1.0).percent(),
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
