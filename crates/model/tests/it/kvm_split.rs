//! KVM dirty logging with eager stage-2 splitting: visit counts of small slots derived by
//! hand, the extrapolation against full walks, and the bad-input errors.
//!
//! The tables are the stage-2 formats of a 40-bit IPA (`aarch64-s2*`, as the nested
//! translator's): 4K walks start at kernel level 1 (two concatenated tables, 1024 entries),
//! 16K and 64K at level 2 — there is no level-0 read, and at 16K/64K no level-1 read
//! either. Every slot starts at 1 GiB (gpa 0x4000_0000), so with the 4K granule it sits in
//! level-1 entry 1. The default chunk is the granule's level-2 block.

use mmulab_model::kvm::memslot::{Memslot, Memslots, KVM_MEM_LOG_DIRTY_PAGES};
use mmulab_model::kvm::{measure, measure_walked, Backing, Case, Granule, Scenario, SplitCounts, Stage2, Variant};

const M2: u64 = 2 << 20;
const G1: u64 = 1 << 30;

fn run(
    slot_bytes: u64,
    backing: Backing,
    granule: Granule,
    scenario: Scenario,
    variant: Variant,
    chunk: u64,
) -> SplitCounts {
    measure_walked(&Case {
        slot_bytes,
        backing,
        granule,
        scenario,
        variant,
        chunk,
    })
    .unwrap()
}

#[test]
fn thp_2m_slot_enable_splits_one_block() {
    // populate: L1[1] (the concatenated root) → L2 table, L2[0] = the 2M block.
    // wp: one apply chunk (1G step): reads L1, L2 (the block: 1 callback, 1 write).
    // split: capacity = ceil(2M/1G) + ceil(2M/2M) = 2 → one top-up of 2 pages; one chunk.
    //   walk reads L1, L2 → callback on the block: level 2 needs 1 page, force_pte;
    //   the build takes 1 page and walks the new level-3 table: 512 reads, 512 callbacks,
    //   512 leaves written twice each (break, make: 1024 writes); BBM writes the locked
    //   entry and the table (2 writes), 1 TLBI
    //   by IPA. Vanilla then re-reads the entry and descends: 512 level-3 reads and 512
    //   callbacks that return at once. Skip-level3 and skip-children do not descend.
    let v = run(M2, Backing::Thp, Granule::K4, Scenario::Enable, Variant::Vanilla, M2);
    assert_eq!(v.wp_walk.reads, [0, 1, 1, 0]);
    assert_eq!((v.wp_walk.callbacks, v.wp_writes, v.wp_calls), (1, 1, 1));
    assert_eq!(v.split_walk.reads, [0, 1, 1, 512]);
    assert_eq!(v.split_walk.callbacks, 1 + 512);
    assert_eq!(v.build_walk.reads, [0, 0, 0, 512]);
    assert_eq!(v.build_walk.callbacks, 512);
    assert_eq!(v.blocks_split, [0, 0, 1, 0]);
    assert_eq!((v.pages_taken, v.descriptors_written), (1, 2 * 512 + 2));
    assert_eq!((v.tlbi_ipa, v.tlbi_range, v.tlbi_vmid), (1, 0, 1));
    assert_eq!((v.topups, v.pages_allocated, v.split_calls), (1, 2, 1));
    for variant in [Variant::SkipLevel3, Variant::SkipChildren] {
        let s = run(M2, Backing::Thp, Granule::K4, Scenario::Enable, variant, M2);
        assert_eq!(s.split_walk.reads, [0, 1, 1, 0], "{variant:?}");
        assert_eq!(s.split_walk.callbacks, 1, "{variant:?}");
        // Everything but the split walk's level-3 visits is the same work.
        assert_eq!(s.build_walk, v.build_walk);
        assert_eq!((s.pages_taken, s.descriptors_written, s.tlbi_ipa), (1, 2 * 512 + 2, 1));
    }
}

