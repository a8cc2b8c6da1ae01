//! Nested (two-stage) translation: exact descriptor reads of a two-dimensional walk,
//! derived by hand, with no caches and with each kind of cache alone; the combined TLB's
//! page size; `[vm]` config errors.
//!
//! Every test warms up the same way: a 1-entry combined TLB, loads of `A`, then `B`
//! (4 KiB above `A`: same guest page tables, next guest page), then `A` again. The first
//! two map everything (guest and stage-2 faults); the third misses the TLB (B took the one
//! entry) and walks with every table and page mapped: the walk the test counts.

use mmulab_sim::config::from_toml;
use mmulab_sim::Machine;
use mmulab_trace::{AccessKind, MemRef};

const A: u64 = 0x4000_0000;
const B: u64 = A + 0x1000;

fn machine(extra: &str, guest_pwc: &str) -> Machine {
    machine_s2("ept", extra, guest_pwc)
}

/// [`machine`] with stage-2 format `stage2` (`"ept"` or `"npt"`).
fn machine_s2(stage2: &str, extra: &str, guest_pwc: &str) -> Machine {
    let toml = format!(
        r#"
[machine]
arch = "x86_64"
[memory]
size = "1GiB"
[walk]
pwc_entries = {guest_pwc}
mem_latency = 30
[[tlb]]
name = "l1"
serves = "data"
entries = 1
ways = 1
page_sizes = ["4K", "2M", "1G"]
[os]
policy = "base"
[vm]
stage2 = "{stage2}"
backing = "4K"
memory = "256MiB"
{extra}
"#
    );
    Machine::new(from_toml(&toml, None, &[]).expect("config")).expect("machine")
}

/// (walks, stage-1 refs, stage-2 refs) of the last access of A, B, A.
fn last_walk(m: &mut Machine) -> (u64, u64, u64) {
    let (w, _, _) = last_walk_by_level(m);
    w
}

/// [`last_walk`], and that walk's stage-1 and stage-2 references by level.
fn last_walk_by_level(m: &mut Machine) -> ((u64, u64, u64), Vec<u64>, Vec<u64>) {
    for va in [A, B] {
        m.access(&MemRef::new(va, AccessKind::Load, 8)).unwrap();
    }
    let before = counts(m);
    let n0 = m.stats().nested.unwrap();
    m.access(&MemRef::new(A, AccessKind::Load, 8)).unwrap();
    let after = counts(m);
    let n1 = m.stats().nested.unwrap();
    let d = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
    (
        (after.0 - before.0, after.1 - before.1, after.2 - before.2),
        d(&n1.stage1_refs_by_level, &n0.stage1_refs_by_level),
        d(&n1.stage2_refs_by_level, &n0.stage2_refs_by_level),
    )
}

fn counts(m: &Machine) -> (u64, u64, u64) {
    let s = m.stats();
    let n = s.nested.as_ref().expect("nested stats");
    (s.counters.walks, n.stage1_refs(), n.stage2_refs())
}

#[test]
fn a_cold_4_by_4_walk_reads_24_descriptors() {
    // 4 guest levels, each: its table's gPA through 4 EPT levels, then the guest
    // descriptor: 4 × (4 + 1) = 20; the final gPA through 4 EPT levels: 4. Total 24:
    // 4 stage-1 references, 20 stage-2.
    let mut m = machine("", "[]");
    let (w, s1, s2) = last_walk_by_level(&mut m);
    assert_eq!(w, (1, 4, 20));
    // One guest descriptor per guest level; each of the 5 stage-2 walks reads one
    // descriptor per EPT level.
    assert_eq!((s1, s2), (vec![1, 1, 1, 1], vec![5, 5, 5, 5]));
    // The JSON carries the totals.
    let n = m.stats().nested.unwrap();
    let j = m.stats().to_json();
    assert_eq!(j["walks"]["stage1_refs"].as_u64(), Some(n.stage1_refs()));
    assert_eq!(j["walks"]["stage2_refs"].as_u64(), Some(n.stage2_refs()));
    assert_eq!(j["walks"]["stage2_refs_by_level"].as_array().map(Vec::len), Some(4));
}

#[test]
fn a_stage2_tlb_removes_every_stage2_read() {
    // The 4 guest tables and page A were translated in the warm-up; each of the 5 gPAs
    // hits the 64-entry stage-2 TLB: only the 4 guest descriptors are read.
    let mut m = machine(
        "[vm.s2tlb]\nentries = 64\nways = 64\npage_sizes = [\"4K\", \"2M\", \"1G\"]",
        "[]",
    );
    assert_eq!(last_walk(&mut m), (1, 4, 0));
    let s = m.stats().nested.unwrap();
    assert_eq!(s.stage2_translations - s.stage2_walks, s.s2tlb.unwrap().hits);
}

#[test]
fn stage1_walk_caches_skip_guest_levels_and_their_stage2_walks() {
    // AMD NPT: the guest PDE cache holds A's page table as a gPA: the walk starts at
    // guest level 3: that table's gPA through stage 2 (4) + its descriptor (1) + the
    // final gPA (4) = 9.
    let mut m = machine_s2("npt", "", "[4, 8, 32]");
    assert_eq!(last_walk(&mut m), (1, 1, 8));
}

