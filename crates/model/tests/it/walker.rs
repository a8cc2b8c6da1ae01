//! The walker: descriptor reads per walk for every leaf size, with and without page-walk
//! caches, on both formats; the visitor's flags and actions.

use mmulab_model::addr::PageSize;
use mmulab_model::mem::Memory;
use mmulab_model::pt::{Format, Pte};
use mmulab_model::space::AddressSpace;
use mmulab_model::translation::Attrs;
use mmulab_model::walk::{
    lookup, map_leaf, translate, unmap_leaf, walk, Action, Pwc, Visit, VisitKind, Visitor, WalkCounts, WalkFlags,
};

const FORMATS: [Format; 2] = [Format::X86_64, Format::Armv8_4K];

fn setup(fmt: Format) -> (Memory, AddressSpace) {
    let mut mem = Memory::new(64 << 30).unwrap();
    let space = AddressSpace::new(0, fmt, &mut mem).unwrap();
    (mem, space)
}

#[test]
fn reads_per_walk_without_pwc_follow_leaf_level() {
    for fmt in FORMATS {
        let (mut mem, sp) = setup(fmt);
        let cases = [
            (PageSize::K4, 0x7000_0000_1000u64, 4u64),
            (PageSize::M2, 0x7000_4000_0000, 3),
            (PageSize::G1, 0x7100_0000_0000, 2),
        ];
        for (size, va, expect) in cases {
            let pa = 8u64 << 30;
            map_leaf(&mut mem, fmt, sp.root, va, pa, size, Attrs::user_rw()).unwrap();
            let mut pwc = Pwc::new(fmt, &[]);
            let r = translate(&mut mem, fmt, sp.root, 0, va + 0x123, &mut pwc);
            let t = r.leaf.expect("mapped");
            assert_eq!((t.size, t.va, t.pa), (size, va, pa), "{fmt:?}");
            assert_eq!(t.translate(va + 0x123), pa + 0x123);
            assert_eq!(r.reads, expect, "{fmt:?} {size}");
            assert_eq!(r.start_level, 0);
        }
        // An unmapped address faults after reading down to the first invalid entry.
        let mut pwc = Pwc::new(fmt, &[]);
        let r = translate(&mut mem, fmt, sp.root, 0, 0x1000, &mut pwc);
        assert_eq!((r.leaf, r.reads), (None, 1));
    }
}

#[test]
fn page_walk_caches_shorten_walks_by_the_levels_they_hold() {
    for fmt in FORMATS {
        let (mut mem, sp) = setup(fmt);
        let base = 0x5000_0000_0000u64;
        // Two 4K pages in one 2M region, one in another 2M region of the same 1G region,
        // one in another 1G region of the same 512G region.
        let vas = [base, base + 0x1000, base + (2 << 20), base + (1 << 30)];
        for (i, va) in vas.iter().enumerate() {
            map_leaf(
                &mut mem,
                fmt,
                sp.root,
                *va,
                (i as u64 + 1) << 12,
                PageSize::K4,
                Attrs::user_rw(),
            )
            .unwrap();
        }
        let mut pwc = Pwc::new(fmt, &[4, 4, 4]);
        let reads: Vec<(u64, usize)> = vas
            .iter()
            .map(|&va| {
                let r = translate(&mut mem, fmt, sp.root, 0, va, &mut pwc);
                (r.reads, r.start_level)
            })
            .collect();
        // Cold: 4 reads; same PDE: 1 read from level 3; same PDPTE: 2 reads; same PML4E: 3.
        assert_eq!(reads, vec![(4, 0), (1, 3), (2, 2), (3, 1)], "{fmt:?}");
        assert_eq!(pwc.stats().hits, vec![1, 1, 1]);
        // Without the PDE cache the second walk can only skip two levels.
        let mut pwc = Pwc::new(fmt, &[4, 4, 0]);
        translate(&mut mem, fmt, sp.root, 0, vas[0], &mut pwc);
        assert_eq!(translate(&mut mem, fmt, sp.root, 0, vas[1], &mut pwc).reads, 2);
        // A different address space does not hit another's cached entries.
        let r = translate(&mut mem, fmt, sp.root, 1, vas[1], &mut pwc);
        assert_eq!(r.start_level, 0);
        // Invalidation drops the cached descriptors covering the range.
        pwc.invalidate_range(0, vas[0], vas[0] + 4096);
        assert_eq!(translate(&mut mem, fmt, sp.root, 0, vas[1], &mut pwc).reads, 4);
    }
}

