//! The integration tests of `mmulab-sim` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-sim --test it NAME::`.

mod caches;
mod dirty_log;
mod layers;
mod limits;
mod mosmodel;
mod nested;
mod nested_caches;
mod numa_alloc;
mod os_config;
mod os_faithful;
mod os_sim;
mod pipeline;
mod regions;
mod roi;
mod run_paths;
mod vm_catalog;
mod vma_events;
mod warmup_counters;