#[test]
fn pages_2m_slot_enable_only_walks() {
    // Already 4K: nothing to split. wp visits and writes all 512 pages; the split walk
    // reads L1, the L2 table entry (no callback: LEAF only) and, vanilla, 512 pages
    // (512 callbacks); skip-level3 stops at the level-2 table entry. One top-up (2 pages)
    // happens before the first chunk all the same.
    let v = run(M2, Backing::Pages, Granule::K4, Scenario::Enable, Variant::Vanilla, M2);
    assert_eq!(v.wp_walk.reads, [0, 1, 1, 512]);
    assert_eq!((v.wp_walk.callbacks, v.wp_writes), (512, 512));
    assert_eq!(v.split_walk.reads, [0, 1, 1, 512]);
    assert_eq!(v.split_walk.callbacks, 512);
    assert_eq!((v.blocks_split, v.pages_taken, v.tlbi_ipa), ([0; 4], 0, 0));
    assert_eq!((v.topups, v.pages_allocated), (1, 2));
    let s = run(
        M2,
        Backing::Pages,
        Granule::K4,
        Scenario::Enable,
        Variant::SkipLevel3,
        M2,
    );
    assert_eq!(s.split_walk.reads, [0, 1, 1, 0]);
    assert_eq!(s.split_walk.callbacks, 0);
    assert_eq!(s.wp_walk, v.wp_walk);
}

#[test]
fn hugetlb_1g_slot_with_2m_chunks_splits_one_level_then_each_2m() {
    // Chunk 2M: capacity 2 < 513, so the 1G block is split one level only (no force_pte):
    // the build takes 1 page, writes 512 2M blocks (512 reads and callbacks at level 2).
    // The walker re-reads level 1, descends into the new table for its 2M chunk and splits
    // that block (force_pte, 1 page, 512 level-3 leaves). Each later chunk (511) reads
    // L1 (table), its L2 block and splits it: 512 walks, each one read at L1 (no L0). Top-ups: chunk 0 finds 0 pages (adds 2),
    // chunk 1 finds 0 (adds 2), chunks 2..511 find 1 (add 1): 512 top-ups, 514 pages.
    let v = run(
        G1,
        Backing::Hugetlb1G,
        Granule::K4,
        Scenario::Enable,
        Variant::Vanilla,
        M2,
    );
    assert_eq!(v.split_walk.reads, [0, 512, 512, 512 * 512]);
    // 1 level-1 block + 512 level-2 blocks + 512 × 512 level-3 entries.
    assert_eq!(v.split_walk.callbacks, 1 + 512 + 512 * 512);
    assert_eq!(v.build_walk.reads, [0, 0, 512, 512 * 512]);
    assert_eq!(v.blocks_split, [0, 1, 512, 0]);
    assert_eq!(v.pages_taken, 1 + 512);
    assert_eq!(v.tlbi_ipa, 513);
    // Every subtree entry twice (break, make), every live block twice.
    assert_eq!(v.descriptors_written, 2 * 512 + 2 + 512 * (2 * 512 + 2));
    assert_eq!((v.topups, v.pages_allocated), (512, 514));
    // wp: one apply chunk reads the 1G block at L1.
    assert_eq!(v.wp_walk.reads, [0, 1, 0, 0]);
    let s = run(
        G1,
        Backing::Hugetlb1G,
        Granule::K4,
        Scenario::Enable,
        Variant::SkipLevel3,
        M2,
    );
    assert_eq!(s.split_walk.reads, [0, 512, 512, 0]);
    assert_eq!(s.split_walk.callbacks, 1 + 512);
    // Skip-children changes nothing here: the 1G split was not complete (no force_pte),
    // and level-3 tables are skipped anyway.
    let c = run(
        G1,
        Backing::Hugetlb1G,
        Granule::K4,
        Scenario::Enable,
        Variant::SkipChildren,
        M2,
    );
    assert_eq!(c, s);
}

#[test]
fn hugetlb_1g_slot_with_1g_chunk_builds_the_whole_tree() {
    // Chunk 1G: capacity 1 + 512 = 513 → force_pte on the 1G block: the build takes 513
    // pages (the L2 table and 512 L3 tables): 512 L2 callbacks that install tables, 512 ×
    // 512 leaves. Vanilla then reads the 512 new L2 table entries (no callbacks) and all
    // 512 × 512 L3 entries (callbacks); skip-level3 reads the 512 L2 entries only;
    // skip-children none of them.
    let v = run(
        G1,
        Backing::Hugetlb1G,
        Granule::K4,
        Scenario::Enable,
        Variant::Vanilla,
        G1,
    );
    // One walk: the L1 block, then the new L2 table and its L3 tables.
    assert_eq!(v.split_walk.reads, [0, 1, 512, 512 * 512]);
    assert_eq!(v.split_walk.callbacks, 1 + 512 * 512);
    assert_eq!(v.build_walk.reads, [0, 0, 512, 512 * 512]);
    assert_eq!((v.pages_taken, v.topups, v.pages_allocated), (513, 1, 513));
    assert_eq!((v.blocks_split, v.tlbi_ipa), ([0, 1, 0, 0], 1));
    let s = run(
        G1,
        Backing::Hugetlb1G,
        Granule::K4,
        Scenario::Enable,
        Variant::SkipLevel3,
        G1,
    );
    assert_eq!((s.split_walk.reads, s.split_walk.callbacks), ([0, 1, 512, 0], 1));
    let c = run(
        G1,
        Backing::Hugetlb1G,
        Granule::K4,
        Scenario::Enable,
        Variant::SkipChildren,
        G1,
    );
    assert_eq!((c.split_walk.reads, c.split_walk.callbacks), ([0, 1, 0, 0], 1));
    assert_eq!(c.build_walk, v.build_walk);
}

