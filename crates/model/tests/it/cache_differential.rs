//! The data caches (`mmulab_model::cache`) against a deliberately plain reference model:
//! per set a list of ways, each empty or a line with a dirty flag, the level's
//! replacement policy in its most obvious form (ref_policy.rs, shared with the TLBs'
//! reference), and the hierarchy's rules (docs/memory.md, "Data caches") written out
//! step by step. Random geometries (sets powers of two or not, 1 to 16 ways, 16- to
//! 256-byte lines), every replacement policy (LRU in half the levels: sets.rs's
//! recency-ordered stores; LRU, PLRU, FIFO or random in the others: ways.rs), one to
//! three levels, private or shared, one to three cores, random loads, stores and walk
//! reads over small address ranges (so that sets conflict): every access must cost the
//! same, every memory request must be the same (address, direction, core, time), and
//! the counters must agree. Then a short sequence whose counts are derived by hand (and
//! one per policy in cache_policies.rs).

use mmulab_base::SplitMix64;
use mmulab_model::cache::{Cache, CacheSpec, Caches, FirstLevel, LevelCounts, LevelSpec, Victim};
use mmulab_model::mem::backend::{Flat, MemReq};
use mmulab_model::replacement::Policy;

use crate::ref_policy::RefPolicy;

/// Cycles of the flat memory below the caches in these tests.
const MEM: u32 = 100;

/// One level's copies in the plainest form: per set (copy × sets + set) a list of ways,
/// each empty or (line address, dirty), and the level's policy (ref_policy.rs: LRU a
/// recency list, FIFO a fill-order list, PLRU a tree of bools, random the seeded
/// stream, one for all copies as in the model).
pub struct RefCache {
    sets: u64,
    line: u64,
    slots: Vec<Vec<Option<(u64, bool)>>>,
    policy: RefPolicy,
}

impl RefCache {
    pub fn new(l: &LevelSpec, copies: usize) -> RefCache {
        let sets = l.size / (l.ways as u64 * l.line as u64);
        let n = sets as usize * copies;
        RefCache {
            sets,
            line: l.line as u64,
            slots: vec![vec![None; l.ways]; n],
            policy: RefPolicy::new(l.replacement, n, l.ways, l.seed),
        }
    }
    fn set(&self, copy: usize, pa: u64) -> usize {
        copy * self.sets as usize + ((pa / self.line) % self.sets) as usize
    }
    fn base(&self, pa: u64) -> u64 {
        pa / self.line * self.line
    }
    fn way(&self, s: usize, pa: u64) -> Option<usize> {
        let b = self.base(pa);
        self.slots[s].iter().position(|e| e.is_some_and(|e| e.0 == b))
    }
    /// True if copy `copy` holds the line of `pa`.
    pub fn present(&self, copy: usize, pa: u64) -> bool {
        self.way(self.set(copy, pa), pa).is_some()
    }
    pub fn lookup(&mut self, copy: usize, pa: u64, write: bool) -> bool {
        let s = self.set(copy, pa);
        match self.way(s, pa) {
            Some(w) => {
                self.slots[s][w].as_mut().unwrap().1 |= write;
                self.policy.touched(s, w, false);
                true
            }
            None => false,
        }
    }
    pub fn fill(&mut self, copy: usize, pa: u64, dirty: bool) -> Option<(u64, bool)> {
        let s = self.set(copy, pa);
        let w = match self.slots[s].iter().position(Option::is_none) {
            Some(w) => w,
            None => self.policy.victim(s),
        };
        let b = self.base(pa);
        let victim = self.slots[s][w].replace((b, dirty));
        self.policy.touched(s, w, true);
        victim
    }
    /// A dirty line written back from above: marked dirty if present (no event for the
    /// policy), else filled dirty.
    pub fn write_back(&mut self, copy: usize, pa: u64) -> Option<(u64, bool)> {
        let s = self.set(copy, pa);
        if let Some(w) = self.way(s, pa) {
            self.slots[s][w].as_mut().unwrap().1 = true;
            return None;
        }
        self.fill(copy, pa, true)
    }
}

