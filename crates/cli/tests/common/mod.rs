//! Helpers shared by the CLI test files.

use std::path::{Path, PathBuf};

/// The DynamoRIO samples committed in the repository (`tests/data/drmemtrace`, BSD
/// licence beside them): the same files as the project's shared traces.
pub fn shared_drmemtrace() -> PathBuf {
    let dr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace");
    assert!(
        dr.join("x86_64-threadsig").is_dir() && dr.join("aarch64-threadsig").is_dir(),
        "drmemtrace samples not found at {} (they are committed in the repository: is the checkout complete?)",
        dr.display()
    );
    dr
}
