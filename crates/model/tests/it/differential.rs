//! Differential test: the TLB model (`Tlb`: structure-of-arrays, O(1) LRU lists, MRU
//! shortcut, per-size occupancy skips, vectorized scans) against a deliberately simple
//! reference model (per set, a plain list of entries in recency or insertion order, or
//! a plain array of ways with an explicit PLRU tree), driven with random traces over
//! many geometries, replacement policies and page-size mixes. Every lookup must agree
//! hit for hit and miss for miss, and every hit must return the same translation.

use mmulab_base::SplitMix64;
use mmulab_model::addr::PageSize;
use mmulab_model::replacement::Policy;
use mmulab_model::tlb::{Hierarchy, Serves, Tlb, TlbSpec, Unsupported};
use mmulab_model::translation::{Attrs, Translation};

use crate::ref_policy::RefPolicy;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    vpn: u64,
    size: PageSize,
    asid: u16,
    pa: u64,
}

/// The reference: one `Vec<Option<Entry>>` of ways per set plus the policy's bookkeeping
/// kept in the most obvious form (ref_policy.rs, shared with the data caches' reference).
struct RefTlb {
    sets: usize,
    ways: usize,
    sizes: Vec<PageSize>,
    unsupported: Unsupported,
    slots: Vec<Vec<Option<Entry>>>,
    /// The policy's bookkeeping (ref_policy.rs).
    policy: RefPolicy,
}

impl RefTlb {
    fn new(spec: &TlbSpec) -> RefTlb {
        let sets = spec.entries / spec.ways;
        RefTlb {
            sets,
            ways: spec.ways,
            sizes: spec.page_sizes.clone(),
            unsupported: spec.unsupported,
            slots: vec![vec![None; spec.ways]; sets],
            policy: RefPolicy::new(spec.replacement, sets, spec.ways, spec.seed),
        }
    }

    fn lookup(&mut self, va: u64, asid: u16) -> Option<Entry> {
        for &size in &self.sizes.clone() {
            let vpn = va >> size.shift();
            let set = (vpn % self.sets as u64) as usize;
            if let Some(way) = self.slots[set]
                .iter()
                .position(|e| e.is_some_and(|e| e.vpn == vpn && e.size == size && e.asid == asid))
            {
                self.policy.touched(set, way, false);
                return self.slots[set][way];
            }
        }
        None
    }

    fn fill(&mut self, t: &Translation, va: u64) {
        let (size, base_va, base_pa) = if self.sizes.contains(&t.size) {
            (t.size, t.va, t.pa)
        } else {
            let smaller = self.sizes.iter().rev().find(|s| **s < t.size);
            match (self.unsupported, smaller) {
                (Unsupported::Splinter, Some(&s)) => {
                    let off = (va - t.va) & !s.offset_mask();
                    (s, t.va + off, t.pa + off)
                }
                _ => return,
            }
        };
        let vpn = base_va >> size.shift();
        let set = (vpn % self.sets as u64) as usize;
        let way = match self.slots[set].iter().position(Option::is_none) {
            Some(w) => w,
            None => self.policy.victim(set),
        };
        self.slots[set][way] = Some(Entry {
            vpn,
            size,
            asid: t.asid,
            pa: base_pa,
        });
        self.policy.touched(set, way, true);
    }

    fn invalidate(&mut self, asid: u16, start: u64, end: u64) -> usize {
        let mut n = 0;
        for set in 0..self.sets {
            for way in 0..self.ways {
                if let Some(e) = self.slots[set][way] {
                    let va = e.vpn << e.size.shift();
                    if e.asid == asid && va < end && va + e.size.bytes() > start {
                        self.slots[set][way] = None;
                        self.policy.forget(set, way);
                        n += 1;
                    }
                }
            }
        }
        n
    }
}

