//! mmulab's one plotting module: every picture mmulab draws (the probe's curves, a
//! tlb_test experiment's bars, a policy experiment's coverage over time) is a [`Figure`]
//! — a grid of [`Panel`]s, each with a title, two [`Axis`]es (label, linear or log scale,
//! optional fixed range, tick style), named [`Series`] of points drawn as lines, lines with
//! markers, dots alone, dashed lines or grouped bars, and vertical [`Mark`]s with a label — written to
//! SVG or PNG, chosen by the file's extension ([`Figure::write`]).
//!
//! Contract: the figure is plain data (the libraries that own the results build it; the
//! CLI and the Python bindings only name the file); drawing never panics on odd data —
//! points that are not finite, or not positive on a log axis, are left out; an unknown
//! extension, a missing font or a failed write is a [`PlotError`] naming the file.
#![deny(missing_docs)]

mod legend;
mod render;

use std::path::{Path, PathBuf};

/// What can go wrong while drawing.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The file name does not end in `.svg` or `.png`.
    #[error("{}: the file name must end in .svg or .png", .0.display())]
    Extension(PathBuf),
    /// No TrueType font was found (text layout needs one, for SVG and PNG alike).
    #[error("{0}")]
    Font(String),
    /// The drawing backend failed (a file that cannot be written, ...).
    #[error("cannot draw {path}: {message}")]
    Draw {
        /// The file being drawn.
        path: PathBuf,
        /// What the backend said.
        message: String,
    },
}

/// The output format, from a file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Scalable vector graphics (`.svg`).
    Svg,
    /// A bitmap (`.png`).
    Png,
}

impl Format {
    /// The format a file name asks for (case-insensitive `.svg` or `.png`), or
    /// [`PlotError::Extension`]. Callers check this before long work, so that a bad name
    /// fails at once.
    pub fn of_path(path: &Path) -> Result<Format, PlotError> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(PlotError::Extension(path.to_path_buf())),
        }
    }
}

/// An RGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Color(pub u8, pub u8, pub u8);

/// The colours series take by default, in order.
pub const PALETTE: [Color; 6] = [
    Color(31, 119, 180),
    Color(214, 39, 40),
    Color(44, 160, 44),
    Color(148, 103, 189),
    Color(255, 127, 14),
    Color(68, 68, 68),
];

/// A whole picture: a title over panels laid out in a grid, row by row.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Caption over everything (empty: none).
    pub title: String,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// Panels per row (at least 1).
    pub columns: usize,
    /// Relative heights of the rows (empty, or fewer than the rows: equal heights).
    pub row_heights: Vec<u32>,
    /// The panels, row by row.
    pub panels: Vec<Panel>,
}

impl Figure {
    /// A figure of one column of `panels`.
    pub fn new(title: impl Into<String>, size: (u32, u32), panels: Vec<Panel>) -> Figure {
        Figure {
            title: title.into(),
            size,
            columns: 1,
            row_heights: Vec::new(),
            panels,
        }
    }

    /// Draws the figure to `path`: SVG or PNG by its extension ([`Format::of_path`]).
    pub fn write(&self, path: &Path) -> Result<(), PlotError> {
        let format = Format::of_path(path)?;
        render::register_font()?;
        render::draw(self, path, format)
    }
}

/// One chart: axes, series and marks.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Caption of the panel (empty: none).
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// What is drawn, in order; the legend lists those with a name, in the corner its box
    /// covers the least of the data (upper left on a tie).
    pub series: Vec<Series>,
    /// Vertical lines with a label (e.g. the probe's knees).
    pub marks: Vec<Mark>,
}

impl Panel {
    /// A panel without series or marks.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Panel {
        Panel {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            marks: Vec::new(),
        }
    }
}

/// Linear or logarithmic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic: only positive values are drawn.
    Log,
}

/// How an axis labels its ticks.
#[derive(Clone, Debug, PartialEq)]
pub enum Ticks {
    /// Numbers (1.5k, 2M, 0.25, ...).
    Numbers,
    /// Shares as percentages (0.5 → 50%).
    Percent,
    /// Named categories at x = 0, 1, 2, ... (the axis spans -0.5 to n - 0.5; for bars).
    Categories(Vec<String>),
}

/// One axis.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Description under (or beside) the axis.
    pub label: String,
    /// Linear or log.
    pub scale: Scale,
    /// Fixed range (low, high); `None`: from the data.
    pub range: Option<(f64, f64)>,
    /// Tick labels.
    pub ticks: Ticks,
}

impl Axis {
    /// A linear axis ranging over the data.
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            range: None,
            ticks: Ticks::Numbers,
        }
    }

    /// A logarithmic axis ranging over the data.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Log,
            ..Axis::linear(label)
        }
    }

    /// Categories at 0, 1, 2, ... (for bars).
    pub fn categories(label: impl Into<String>, names: Vec<String>) -> Axis {
        let n = names.len().max(1) as f64;
        Axis {
            range: Some((-0.5, n - 0.5)),
            ticks: Ticks::Categories(names),
            ..Axis::linear(label)
        }
    }

    /// The same axis with a fixed range.
    pub fn range(mut self, lo: f64, hi: f64) -> Axis {
        self.range = Some((lo, hi));
        self
    }

    /// The same axis with percentage tick labels.
    pub fn percent(mut self) -> Axis {
        self.ticks = Ticks::Percent;
        self
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A solid line through the points.
    Line,
    /// A solid line with a dot at every point.
    LineWithMarkers,
    /// A larger dot at every point, no line (a scatter plot).
    Markers,
    /// A thin dashed line, half transparent.
    Dashed,
    /// A bar from 0 to y at every x; the bar series of a panel stand side by side.
    Bars,
}

/// A named sequence of points.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend entry (empty: none). A named series without points is a legend line only.
    pub name: String,
    /// (x, y) in data units.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
    /// Its colour.
    pub color: Color,
}

impl Series {
    /// A series.
    pub fn new(name: impl Into<String>, style: Style, color: Color, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style,
            color,
        }
    }
}

/// A vertical line across a panel at `x`, with a label beside its top.
#[derive(Clone, Debug)]
pub struct Mark {
    /// Where (data units).
    pub x: f64,
    /// The text beside it.
    pub label: String,
}
