//! The integration tests of `mmulab-probe` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-probe --test it NAME::`.
//!
//! Binaries of their own (they touch state of the whole process):
//! * `tests/tlb_test_stop.rs`: it calls `mmulab_sim::request_stop`, which stops every run in its process.

mod emit_machine;
mod plots;
mod sim_catalog;
mod tlb_test_a15;
