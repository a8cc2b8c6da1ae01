//! The integration tests of `mmulab-advise` as one test binary: each file beside this one is
//! a module. Run one file's tests with `cargo test --release -p mmulab-advise --test it NAME::`.

mod advise_shim;
mod advise_thp;
mod host_backing;