pub struct RefHierarchy {
    levels: Vec<(LevelSpec, RefCache)>,
    pub counts: Vec<LevelCounts>,
    pub log: Vec<MemReq>,
}

impl RefHierarchy {
    pub fn new(spec: &CacheSpec, cores: usize) -> RefHierarchy {
        RefHierarchy {
            levels: spec
                .levels
                .iter()
                .map(|l| {
                    let n = if l.shared { 1 } else { cores };
                    (l.clone(), RefCache::new(l, n))
                })
                .collect(),
            counts: vec![LevelCounts::default(); spec.levels.len()],
            log: Vec::new(),
        }
    }

    fn copy(&self, i: usize, core: usize) -> usize {
        if self.levels[i].0.shared {
            0
        } else {
            core
        }
    }

    pub fn access(&mut self, core: usize, pa: u64, write: bool, walk: bool, now: u64) -> u64 {
        let n = self.levels.len();
        let mut lat = 0;
        let mut hit_at = n;
        for i in 0..n {
            lat += self.levels[i].0.latency as u64;
            let c = self.copy(i, core);
            let hit = self.levels[i].1.lookup(c, pa, write && i == 0);
            let k = &mut self.counts[i];
            match (hit, walk) {
                (true, false) => k.data_hits += 1,
                (true, true) => k.walk_hits += 1,
                (false, false) => k.data_misses += 1,
                (false, true) => k.walk_misses += 1,
            }
            if hit {
                hit_at = i;
                break;
            }
        }
        // The time of the first request to memory, fixed when it is first needed.
        let mut at: Option<u64> = None;
        if hit_at == n {
            let t = now + lat;
            at = Some(t);
            let line = self.levels[0].0.line as u64;
            self.log.push(MemReq {
                pa: pa / line * line,
                write: false,
                core: core as u16,
                at: t,
            });
            lat += MEM as u64;
        }
        for i in (0..hit_at).rev() {
            let c = self.copy(i, core);
            if let Some((vpa, true)) = self.levels[i].1.fill(c, pa, write && i == 0) {
                // A dirty victim: down the levels until it lands or reaches memory.
                self.counts[i].writebacks += 1;
                let mut pa2 = vpa;
                let mut j = i + 1;
                loop {
                    if j == n {
                        let t = *at.get_or_insert(now + lat);
                        self.log.push(MemReq {
                            pa: pa2,
                            write: true,
                            core: core as u16,
                            at: t,
                        });
                        break;
                    }
                    let c = self.copy(j, core);
                    match self.levels[j].1.write_back(c, pa2) {
                        Some((w, true)) => {
                            self.counts[j].writebacks += 1;
                            pa2 = w;
                            j += 1;
                        }
                        _ => break,
                    }
                }
            }
        }
        lat
    }
}

/// Random levels of a three-level shape with a path of its own (three.rs): `u32` sets of
/// 4, 8, 16 ways (`w4`) or 8, 4, 16, one to eight sets each, lines of `line` bytes.
fn three_levels(rng: &mut SplitMix64, w4: bool, line: u32) -> Vec<LevelSpec> {
    let ways = if w4 { [4, 8, 16] } else { [8, 4, 16] };
    (0..3)
        .map(|i| LevelSpec {
            name: ["l1d", "l2", "l3"][i].into(),
            size: (1u64 << rng.below(4)) * ways[i] as u64 * line as u64,
            ways: ways[i],
            line,
            latency: 1 + rng.below(20) as u32,
            shared: i > 0 && rng.below(2) == 1,
            replacement: Policy::Lru,
            seed: 0,
        })
        .collect()
}

/// A random level's policy: LRU (sets.rs's stores) in half the draws, else any policy
/// (ways.rs).
fn random_policy(rng: &mut SplitMix64) -> Policy {
    if rng.below(2) == 0 {
        Policy::Lru
    } else {
        let every = crate::ref_policy::every_policy();
        every[rng.below(every.len() as u64) as usize]
    }
}

