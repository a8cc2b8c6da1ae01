//! What produced a result: the mmulab version and, for a binary built from a git
//! checkout, the commit and whether the checkout had uncommitted changes (build.rs
//! records them). Every JSON result carries it as its `mmulab` key (docs/output.md,
//! "Provenance"): `sim --json`, `reproduce --json`, a sweep's manifest.

/// The provenance object: `{"version": "0.1.0", "commit": "<40 hex digits>" or null,
/// "dirty": bool}`. `commit` is null for a build outside a git checkout (a source
/// tarball) or without git; `dirty` says tracked files differed from that commit when
/// the binary was built.
pub fn json() -> serde_json::Value {
    let commit = env!("MMULAB_GIT_COMMIT");
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": if commit.is_empty() { serde_json::Value::Null } else { commit.into() },
        "dirty": !env!("MMULAB_GIT_DIRTY").is_empty(),
    })
}

/// One line for humans: `mmulab 0.1.0 (abc1234, dirty)`.
pub fn line() -> String {
    let commit = env!("MMULAB_GIT_COMMIT");
    let dirty = if env!("MMULAB_GIT_DIRTY").is_empty() {
        ""
    } else {
        ", dirty"
    };
    match commit.get(..12) {
        Some(c) => format!("mmulab {} ({c}{dirty})", env!("CARGO_PKG_VERSION")),
        None => format!("mmulab {} (not built from a git checkout)", env!("CARGO_PKG_VERSION")),
    }
}
