//! Regression (issue 18, item 7): `reproduce --help` describes every accepted form, and what
//! it says about each (every experiment draws PNG or SVG) holds.

use crate::common;

use common::mmulab_at_root as mmulab;

#[test]
fn reproduce_help_names_each_form_and_its_plot_formats() {
    let help = String::from_utf8(mmulab(&["reproduce", "--help"]).stdout).unwrap();
    for needle in [
        "<freebsd|FILE>",
        "mmulab reproduce freebsd [--plot F.png|F.svg]",
        "mmulab reproduce FILE.toml [--plot F.png|F.svg]",
    ] {
        assert!(help.contains(needle), "reproduce --help lacks '{needle}':\n{help}");
    }
}

#[test]
fn reproduce_plot_formats_are_as_the_help_says() {
    let dir = std::env::temp_dir().join(format!("mmulab-reproduce-help-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // freebsd: a name that is neither .svg nor .png is refused before anything runs.
    let gif = dir.join("f.gif");
    let out = mmulab(&["reproduce", "freebsd", "--plot", gif.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".svg or .png"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("f.gif"));
    assert!(!gif.exists());
    // A tlb_test file draws PNG and SVG.
    for name in ["t.png", "t.svg"] {
        let p = dir.join(name);
        let out = mmulab(&[
            "reproduce",
            "experiments/cortex-a15-tlb-test.toml",
            "--plot",
            p.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(
            std::fs::metadata(&p).map(|m| m.len() > 100).unwrap_or(false),
            "{name} not written"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
