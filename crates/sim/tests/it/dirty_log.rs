//! Dirty logging on the nested machine's stage-2 tables (`[vm.dirty_log]`): counts
//! derived by hand for a small memslot.
//!
//! The machine: an arm64 guest (4 KiB granule, 4 levels) whose `[os]` maps every page
//! as 2 MiB (`fixed`), over `aarch64-s2` tables (40-bit IPA: levels 1 to 3) whose host
//! backs guest memory with 2 MiB blocks (`hugetlb-2M`). One combined TLB level of 16
//! entries holding 4 KiB and 2 MiB entries; no walk caches. Before logging, a 2 MiB
//! guest page over a 2 MiB stage-2 block is one 2 MiB combined entry; a stage-2 walk of
//! a block reads 2 descriptors (levels 1, 2), of a page 3.

use mmulab_sim::config::from_toml;
use mmulab_sim::Machine;
use mmulab_trace::{AccessKind, MemRef};
use serde_json::Value;

const A: u64 = 0x4000_0000;
const PAGES: u64 = 8;

fn machine(dirty_log: &str) -> Machine {
    machine_with(1, dirty_log)
}

fn machine_with(cores: u32, dirty_log: &str) -> Machine {
    let toml = format!(
        r#"
[machine]
arch = "aarch64"
cores = {cores}
[memory]
size = "64MiB"
[walk]
mem_latency = 30
pwc_entries = []
[[tlb]]
name = "l1"
serves = "data"
entries = 16
ways = 16
page_sizes = ["4K", "2M"]
[os]
policy = "fixed"
page_size = "2M"
[vm]
stage2 = "aarch64-s2"
backing = "hugetlb-2M"
memory = "16MiB"
{dirty_log}
"#
    );
    Machine::new(from_toml(&toml, None, &[]).expect("config")).expect("machine")
}

fn go(m: &mut Machine, kind: AccessKind, pages: std::ops::Range<u64>) {
    for k in pages {
        m.access(&MemRef::new(A + k * 4096, kind, 8)).unwrap();
    }
}

fn log_json(m: &Machine) -> Value {
    m.stats().to_json()["vm"]["dirty_log"].clone()
}

#[test]
fn eager_splitting_splinters_the_combined_entries_and_lengthens_the_walks() {
    // Logging turns on after the first 8 loads (one 2 MiB guest page), chunk 2M.
    let mut m = machine("[vm.dirty_log]\nat = 8\neager_split_chunk = \"2M\"");
    go(&mut m, AccessKind::Load, 0..PAGES);
    // The host's 2 MiB blocks so far: the data's and the guest tables' (every block
    // of the slot, the whole guest memory, is split).
    let blocks = m.stats().nested.unwrap().host_mapped[mmulab_model::addr::PageSize::M2.index()];
    assert!(blocks >= 2, "data and tables: {blocks}");
    let warm = m.stats();
    go(&mut m, AccessKind::Load, 0..PAGES);
    // A warm-up ending where logging turns on takes all of "before" away and none of
    // "after" or of the split work.
    let w = m.stats().since(&warm).to_json()["vm"]["dirty_log"].clone();
    assert_eq!(
        (w["before"]["references"].as_u64(), w["after"]["references"].as_u64()),
        (Some(0), Some(8))
    );
    assert_eq!(w["after"]["tlb_misses"]["l1"], 8);
    assert_eq!(w["split"]["blocks_split"]["2M"], blocks);
    let j = log_json(&m);
    assert_eq!(j["turned_on_after"], 8);
    // Before: one 2 MiB combined entry served all 8 pages: one miss.
    assert_eq!(j["before"]["references"], 8);
    assert_eq!(j["before"]["tlb_misses"]["l1"], 1);
    // After: the VMID-wide flush emptied the TLB and the stage-2 entries are 4 KiB: each
    // of the 8 pages misses and walks once. A 2D walk of a 2 MiB guest page reads 3
    // guest descriptors (levels 0-2) and translates 4 guest-physical addresses (3
    // tables, the data), each now a 3-level stage-2 walk: 24 and 8 × 4 × 3 = 96.
    let after = &j["after"];
    assert_eq!(after["references"], 8);
    assert_eq!(after["tlb_misses"]["l1"], 8);
    assert_eq!(after["walks"], 8);
    assert_eq!(after["walk_refs_guest"], 24);
    assert_eq!(after["walk_refs_stage2"], 96);
    // The split work: every block written read-only once, one VMID flush; each block
    // split (the 2M chunk walk finds one level-2 block) takes one level-3 table from
    // the cache and writes its 512 entries twice and the live entry twice, with one
    // TLBI by IPA for its break-before-make.
    let s = &j["split"];
    assert_eq!(s["blocks_split"]["2M"], blocks);
    assert_eq!(s["write_protect_writes"], blocks);
    assert_eq!(s["tlbi_vmid"], 1);
    assert_eq!(s["tlbi_ipa"], blocks);
    assert_eq!(s["table_pages_taken"], blocks);
    assert_eq!(s["descriptors_written"], blocks * (512 * 2 + 2));
    assert_eq!(j["write_faults"], 0);

    // Stores: page 0's data page is read-only at stage 2: a write fault relaxes it; the
    // guest leaf is clean, and its table's page is read-only too: the walker's dirty
    // update takes a second write fault. Page 1: the guest leaf is dirty now; only its
    // data page faults. Three pages logged dirty, each with a local flush.
    go(&mut m, AccessKind::Store, 0..2);
    let j = log_json(&m);
    assert_eq!(j["write_faults"], 3);
    assert_eq!(j["pages_dirty"], 3);
    assert_eq!(j["fault_tlbi_local"], 3);
    assert_eq!(j["blocks_broken"], 0);
    // A second store to the same pages hits: no fault.
    go(&mut m, AccessKind::Store, 0..2);
    assert_eq!(log_json(&m)["write_faults"], 3);
}

