//! The probe's picture: time per access against pages touched (log–log), the dense
//! baseline dashed, one curve per backing, the knees marked; a second panel with miss
//! counters per access when the target has counters. Built as an [`mmulab_plot::Figure`]
//! and drawn as SVG or PNG by file extension.

use std::path::Path;

use mmulab_plot::{Axis, Color, Figure, Mark, Panel, PlotError, Series, Style, PALETTE};

use super::ProbeReport;
use crate::error::{ProbeError, Result};

/// A plot error as the probe library reports it: a bad file name is the caller's
/// mistake ([`ProbeError::Invalid`]), anything else a drawing failure.
pub(crate) fn plot_error(e: PlotError) -> ProbeError {
    match e {
        PlotError::Extension(_) => ProbeError::Invalid(format!("--plot {e}")),
        _ => ProbeError::Plot(e.to_string()),
    }
}

/// Write the plot to `path` (`.svg` or `.png`).
pub fn write_plot(r: &ProbeReport, path: &Path) -> Result<()> {
    figure(r).write(path).map_err(plot_error)
}

/// The probe's picture as a figure (one panel, or two with counters).
pub fn figure(r: &ProbeReport) -> Figure {
    let counters = r
        .series
        .first()
        .is_some_and(|s| s.counters.iter().any(|c| c.iter().any(|v| v.is_finite())));
    let unit = r.target.unit.label();
    let xmax = r.series.iter().flat_map(|s| s.x.iter()).copied().max().unwrap_or(2) as f64 * 1.2;
    let ys: Vec<f64> = r
        .series
        .iter()
        .flat_map(|s| s.chase.iter().chain(s.baseline.iter()))
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let ymin = ys.iter().copied().fold(f64::INFINITY, f64::min).min(1.0) * 0.8;
    let ymax = ys.iter().copied().fold(0.0, f64::max).max(ymin * 4.0) * 1.3;
    let mut top = Panel::new(
        "",
        Axis::log("pages touched (one cache line per page)").range(1.5, xmax),
        Axis::log(format!("time per access ({unit})")).range(ymin, ymax),
    );
    let points =
        |x: &[usize], y: &[f64]| -> Vec<(f64, f64)> { x.iter().zip(y).map(|(&x, &y)| (x as f64, y)).collect() };
    for (i, s) in r.series.iter().enumerate() {
        let c = PALETTE[i % 4];
        let label = match s.name.as_str() {
            "4K" => "4 KiB pages, 4 KiB stride".to_string(),
            "2M" => format!("2 MiB pages ({}), 4 KiB stride", s.backing.label()),
            "2M-stride" => format!("2 MiB pages ({}), 2 MiB stride", s.backing.label()),
            n => n.to_string(),
        };
        top.series
            .push(Series::new(label, Style::LineWithMarkers, c, points(&s.x, &s.chase)));
        top.series
            .push(Series::new("", Style::Dashed, c, points(&s.x, &s.baseline)));
    }
    top.series.push(Series::new(
        "dashed: dense baseline (same lines, few pages)",
        Style::Dashed,
        Color(0, 0, 0),
        Vec::new(),
    ));
    for l in &r.levels {
        top.marks.push(Mark {
            x: l.entries as f64,
            label: format!(
                "L{} = {} ({}2M)",
                l.level,
                l.entries,
                match l.caches_2m {
                    Some(true) => "holds ",
                    Some(false) => "no ",
                    None => "? ",
                }
            ),
        });
    }
    let mut panels = vec![top];
    if counters {
        let a = &r.series[0];
        let cmax = a
            .counters
            .iter()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .fold(1.0, f64::max)
            * 1.1;
        let mut bottom = Panel::new(
            "",
            Axis::log("pages touched (4 KiB pages)").range(1.5, xmax),
            Axis::linear("misses per access").range(0.0, cmax),
        );
        for (i, name) in r.target.counters.iter().enumerate() {
            let y = a.counters.get(i).map_or(&[][..], |v| v.as_slice());
            bottom.series.push(Series::new(
                name.clone(),
                Style::Line,
                PALETTE[(i + 2) % 4],
                points(&a.x, y),
            ));
        }
        panels.push(bottom);
    }
    let mut f = Figure::new(
        format!("mmulab probe — {}", r.target.name),
        (1000, if counters { 900 } else { 600 }),
        panels,
    );
    f.row_heights = vec![560, 340];
    f
}
