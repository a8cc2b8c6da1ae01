//! Drawing a [`Figure`] with plotters (the only file that knows plotters).

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::{Axis, Figure, Format, Panel, PlotError, Scale, Style, Ticks};

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

/// Text layout (PNG and SVG) needs a TrueType font at run time: registers the first
/// system font found, once per process.
pub(crate) fn register_font() -> Result<(), PlotError> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let b: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                return plotters::style::register_font("sans-serif", FontStyle::Normal, b)
                    .map_err(|_| format!("cannot load font {p}"));
            }
        }
        Err(format!(
            "drawing a plot needs a TrueType font (tried {}); install fonts-dejavu-core",
            FONT_PATHS.join(", ")
        ))
    })
    .clone()
    .map_err(PlotError::Font)
}

pub(crate) fn draw(f: &Figure, path: &Path, format: Format) -> Result<(), PlotError> {
    let err = |message: String| PlotError::Draw {
        path: path.to_path_buf(),
        message,
    };
    if f.size.0 < 100 || f.size.1 < 100 {
        return Err(err(format!(
            "a figure of {}x{} pixels is too small",
            f.size.0, f.size.1
        )));
    }
    match format {
        Format::Svg => figure(SVGBackend::new(path, f.size).into_drawing_area(), f).map_err(err),
        Format::Png => figure(BitMapBackend::new(path, f.size).into_drawing_area(), f).map_err(err),
    }
}

fn e<E: std::fmt::Debug>(x: E) -> String {
    format!("{x:?}")
}

fn rgb(c: crate::Color) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn figure<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, f: &Figure) -> Result<(), String> {
    root.fill(&WHITE).map_err(e)?;
    let body = if f.title.is_empty() {
        root.clone()
    } else {
        root.titled(&f.title, ("sans-serif", 20)).map_err(e)?
    };
    let cols = f.columns.max(1);
    let rows = f.panels.len().div_ceil(cols).max(1);
    let weights: Vec<u32> = if f.row_heights.len() >= rows {
        f.row_heights[..rows].iter().map(|&w| w.max(1)).collect()
    } else {
        vec![1; rows]
    };
    let total: u32 = weights.iter().sum();
    let height = body.dim_in_pixel().1;
    let mut rest = body;
    for (r, w) in weights.iter().enumerate() {
        let (row, below) = if r + 1 == rows {
            (rest.clone(), rest.clone())
        } else {
            let h = (height as u64 * *w as u64 / total as u64) as i32;
            rest.split_vertically(h)
        };
        for (c, area) in row.split_evenly((1, cols)).iter().enumerate() {
            if let Some(p) = f.panels.get(r * cols + c) {
                panel_any(area, p)?;
            }
        }
        rest = below;
    }
    root.present().map_err(e)
}

