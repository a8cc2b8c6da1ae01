//! The integration tests of `mmulab-model` as one test binary: each file beside this one is
//! a module (one binary links the workspace once, where a binary per file linked it
//! once each; docs/architecture.md, "Tests"). Run one file's tests with
//! `cargo test --release -p mmulab-model --test it NAME::`.

mod arm_formats;
mod cache_differential;
mod cache_policies;
mod differential;
mod dram_digest;
mod dram_sched;
mod gpu;
mod kvm_split;
mod numa;
mod os_common;
mod os_contract;
mod os_granule;
mod os_pressure;
mod os_rules;
mod os_shrinker;
mod os_unmap;
mod os_zero;
mod pt_formats;
mod ref_policy;
mod walker;
