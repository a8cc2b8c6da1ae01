//! The third way's preload shim (shim/thp_regions.c) gives THP to the allocations of the
//! listed sizes and the heap, and to nothing else: a child mallocs an 8 MiB and a 6 MiB
//! block and grows its brk heap by 12 MiB of small blocks, touches all of it, and sleeps
//! while the sampler reads its smaps_rollup. THP must be in `madvise` mode (in `always`
//! every region gets huge pages whatever the shim does; then the test is skipped).
//!
//! Expected AnonHugePages, by hand: a block gets whole 2 MiB pages only inside its span
//! (its start is malloc's header past a page boundary), so the 8 MiB block holds 3 or 4,
//! the 6 MiB one 2 or 3; the heap's 12 MiB, madvised as it grows, at least 4 and at
//! most the 10 that the madvised heap (12 MiB and the shim's 8 MiB top pad) holds; an
//! unlisted size gets none.

#![cfg(target_os = "linux")]

use mmulab_advise::child::{run_env, Way};
use mmulab_advise::shim;

const CHILD: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    char *a = malloc(8u << 20), *b = malloc(6u << 20);
    if (!a || !b) return 2;
    memset(a, 1, 8u << 20);
    memset(b, 1, 6u << 20);
    for (int i = 0; i < 196608; i++) { /* 12 MiB of 64-byte blocks on the brk heap */
        char *s = malloc(48);
        if (!s) return 3;
        s[0] = 1;
    }
    usleep(600000);
    return a[5] + b[5] == 2 ? 0 : 4;
}
"#;

fn build(name: &str, extra: &[&str]) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("mmulab-advise-shim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("child.c");
    std::fs::write(&src, CHILD).ok()?;
    let bin = dir.join(name);
    let ok = std::process::Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .args(extra)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| bin.display().to_string())
}

fn huge_with(cmd: &[String], lib: &std::path::Path, regions: &str) -> u64 {
    let env = vec![
        ("LD_PRELOAD".to_string(), shim::preload(lib)),
        (shim::ENV.to_string(), regions.to_string()),
    ];
    let r = run_env(cmd, Way::Proposal, &env).unwrap();
    assert!(r.samples > 0, "{r:?}");
    r.anon_huge_max
}

#[test]
fn the_shim_gives_huge_pages_to_the_listed_sizes_and_the_heap_only() {
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !mode.contains("[madvise]") {
        eprintln!("skipped: THP is not in madvise mode here ({})", mode.trim());
        return;
    }
    let Some(bin) = build("child", &[]) else {
        eprintln!("skipped: no C compiler (cc) to build the child");
        return;
    };
    let cmd = vec![bin.clone()];
    let dir = std::path::Path::new(&bin).parent().unwrap().to_path_buf();
    let lib = shim::install(&dir).unwrap();
    const M2: u64 = 2 << 20;
    // The 8 MiB block's VMA: 8 MiB and malloc's header, rounded to a page.
    let eight = huge_with(&cmd, &lib, &((8u64 << 20) + 4096).to_string());
    assert!((3 * M2..=4 * M2).contains(&eight), "8 MiB block: {eight}");
    let six = huge_with(&cmd, &lib, &(6u64 << 20).to_string());
    assert!((2 * M2..=3 * M2).contains(&six), "6 MiB block: {six}");
    let both = huge_with(&cmd, &lib, &format!("{},{}", 8u64 << 20, 6u64 << 20));
    assert!((5 * M2..=7 * M2).contains(&both), "both blocks: {both}");
    // The two blocks' VMAs merge into one (the 6 MiB block is mapped just below the 8 MiB
    // one, and here also with a few pages libc mapped before): that region's size matches
    // neither block, and the shim finds it in /proc/self/maps once the second block is
    // mapped, before the program writes either. The whole VMA is madvised: its 14 MiB +
    // 8 KiB or more hold 6 or 7 whole 2 MiB pages, less the one or two whose first 4 KiB
    // page malloc had written a block's header into before the madvise (a page table
    // there already, so no huge page at fault): 4 to 6. Listing either block's own size
    // instead gives 5 to 7 (above); without the maps lookup, 0.
    let merged = huge_with(&cmd, &lib, &((14u64 << 20) + 8192).to_string());
    assert!((4 * M2..=6 * M2).contains(&merged), "merged blocks: {merged}");
    let heap = huge_with(&cmd, &lib, "heap");
    assert!((4 * M2..=10 * M2).contains(&heap), "heap: {heap}");
    assert_eq!(huge_with(&cmd, &lib, "100000000"), 0, "an unlisted size");
    assert_eq!(huge_with(&cmd, &lib, ""), 0, "no regions");
    // A static build of the same child is out of the shim's reach, and said to be.
    assert_eq!(shim::unreachable(&bin), None);
    if let Some(st) = build("child_static", &["-static"]) {
        let why = shim::unreachable(&st).expect("a static binary is unreachable");
        assert!(why.contains("static binary"), "{why}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
