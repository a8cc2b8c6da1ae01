//! Builds `shim/thp_regions.c` into the shared library advise preloads for its third way
//! (THP on the proposed regions only; src/shim.rs), with the C compiler the `cc` crate
//! finds (the same one the trace crate's zstd and liblzma builds use). The library is
//! embedded in the binary, so a run needs no compiler.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = "shim/thp_regions.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("libmmulab_thp_regions.so");
    let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.args(["-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(src)
        .arg("-ldl");
    let status = cmd.status().unwrap_or_else(|e| {
        panic!(
            "cannot run the C compiler {:?} to build {src}: {e}; install one (Debian: apt-get install gcc)",
            compiler.path()
        )
    });
    assert!(
        status.success(),
        "building {src} failed ({status}): see the compiler's messages above"
    );
}