#[test]
fn mapping_conflicts_and_unmap() {
    let fmt = Format::X86_64;
    let (mut mem, sp) = setup(fmt);
    let va = 0x4000_0000u64;
    map_leaf(&mut mem, fmt, sp.root, va, 0x20_0000, PageSize::M2, Attrs::user_rw()).unwrap();
    // A 4K page inside the 2M leaf conflicts; so does a misaligned 2M mapping.
    assert!(map_leaf(
        &mut mem,
        fmt,
        sp.root,
        va + 0x1000,
        0x1000,
        PageSize::K4,
        Attrs::user_rw()
    )
    .is_err());
    assert!(map_leaf(
        &mut mem,
        fmt,
        sp.root,
        va + 0x1000,
        0x20_0000,
        PageSize::M2,
        Attrs::user_rw()
    )
    .is_err());
    // A 2M leaf over an existing 4K table conflicts.
    map_leaf(
        &mut mem,
        fmt,
        sp.root,
        va + (2 << 20),
        0x1000,
        PageSize::K4,
        Attrs::user_rw(),
    )
    .unwrap();
    assert!(map_leaf(
        &mut mem,
        fmt,
        sp.root,
        va + (2 << 20),
        0x40_0000,
        PageSize::M2,
        Attrs::user_rw()
    )
    .is_err());
    let m = lookup(&mut mem, fmt, sp.root, va + 0x5678).unwrap();
    assert_eq!((m.va, m.pa, m.size, m.level), (va, 0x20_0000, PageSize::M2, 2));
    assert_eq!(
        unmap_leaf(&mut mem, fmt, sp.root, va + 5).map(|m| m.size),
        Some(PageSize::M2)
    );
    assert!(lookup(&mut mem, fmt, sp.root, va).is_none());
}

/// Records every visit.
#[derive(Default)]
struct Recorder {
    visits: Vec<(VisitKind, usize, u64, bool)>,
    skip_children_at: Option<usize>,
}

impl Visitor for Recorder {
    fn visit(&mut self, v: &Visit, _mem: &mut Memory) -> Action {
        self.visits
            .push((v.kind, v.level, v.va, matches!(v.pte, Pte::Leaf { .. })));
        if v.kind == VisitKind::TablePre && Some(v.level) == self.skip_children_at {
            return Action::SkipChildren;
        }
        Action::Continue
    }
}

#[test]
fn visitor_flags_select_visits_and_skip_levels() {
    let fmt = Format::X86_64;
    let (mut mem, sp) = setup(fmt);
    // One 2M leaf and two 4K pages in the next 2M region.
    let va = 0x4000_0000u64;
    map_leaf(&mut mem, fmt, sp.root, va, 0x20_0000, PageSize::M2, Attrs::user_rw()).unwrap();
    map_leaf(
        &mut mem,
        fmt,
        sp.root,
        va + (2 << 20),
        0x1000,
        PageSize::K4,
        Attrs::user_rw(),
    )
    .unwrap();
    map_leaf(
        &mut mem,
        fmt,
        sp.root,
        va + (2 << 20) + 0x1000,
        0x2000,
        PageSize::K4,
        Attrs::user_rw(),
    )
    .unwrap();
    let (start, end) = (va, va + (4 << 20));

    let all = |flags: WalkFlags, skip: Option<usize>, mem: &mut Memory| {
        let mut r = Recorder {
            skip_children_at: skip,
            ..Default::default()
        };
        let mut c = WalkCounts::default();
        walk(mem, fmt, sp.root, 0, start, end, flags, &mut r, &mut c);
        (r.visits, c)
    };
    // Leaves only: the 2M leaf, then 512 level-3 entries of the second region (2 valid),
    // then the invalid level-2 entry of the third region... the range ends at 4M, so
    // exactly 1 + 512 leaf visits.
    let (v, c) = all(WalkFlags::LEAF, None, &mut mem);
    assert_eq!(v.len(), 1 + 512);
    assert_eq!(v.iter().filter(|x| x.3).count(), 3);
    assert_eq!(c.visits, 513);
    // Reads: PML4E, PDPTE, 2 PDEs, 512 PTEs.
    assert_eq!(c.reads, 1 + 1 + 2 + 512);

    // Tables pre and post: PML4E, PDPTE, the PDE of the 4K region, each pre and post.
    let (v, _) = all(WalkFlags::TABLE_PRE.union(WalkFlags::TABLE_POST), None, &mut mem);
    let kinds: Vec<(VisitKind, usize)> = v.iter().map(|x| (x.0, x.1)).collect();
    assert_eq!(
        kinds,
        vec![
            (VisitKind::TablePre, 0),
            (VisitKind::TablePre, 1),
            (VisitKind::TablePre, 2),
            (VisitKind::TablePost, 2),
            (VisitKind::TablePost, 1),
            (VisitKind::TablePost, 0),
        ]
    );

    // Skipping level 3 (KVM's SKIP_LEVEL3): no level-3 entry is read or visited.
    let (v, c) = all(WalkFlags::LEAF.skip_level(3), None, &mut mem);
    assert!(v.iter().all(|x| x.1 < 3));
    assert_eq!(c.reads, 4);

    // SkipChildren at the level-2 table descriptor has the same effect for that table.
    let (v, c) = all(WalkFlags::LEAF.union(WalkFlags::TABLE_PRE), Some(2), &mut mem);
    assert!(v.iter().all(|x| x.1 < 3));
    assert_eq!(c.reads, 4);
}

/// Splits a 2M leaf into a table of 512 4K leaves from inside a LEAF callback: the walker
/// must re-read the descriptor and descend into the new table.
struct Splitter {
    fmt: Format,
    leaves_seen: usize,
}

