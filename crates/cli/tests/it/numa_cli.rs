//! `[numa]` end to end (docs/numa.md): the node ranges and counters `sim --json`
//! reports, huge pages interleaved whole through an OS policy's fault path, the table
//! section, and every bad value refused with its key named.

use crate::common;
use common::{json_at_root as json_ok, mmulab_at_root as mmulab};

fn sets(extra: &[&str]) -> Vec<String> {
    // Private pages: under the zero-page default a load-only run maps one shared frame.
    ["os.zero_page=false"]
        .iter()
        .chain(extra)
        .flat_map(|s| ["--set".to_string(), s.to_string()])
        .collect()
}

/// memory.size = 4,194,316 KiB (4 GiB + 12 KiB = 4,294,979,584 bytes) over 3 nodes: chunk = floor(span
/// / 3) rounded down to the page = 349,526 pages = 1,431,658,496 bytes (model
/// tests/it/numa.rs derives it); the last node ends at the end of memory with 349,527
/// pages. A short `seq` run under the default (local) policy puts every page on node 0.
#[test]
fn json_lists_nodes_with_byte_ranges() {
    let mut args = vec!["sim", "--json", "-w", "seq:size=64KiB"];
    let s = sets(&["memory.size=4194316KiB", "numa.fake=3"]);
    args.extend(s.iter().map(String::as_str));
    let v = json_ok(&args);
    let n = &v["numa"];
    assert_eq!(n["policy"], "local");
    let nodes = n["nodes"].as_array().unwrap();
    let chunk = 1_431_658_496u64;
    let want = [
        (0, chunk, 349_526),
        (chunk, 2 * chunk, 349_526),
        (2 * chunk, 4_294_979_584, 349_527),
    ];
    for (node, (s, e, p)) in nodes.iter().zip(want) {
        assert_eq!((node["start"].as_u64(), node["end"].as_u64()), (Some(s), Some(e)));
        assert_eq!(node["pages"].as_u64(), Some(p));
    }
    // 16 data pages + 4 page tables (x86-64: PML4, PDPT, PD, PT), all local to node 0.
    assert_eq!(nodes[0]["allocated_pages"], 20);
    assert_eq!(nodes[0]["local_node"], 20);
    assert_eq!(
        (
            nodes[1]["allocated_pages"].as_u64(),
            nodes[2]["allocated_pages"].as_u64()
        ),
        (Some(0), Some(0))
    );
}

/// THP with interleave over 4 nodes of 16 MiB (Cortex-A76, aarch64 4K): `seq` over 16
/// MiB at 0x4000_0000_0000 faults 8 PMD-sized pages in the inferred 1 GiB VMA starting
/// there (vm_pgoff = 2^34, >> 9 = 2^25 ≡ 0 mod 4), units 0..7 → nodes 0, 1, 2, 3, 0, 1,
/// 2, 3: 2 × 512 frames each. The 3 page tables (PGD, PUD, PMD: no PTE table under a
/// THP) come from the task counter: nodes 0, 1, 2. So nodes 0-2 hold 1,025 frames and
/// node 3 1,024; interleave hits 3, 3, 3, 2 (all 11 allocations hit).
#[test]
fn thp_interleaves_whole_pages_through_the_fault_path() {
    let mut args = vec!["sim", "--json", "-m", "cortex-a76", "-w", "seq:size=16MiB"];
    let s = sets(&[
        "memory.size=64MiB",
        "os.policy=thp",
        "numa.fake=4",
        "numa.policy=interleave",
    ]);
    args.extend(s.iter().map(String::as_str));
    let v = json_ok(&args);
    assert_eq!(v["memory"]["pages"]["2M"], 8);
    let nodes = v["numa"]["nodes"].as_array().unwrap();
    let frames: Vec<u64> = nodes.iter().map(|n| n["alloc_frames"].as_u64().unwrap()).collect();
    assert_eq!(frames, [1025, 1025, 1025, 1024]);
    let hits: Vec<u64> = nodes.iter().map(|n| n["interleave_hit"].as_u64().unwrap()).collect();
    assert_eq!(hits, [3, 3, 3, 2]);
    assert_eq!(v["numa"]["numa_miss"], 0);
}

