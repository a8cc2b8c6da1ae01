//! Helpers shared by the CLI test files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The DynamoRIO samples committed in the repository (`tests/data/drmemtrace`, BSD
/// licence beside them): the same files as the project's shared traces.
#[allow(dead_code)] // not every test file that includes this module reads the samples
pub fn shared_drmemtrace() -> PathBuf {
    let dr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace");
    assert!(
        dr.join("x86_64-threadsig").is_dir() && dr.join("aarch64-threadsig").is_dir(),
        "drmemtrace samples not found at {} (they are committed in the repository: is the checkout complete?)",
        dr.display()
    );
    dr
}

/// Runs the built `mmulab` with `args` from the repository root (so relative paths such
/// as `tests/data/…` and `experiments/…` resolve).
#[allow(dead_code)] // not every test file that includes this module runs the binary this way
pub fn mmulab_at_root(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .output()
        .expect("run mmulab")
}

/// Runs `mmulab args` from the repository root; it must succeed and print one JSON
/// object, which is returned.
#[allow(dead_code)] // not every test file that includes this module reads JSON
pub fn json_at_root(args: &[&str]) -> serde_json::Value {
    let out = mmulab_at_root(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Runs `mmulab args` from the repository root; it must fail without a panic, and its
/// standard error is returned.
#[allow(dead_code)] // not every test file that includes this module checks errors
pub fn err_at_root(args: &[&str]) -> String {
    let out = mmulab_at_root(args);
    assert!(!out.status.success(), "{args:?} should fail");
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!e.contains("panicked"), "{e}");
    e
}
