//! The integration tests of `mmulab-experiments` as one test binary: each file beside this
//! one is a module. Run one file's tests with
//! `cargo test --release -p mmulab-experiments --test it NAME::`.
//!
//! Binaries of their own (they touch state of the whole process):
//! * `tests/tlb_test_stop.rs`: it calls `mmulab_sim::request_stop`, which stops every run
//!   in its process.

mod freebsd;
mod tlb_test_a15;
