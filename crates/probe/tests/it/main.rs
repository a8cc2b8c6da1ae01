//! The integration tests of `mmulab-probe` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-probe --test it NAME::`.

mod emit_machine;
mod plots;
mod sim_catalog;