#[test]
fn without_eager_splitting_a_write_breaks_one_block_and_its_pages_fault_in_lazily() {
    let mut m = machine("[vm.dirty_log]\nat = 8");
    go(&mut m, AccessKind::Load, 0..PAGES);
    let resident = m.stats().nested.unwrap().host_resident_bytes;
    // Loads after: the blocks are write-protected, not split: after the flush one 2 MiB
    // combined entry serves the 8 pages again; walks of blocks read 2 stage-2
    // descriptors per translation: 3 guest + 4 × 2 = 8.
    go(&mut m, AccessKind::Load, 0..PAGES);
    let j = log_json(&m);
    assert_eq!(j["split"]["blocks_split"], serde_json::json!({}));
    assert_eq!(j["after"]["tlb_misses"]["l1"], 1);
    assert_eq!(
        (
            j["after"]["walk_refs_guest"].as_u64(),
            j["after"]["walk_refs_stage2"].as_u64()
        ),
        (Some(3), Some(8))
    );
    // A store to page 0: its data block breaks (a table with the one page, writable);
    // the walker's dirty update then breaks the tables' block the same way.
    go(&mut m, AccessKind::Store, 0..1);
    let j = log_json(&m);
    assert_eq!(j["blocks_broken"], 2);
    assert_eq!(j["write_faults"], 2);
    assert_eq!(j["fault_tlbi_ipa"], 2);
    assert_eq!(j["pages_dirty"], 2);
    // The walk after the second break finds the guest's root and level-1 tables gone
    // with their block: two translation faults map their pages one at a time.
    assert_eq!(j["page_faults"], 2);
    // A load of page 1: its stage-2 entry went with the data block: one translation
    // fault maps it (read-only) onto the same host frames: nothing new is allocated.
    let faults = m.stats().nested.unwrap().host_faults;
    go(&mut m, AccessKind::Load, 1..2);
    let j = log_json(&m);
    assert_eq!(j["page_faults"], 3);
    assert_eq!(m.stats().nested.unwrap().host_faults, faults + 1);
    assert_eq!(m.stats().nested.unwrap().host_resident_bytes, resident);
    assert_eq!(j["pages_dirty"], 2);
}