/// Issue 49, defect 7: Intel's paging-structure caches hold combined entries (SDM
/// 28.3.1): the guest PDE cache gives A's page table as a host-physical address, so
/// the walk reads its descriptor (1) with no stage-2 walk for the table, then
/// translates the final gPA (4): 5 reads, where AMD's design (above) reads 9.
#[test]
fn ept_walk_cache_hits_are_combined_entries() {
    let mut m = machine("", "[4, 8, 32]");
    assert_eq!(last_walk(&mut m), (1, 1, 4));
}

#[test]
fn stage2_walk_caches_leave_one_read_per_stage2_translation() {
    // Each of the 5 gPAs (4 guest tables, page A) lies in a 2 MiB region walked in the
    // warm-up: the stage-2 PDE cache starts each stage-2 walk at level 3 (1 read).
    // 4 guest descriptors + 5 × 1 = 9.
    let mut m = machine("pwc_entries = [4, 8, 32]", "[]");
    assert_eq!(last_walk(&mut m), (1, 4, 5));
}

#[test]
fn the_combined_tlb_holds_the_smaller_page() {
    // Guest 2 MiB pages. Over 4 KiB host backing the combined entry for A is 4 KiB, so
    // A + 4 KiB (same guest page) misses and walks; over 2 MiB host pages the entry is
    // 2 MiB and A + 4 KiB hits.
    for (backing, walks_for_second) in [("4K", true), ("hugetlb-2M", false)] {
        let toml = format!(
            r#"
[machine]
arch = "x86_64"
[memory]
size = "1GiB"
[[tlb]]
name = "l1"
serves = "data"
entries = 8
ways = 8
page_sizes = ["4K", "2M", "1G"]
[os]
policy = "fixed"
page_size = "2M"
[vm]
backing = "{backing}"
memory = "256MiB"
"#
        );
        let mut m = Machine::new(from_toml(&toml, None, &[]).unwrap()).unwrap();
        m.access(&MemRef::new(A, AccessKind::Load, 8)).unwrap();
        let w = m.stats().counters.walks;
        m.access(&MemRef::new(B, AccessKind::Load, 8)).unwrap();
        assert_eq!(m.stats().counters.walks > w, walks_for_second, "{backing}");
    }
}

#[test]
fn vm_config_errors_name_the_key() {
    let base = "[machine]\narch = \"x86_64\"\n[memory]\nsize = \"1GiB\"\n[[tlb]]\nname = \"l1\"\nserves = \"data\"\nentries = 8\nways = 8\npage_sizes = [\"4K\"]\n[vm]\n";
    let err = |extra: &str| match from_toml(&format!("{base}{extra}"), None, &[]) {
        Ok(_) => panic!("accepted: {extra}"),
        Err(e) => e.to_string(),
    };
    let e = err("stage2 = \"aarch64-s2\"");
    assert!(e.contains("vm.stage2 = \"aarch64-s2\"") && e.contains("\"ept\""), "{e}");
    let e = err("memory = \"2GiB\"");
    assert!(e.contains("vm.memory = \"2GiB\"") && e.contains("memory.size"), "{e}");
    let e = err("backing = \"hugetlb-32M\"");
    assert!(
        e.contains("vm.backing = \"hugetlb-32M\"") && e.contains("no 32M leaf"),
        "{e}"
    );
    let e = err("backing = \"16K\"");
    assert!(e.contains("vm.backing = \"16K\""), "{e}");
    // A stage-2 format as the guest's arch.
    let e = from_toml(&base.replace("\"x86_64\"", "\"ept\""), None, &[])
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("machine.arch = \"ept\" is a stage-2 format"), "{e}");
    // Arm guests take the Arm granules; `--set` reaches the section.
    let arm = base.replace("\"x86_64\"", "\"aarch64\"");
    for g in ["aarch64-s2", "aarch64-s2-16k", "aarch64-s2-64k"] {
        let spec = from_toml(&arm, None, &[format!("vm.stage2={g}"), "vm.backing=base".into()]).unwrap();
        assert_eq!(spec.vm.unwrap().stage2.arch_name(), g);
    }
    let e = from_toml(
        &arm,
        None,
        &["vm.stage2=aarch64-s2-64k".into(), "vm.backing=hugetlb-1G".into()],
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("aarch64-s2-64k tables have no 1G leaf"), "{e}");
}

/// In a guest a touch also backs the guest frame in the host: the window's access to
/// the page then takes neither a guest fault nor a host fault.
#[test]
fn a_touch_in_a_guest_backs_its_frame_in_the_host() {
    let mut m = machine("", "[]");
    m.event(&mmulab_trace::Event::Touch {
        asid: 0,
        addr: A & !0xfff,
        write: true,
    })
    .unwrap();
    let s = m.stats();
    let host = s.nested.as_ref().unwrap().host_faults;
    assert!(host >= 1, "the touch backs its frame: {host} host faults");
    assert_eq!((s.counters.faults, s.counters.references), (1, 0));
    m.access(&MemRef::new(A, AccessKind::Store, 8)).unwrap();
    let s2 = m.stats();
    assert_eq!(s2.counters.faults, 1, "no guest fault in the window");
    assert_eq!(
        s2.nested.as_ref().unwrap().host_faults,
        host,
        "no host fault in the window"
    );
}
