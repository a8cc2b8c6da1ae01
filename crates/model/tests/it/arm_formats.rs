//! ARM formats through the walker: 16K/64K granules, contiguous-bit groups, ARMv7 short
//! descriptors (large pages, sections, supersections) and LPAE — reads per walk, group
//! sizes reported, broken groups degrading to pages, and TLB levels caching a group as one
//! entry or splintering it.

use mmulab_model::addr::PageSize::{self, *};
use mmulab_model::mem::Memory;
use mmulab_model::pt::Format;
use mmulab_model::replacement::Policy;
use mmulab_model::space::AddressSpace;
use mmulab_model::tlb::{Serves, Tlb, TlbSpec, Unsupported};
use mmulab_model::translation::Attrs;
use mmulab_model::walk::{lookup, map_leaf, set_leaf_attrs, translate, unmap_leaf, Pwc};

fn setup(fmt: Format, bytes: u64) -> (Memory, AddressSpace) {
    let mut mem = Memory::new(bytes).unwrap();
    let space = AddressSpace::new(0, fmt, &mut mem).unwrap();
    (mem, space)
}

/// (format, size, va, reads of a cold walk without walk caches)
fn cases() -> Vec<(Format, PageSize, u64, u64)> {
    vec![
        (Format::Armv8_4K, K4, 0x7000_0000_1000, 4),
        (Format::Armv8_4K, K64, 0x7000_0001_0000, 4),
        (Format::Armv8_4K, M2, 0x7000_0040_0000, 3),
        (Format::Armv8_4K, M32, 0x7000_0200_0000, 3),
        (Format::Armv8_4K, G1, 0x7000_4000_0000, 2),
        (Format::Armv8_16K, K16, 0x7000_0000_4000, 4),
        (Format::Armv8_16K, M2, 0x7000_0020_0000, 4),
        (Format::Armv8_16K, M32, 0x7000_0400_0000, 3),
        (Format::Armv8_16K, G1, 0x7000_8000_0000, 3),
        (Format::Armv8_64K, K64, 0x7000_0001_0000, 3),
        (Format::Armv8_64K, M2, 0x7000_0020_0000, 3),
        (Format::Armv8_64K, M512, 0x7000_2000_0000, 2),
        (Format::Armv7, K4, 0x0010_1000, 2),
        (Format::Armv7, K64, 0x0021_0000, 2),
        (Format::Armv7, M1, 0x0030_0000, 1),
        (Format::Armv7, M16, 0x0100_0000, 1),
        (Format::Armv7Lpae, K4, 0x0000_1000, 3),
        (Format::Armv7Lpae, K64, 0x0001_0000, 3),
        (Format::Armv7Lpae, M2, 0x0040_0000, 2),
        (Format::Armv7Lpae, M32, 0x0200_0000, 2),
        (Format::Armv7Lpae, G1, 0x4000_0000, 1),
    ]
}

#[test]
fn every_leaf_size_walks_to_one_translation_of_its_size() {
    for (fmt, size, va, reads) in cases() {
        let (mut mem, sp) = setup(fmt, 4 << 30);
        let pa = 2u64 << 30;
        map_leaf(&mut mem, fmt, sp.root, va, pa, size, Attrs::user_rw()).unwrap();
        let probe = va + size.bytes() - 8;
        let r = translate(&mut mem, fmt, sp.root, 0, probe, &mut Pwc::new(fmt, &[]));
        let t = r.leaf.unwrap_or_else(|| panic!("{fmt:?} {size}: not mapped"));
        assert_eq!((t.size, t.va, t.pa), (size, va, pa), "{fmt:?} {size}");
        assert_eq!(t.translate(probe), pa + size.bytes() - 8);
        assert_eq!(r.reads, reads, "{fmt:?} {size}");
        let m = lookup(&mut mem, fmt, sp.root, probe).unwrap();
        assert_eq!((m.size, m.va, m.pa), (size, va, pa));
        // The whole group is cleared by unmap.
        unmap_leaf(&mut mem, fmt, sp.root, va).unwrap();
        assert!(lookup(&mut mem, fmt, sp.root, va).is_none(), "{fmt:?} {size}");
        assert!(lookup(&mut mem, fmt, sp.root, probe).is_none(), "{fmt:?} {size}");
    }
}

#[test]
fn groups_write_every_entry_with_the_format_layout() {
    // ARMv8 4K: 16 L3 entries, each with its own address and the contiguous bit.
    let fmt = Format::Armv8_4K;
    let (mut mem, sp) = setup(fmt, 1 << 30);
    map_leaf(&mut mem, fmt, sp.root, 0x10_0000, 0x20_0000, K64, Attrs::user_rw()).unwrap();
    let mut pwc = Pwc::new(fmt, &[]);
    for i in 0..16u64 {
        let va = 0x10_0000 + i * 4096;
        let m = lookup(&mut mem, fmt, sp.root, va).unwrap();
        assert_eq!((m.size, m.pa, m.level), (K64, 0x20_0000, 3));
        let r = translate(&mut mem, fmt, sp.root, 0, va, &mut pwc);
        assert_eq!(r.leaf.unwrap().translate(va + 5), 0x20_0000 + i * 4096 + 5);
    }
    // Next to it a plain page: not part of the group.
    map_leaf(&mut mem, fmt, sp.root, 0x11_0000, 0x40_0000, K4, Attrs::user_rw()).unwrap();
    assert_eq!(lookup(&mut mem, fmt, sp.root, 0x11_0000).unwrap().size, K4);
    // ARMv7: a supersection is 16 identical first-level entries.
    let fmt = Format::Armv7;
    let (mut mem, sp) = setup(fmt, 1 << 30);
    map_leaf(&mut mem, fmt, sp.root, 0x0200_0000, 0x0100_0000, M16, Attrs::user_rw()).unwrap();
    for i in 0..16u64 {
        let m = lookup(&mut mem, fmt, sp.root, 0x0200_0000 + (i << 20)).unwrap();
        assert_eq!((m.size, m.pa, m.level), (M16, 0x0100_0000, 0));
    }
    // Misaligned groups are refused.
    assert!(map_leaf(&mut mem, fmt, sp.root, 0x0301_1000, 0, K64, Attrs::user_rw()).is_err());
}