fn random_spec(rng: &mut SplitMix64) -> CacheSpec {
    let line = 16u32 << rng.below(5);
    let nlevels = 1 + rng.below(3) as usize;
    let names = ["l1d", "l2", "l3"];
    let levels = (0..nlevels)
        .map(|i| {
            let ways = 1 + rng.below(16) as usize;
            let sets = 1 + rng.below(24);
            LevelSpec {
                name: names[i].into(),
                size: sets * ways as u64 * line as u64,
                ways,
                line,
                latency: 1 + rng.below(20) as u32,
                shared: i > 0 && rng.below(2) == 1,
                replacement: random_policy(rng),
                seed: rng.next_u64(),
            }
        })
        .collect();
    CacheSpec {
        levels,
        base_cycles: 1,
        memory_latency: MEM,
    }
}

/// Drives `c` (built from `spec`) and the reference model with 3,000 random accesses of
/// `cores` cores over `[0, span)` (a quarter walk reads, one in `write_one_in` of the
/// others stores), comparing every latency, then the memory requests and the counters.
/// Returns the accesses checked. With `split`, the first level is split off
/// (`Caches::split`, cache/first.rs) and joined back in turns of a random length, and
/// while it is apart each access is its two halves (`FirstLevel::access`, then
/// `Caches::access_below` if it missed), as the run loop's two threads take them.
fn drive(
    c: &mut Caches,
    spec: &CacheSpec,
    rng: &mut SplitMix64,
    (cores, span, write_one_in): (usize, u64, u64),
    round: usize,
    split: bool,
) -> u64 {
    c.set_logging(true);
    let mut r = RefHierarchy::new(spec, cores);
    let mut first: Option<FirstLevel> = None;
    let mut turn = 0;
    for i in 0..3000u64 {
        if split && i == turn {
            match first.take() {
                Some(f) => c.join(f),
                None => first = Some(c.split()),
            }
            turn += 1 + rng.below(400);
        }
        let core = rng.below(cores as u64) as usize;
        let pa = rng.below(span);
        let walk = rng.below(4) == 0;
        let write = !walk && rng.below(write_one_in) == 0;
        let now = i * 1000;
        let got = match &mut first {
            None => c.access(core, pa, write, walk, || now),
            Some(f) => match f.access(core, pa, write, walk) {
                None => f.latency(),
                Some((line, victim)) => c.access_below(core, line, walk, victim, || now),
            },
        };
        let want = r.access(core, pa, write, walk, now);
        assert_eq!(got, want, "round {round} access {i}: latency ({spec:?})");
    }
    if let Some(f) = first {
        c.join(f);
    }
    assert_eq!(c.take_log(), r.log, "round {round}: memory requests");
    let s = c.stats();
    let counts: Vec<LevelCounts> = s.levels.iter().map(|l| l.1).collect();
    assert_eq!(counts, r.counts, "round {round}: counters");
    let (reads, writes) = r
        .log
        .iter()
        .fold((0, 0), |(a, b), q| (a + !q.write as u64, b + q.write as u64));
    assert_eq!((s.mem_reads, s.mem_writes), (reads, writes));
    3000
}

#[test]
fn caches_agree_with_the_reference_model_over_random_geometries() {
    let mut rng = SplitMix64::new(22);
    let mut checked = 0u64;
    for round in 0..300 {
        let spec = random_spec(&mut rng);
        let cores = 1 + rng.below(3) as usize;
        // Addresses over a few times the first level's size, so sets conflict and lines
        // come back.
        let span = spec.levels[0].size * (2 + rng.below(6));
        // Every other round the caches know the top address: `u32` tag words where the
        // sets are a power of two (sets.rs), `u64` ones in the other rounds.
        let mut c = if round % 2 == 0 {
            Caches::new(&spec, cores, Box::new(Flat::new(MEM)))
        } else {
            Caches::with_limit(&spec, cores, Box::new(Flat::new(MEM)), span - 1)
        };
        checked += drive(&mut c, &spec, &mut rng, (cores, span, 3), round, false);
    }
    assert_eq!(checked, 900_000);
}