/// Without `[numa]` the JSON has no `numa` key (the pinned results hold the rest).
#[test]
fn no_numa_section_no_key() {
    let v = json_ok(&["sim", "--json", "-w", "seq:size=64KiB"]);
    assert!(v.get("numa").is_none());
}

/// The table report's section: one row per node.
#[test]
fn table_has_a_numa_section() {
    let mut args = vec!["sim", "-w", "seq:size=64KiB"];
    let s = sets(&["memory.size=64MiB", "numa.fake=2", "numa.policy=interleave"]);
    args.extend(s.iter().map(String::as_str));
    let out = mmulab(&args);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("numa: 2 fake nodes, policy interleave"), "{text}");
    assert!(text.contains("0x2000000"), "{text}");
}

/// `numa.fake` above MAX_NUMNODES = 16 is reduced to 16 with a note on stderr, as the
/// kernel's `numa_emu_cmdline` does with its notice; 16 itself gets no note. 1 MiB over
/// 16 nodes: chunk = 64 KiB, so 16 nodes of 65,536 bytes, the last ending at 1 MiB.
#[test]
fn fake_above_max_numnodes_is_reduced_with_a_note() {
    for (fake, noted) in [(40, true), (16, false)] {
        let s = sets(&["memory.size=1MiB", &format!("numa.fake={fake}")]);
        let mut args = vec!["sim", "--json", "-w", "seq:size=8KiB"];
        args.extend(s.iter().map(String::as_str));
        let out = mmulab(&args);
        assert!(out.status.success());
        let e = String::from_utf8_lossy(&out.stderr);
        let note = format!("mmulab: note: numa.fake = {fake}: more than MAX_NUMNODES (16); reduced to 16 nodes");
        assert_eq!(e.contains(&note), noted, "fake={fake}: {e}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let nodes = v["numa"]["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 16);
        assert_eq!(nodes[15]["start"].as_u64(), Some(15 * 65_536));
        assert_eq!(nodes[15]["end"].as_u64(), Some(1 << 20));
    }
}

/// Bad input: each error names the key and says what to do.
#[test]
fn bad_values_name_their_key() {
    let cases: &[(&[&str], &str)] = &[
        (&["numa.fake=0"], "numa.fake = 0"),
        (
            &["numa.policy=weighted-interleave", "numa.weights=[0,1]"],
            "numa.weights[0] = 0",
        ),
        (
            &["numa.policy=weighted-interleave", "numa.weights=[3,256]"],
            "numa.weights[1] = 256",
        ),
        (
            &["numa.policy=weighted-interleave", "numa.weights=[3]"],
            "one per node (2)",
        ),
        (&["numa.weights=[1,1]"], "numa.weights applies only"),
        (&["numa.policy=bind", "numa.nodes=[]"], "numa.nodes = []"),
        (
            &["numa.policy=bind", "numa.nodes=[2]"],
            "numa.nodes[0] = 2: no such node",
        ),
        (&["numa.policy=preferred"], "needs numa.nodes"),
        (&["numa.policy=local", "numa.nodes=[1]"], "takes no nodes"),
        (
            &["numa.policy=interleaved"],
            "numa.policy = \"interleaved\" is not known",
        ),
        (&["numa.cpus=[0,1]"], "numa.cpus has 2 values"),
        (&["numa.cpus=[5]"], "numa.cpus[0] = 5"),
        (&["numa.colour=1"], "unknown field `colour`"),
    ];
    for (extra, want) in cases {
        let mut all = vec!["memory.size=1MiB", "numa.fake=2"];
        all.extend_from_slice(extra);
        let s = sets(&all);
        let mut args = vec!["sim", "-w", "seq:size=8KiB"];
        args.extend(s.iter().map(String::as_str));
        let out = mmulab(&args);
        assert!(!out.status.success(), "{extra:?} should fail");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{extra:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}

/// A `[numa]` section without `fake` (e.g. only a policy) says that the policy needs
/// fake nodes and how to give them, not only that a field is missing.
#[test]
fn policy_without_fake_says_what_fake_is() {
    let s = sets(&["memory.size=1MiB", "numa.policy=interleave"]);
    let mut args = vec!["sim", "-w", "seq:size=8KiB"];
    args.extend(s.iter().map(String::as_str));
    let out = mmulab(&args);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("[numa] needs numa.fake = N") && e.contains("--set numa.fake=8"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");
}