/// The range an axis spans: its own, or the data's with some room.
fn span(a: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
    if let Some((lo, hi)) = a.range.filter(|(l, h)| l < h && (a.scale == Scale::Linear || *l > 0.0)) {
        return (lo, hi);
    }
    let v: Vec<f64> = values.filter(|v| keep(a.scale, *v)).collect();
    let (min, max) = (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    match a.scale {
        Scale::Log if v.is_empty() => (1.0, 10.0),
        Scale::Log => (min / 1.25, (max * 1.3).max(min * 2.0)),
        Scale::Linear if v.is_empty() => (0.0, 1.0),
        Scale::Linear => {
            let lo = if min < 0.0 { min * 1.1 } else { 0.0 };
            let hi = if max > 0.0 { max * 1.1 } else { 0.0 };
            if hi > lo {
                (lo, hi)
            } else {
                (lo, lo + 1.0)
            }
        }
    }
}

fn keep(s: Scale, v: f64) -> bool {
    v.is_finite() && (s == Scale::Linear || v > 0.0)
}

fn panel_any<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<(), String> {
    let points = || p.series.iter().flat_map(|s| s.points.iter());
    let bars = p.series.iter().any(|s| s.style == Style::Bars);
    let (xl, xh) = span(&p.x, points().map(|q| q.0).chain(p.marks.iter().map(|m| m.x)));
    let (yl, yh) = span(&p.y, points().map(|q| q.1).chain(bars.then_some(0.0)));
    match (p.x.scale, p.y.scale) {
        (Scale::Linear, Scale::Linear) => panel(area, p, xl..xh, yl..yh),
        (Scale::Log, Scale::Linear) => panel(area, p, (xl..xh).log_scale(), yl..yh),
        (Scale::Linear, Scale::Log) => panel(area, p, xl..xh, (yl..yh).log_scale()),
        (Scale::Log, Scale::Log) => panel(area, p, (xl..xh).log_scale(), (yl..yh).log_scale()),
    }
}

/// A number for a tick label: 1.5k, 2M, 0.25.
fn number(v: f64) -> String {
    let a = v.abs();
    let (d, unit) = match a {
        _ if a >= 1e9 => (1e9, "G"),
        _ if a >= 1e6 => (1e6, "M"),
        _ if a >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let mut t = format!("{:.3}", v / d);
    while t.contains('.') && (t.ends_with('0') || t.ends_with('.')) {
        t.pop();
    }
    if t == "-0" {
        t = "0".into();
    }
    t + unit
}

fn tick_label(t: &Ticks, v: f64) -> String {
    match t {
        Ticks::Numbers => number(v),
        Ticks::Percent => percent(v),
        Ticks::Categories(names) => {
            let i = v.round();
            if (v - i).abs() < 0.05 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
    }
}

/// A share as a percentage with the digits a small one needs: 50%, 2.5%, 0.012%.
fn percent(v: f64) -> String {
    let p = v * 100.0;
    let a = p.abs();
    let digits = match a {
        _ if a == 0.0 || a >= 10.0 => 0,
        _ if a >= 1.0 => 1,
        _ => (2.0 - a.log10().floor()).min(6.0) as usize,
    };
    let mut t = format!("{p:.digits$}");
    while t.contains('.') && (t.ends_with('0') || t.ends_with('.')) {
        t.pop();
    }
    t + "%"
}

/// A point a share `t` (0 to 1) of the way from `lo` to `hi` on a scale.
fn along(s: Scale, lo: f64, hi: f64, t: f64) -> f64 {
    match s {
        Scale::Linear => lo + (hi - lo) * t,
        Scale::Log => lo * (hi / lo).powf(t),
    }
}

fn panel<DB, X, Y>(area: &DrawingArea<DB, Shift>, p: &Panel, xr: X, yr: Y) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut b = ChartBuilder::on(area);
    b.margin(12).x_label_area_size(40).y_label_area_size(60);
    if !p.title.is_empty() {
        b.caption(&p.title, ("sans-serif", 15));
    }
    let mut chart = b.build_cartesian_2d(xr, yr).map_err(e)?;
    let (xs, ys) = (chart.x_range(), chart.y_range());
    let fx = |v: &f64| tick_label(&p.x.ticks, *v);
    let fy = |v: &f64| tick_label(&p.y.ticks, *v);
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(WHITE)
        .x_desc(p.x.label.as_str())
        .y_desc(p.y.label.as_str())
        .x_label_formatter(&fx)
        .y_label_formatter(&fy);
    if let Ticks::Categories(names) = &p.x.ticks {
        mesh.disable_x_mesh().x_labels(names.len() + 1);
    }
    mesh.draw().map_err(e)?;

    let nbars = p.series.iter().filter(|s| s.style == Style::Bars).count().max(1) as f64;
    let mut bar = 0.0;
    for s in &p.series {
        let c = rgb(s.color);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| keep(p.x.scale, x) && keep(p.y.scale, y))
            .collect();
        let named = !s.name.is_empty();
        match s.style {
            Style::Line | Style::LineWithMarkers => {
                let a = chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(e)?;
                if named {
                    a.label(s.name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
                }
                if s.style == Style::LineWithMarkers {
                    chart
                        .draw_series(pts.iter().map(|&q| Circle::new(q, 2, c.filled())))
                        .map_err(e)?;
                }
            }
            Style::Markers => {
                let a = chart
                    .draw_series(pts.iter().map(|&q| Circle::new(q, 4, c.filled())))
                    .map_err(e)?;
                if named {
                    a.label(s.name.as_str())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, c.filled()));
                }
            }
            Style::Dashed => {
                let a = chart
                    .draw_series(DashedLineSeries::new(pts, 4, 4, c.mix(0.5).stroke_width(1)))
                    .map_err(e)?;
                if named {
                    a.label(s.name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.mix(0.5)));
                }
            }
            Style::Bars => {
                // Bar series stand side by side, centred on each x.
                let w = 0.8 / nbars;
                let base = ys.start.max(0.0).min(ys.end);
                let x0 = -0.4 + bar * w;
                bar += 1.0;
                let rects = pts
                    .iter()
                    .map(|&(x, y)| Rectangle::new([(x + x0, base), (x + x0 + w * 0.95, y)], c.filled()));
                let a = chart.draw_series(rects).map_err(e)?;
                if named {
                    a.label(s.name.as_str())
                        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
                }
            }
        }
    }
    for (k, m) in p.marks.iter().enumerate() {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(m.x, ys.start), (m.x, ys.end)],
                BLACK.stroke_width(1),
            )))
            .map_err(e)?;
        // Beside the line, labels of successive marks stepping down.
        let tx = match p.x.scale {
            Scale::Log => m.x * 1.04,
            Scale::Linear => m.x + (xs.end - xs.start) * 0.01,
        };
        let at = (tx, along(p.y.scale, ys.start, ys.end, 0.88 - 0.22 * (k % 4) as f64));
        chart
            .draw_series(std::iter::once(Text::new(m.label.clone(), at, ("sans-serif", 15))))
            .map_err(e)?;
    }
    if p.series.iter().any(|s| !s.name.is_empty()) {
        let (w, h) = chart.plotting_area().dim_in_pixel();
        let position = match crate::legend::corner(p, (xs.start, xs.end), (ys.start, ys.end), (w, h)) {
            crate::legend::Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
            crate::legend::Corner::UpperRight => SeriesLabelPosition::UpperRight,
            crate::legend::Corner::LowerRight => SeriesLabelPosition::LowerRight,
            crate::legend::Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
        };
        chart
            .configure_series_labels()
            .position(position)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()
            .map_err(e)?;
    }
    Ok(())
}
