//! The probe's pictures, drawn through mmulab-plot to SVG and read back:
//! the curves, knees, counters and bars the results hold are all in the picture.

use std::path::PathBuf;

use mmulab_probe::probe::{self, plot, ProbeConfig};
use mmulab_probe::target::sim::SimTarget;
use mmulab_probe::ProbeError;
use mmulab_sim::config;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-probe-plot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_probe_picture_shows_every_curve_knee_and_counter() {
    let spec = config::load_machine("cortex-a15", None, &[]).unwrap();
    let mut t = SimTarget::new("cortex-a15", spec);
    let r = probe::run(&mut t, &ProbeConfig::simulated(), &mut |_, _| {}).unwrap();
    let d = dir("probe");
    let p = d.join("p.svg");
    plot::write_plot(&r, &p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    for needle in [
        "mmulab probe — sim: cortex-a15",
        "pages touched (one cache line per page)",
        "time per access (cycles)",
        "4 KiB pages, 4 KiB stride",
        "dashed: dense baseline (same lines, few pages)",
        "L1 = 32 (no 2M)",
        "L2 = 512 (holds 2M)",
        "misses per access",
        "l1d misses",
    ] {
        assert!(svg.contains(needle), "{needle} missing");
    }
    // A dot per point of every curve.
    let points: usize = r
        .series
        .iter()
        .map(|s| s.chase.iter().filter(|v| v.is_finite() && **v > 0.0).count())
        .sum();
    assert_eq!(svg.matches("<circle").count(), points);
    let f = plot::figure(&r);
    assert_eq!(f.panels.len(), 2);
    assert_eq!(f.panels[0].marks.len(), r.levels.len());
    let err = plot::write_plot(&r, &d.join("p.jpg")).unwrap_err();
    assert!(
        matches!(err, ProbeError::Invalid(_)) && err.to_string().contains("p.jpg"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
