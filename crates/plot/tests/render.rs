//! Every kind of chart mmulab draws, rendered to SVG in a temporary directory and read
//! back: the title, axis labels and series names are in the text, and each series
//! contributes the elements it should (a polyline per line, a dot per marker, a
//! rectangle per bar). A bad extension is an error that writes nothing; PNG is a PNG.

use std::path::PathBuf;

use mmulab_plot::{Axis, Color, Figure, Format, Mark, Panel, PlotError, Series, Style, PALETTE};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-plot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn count(svg: &str, what: &str) -> usize {
    svg.matches(what).count()
}

/// A probe-like picture: log–log lines with markers, a dashed baseline, a legend-only
/// entry, two marks; a second panel of plain lines.
fn curves() -> Figure {
    let x: Vec<f64> = (1..=20).map(|i| (i * 50) as f64).collect();
    let mut top = Panel::new("", Axis::log("pages touched"), Axis::log("time per access (ns)"));
    top.series.push(Series::new(
        "4 KiB pages",
        Style::LineWithMarkers,
        PALETTE[0],
        x.iter().map(|&v| (v, if v < 512.0 { 5.0 } else { 30.0 })).collect(),
    ));
    // Points a log axis cannot show are left out, not drawn at a wrong place.
    top.series.push(Series::new(
        "2 MiB pages",
        Style::LineWithMarkers,
        PALETTE[1],
        vec![
            (10.0, 4.0),
            (0.0, 4.0),
            (100.0, f64::NAN),
            (1000.0, 6.0),
            (2000.0, -1.0),
        ],
    ));
    top.series.push(Series::new(
        "",
        Style::Dashed,
        PALETTE[0],
        x.iter().map(|&v| (v, 5.0)).collect(),
    ));
    top.series.push(Series::new(
        "dashed: baseline",
        Style::Dashed,
        Color(0, 0, 0),
        Vec::new(),
    ));
    top.marks.push(Mark {
        x: 32.0,
        label: "L1 = 32".into(),
    });
    top.marks.push(Mark {
        x: 512.0,
        label: "L2 = 512".into(),
    });
    let mut bottom = Panel::new("", Axis::log("pages touched"), Axis::linear("misses per access"));
    for (i, name) in ["l1d misses", "l2 misses"].iter().enumerate() {
        bottom.series.push(Series::new(
            *name,
            Style::Line,
            PALETTE[i + 2],
            x.iter()
                .map(|&v| (v, (v > 100.0 * (i + 1) as f64) as u8 as f64))
                .collect(),
        ));
    }
    let mut f = Figure::new("probe — sim: test", (1000, 900), vec![top, bottom]);
    f.row_heights = vec![560, 340];
    f
}