/// The first level split off (cache/first.rs: the run loop's cache thread takes the
/// rest) against the reference model, on random geometries (the general loop) and the
/// three-level shapes (three.rs), split and joined back in turns: every latency, memory
/// request and counter must agree. With the first level's dirty victim dropped from
/// `access_below`, or written down before the fills below, this test fails.
#[test]
fn the_first_level_apart_agrees_with_the_reference_model() {
    let mut rng = SplitMix64::new(2212);
    let mut checked = 0u64;
    for round in 0..200 {
        let mut spec = random_spec(&mut rng);
        if round % 2 == 0 {
            spec.levels = three_levels(&mut rng, round % 4 == 0, spec.levels[0].line);
        }
        let cores = 1 + rng.below(3) as usize;
        let span = spec.levels.last().unwrap().size * (2 + rng.below(4));
        let mut c = Caches::with_limit(&spec, cores, Box::new(Flat::new(MEM)), span - 1);
        if round % 2 == 0 {
            assert_eq!(c.kinds()[2], "u32x16", "round {round}");
        }
        checked += drive(&mut c, &spec, &mut rng, (cores, span, 2), round, true);
    }
    assert_eq!(checked, 600_000);
}

#[test]
fn a_split_caches_refuses_the_whole_access() {
    let spec = CacheSpec {
        levels: vec![LevelSpec {
            name: "l1d".into(),
            size: 1024,
            ways: 2,
            line: 64,
            latency: 4,
            shared: false,
            replacement: Policy::Lru,
            seed: 0,
        }],
        base_cycles: 1,
        memory_latency: MEM,
    };
    let mut c = Caches::new(&spec, 1, Box::new(Flat::new(MEM)));
    let f = c.split();
    assert_eq!(c.access_repeat(0, 0, false), None);
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.access(0, 0, false, false, || 0)));
    assert!(refused.is_err());
    c.join(f);
    assert_eq!(c.access(0, 0, false, false, || 0), 4 + MEM as u64);
}

#[test]
fn a_conflict_miss_and_write_backs_counted_by_hand() {
    // L1D: 2 sets × 1 way × 64 B, 2 cycles; L2: 1 set × 2 ways × 64 B, 10 cycles; memory
    // 100 cycles. Lines 0x000, 0x080, 0x100, 0x180 all fall in L1D set 0.
    let lvl = |name: &str, size, ways, latency| LevelSpec {
        name: name.into(),
        size,
        ways,
        line: 64,
        latency,
        shared: false,
        replacement: Policy::Lru,
        seed: 0,
    };
    let spec = CacheSpec {
        levels: vec![lvl("l1d", 128, 1, 2), lvl("l2", 128, 2, 10)],
        base_cycles: 1,
        memory_latency: MEM,
    };
    let mut c = Caches::new(&spec, 1, Box::new(Flat::new(MEM)));
    c.set_logging(true);
    let mut go = |pa, write| c.access(0, pa, write, false, || 0);
    // 1. store 0x000: misses both, filled from memory (2 + 10 + 100); dirty in L1D.
    assert_eq!(go(0x000, true), 112);
    // 2. load 0x080: misses both (112); its fill evicts dirty 0x000 from L1D, written
    //    back into L2 (where 0x000 is: marked dirty, nothing reaches memory).
    assert_eq!(go(0x080, false), 112);
    // 3. load 0x000: a conflict miss in L1D (0x080 took its one way), an L2 hit (2 + 10).
    assert_eq!(go(0x000, false), 12);
    // 4. load 0x100: misses both (112); L2's LRU line 0x080 (clean) goes, and L1D's
    //    0x000 (clean there since step 3) goes.
    assert_eq!(go(0x100, false), 112);
    // 5. load 0x180: misses both (112); L2's LRU line is 0x000, dirty: written to memory.
    assert_eq!(go(0x180, false), 112);
    let s = c.stats();
    let l1 = s.levels[0].1;
    let l2 = s.levels[1].1;
    assert_eq!((l1.data_hits, l1.data_misses, l1.writebacks), (0, 5, 1));
    assert_eq!((l2.data_hits, l2.data_misses, l2.writebacks), (1, 4, 1));
    assert_eq!((s.mem_reads, s.mem_writes), (4, 1));
    let log: Vec<(u64, bool, u64)> = c.take_log().iter().map(|q| (q.pa, q.write, q.at)).collect();
    // Reads leave after both lookups (12 cycles after `now` = 0); the write-back leaves
    // at the time the fill's request left (the same access's clock).
    assert_eq!(
        log,
        [
            (0x000, false, 12),
            (0x080, false, 12),
            (0x100, false, 12),
            (0x180, false, 12),
            (0x000, true, 12)
        ]
    );
}

