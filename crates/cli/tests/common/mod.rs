//! Helpers shared by the CLI test files.

use std::path::{Path, PathBuf};

/// The shared DynamoRIO samples: `$MMULAB_SHARED` (the shared directory or its traces/
/// directory), else `shared/` beside the repository.
pub fn shared_drmemtrace() -> PathBuf {
    let base = match std::env::var_os("MMULAB_SHARED") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    };
    // `base` is the shared directory (holding traces/) or its traces/ directory itself.
    let dir = if base.join("drmemtrace").is_dir() {
        base
    } else {
        base.join("traces")
    };
    let dr = dir.join("drmemtrace");
    assert!(
        dr.join("x86_64-threadsig").is_dir() && dr.join("aarch64-threadsig").is_dir(),
        "shared drmemtrace samples not found at {} — clone the repo with shared/ beside it, or set MMULAB_SHARED",
        dr.display()
    );
    dr
}
