//! The integration tests of `mmulab-trace` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-trace --test it NAME::`.

mod common;
mod drmemtrace_shared;
mod formats;
mod fuzz;
mod golden;
mod mlt;
mod readahead;
mod robust_inputs;
mod startup;
mod workload_bound;
mod workload_multi;