/// The "page table" of the test: each 1 GiB region of each address space is backed by
/// one page size, chosen at random; physical addresses are a fixed function of the VA.
fn truth(va: u64, asid: u16, region_sizes: &[PageSize]) -> Translation {
    let region = ((va >> 30) as usize + asid as usize * 7) % region_sizes.len();
    let size = region_sizes[region];
    let base = va & !size.offset_mask();
    let pa = (base ^ 0x5a5a_0000_0000) & 0x0000_ffff_ffff_f000 & !size.offset_mask();
    Translation {
        va: base,
        pa,
        size,
        asid,
        attrs: Attrs::user_rw(),
    }
}

fn run_case(rng: &mut SplitMix64, case: usize) {
    let all = [PageSize::K4, PageSize::K64, PageSize::M2, PageSize::G1];
    let policies = crate::ref_policy::every_policy();
    // Way counts cover one partial and several full 16-way fingerprint chunks, and both
    // LRU representations (the LRU lists), including sets wider than one 16-lane chunk.
    let ways = [1usize, 2, 3, 4, 5, 8, 12, 16, 17, 32, 48, 64, 65, 100][rng.below(14) as usize];
    let sets = if ways > 16 {
        [1usize, 2, 3][rng.below(3) as usize]
    } else {
        [1usize, 2, 3, 4, 7, 16][rng.below(6) as usize]
    };
    let mut sizes: Vec<PageSize> = all.iter().copied().filter(|_| rng.below(2) == 0).collect();
    if sizes.is_empty() {
        sizes.push(PageSize::K4);
    }
    let spec = TlbSpec {
        name: format!("case{case}"),
        serves: Serves::Unified,
        entries: sets * ways,
        ways,
        page_sizes: sizes,
        unsupported: if rng.below(2) == 0 {
            Unsupported::Splinter
        } else {
            Unsupported::Bypass
        },
        replacement: policies[rng.below(policies.len() as u64) as usize],
        latency: 1,
        next: None,
        seed: rng.next_u64(),
    };
    let region_sizes: Vec<PageSize> = (0..4).map(|_| all[rng.below(4) as usize]).collect();
    let mut fast = Tlb::new(spec.clone());
    let mut slow = RefTlb::new(&spec);
    // A working set of pages a little larger than the TLB, with repeats for locality.
    let span_pages = (spec.entries as u64 * 2).max(4);
    let mut last = 0u64;
    for step in 0..3000 {
        let asid = rng.below(2) as u16;
        let va = if rng.below(3) == 0 {
            last // immediate repeat: exercises the MRU shortcut
        } else {
            let region = rng.below(4) << 30;
            region | (rng.below(span_pages) << 12) | (rng.below(4096) & !7)
        };
        last = va;
        if rng.below(200) == 0 {
            let start = va & !((1 << 21) - 1);
            fast.invalidate_range(asid, start, start + (1 << 21));
            slow.invalidate(asid, start, start + (1 << 21));
        }
        // Small ranges (a page or a few) take the per-page lookup path, unaligned
        // ones included.
        if rng.below(50) == 0 {
            let start = va & !0xfff;
            let len = [1u64, 4096, 3 * 4096 + 5, 64 << 10][rng.below(4) as usize];
            assert_eq!(
                fast.invalidate_range(asid, start, start + len),
                slow.invalidate(asid, start, start + len),
                "case {case} step {step}: invalidate [{start:#x}, +{len:#x})"
            );
        }
        let f = fast
            .lookup(va, asid)
            .map(|(_, t)| (t.va >> t.size.shift(), t.size, t.pa));
        let s = slow.lookup(va, asid).map(|e| (e.vpn, e.size, e.pa));
        assert_eq!(f, s, "case {case} step {step}: va {va:#x} asid {asid} spec {spec:?}");
        if f.is_none() {
            let t = truth(va, asid, &region_sizes);
            fast.fill(&t, va);
            slow.fill(&t, va);
        }
    }
    assert_eq!(fast.stats().hits + fast.stats().misses, 3000);
}

#[test]
fn tlb_matches_reference_model_over_random_geometries() {
    let mut rng = SplitMix64::new(0x7b1);
    for case in 0..400 {
        run_case(&mut rng, case);
    }
}