#[test]
fn thp_2m_slot_clear_dirty_log_in_64_page_words() {
    // 8 words of 64 × 4K = 256K. Word 0: wp reads L1, the L2 block (1 callback, 1
    // write); the split walk reads the same 2 entries, splits the whole 2M block (the
    // build walks all 512 leaves) and, vanilla, descends over its own 64 pages. Words 1..7:
    // wp reads L1, L2 (table) and 64 pages (callbacks, no writes: the split copied the
    // read-only block), the split walk the same (vanilla) or 2 entries (skip-level3).
    // Top-ups (capacity 2 before each chunk): word 0 finds 0 and adds 2, then takes 1;
    // word 1 finds 1 < 2 and adds 1; words 2..7 find 2 (nothing split since): 2 top-ups,
    // 3 pages.
    let v = run(
        M2,
        Backing::Thp,
        Granule::K4,
        Scenario::ClearDirtyLog,
        Variant::Vanilla,
        M2,
    );
    assert_eq!(v.words, 8);
    assert_eq!(v.wp_walk.reads, [0, 8, 8, 7 * 64]);
    assert_eq!((v.wp_walk.callbacks, v.wp_writes), (1 + 7 * 64, 1));
    assert_eq!(v.split_walk.reads, [0, 8, 8, 8 * 64]);
    assert_eq!(v.split_walk.callbacks, 1 + 8 * 64);
    assert_eq!(v.build_walk.reads, [0, 0, 0, 512]);
    assert_eq!((v.topups, v.pages_allocated, v.split_calls), (2, 3, 8));
    assert_eq!((v.tlbi_ipa, v.tlbi_vmid), (1, 1));
    let s = run(
        M2,
        Backing::Thp,
        Granule::K4,
        Scenario::ClearDirtyLog,
        Variant::SkipLevel3,
        M2,
    );
    assert_eq!((s.split_walk.reads, s.split_walk.callbacks), ([0, 8, 8, 0], 1));
}

#[test]
fn granules_16k_and_64k_split_their_level2_blocks() {
    // 16K: tables start at kernel level 2 (16 concatenated tables, 32768 entries); one 32M
    // THP block at L2, read once; the new L3 table has 2048 entries. 64K: tables start at
    // level 2 too (2048 entries); one 512M block, 8192 entries per L3 table.
    let v = run(
        32 << 20,
        Backing::Thp,
        Granule::K16,
        Scenario::Enable,
        Variant::Vanilla,
        32 << 20,
    );
    assert_eq!(v.split_walk.reads, [0, 0, 1, 2048]);
    assert_eq!(v.build_walk.reads, [0, 0, 0, 2048]);
    assert_eq!((v.pages_taken, v.tlbi_ipa), (1, 1));
    let v = run(
        512 << 20,
        Backing::Thp,
        Granule::K64,
        Scenario::Enable,
        Variant::Vanilla,
        512 << 20,
    );
    assert_eq!(v.split_walk.reads, [0, 0, 1, 8192]);
    assert_eq!(v.build_walk.reads, [0, 0, 0, 8192]);
    let s = run(
        512 << 20,
        Backing::Thp,
        Granule::K64,
        Scenario::Enable,
        Variant::SkipLevel3,
        512 << 20,
    );
    assert_eq!(s.split_walk.reads, [0, 0, 1, 0]);
}