#[test]
fn a_core_with_a_stale_read_only_copy_flushes_it_on_its_own_fault() {
    // Two cores with a stage-2 TLB. Both load page 0 after logging turned on (each
    // caches the read-only stage-2 page); core 0 stores: its write fault relaxes the page
    // and flushes core 0 only. Core 1 then stores: its stage-2 TLB still says read-only,
    // it faults, finds the page writable and flushes its own copy (KVM's -EAGAIN path),
    // and the store completes: 2 faults, 1 page made writable, 2 local flushes.
    let mut m = machine_with(
        2,
        "[vm.dirty_log]\nat = 8\neager_split_chunk = \"2M\"\n[vm.s2tlb]\nentries = 16\nways = 16\npage_sizes = [\"4K\", \"2M\"]",
    );
    go(&mut m, AccessKind::Load, 0..PAGES);
    let on = |m: &mut Machine, core: u16, kind: AccessKind| {
        let mut r = MemRef::new(A, kind, 8);
        r.core = core;
        m.access(&r).unwrap();
    };
    on(&mut m, 0, AccessKind::Load);
    on(&mut m, 1, AccessKind::Load);
    let before = log_json(&m)["write_faults"].as_u64().unwrap();
    on(&mut m, 0, AccessKind::Store);
    on(&mut m, 1, AccessKind::Store);
    let j = log_json(&m);
    assert_eq!(j["pages_dirty"], 2, "the data page and the guest table's page");
    assert_eq!(j["write_faults"].as_u64().unwrap() - before, 2);
    assert_eq!(
        j["fault_tlbi_local"], 3,
        "two relaxes on core 0, one stale copy on core 1"
    );
    // A second store on each core hits.
    on(&mut m, 0, AccessKind::Store);
    on(&mut m, 1, AccessKind::Store);
    assert_eq!(log_json(&m)["fault_tlbi_local"], 3);
}

#[test]
fn logging_never_reached_reports_the_whole_run_as_before() {
    let mut m = machine("[vm.dirty_log]\nat = 1000");
    go(&mut m, AccessKind::Load, 0..PAGES);
    let j = log_json(&m);
    assert_eq!(j["turned_on_after"], Value::Null);
    assert_eq!(j["before"]["references"], 8);
    assert_eq!(j["after"]["references"], 0);
}

#[test]
fn without_dirty_logging_nothing_changes() {
    // The same accesses with and without a `[vm.dirty_log]` that never turns on.
    let mut a = machine("");
    let mut b = machine("[vm.dirty_log]\nat = 1000");
    for m in [&mut a, &mut b] {
        go(m, AccessKind::Load, 0..PAGES);
        go(m, AccessKind::Store, 0..PAGES);
    }
    let (mut ja, mut jb) = (a.stats().to_json(), b.stats().to_json());
    jb["vm"].as_object_mut().unwrap().remove("dirty_log");
    ja["vm"].as_object_mut().unwrap().remove("dirty_log");
    assert_eq!(ja, jb);
}

#[test]
fn dirty_log_config_errors_name_the_key() {
    let err = |extra: &str, stage2: &str, arch: &str| {
        let toml = format!(
            "[machine]\narch = \"{arch}\"\n[memory]\nsize = \"64MiB\"\n[[tlb]]\nname = \"l1\"\nserves = \"data\"\nentries = 8\nways = 8\npage_sizes = [\"4K\"]\n[vm]\nstage2 = \"{stage2}\"\nmemory = \"16MiB\"\n[vm.dirty_log]\n{extra}\n"
        );
        from_toml(&toml, None, &[]).unwrap_err().to_string()
    };
    let e = err("at = 1", "ept", "x86_64");
    assert!(e.contains("vm.dirty_log") && e.contains("ept"), "{e}");
    let e = err("at = 1\neager_split_chunk = \"64K\"", "aarch64-s2", "aarch64");
    assert!(e.contains("eager_split_chunk") && e.contains("2M"), "{e}");
    let e = err("at = 1\nstart = \"12MiB\"\nbytes = \"8MiB\"", "aarch64-s2", "aarch64");
    assert!(e.contains("vm.dirty_log") && e.contains("past guest memory"), "{e}");
    let e = err("at = 1\nsplit_walker = \"fast\"", "aarch64-s2", "aarch64");
    assert!(e.contains("split_walker") && e.contains("skip-children"), "{e}");
    let e = err("start = \"0\"", "aarch64-s2", "aarch64");
    assert!(e.contains("at"), "{e}");
}
