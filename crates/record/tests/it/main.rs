//! The integration tests of `mmulab-record` as one test binary: each file beside this one is
//! a module. Run one file's tests with `cargo test --release -p mmulab-record --test it NAME::`.

mod ptrace_sample;
mod valgrind;