impl Visitor for Splitter {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if let (Pte::Leaf { pa, attrs }, 2) = (v.pte, v.level) {
            let table = mem.alloc_table(512).unwrap();
            for i in 0..512 {
                mem.pt
                    .write(table, i, self.fmt.encode_leaf(3, pa + i as u64 * 4096, attrs));
            }
            mem.pt.write(v.table, v.index, self.fmt.encode_table(2, table));
        } else if matches!(v.pte, Pte::Leaf { .. }) {
            self.leaves_seen += 1;
        }
        Action::Continue
    }
}

#[test]
fn a_leaf_callback_that_installs_a_table_is_descended() {
    for fmt in FORMATS {
        let (mut mem, sp) = setup(fmt);
        let va = 0x4000_0000u64;
        map_leaf(&mut mem, fmt, sp.root, va, 0x20_0000, PageSize::M2, Attrs::user_rw()).unwrap();
        let mut s = Splitter { fmt, leaves_seen: 0 };
        walk(
            &mut mem,
            fmt,
            sp.root,
            0,
            va,
            va + (2 << 20),
            WalkFlags::LEAF,
            &mut s,
            &mut WalkCounts::default(),
        );
        assert_eq!(s.leaves_seen, 512, "{fmt:?}");
        let m = lookup(&mut mem, fmt, sp.root, va + 0x3456).unwrap();
        assert_eq!((m.size, m.pa), (PageSize::K4, 0x20_3000));
    }
}

/// The fast hardware walk (`translate`) and the same walk through the visitor walker
/// (`translate_visitor`) agree on random page tables of every format: leaves of every
/// size (contiguous groups included, some deliberately broken), probes of mapped and
/// unmapped addresses, random page-walk-cache sizes — same translation, same reads,
/// same start level, same leaf location, and the caches end in the same state.
#[test]
fn fast_walk_matches_the_visitor_walk() {
    use mmulab_base::SplitMix64;
    use mmulab_model::walk::translate_visitor;
    let mut rng = SplitMix64::new(0x5eed);
    for fmt in Format::ALL {
        for round in 0..6 {
            let (mut mem, sp) = setup(fmt);
            let sizes = fmt.page_sizes();
            // A window of 64 slots of the largest size used this round, so leaves of
            // different sizes share upper tables and some addresses stay unmapped.
            let biggest = sizes[(round % sizes.len()).max(1).min(sizes.len() - 1)];
            let window = 0x4000_0000u64 & !biggest.offset_mask();
            let mut next_pa = 1u64 << 30;
            let mut mapped = Vec::new();
            for _ in 0..200 {
                let size = sizes[(rng.next_u64() % sizes.len() as u64) as usize];
                if size > biggest {
                    continue;
                }
                let va = window + (rng.next_u64() % (64 * biggest.bytes() / size.bytes())) * size.bytes();
                if va >> fmt.va_bits() != 0 {
                    continue;
                }
                next_pa = (next_pa + size.bytes() - 1) & !size.offset_mask();
                let attrs = if rng.next_u64() % 3 == 0 {
                    Attrs(Attrs::USER)
                } else {
                    Attrs::user_rw()
                };
                if map_leaf(&mut mem, fmt, sp.root, va, next_pa, size, attrs).is_ok() {
                    mapped.push((va, size));
                    next_pa += size.bytes();
                }
            }
            // Break some groups: a different permission on one entry makes the group
            // UNPREDICTABLE, which mmulab walks as separate pages.
            for &(va, size) in mapped.iter().step_by(7) {
                if size != fmt.base_page() {
                    let _ = mmulab_model::walk::set_leaf_attrs(
                        &mut mem,
                        fmt,
                        sp.root,
                        va + fmt.base_page().bytes(),
                        Attrs(Attrs::USER),
                    );
                }
            }
            let pwc_sizes: Vec<usize> = (0..4)
                .map(|_| [0usize, 1, 2, 4, 8][(rng.next_u64() % 5) as usize])
                .collect();
            let mut fast = Pwc::new(fmt, &pwc_sizes);
            let mut slow = Pwc::new(fmt, &pwc_sizes);
            for i in 0..3000 {
                let va = if i % 4 == 0 || mapped.is_empty() {
                    window + rng.next_u64() % (64 * biggest.bytes())
                } else {
                    let (va, size) = mapped[(rng.next_u64() % mapped.len() as u64) as usize];
                    va + rng.next_u64() % size.bytes()
                };
                if va >> fmt.va_bits() != 0 {
                    continue;
                }
                let asid = (rng.next_u64() % 8 == 0) as u16;
                let a = translate(&mut mem, fmt, sp.root, asid, va, &mut fast);
                let b = translate_visitor(&mut mem, fmt, sp.root, asid, va, &mut slow);
                assert_eq!(a, b, "{fmt:?} round {round} va {va:#x} pwc {pwc_sizes:?}");
                assert_eq!(fast.stats(), slow.stats(), "{fmt:?} round {round} va {va:#x}");
            }
            assert!(
                fast.stats().lookups == 0
                    || fast.stats().hits.iter().sum::<u64>() > 0
                    || pwc_sizes.iter().all(|&e| e == 0)
            );
        }
    }
}