#[test]
fn fully_associative_lru_of_n_entries_holds_exactly_n_pages() {
    // A cyclic sweep over N pages hits every time once warm iff N <= entries (LRU).
    for entries in [1usize, 7, 32, 48] {
        for pages in [entries, entries + 1] {
            let spec = TlbSpec {
                name: "fa".into(),
                serves: Serves::Data,
                entries,
                ways: entries,
                page_sizes: vec![PageSize::K4],
                unsupported: Unsupported::Splinter,
                replacement: Policy::Lru,
                latency: 1,
                next: None,
                seed: 0,
            };
            let mut tlb = Tlb::new(spec);
            for round in 0..3 {
                for p in 0..pages as u64 {
                    let va = p << 12;
                    if tlb.lookup(va, 0).is_none() {
                        let t = Translation {
                            va,
                            pa: va,
                            size: PageSize::K4,
                            asid: 0,
                            attrs: Attrs::user_rw(),
                        };
                        tlb.fill(&t, va);
                    }
                }
                if round == 0 {
                    tlb.reset_stats();
                }
            }
            let expect_misses = if pages <= entries { 0 } else { 2 * pages as u64 };
            assert_eq!(tlb.stats().misses, expect_misses, "entries {entries} pages {pages}");
        }
    }
}

/// The reference of a two-level hierarchy: an entry level in front of a second one,
/// each a [`RefTlb`]; a hit in the second refills the first, a miss in both fills both.
struct RefHierarchy {
    levels: [RefTlb; 2],
}

impl RefHierarchy {
    /// (level, translation) of the hit, if any, after the refills.
    fn access(&mut self, va: u64, asid: u16, truth: &Translation) -> Option<(usize, (u64, PageSize, u64))> {
        if let Some(e) = self.levels[0].lookup(va, asid) {
            return Some((0, (e.vpn, e.size, e.pa)));
        }
        if let Some(e) = self.levels[1].lookup(va, asid) {
            let t = Translation {
                va: e.vpn << e.size.shift(),
                pa: e.pa,
                size: e.size,
                asid,
                attrs: truth.attrs,
            };
            self.levels[0].fill(&t, va);
            return Some((1, (e.vpn, e.size, e.pa)));
        }
        self.levels[0].fill(truth, va);
        self.levels[1].fill(truth, va);
        None
    }
}