#[test]
fn a_broken_contiguous_group_is_walked_as_pages() {
    let fmt = Format::Armv8_4K;
    let (mut mem, sp) = setup(fmt, 1 << 30);
    let va = 0x10_0000u64;
    map_leaf(&mut mem, fmt, sp.root, va, 0x20_0000, K64, Attrs::user_rw()).unwrap();
    // Clear the contiguous bit of entry 5 by unmapping and remapping it as a page.
    let mut pwc = Pwc::new(fmt, &[]);
    let r = translate(&mut mem, fmt, sp.root, 0, va + 5 * 4096, &mut pwc);
    let (table, index, level) = r.leaf_at.unwrap();
    assert_eq!((level, index), (3, 0x100 + 5));
    let raw = mem.pt.read(table, index);
    mem.pt.write(table, index, raw & !(1 << 52));
    for i in [0u64, 5, 15] {
        let t = translate(&mut mem, fmt, sp.root, 0, va + i * 4096, &mut pwc)
            .leaf
            .unwrap();
        assert_eq!(
            (t.size, t.va, t.pa),
            (K4, va + i * 4096, 0x20_0000 + i * 4096),
            "entry {i}"
        );
    }
    // Access and dirty bits may differ inside a valid group (hardware updates one entry).
    mem.pt.write(table, index, raw);
    set_leaf_attrs(
        &mut mem,
        fmt,
        sp.root,
        va + 3 * 4096,
        Attrs::user_rw().with(Attrs::ACCESSED | Attrs::DIRTY),
    )
    .unwrap();
    let t = translate(&mut mem, fmt, sp.root, 0, va + 3 * 4096, &mut pwc)
        .leaf
        .unwrap();
    assert_eq!((t.size, t.pa), (K64, 0x20_0000));
    assert!(t.attrs.has(Attrs::DIRTY) && t.attrs.has(Attrs::CONTIG));
    let t = translate(&mut mem, fmt, sp.root, 0, va, &mut pwc).leaf.unwrap();
    assert!(!t.attrs.has(Attrs::DIRTY));
    assert_eq!(t.size, K64);
}

fn level(sizes: &[PageSize], unsupported: Unsupported) -> Tlb {
    Tlb::new(TlbSpec {
        name: "t".into(),
        serves: Serves::Data,
        entries: 32,
        ways: 32,
        page_sizes: sizes.to_vec(),
        unsupported,
        replacement: Policy::Lru,
        latency: 1,
        next: None,
        seed: 0,
    })
}

#[test]
fn a_level_holding_the_group_size_caches_the_group_as_one_entry() {
    let fmt = Format::Armv8_16K;
    let (mut mem, sp) = setup(fmt, 1 << 30);
    let va = 0x4000_0000u64;
    map_leaf(&mut mem, fmt, sp.root, va, 0x1000_0000, M2, Attrs::user_rw()).unwrap();
    let mut pwc = Pwc::new(fmt, &[]);
    let mut holds = level(&[K16, M2], Unsupported::Splinter);
    let mut splinters = level(&[K16], Unsupported::Splinter);
    // 128 distinct 16 KiB pages of the group.
    for i in 0..128u64 {
        let a = va + i * 16384;
        for tlb in [&mut holds, &mut splinters] {
            if tlb.lookup(a, 0).is_none() {
                let t = translate(&mut mem, fmt, sp.root, 0, a, &mut pwc).leaf.unwrap();
                assert_eq!(t.size, M2);
                tlb.fill(&t, a);
            }
        }
    }
    assert_eq!((holds.stats().misses, holds.occupancy()), (1, 1));
    assert_eq!((splinters.stats().misses, splinters.stats().splinters), (128, 128));
    assert_eq!(splinters.occupancy(), 32);
}

#[test]
fn armv7_descriptors_are_32_bit_and_short_tables_have_their_sizes() {
    let fmt = Format::Armv7;
    let (mut mem, sp) = setup(fmt, 1 << 30);
    map_leaf(&mut mem, fmt, sp.root, 0x1234_5000, 0x0765_4000, K4, Attrs::user_rw()).unwrap();
    let r = translate(&mut mem, fmt, sp.root, 0, 0x1234_5678, &mut Pwc::new(fmt, &[]));
    let (table, index, _) = r.leaf_at.unwrap();
    assert!(mem.pt.read(table, index) < 1 << 32);
    assert_eq!(index, 0x45);
    assert_eq!(r.leaf.unwrap().translate(0x1234_5678), 0x0765_4678);
    // mmulab keeps ARMv7 short-descriptor memory below 4 GiB (the 32-bit PA of pages and
    // sections), so a mapping beyond it is refused.
    assert!(map_leaf(&mut mem, fmt, sp.root, 0x2000_0000, 1 << 32, K4, Attrs::user_rw()).is_err());
}
