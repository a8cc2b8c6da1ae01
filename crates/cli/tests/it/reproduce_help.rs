//! Regression (issue 18, item 7): `reproduce --help` describes every accepted form, and what
//! it says about each (every experiment draws PNG or SVG) holds. Issue 46, item 3: the
//! forms, `--list` and the names come from the experiments' table, and a file in the
//! working directory never changes which experiment a name runs.

use crate::common;

use common::mmulab_at_root as mmulab;

#[test]
fn reproduce_help_names_each_form_and_its_plot_formats() {
    let help = String::from_utf8(mmulab(&["reproduce", "--help"]).stdout).unwrap();
    for needle in [
        "[NAME|FILE]",
        "mmulab reproduce freebsd [--plot F.png|F.svg]",
        "mmulab reproduce FILE.toml [--plot F.png|F.svg]",
        "mmulab reproduce v3d-capacity [--json]",
        "mmulab reproduce kvm-split [--plot F.png|F.svg] [--json] [--eager-split-chunk-size GRANULE=SIZE]",
        "mmulab reproduce numa-emu [--plot F.png|F.svg] [--json] [--quick]",
        "mmulab reproduce --list",
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

#[test]
fn reproduce_list_names_every_experiment_with_its_source() {
    let out = mmulab(&["reproduce", "--list"]);
    assert!(out.status.success());
    let list = String::from_utf8(out.stdout).unwrap();
    for (name, seed) in [
        ("freebsd", "seed 001"),
        ("kvm-split", "seed 004"),
        ("nested", ""),
        ("numa-emu", "seed 003"),
        ("v3d-capacity", "seed 000"),
        ("v3d ", "seed 000"),
        ("FILE.toml (tlb_test)", "seed 002"),
    ] {
        let line = list
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name}:\n{list}"));
        assert!(line.contains(seed), "{line}");
    }
}

#[test]
fn a_file_named_like_an_experiment_does_not_change_what_runs() {
    let dir = std::env::temp_dir().join(format!("mmulab-reproduce-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A file named `v3d-capacity` that is an experiment file of another kind.
    let tlb = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/cortex-a15-tlb-test.toml");
    std::fs::copy(&tlb, dir.join("v3d-capacity")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(&dir)
        .args(["reproduce", "v3d-capacity", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["rows"][0]["policy"].is_string(), "the built-in v3d-capacity ran: {v}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("experiment file"));
    // The file by its path runs as the kind it declares, and says so.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(&dir)
        .args(["reproduce", "./v3d-capacity", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("running the experiment file ./v3d-capacity (kind tlb_test)"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn options_of_one_experiment_are_refused_by_the_others() {
    for (args, says) in [
        (
            &["reproduce", "v3d", "--sensitivity"][..],
            "--sensitivity belongs to `mmulab reproduce freebsd`",
        ),
        (
            &["reproduce", "nested", "--quick"][..],
            "--quick belongs to `mmulab reproduce numa-emu`",
        ),
        (
            &["reproduce", "freebsd", "--eager-split-chunk-size", "4K=1G"][..],
            "--eager-split-chunk-size belongs to `mmulab reproduce kvm-split`",
        ),
        (
            &["reproduce", "v3d-capacity", "--plot", "x.svg"][..],
            "v3d-capacity draws no picture",
        ),
        (&["reproduce", "no-such-thing"][..], "is neither an experiment"),
    ] {
        let out = mmulab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}