#[test]
fn split_leaves_every_page_mapped_read_only_at_the_last_level() {
    // After enabling dirty logging on a hugetlb slot every page is a read-only level-3
    // entry: the split kept the output range and the write-protection.
    let slot = Memslot {
        id: 0,
        base_gfn: G1 >> 12,
        pages: G1 >> 12,
        flags: KVM_MEM_LOG_DIRTY_PAGES,
    };
    let mut s = Stage2::new(Granule::K4, Variant::SkipChildren, G1, 8 << 20).unwrap();
    s.populate(&slot, Backing::Hugetlb1G).unwrap();
    assert_eq!(s.lookup(G1 + 0x1234_5000), Some((1, true)));
    s.enable_dirty_logging(&slot).unwrap();
    for gpa in [G1, G1 + 0x1234_5000, 2 * G1 - 4096] {
        assert_eq!(s.lookup(gpa), Some((3, false)), "{gpa:#x}");
    }
}

#[test]
fn extrapolated_large_slots_equal_full_walks() {
    // measure() walks 1, 2 and 3 GiB and extrapolates a 4 GiB slot; it must equal the
    // real walk of 4 GiB for every granule, backing, scenario and variant.
    for granule in Granule::ALL {
        for backing in Backing::ALL {
            for scenario in Scenario::ALL {
                for variant in Variant::ALL {
                    let case = Case {
                        slot_bytes: 4 * G1,
                        backing,
                        granule,
                        scenario,
                        variant,
                        chunk: Case::default_chunk(granule),
                    };
                    let (c, extrapolated) = measure(&case).unwrap();
                    assert!(extrapolated);
                    assert_eq!(c, measure_walked(&case).unwrap(), "{case:?}");
                }
            }
        }
    }
}

#[test]
fn bad_inputs_name_the_slot_key_or_address() {
    let mut slots = Memslots::new(40).unwrap();
    let a = Memslot {
        id: 1,
        base_gfn: 0x40000,
        pages: 0x40000,
        flags: 0,
    };
    slots.add(a).unwrap();
    let overlap = Memslot {
        id: 2,
        base_gfn: 0x7ffff,
        ..a
    };
    let e = slots.add(overlap).unwrap_err().to_string();
    assert!(
        e.contains("memslot 2") && e.contains("overlaps memslot 1") && e.contains("0x7ffff000"),
        "{e}"
    );
    let beyond = Memslot {
        id: 3,
        base_gfn: (1 << 28) - 1,
        pages: 2,
        flags: 0,
    };
    let e = slots.add(beyond).unwrap_err().to_string();
    assert!(e.contains("memslot 3") && e.contains("40-bit IPA"), "{e}");
    let e = slots.find(0x1000).unwrap_err().to_string();
    assert!(e.contains("0x1000") && e.contains("outside every memslot"), "{e}");
    assert_eq!(slots.find(0x4000_1000).unwrap().id, 1);
    // A chunk size that is not a block size of the granule.
    let e = Stage2::new(Granule::K16, Variant::Vanilla, M2, 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("eager_split_chunk_size") && e.contains("16K granule") && e.contains("32M"),
        "{e}"
    );
    assert!(Stage2::new(Granule::K4, Variant::Vanilla, 0, 1 << 20).is_ok());
    assert!(Memslots::new(52).is_err());
}

/// One host: the split model's tables are the stage-2 formats the nested translator walks
/// (`vm.stage2 = "aarch64-s2"`, `-16k`, `-64k`), 40-bit IPA, and a slot past that IPA is an
/// error naming the slot rather than an aliased mapping.
#[test]
fn split_tables_are_the_nested_translators_stage2_formats() {
    use mmulab_model::pt::Format;
    for (g, name) in [
        (Granule::K4, "aarch64-s2"),
        (Granule::K16, "aarch64-s2-16k"),
        (Granule::K64, "aarch64-s2-64k"),
    ] {
        let s = Stage2::new(g, Variant::Vanilla, 0, 1 << 20).unwrap();
        assert_eq!(Some(s.format()), Format::from_arch_name(name), "{g:?}");
        assert_eq!(s.format().va_bits(), 40, "{g:?}");
    }
    // 2 MiB at 1 TiB - 1 MiB crosses the end of the 40-bit IPA.
    let slot = Memslot {
        id: 7,
        base_gfn: ((1u64 << 40) - (1 << 20)) >> 12,
        pages: 512,
        flags: KVM_MEM_LOG_DIRTY_PAGES,
    };
    let mut s = Stage2::new(Granule::K4, Variant::Vanilla, M2, 1 << 20).unwrap();
    let e = s.populate(&slot, Backing::Pages).unwrap_err().to_string();
    assert!(e.contains("memslot 7") && e.contains("40-bit IPA"), "{e}");
}
