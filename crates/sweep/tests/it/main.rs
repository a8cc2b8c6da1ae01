//! The integration tests of `mmulab-sweep` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-sweep --test it NAME::`.
//!
//! Binaries of their own (they touch state of the whole process):
//! * `tests/ray_progress.rs`: it asserts on `references_simulated`, a count over every run in its process.

mod lazy;
mod plan;
mod table;
