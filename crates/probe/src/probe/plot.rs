//! Draw the probe's curves: time per access against pages touched (log–log), the dense
//! baseline dashed, one curve per backing, the knees marked; a second panel with miss
//! counters per access when the target has counters. SVG or PNG by file extension.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::ProbeReport;
use crate::error::{ProbeError, Result};

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

/// Text layout (PNG and SVG) needs a TrueType font at run time: register the first system font found.
pub(crate) fn register_font() -> Result<()> {
    static DONE: std::sync::OnceLock<std::result::Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let b: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                return plotters::style::register_font("sans-serif", FontStyle::Normal, b)
                    .map_err(|_| format!("cannot load font {p}"));
            }
        }
        Err(format!(
            "PNG output needs a TrueType font (tried {}); install fonts-dejavu-core",
            FONT_PATHS.join(", ")
        ))
    })
    .clone()
    .map_err(ProbeError::Plot)
}

/// Write the plot to `path` (`.svg` or `.png`).
pub fn write_plot(r: &ProbeReport, path: &Path) -> Result<()> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let counters = r
        .series
        .first()
        .is_some_and(|s| s.counters.iter().any(|c| c.iter().any(|v| v.is_finite())));
    let size = (1000, if counters { 900 } else { 600 });
    match ext.as_str() {
        "svg" => {
            register_font()?;
            draw(SVGBackend::new(path, size).into_drawing_area(), r, counters)
        }
        "png" => {
            register_font()?;
            draw(BitMapBackend::new(path, size).into_drawing_area(), r, counters)
        }
        _ => Err(ProbeError::Invalid(format!(
            "--plot {}: the file name must end in .svg or .png",
            path.display()
        ))),
    }
}

fn e<E: std::fmt::Debug>(x: E) -> ProbeError {
    ProbeError::Plot(format!("{x:?}"))
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, r: &ProbeReport, counters: bool) -> Result<()> {
    root.fill(&WHITE).map_err(e)?;
    let (top, bottom) = if counters {
        root.split_vertically(560)
    } else {
        (root.clone(), root.clone())
    };
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
    let mut chart = ChartBuilder::on(&top)
        .caption(format!("mmulab probe — {}", r.target.name), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1.5f64..xmax).log_scale(), (ymin..ymax).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE)
        .x_desc("pages touched (one cache line per page)")
        .y_desc(format!("time per access ({unit})"))
        .draw()
        .map_err(e)?;
    for (i, s) in r.series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let label = match s.name.as_str() {
            "4K" => "4 KiB pages, 4 KiB stride".to_string(),
            "2M" => format!("2 MiB pages ({}), 4 KiB stride", s.backing.label()),
            "2M-stride" => format!("2 MiB pages ({}), 2 MiB stride", s.backing.label()),
            n => n.to_string(),
        };
        let pts: Vec<(f64, f64)> =
            s.x.iter()
                .zip(&s.chase)
                .filter(|(_, y)| y.is_finite() && **y > 0.0)
                .map(|(&x, &y)| (x as f64, y))
                .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(e)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 2, c.filled())))
            .map_err(e)?;
        let bl: Vec<(f64, f64)> =
            s.x.iter()
                .zip(&s.baseline)
                .filter(|(_, y)| y.is_finite() && **y > 0.0)
                .map(|(&x, &y)| (x as f64, y))
                .collect();
        chart
            .draw_series(DashedLineSeries::new(bl, 4, 4, c.mix(0.5).stroke_width(1)))
            .map_err(e)?;
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (0.0, 0.0)],
            BLACK.mix(0.5),
        )))
        .map_err(e)?
        .label("dashed: dense baseline (same lines, few pages)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.5)));
    for l in &r.levels {
        let x = l.entries as f64;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, ymin), (x, ymax)],
                BLACK.stroke_width(1),
            )))
            .map_err(e)?;
        let txt = format!(
            "L{} = {} ({}2M)",
            l.level,
            l.entries,
            match l.caches_2m {
                Some(true) => "holds ",
                Some(false) => "no ",
                None => "? ",
            }
        );
        chart
            .draw_series(std::iter::once(Text::new(
                txt,
                (x * 1.04, ymax / 1.6 / (l.level as f64)),
                ("sans-serif", 15),
            )))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()
        .map_err(e)?;
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
        let mut c2 = ChartBuilder::on(&bottom)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((1.5f64..xmax).log_scale(), 0f64..cmax)
            .map_err(e)?;
        c2.configure_mesh()
            .x_desc("pages touched (4 KiB pages)")
            .y_desc("misses per access")
            .draw()
            .map_err(e)?;
        for (i, name) in r.target.counters.iter().enumerate() {
            let col = COLORS[(i + 2) % COLORS.len()];
            let pts: Vec<(f64, f64)> =
                a.x.iter()
                    .zip(&a.counters[i])
                    .filter(|(_, y)| y.is_finite())
                    .map(|(&x, &y)| (x as f64, y))
                    .collect();
            c2.draw_series(LineSeries::new(pts, col.stroke_width(2)))
                .map_err(e)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        }
        c2.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .draw()
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}
