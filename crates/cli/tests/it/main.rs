//! The integration tests of `mmulab-cli` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-cli --test it NAME::`.
//!
//! Binaries of their own (they touch state of the whole process):
//! * `tests/fuzz_cli.rs`: it re-runs its own binary for each case (`fuzz_worker`) and times cases for hangs.

mod advise_cli;
mod common;
mod docs_run;
mod dram_multicore;
mod dram_sim;
mod gpu_cli;
mod host_memory_cli;
mod machines_cli;
mod mem_trace_cli;
mod mrc_cli;
mod nested_caches_cli;
mod numa_cli;
mod pinned_results;
mod pipes_cli;
mod probe_bench;
mod provenance_cli;
mod reproduce_freebsd;
mod reproduce_help;
mod reproduce_kvm_split;
mod reproduce_nested;
mod reproduce_numa;
mod robust_inputs;
mod robust_io;
mod sim_cli;
mod sim_reader_options;
mod sweep_cli;
mod trace_cli;