/// One array (`Cache`) against one `RefCache`, operation by operation: every lookup's
/// hit, every fill's and write-back's victim (address and dirty bit), and `contains`
/// over the whole span after each round. The array keeps each set in recency order in
/// place (no stamps); this pins that to the plain list model, empty ways included.
#[test]
fn one_array_agrees_with_the_reference_lists_operation_by_operation() {
    let mut rng = SplitMix64::new(2207);
    let mut ops = 0u64;
    for round in 0..400 {
        let line = 16u32 << rng.below(5);
        let ways = 1 + rng.below(16) as usize;
        let sets = 1 + rng.below(24);
        let l = LevelSpec {
            name: "l1d".into(),
            size: sets * ways as u64 * line as u64,
            ways,
            line,
            latency: 1,
            shared: false,
            replacement: random_policy(&mut rng),
            seed: rng.next_u64(),
        };
        let mut c = Cache::with_policy(l.size, ways, line, l.replacement, l.seed);
        let mut r = RefCache::new(&l, 1);
        let span = l.size * (1 + rng.below(4));
        let victim = |v: Option<(u64, bool)>| v.map(|(pa, dirty)| Victim { pa, dirty });
        for i in 0..2000 {
            let pa = rng.below(span);
            match rng.below(3) {
                // A lookup, then a fill on a miss (as the hierarchy does).
                0 | 1 => {
                    let write = rng.below(2) == 0;
                    let hit = c.lookup(pa, write);
                    assert_eq!(hit, r.lookup(0, pa, write), "round {round} op {i}: lookup {pa:#x}");
                    if !hit {
                        let dirty = write && rng.below(2) == 0;
                        assert_eq!(
                            c.fill(pa, dirty),
                            victim(r.fill(0, pa, dirty)),
                            "round {round} op {i}: fill"
                        );
                    }
                }
                _ => assert_eq!(
                    c.write_back(pa),
                    victim(r.write_back(0, pa)),
                    "round {round} op {i}: write-back"
                ),
            }
            ops += 1;
        }
        for pa in (0..span).step_by(line as usize) {
            assert_eq!(c.contains(pa), r.present(0, pa), "round {round}: contains {pa:#x}");
        }
    }
    assert_eq!(ops, 800_000);
}