/// The specialised path of a hierarchy whose levels are all LRU with power-of-two set
/// counts (`Hierarchy::lru_pow2`'s `lookup` and `fill_path`, which the simulator
/// takes for such machines, e.g. the default one) against the reference model, over
/// random geometries of that shape, page-size mixes, splintering and bypassing levels
/// and invalidations; and its counters against the general path's on the same trace.
#[test]
fn specialised_lru_power_of_two_hierarchy_matches_the_reference() {
    let all = [PageSize::K4, PageSize::K64, PageSize::M2, PageSize::G1];
    let mut rng = SplitMix64::new(0x5eed_f457);
    for case in 0..300 {
        let spec = |name: &str, ways: usize, sets: usize, next: Option<usize>, rng: &mut SplitMix64| {
            let mut sizes: Vec<PageSize> = all.iter().copied().filter(|_| rng.below(3) != 0).collect();
            if sizes.is_empty() {
                sizes.push(all[rng.below(4) as usize]);
            }
            TlbSpec {
                name: name.into(),
                serves: Serves::Unified,
                entries: sets * ways,
                ways,
                page_sizes: sizes,
                unsupported: if rng.below(2) == 0 {
                    Unsupported::Splinter
                } else {
                    Unsupported::Bypass
                },
                replacement: Policy::Lru,
                latency: 1,
                next,
                seed: 0,
            }
        };
        let l1 = spec(
            "l1",
            [1usize, 2, 4, 8, 16, 32, 64][rng.below(7) as usize],
            [1usize, 2, 4][rng.below(3) as usize],
            Some(1),
            &mut rng,
        );
        let l2 = spec(
            "l2",
            [1usize, 4, 8, 12, 16, 17][rng.below(6) as usize],
            [1usize, 2, 16, 64][rng.below(4) as usize],
            None,
            &mut rng,
        );
        let specs = vec![l1.clone(), l2.clone()];
        let mut fast = Hierarchy::new(specs.clone(), 0, 0);
        let mut general = Hierarchy::new(specs, 0, 0);
        assert!(fast.is_lru_pow2(), "case {case}: LRU with 2^k sets");
        let mut reference = RefHierarchy {
            levels: [RefTlb::new(&l1), RefTlb::new(&l2)],
        };
        let region_sizes: Vec<PageSize> = (0..4).map(|_| all[rng.below(4) as usize]).collect();
        let span_pages = ((l1.entries + l2.entries) as u64 * 2).max(8);
        for step in 0..3000 {
            let asid = rng.below(2) as u16;
            let va = (rng.below(4) << 30) | (rng.below(span_pages) << 12) | (rng.below(4096) & !7);
            if rng.below(150) == 0 {
                let start = va & !((1 << 21) - 1);
                fast.invalidate_range(asid, start, start + (1 << 21));
                general.invalidate_range(asid, start, start + (1 << 21));
                for r in &mut reference.levels {
                    r.invalidate(asid, start, start + (1 << 21));
                }
            }
            let t = truth(va, asid, &region_sizes);
            let want = reference.access(va, asid, &t);
            for (h, is_fast) in [(&mut fast, true), (&mut general, false)] {
                let look = if is_fast {
                    h.lru_pow2().expect("LRU with 2^k sets").lookup(va, asid, false)
                } else {
                    h.lookup(va, asid, false)
                };
                let got = look.hit.map(|(level, slot)| {
                    let e = h.entry(level, slot, asid);
                    (level, (e.va >> e.size.shift(), e.size, e.pa))
                });
                assert_eq!(
                    got, want,
                    "case {case} step {step} (fast {is_fast}): va {va:#x} asid {asid} l1 {l1:?} l2 {l2:?}"
                );
                let (upto, fill) = match look.hit {
                    Some((level, slot)) => (look.len - 1, h.entry(level, slot, asid)),
                    None => (look.len, t),
                };
                if upto > 0 {
                    if is_fast {
                        h.lru_pow2()
                            .expect("LRU with 2^k sets")
                            .fill_path(false, upto, &fill, va);
                    } else {
                        h.fill_path(false, upto, &fill, va);
                    }
                }
            }
        }
        for (a, b) in fast.levels().iter().zip(general.levels()) {
            assert_eq!(a.stats(), b.stats(), "case {case}: counters of {}", a.spec().name);
            assert_eq!(a.occupancy(), b.occupancy(), "case {case}");
        }
    }
}

/// The specialised path exists only for the shape it serves: every level LRU with a
/// power-of-two number of sets.
#[test]
fn specialised_path_only_for_lru_with_power_of_two_sets() {
    let level = |ways: usize, sets: usize, replacement: Policy, next: Option<usize>| TlbSpec {
        name: "l".into(),
        serves: Serves::Unified,
        entries: sets * ways,
        ways,
        page_sizes: vec![PageSize::K4],
        unsupported: Unsupported::Splinter,
        replacement,
        latency: 1,
        next,
        seed: 0,
    };
    for (l2_sets, l2_policy, has) in [
        (4, Policy::Lru, true),
        (1, Policy::Lru, true),
        (3, Policy::Lru, false),
        (4, Policy::Plru, false),
        (4, Policy::Fifo, false),
        (4, Policy::Random, false),
    ] {
        let specs = vec![level(4, 2, Policy::Lru, Some(1)), level(4, l2_sets, l2_policy, None)];
        let mut h = Hierarchy::new(specs, 0, 0);
        assert_eq!(h.lru_pow2().is_some(), has, "L2 of {l2_sets} sets, {l2_policy:?}");
        assert_eq!(h.is_lru_pow2(), has);
    }
}
