//! The 4 KiB way of `mmulab advise` really keeps a program off huge pages: a child that
//! madvises an 8 MiB anonymous region (at least three aligned 2 MiB ranges inside it,
//! whatever its alignment) and touches it gets huge pages when run plainly (THP here is
//! in `madvise` or `always` mode) and none under `prctl(PR_SET_THP_DISABLE)`, as seen in
//! its smaps_rollup while it runs.
//!
//! The child is a small C program built by the test (`cc`), run directly: the sampler
//! reads the smaps_rollup of the PID advise started, so the child must not be a wrapper
//! (a pyenv `python3` shim is a shell script that starts the interpreter as a
//! descendant, which is why this test once sampled a process without the region).

#![cfg(target_os = "linux")]

use std::path::PathBuf;

use mmulab_advise::child::{run, Way};

const CHILD: &str = r#"
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void) {
    size_t n = 8u << 20;
    char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 2;
    if (madvise(p, n, MADV_HUGEPAGE) != 0) return 3;
    memset(p, 'x', n);
    usleep(600000); /* 0.6 s: the sampler reads smaps_rollup every 5 ms */
    return p[n - 1] == 'x' ? 0 : 4;
}
"#;

/// Builds the child into a fresh temporary directory; `None` without a C compiler.
fn madvising_child() -> Option<Vec<String>> {
    let dir = std::env::temp_dir().join(format!("mmulab-advise-thp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("madvise_child.c");
    let bin: PathBuf = dir.join("madvise_child");
    std::fs::write(&src, CHILD).ok()?;
    let ok = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| vec![bin.display().to_string()])
}

fn thp_mode() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default()
}

#[test]
fn prctl_thp_disable_leaves_a_madvising_child_without_huge_pages() {
    if thp_mode().contains("[never]") || thp_mode().is_empty() {
        eprintln!("skipped: THP is unavailable here");
        return;
    }
    let Some(cmd) = madvising_child() else {
        eprintln!("skipped: no C compiler (cc) to build the child");
        return;
    };
    // Plain run (the program madvises itself): huge pages appear.
    let plain = run(&cmd, Way::ThpAlways).unwrap();
    assert!(plain.samples > 0, "{plain:?}");
    assert!(
        plain.anon_huge_max >= 2 << 20,
        "a madvised, touched 8 MiB region got no 2 MiB page: {plain:?}"
    );
    // Under the prctl: none, though the program asks for them.
    let base = run(&cmd, Way::Base4k).unwrap();
    assert!(base.samples > 0, "{base:?}");
    assert_eq!(base.anon_huge_max, 0, "{base:?}");
    // The touched memory is there all the same (so 0 is not an empty sample).
    assert!(base.anon_max >= 8 << 20, "{base:?}");
    let _ = std::fs::remove_dir_all(std::path::Path::new(&cmd[0]).parent().unwrap());
}
