//! Links the `mmulab` binary as a position-dependent executable (the code stays
//! position-independent, as rustc compiles it).
//!
//! Why: a PIE is relocated by the dynamic loader at every start. This binary has ~8,460
//! relative relocations (vtables, string tables, clap's and serde's static data in
//! `.data.rel.ro` and the GOT, ~140 KiB); with BIND_NOW the loader writes every one
//! before `main`, each written page a private copy-on-write fault. Linked with
//! `-no-pie`, the linker resolves them at link time: `mmulab sim` of one reference went
//! from 1.66 M to ~1.2 M instructions and ~40 fewer page faults (docs/benchmarks-log.md,
//! "Start-up"). The cost: the binary's own addresses are no longer randomised (shared
//! libraries, heap and stack still are). Only the binary: the Python extension (a
//! cdylib) and the libraries are untouched, and `-C target-cpu` stays the baseline.
//!
//! Also records the git commit the binary is built from (src/provenance.rs):
//! `MMULAB_GIT_COMMIT` (`git rev-parse HEAD`) and `MMULAB_GIT_DIRTY` (`git status
//! --porcelain` printed anything), both empty outside a git checkout or without git —
//! never an error. It reruns when HEAD moves (HEAD, the ref it names, packed-refs, the
//! index) or a source file of the workspace changes, so the values stay current.
fn main() {
    git_provenance();
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // GNU toolchains on Linux (gcc or clang as the linker driver) take `-no-pie`; other
    // targets keep their default.
    if target_os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

fn git(args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

fn git_provenance() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    // A checkout has `.git` (a directory, or a file in a worktree) at its root.
    let commit = if root.join(".git").exists() {
        git(&["rev-parse", "HEAD"]).filter(|c| c.len() >= 40 && c.chars().all(|x| x.is_ascii_hexdigit()))
    } else {
        None
    };
    let dirty =
        commit.is_some() && git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!("cargo:rustc-env=MMULAB_GIT_COMMIT={}", commit.as_deref().unwrap_or(""));
    println!("cargo:rustc-env=MMULAB_GIT_DIRTY={}", if dirty { "1" } else { "" });
    if commit.is_some() {
        for (dir_arg, files) in [
            ("--git-dir", &["HEAD", "index"][..]),
            ("--git-common-dir", &["packed-refs"][..]),
        ] {
            if let Some(d) = git(&["rev-parse", dir_arg]) {
                let d = manifest.join(d);
                for f in files {
                    println!("cargo:rerun-if-changed={}", d.join(f).display());
                }
            }
        }
        if let (Some(r), Some(common)) = (
            git(&["symbolic-ref", "-q", "HEAD"]),
            git(&["rev-parse", "--git-common-dir"]),
        ) {
            println!("cargo:rerun-if-changed={}", manifest.join(common).join(r).display());
        }
    }
    for p in ["crates", "machines", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
}