/// Every tag store of `cache/sets.rs` (fixed sets of 2, 4, 8 and 16 ways with `u32` and
/// with `u64` words, and the general store, also for shapes that have a fixed one)
/// against one `RefCache`, operation by operation as above. The `u32` stores get the
/// largest top address that still lets their tags fit (30 bits above the set bits) and
/// addresses near it, so a victim's address is rebuilt from high tag bits.
#[test]
fn every_tag_store_agrees_with_the_reference_lists() {
    let mut rng = SplitMix64::new(2209);
    let mut seen = std::collections::BTreeMap::new();
    for round in 0..360usize {
        let ways = [2, 4, 8, 16, 3, 12][round % 6];
        let line = 16u32 << rng.below(5);
        let sets = [1u64, 2, 4, 8, 32, 3, 6][rng.below(7) as usize];
        let size = sets * ways as u64 * line as u64;
        let l = LevelSpec {
            name: "l2".into(),
            size,
            ways,
            line,
            latency: 1,
            shared: false,
            replacement: Policy::Lru,
            seed: 0,
        };
        let span = size * (1 + rng.below(4));
        let store = (round / 6) % 4;
        let (mut c, bases) = match store {
            0 => (Cache::new(size, ways, line), vec![0, 1 << 40, (1 << 52) + size]),
            1 => {
                // The top of a 30-bit tag above the set and line bits.
                let top = 1u64 << (30 + line.trailing_zeros() + sets.trailing_zeros());
                let pa_max = top - 1;
                let near = (top - 4 * span) / size * size;
                (
                    Cache::with_limit(size, ways, line, pa_max),
                    vec![0, near, near / 3 / size * size],
                )
            }
            2 => (Cache::general(size, ways, line), vec![0, 1 << 40]),
            // Lines in their ways, LRU through the replacement trait (ways.rs): the
            // same policy as the recency-ordered stores.
            _ => (Cache::by_way(size, ways, line, Policy::Lru, 0), vec![0, 1 << 40]),
        };
        *seen.entry(c.kind()).or_insert(0u32) += 1;
        let mut r = RefCache::new(&l, 1);
        let victim = |v: Option<(u64, bool)>| v.map(|(pa, dirty)| Victim { pa, dirty });
        for i in 0..1500 {
            let pa = bases[rng.below(bases.len() as u64) as usize] + rng.below(span);
            match rng.below(3) {
                0 | 1 => {
                    let write = rng.below(2) == 0;
                    let hit = c.lookup(pa, write);
                    assert_eq!(
                        hit,
                        r.lookup(0, pa, write),
                        "round {round} op {i}: lookup {pa:#x} ({})",
                        c.kind()
                    );
                    if !hit {
                        let dirty = write && rng.below(2) == 0;
                        assert_eq!(
                            c.fill(pa, dirty),
                            victim(r.fill(0, pa, dirty)),
                            "round {round} op {i}: fill ({})",
                            c.kind()
                        );
                    }
                }
                _ => assert_eq!(
                    c.write_back(pa),
                    victim(r.write_back(0, pa)),
                    "round {round} op {i}: write-back ({})",
                    c.kind()
                ),
            }
        }
        for &b in &bases {
            for pa in (b..b + span).step_by(line as usize) {
                assert_eq!(
                    c.contains(pa),
                    r.present(0, pa),
                    "round {round}: contains {pa:#x} ({})",
                    c.kind()
                );
            }
        }
    }
    // Every store was driven (non-power-of-two set counts take the `u64` stores even
    // with a top address; 3 and 12 ways the general one).
    let kinds: Vec<&str> = seen.keys().copied().collect();
    assert_eq!(
        kinds,
        ["any", "byway", "u32x16", "u32x2", "u32x4", "u32x8", "u64x16", "u64x2", "u64x4", "u64x8"],
        "{seen:?}"
    );
}

/// The hierarchies with a path of their own (`cache/three.rs`: three levels of `u32`
/// sets of 4, 8, 16 or 8, 4, 16 ways) against the reference model, as the random test
/// above: power-of-two set counts, a top address so the tags are `u32`, one to three
/// cores, private or shared second and third levels.
#[test]
fn the_three_level_paths_agree_with_the_reference_model() {
    let mut rng = SplitMix64::new(2210);
    for round in 0..120 {
        let ways = if round % 2 == 0 { [4, 8, 16] } else { [8, 4, 16] };
        let line = 16u32 << rng.below(3);
        let names = ["l1d", "l2", "l3"];
        let levels = (0..3)
            .map(|i| {
                let sets = 1u64 << rng.below(5);
                LevelSpec {
                    name: names[i].into(),
                    size: sets * ways[i] as u64 * line as u64,
                    ways: ways[i],
                    line,
                    latency: 1 + rng.below(20) as u32,
                    shared: i > 0 && rng.below(2) == 1,
                    replacement: Policy::Lru,
                    seed: 0,
                }
            })
            .collect();
        let spec = CacheSpec {
            levels,
            base_cycles: 1,
            memory_latency: MEM,
        };
        let cores = 1 + rng.below(3) as usize;
        let span = spec.levels[2].size * (2 + rng.below(4));
        let mut c = Caches::with_limit(&spec, cores, Box::new(Flat::new(MEM)), span - 1);
        let want: Vec<String> = ways.iter().map(|w| format!("u32x{w}")).collect();
        assert_eq!(c.kinds(), want, "round {round}");
        drive(&mut c, &spec, &mut rng, (cores, span, 2), round, false);
    }
}

