//! Replacement policies in the data caches, derived by hand: a tiny level (one set of
//! two or four ways) under each policy of `replacement/`, with a sequence whose victims
//! differ between the policies. Every line is stored to, so each eviction is a dirty
//! line written to memory, and the log of memory writes names the victims in order.
//! With the level's `replacement` ignored (every level LRU), every case but LRU's
//! fails. The random differential tests of every policy are in cache_differential.rs.

use mmulab_base::SplitMix64;
use mmulab_model::cache::{Cache, CacheSpec, Caches, LevelSpec, Victim};
use mmulab_model::mem::backend::Flat;
use mmulab_model::replacement::Policy;

/// Lines of 64 bytes that all fall in the one set.
const A: u64 = 0x000;
const B: u64 = 0x040;
const C: u64 = 0x080;
const D: u64 = 0x0c0;
const E: u64 = 0x100;
const F: u64 = 0x140;

/// One level of `ways` ways and one set under `policy`, over a 100-cycle memory.
fn one_set(ways: usize, policy: Policy, seed: u64) -> Caches {
    let spec = CacheSpec {
        levels: vec![LevelSpec {
            name: "l1d".into(),
            size: ways as u64 * 64,
            ways,
            line: 64,
            latency: 2,
            shared: false,
            replacement: policy,
            seed,
        }],
        base_cycles: 1,
        memory_latency: 100,
    };
    let mut c = Caches::new(&spec, 1, Box::new(Flat::new(100)));
    c.set_logging(true);
    c
}

/// Runs `(pa, store)` accesses; returns their latencies and the addresses written to
/// memory (the dirty victims), in order.
fn run(c: &mut Caches, accesses: &[(u64, bool)]) -> (Vec<u64>, Vec<u64>) {
    let lat = accesses
        .iter()
        .map(|&(pa, store)| c.access(0, pa, store, false, || 0))
        .collect();
    let writes = c.take_log().iter().filter(|q| q.write).map(|q| q.pa).collect();
    (lat, writes)
}

#[test]
fn two_ways_lru_and_fifo_evict_different_lines() {
    // Store A, store B (both miss: 2 + 100), load A (a hit: 2), load C (a miss). LRU
    // evicts B (A was used since); FIFO evicts A (filled first; hits do not count);
    // PLRU over two ways is LRU (one bit pointing away from the last use).
    let seq = [(A, true), (B, true), (A, false), (C, false)];
    for (policy, victim) in [(Policy::Lru, B), (Policy::Fifo, A), (Policy::Plru, B)] {
        let mut c = one_set(2, policy, 0);
        let (lat, writes) = run(&mut c, &seq);
        assert_eq!(lat, [102, 102, 2, 102], "{policy:?}");
        assert_eq!(writes, [victim], "{policy:?}");
    }
}

#[test]
fn four_ways_lru_fifo_and_plru_each_evict_their_own_victims() {
    // Store A, B, C, D into ways 0..3, load A (a hit), then load E and load F (misses).
    // LRU: E evicts B (least recent after A's hit), F evicts C.
    // FIFO: E evicts A (filled first), F evicts B.
    // PLRU (tree: root over {0,1} | {2,3}, bits point to the side to evict next): the
    // fills of ways 0, 1, 2, 3 leave every bit pointing left; A's hit points the root
    // and node {0,1} right; E goes to the root's right, node {2,3}'s left: way 2 (C),
    // and its fill points the root left and node {2,3} right; F goes left, then right
    // at node {0,1}: way 1 (B).
    let seq = [
        (A, true),
        (B, true),
        (C, true),
        (D, true),
        (A, false),
        (E, false),
        (F, false),
    ];
    for (policy, victims) in [(Policy::Lru, [B, C]), (Policy::Fifo, [A, B]), (Policy::Plru, [C, B])] {
        let mut c = one_set(4, policy, 0);
        let (lat, writes) = run(&mut c, &seq);
        assert_eq!(lat, [102, 102, 102, 102, 2, 102, 102], "{policy:?}");
        assert_eq!(writes, victims, "{policy:?}");
        // The same through one array (`Cache`), victims with their dirty bits.
        let mut a = Cache::with_policy(256, 4, 64, policy, 0);
        for &(pa, store) in &seq {
            if !a.lookup(pa, store) {
                let v = a.fill(pa, store);
                if let Some(Victim { pa: v, dirty }) = v {
                    assert!(dirty && victims.contains(&v), "{policy:?}: {v:#x}");
                }
            }
        }
    }
}

#[test]
fn random_evicts_the_ways_its_seeded_stream_draws() {
    // Four ways full of dirty lines A..D (ways 0..3), then eight loads of new lines:
    // each evicts the way `SplitMix64::new(seed).below(4)` draws next (replacement/
    // random.rs), whatever the order of use. The lines in each way are tracked here.
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..16u64 {
        let mut c = one_set(4, Policy::Random, seed);
        let mut ways = [Some(A), Some(B), Some(C), Some(D)];
        let mut seq: Vec<(u64, bool)> = ways.iter().map(|w| (w.unwrap(), true)).collect();
        let mut rng = SplitMix64::new(seed);
        let mut want = Vec::new();
        for i in 0..8u64 {
            let w = rng.below(4) as usize;
            // Only the stored lines are dirty; a victim that is a loaded line is clean.
            if let Some(v) = ways[w].filter(|&v| v < E) {
                want.push(v);
            }
            let pa = E + 64 * i;
            ways[w] = Some(pa);
            seq.push((pa, false));
        }
        let (_, writes) = run(&mut c, &seq);
        assert_eq!(writes, want, "seed {seed}");
        distinct.insert(writes.first().copied());
    }
    // The first victim varies with the seed (LRU and FIFO would always evict A).
    assert!(distinct.len() >= 3, "{distinct:?}");
}
