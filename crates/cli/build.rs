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
fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // GNU toolchains on Linux (gcc or clang as the linker driver) take `-no-pie`; other
    // targets keep their default.
    if target_os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