/// The first level's short path (`Mru` in `cache/mod.rs`: an access to the line its
/// copy's last access touched is a hit in the first way, with no search) against the
/// reference model, on streams made of such repeats: half the accesses go to the line
/// of the same core's previous access (another byte of it, load, store or walk read),
/// a quarter to the line of the previous access of any core; random geometries (the
/// general loop) and the three-level shapes (three.rs), one to three cores, the first
/// level per core or (not allowed by `[caches]`, but by the library) shared. Every
/// latency, memory request and counter must agree; with the short path's dirty bit
/// dropped, or a shared first level's copy remembered per core, this test fails.
#[test]
fn repeated_lines_agree_with_the_reference_model() {
    let mut rng = SplitMix64::new(2211);
    let mut repeats = 0u64;
    let mut repeated = 0u64;
    for round in 0..240 {
        let mut spec = random_spec(&mut rng);
        if round % 3 == 0 {
            // A three-level shape with a path of its own.
            spec.levels = three_levels(&mut rng, round % 2 == 0, spec.levels[0].line);
        }
        spec.levels[0].shared = round % 4 == 1;
        let cores = 1 + rng.below(3) as usize;
        let line = spec.levels[0].line as u64;
        let span = spec.levels.last().unwrap().size * (2 + rng.below(3));
        let mut c = Caches::with_limit(&spec, cores, Box::new(Flat::new(MEM)), span - 1);
        if round % 3 == 0 {
            assert_eq!(c.kinds()[2], "u32x16", "round {round}");
        }
        c.set_logging(true);
        let mut r = RefHierarchy::new(&spec, cores);
        let mut last = vec![0u64; cores];
        let mut any_last = 0u64;
        for i in 0..3000u64 {
            let core = rng.below(cores as u64) as usize;
            let base = match rng.below(4) {
                0 | 1 => last[core],
                2 => any_last,
                _ => rng.below(span),
            } / line
                * line;
            let pa = base + rng.below(line);
            repeats += (base == last[core] / line * line) as u64;
            let walk = rng.below(4) == 0;
            let write = !walk && rng.below(2) == 0;
            let now = i * 1000;
            // Half the data references try the repeat path first (`access_repeat`, as
            // the run loop does), falling back to `access` when it declines.
            let repeat = if !walk && rng.below(2) == 0 {
                c.access_repeat(core, pa, write)
            } else {
                None
            };
            repeated += repeat.is_some() as u64;
            let got = repeat.unwrap_or_else(|| c.access(core, pa, write, walk, || now));
            let want = r.access(core, pa, write, walk, now);
            assert_eq!(got, want, "round {round} access {i}: latency ({spec:?})");
            last[core] = pa;
            any_last = pa;
        }
        assert_eq!(c.take_log(), r.log, "round {round}: memory requests ({spec:?})");
        let counts: Vec<LevelCounts> = c.stats().levels.iter().map(|l| l.1).collect();
        assert_eq!(counts, r.counts, "round {round}: counters ({spec:?})");
    }
    // Most accesses repeat their core's line (at least half of the 720,000).
    assert!(repeats > 360_000, "{repeats}");
    // And the repeat path took many of them (a quarter of the repeats are data
    // references offered to it; those whose line is still the first level's most recent
    // are taken).
    assert!(repeated > 40_000, "{repeated}");
}
