//! `mmulab advise`: argument handling and the errors that come before any timing (no
//! probe, no calibration: these fail first, so the tests are quick and need no cache).

use std::process::{Command, Output};

fn mmulab(args: &[&str]) -> Output {
    let cache = std::env::temp_dir().join(format!("mmulab-advise-cli-{}", std::process::id()));
    Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .args(args)
        .env("XDG_CACHE_HOME", &cache)
        .output()
        .expect("mmulab runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn no_command_is_an_error_that_shows_the_form() {
    let o = mmulab(&["advise"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no command given: `mmulab advise [OPTIONS] -- CMD ARGS…`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn zero_runs_are_refused() {
    let o = mmulab(&["advise", "--runs", "0", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--runs must be at least 1"), "{}", stderr(&o));
}

#[test]
fn a_command_that_does_not_exist_is_named() {
    let o = mmulab(&[
        "advise",
        "--trace",
        "unused.mlt",
        "--",
        "mmulab-no-such-program-xyz",
        "a",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("command `mmulab-no-such-program-xyz` not found"), "{e}");
}

#[test]
fn a_failing_command_reports_its_status_and_is_not_timed() {
    let o = mmulab(&[
        "advise",
        "--trace",
        "unused.mlt",
        "--",
        "sh",
        "-c",
        "echo disk full >&2; exit 7",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("failed (exit status: 7)"), "{e}");
    assert!(e.contains("disk full"), "{e}");
    assert!(e.contains("advise times only programs that succeed"), "{e}");
    // Nothing was timed or printed as a result.
    assert!(o.stdout.is_empty());
}

#[test]
fn a_bad_sampling_is_refused_before_anything_runs() {
    let o = mmulab(&["advise", "--sample", "2M/1M", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--sample: sampling '2M/1M': needs 0 < ON ≤ PERIOD"), "{e}");
    let o = mmulab(&["advise", "--recorder", "pin", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("pin"), "{}", stderr(&o));
}