#[test]
fn curves_draw_every_series_mark_and_label() {
    let d = dir("curves");
    let p = d.join("c.svg");
    curves().write(&p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
    for text in [
        "probe — sim: test",
        "pages touched",
        "time per access (ns)",
        "misses per access",
        "4 KiB pages",
        "2 MiB pages",
        "dashed: baseline",
        "l1d misses",
        "l2 misses",
        "L1 = 32",
        "L2 = 512",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    // One dot per drawable point: 20 + 2 (0, NaN and -1 are left out).
    assert_eq!(count(&svg, "<circle"), 22);
    let green = count(&svg, "stroke=\"#2CA02C\"");
    let purple = count(&svg, "stroke=\"#9467BD\"");
    // A line and its legend sample each.
    assert_eq!((green, purple), (2, 2), "{svg}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A tlb_test-like picture: grouped bars over named categories, two panels.
fn bars() -> Figure {
    let names: Vec<String> = ["16", "32", "33", "512", "1024"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let panels = ["cycles per load", "misses per load"]
        .iter()
        .map(|y| {
            let mut p = Panel::new(
                "",
                Axis::categories("pages touched (N)", names.clone()),
                Axis::linear(*y),
            );
            p.series.push(Series::new(
                "4K pages",
                Style::Bars,
                PALETTE[0],
                (0..5).map(|i| (i as f64, 1.0 + i as f64)).collect(),
            ));
            // A backing that did not run at one page count has no bar there.
            p.series.push(Series::new(
                "-huge (2M pages)",
                Style::Bars,
                PALETTE[1],
                (0..4).map(|i| (i as f64, 1.0)).collect(),
            ));
            p
        })
        .collect();
    Figure::new("tlb_test on a test core", (1100, 800), panels)
}

#[test]
fn bars_draw_one_rectangle_per_value_and_name_the_categories() {
    let d = dir("bars");
    let p = d.join("b.svg");
    bars().write(&p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    for text in [
        "tlb_test on a test core",
        "cycles per load",
        "misses per load",
        "pages touched (N)",
        "4K pages",
        "-huge (2M pages)",
        ">\n1024\n<",
        ">\n33\n<",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    let filled = |c: &str| count(&svg, &format!("fill=\"{c}\" stroke=\"none\""));
    // Per panel: 5 + 4 bars, and a legend sample of each colour.
    assert_eq!((filled("#1F77B4"), filled("#D62728")), (2 * 6, 2 * 5), "{svg}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A coverage-like picture: a grid of panels with titles, percent ticks, one line per
/// policy.
fn grid() -> Figure {
    let mut panels = Vec::new();
    for m in ["armada-xp", "skylake"] {
        for w in ["gups", "latency", "build"] {
            let mut p = Panel::new(
                format!("{m} · {w}"),
                Axis::linear("references").range(0.0, 2e6),
                Axis::linear("huge-page coverage").range(0.0, 1.0).percent(),
            );
            for (i, pol) in ["base", "reservation"].iter().enumerate() {
                let pts = (0..=10).map(|k| (k as f64 * 2e5, i as f64 * k as f64 / 10.0)).collect();
                p.series.push(Series::new(*pol, Style::Line, PALETTE[i], pts));
            }
            panels.push(p);
        }
    }
    let mut f = Figure::new("freebsd: huge-page coverage over references", (1260, 640), panels);
    f.columns = 3;
    f
}

#[test]
fn a_grid_titles_every_panel_and_labels_shares_as_percentages() {
    let d = dir("grid");
    let p = d.join("g.svg");
    grid().write(&p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    for text in [
        "freebsd: huge-page coverage over references",
        "armada-xp · gups",
        "skylake · build",
        "huge-page coverage",
        ">\n100%\n<",
        ">\n2M\n<",
        "reservation",
    ] {
        assert!(svg.contains(text), "{text} missing");
    }
    // Six panels of two lines; each line is one polyline, plus its legend sample.
    assert_eq!(count(&svg, "stroke-width=\"2\" points="), 6 * 2 * 2);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_extension_chooses_the_format_and_a_bad_one_writes_nothing() {
    let d = dir("ext");
    let png = d.join("Curves.PNG");
    curves().write(&png).unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    for bad in ["c.gif", "c", "c.svg.txt"] {
        let p = d.join(bad);
        let err = curves().write(&p).unwrap_err();
        assert!(matches!(err, PlotError::Extension(_)), "{bad}: {err}");
        assert!(
            err.to_string().contains(bad) && err.to_string().contains(".svg or .png"),
            "{err}"
        );
        assert!(!p.exists(), "{bad} was written");
    }
    assert_eq!(Format::of_path(&d.join("x.Svg")).unwrap(), Format::Svg);
    // A file that cannot be created is an error naming it, not a panic.
    let missing = d.join("no-such-dir").join("c.svg");
    let err = grid().write(&missing).unwrap_err();
    assert!(err.to_string().contains("no-such-dir"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn empty_panels_and_odd_data_draw_without_panicking() {
    let d = dir("odd");
    let mut p = Panel::new("empty", Axis::log("x"), Axis::log("y"));
    p.series.push(Series::new(
        "nothing drawable",
        Style::Line,
        PALETTE[0],
        vec![(f64::NAN, 1.0), (-1.0, 0.0)],
    ));
    let flat = Panel::new("", Axis::linear("x").range(5.0, 5.0), Axis::linear("y"));
    let f = Figure::new(
        "",
        (400, 300),
        vec![p, flat, Panel::new("", Axis::linear("a"), Axis::linear("b"))],
    );
    f.write(&d.join("o.svg")).unwrap();
    let tiny = Figure::new("", (10, 10), Vec::new());
    assert!(matches!(tiny.write(&d.join("t.svg")), Err(PlotError::Draw { .. })));
    let _ = std::fs::remove_dir_all(&d);
}
