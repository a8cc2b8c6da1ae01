//! The three Mosmodel inputs (walk cycles, STLB misses, STLB hits) agree with the
//! per-level counts on every catalog machine, including machines whose STLB is split
//! into same-cycle parts (Skylake's `stlb` + `stlb-1g`, the Cortex-A73's `l2` +
//! `l2-huge`, the Cortex-A9's `l2` + `l2-side`).

use mmulab_sim::config::{from_toml, MachineSpec};
use mmulab_sim::{catalog, run, Machine, Stats};
use mmulab_trace::workload;

fn sim(name: &str, sets: &[&str], spec_text: &str) -> (MachineSpec, Stats) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = from_toml(catalog::get(name).unwrap(), None, &sets).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut m = Machine::new(spec.clone()).unwrap();
    let mut src = workload::parse(spec_text).unwrap();
    let stats = run(&mut m, src.as_mut(), None).unwrap_or_else(|e| panic!("{name} {spec_text}: {e}"));
    (spec, stats)
}

/// The STLB of one path, derived here from the wiring alone: the last level with a
/// lookup latency on the path from `entry`, and the same-cycle parts after it.
fn stlb_of(spec: &MachineSpec, entry: usize) -> Vec<usize> {
    let mut path = vec![entry];
    while let Some(n) = spec.tlbs[*path.last().unwrap()].next {
        path.push(n);
    }
    let head = path.iter().rposition(|&i| spec.tlbs[i].latency != 0).unwrap_or(0);
    path[head..].to_vec()
}

#[test]
fn mosmodel_inputs_match_levels_on_every_catalog_machine() {
    // 600 consecutive 4 KiB pages overflow every L1 of the catalog; 2 MiB (1 MiB on
    // ARMv7 short descriptors) pages, one chase node per MiB, exercise the huge-page
    // parts of split STLBs.
    for name in catalog::names() {
        let spec = from_toml(catalog::get(name).unwrap(), None, &[]).unwrap();
        let huge = if spec.format.arch_name() == "armv7" { "1M" } else { "2M" };
        let fixed = ["os.policy=fixed".to_string(), format!("os.page_size={huge}")];
        let runs = [
            (vec![], "chase:pages=600,refs=30K,base=0x40000000"),
            (
                fixed.iter().map(String::as_str).collect::<Vec<_>>(),
                "chase:pages=600,refs=30K,page=1M,base=0x40000000",
            ),
        ];
        for (sets, w) in runs {
            let (spec, s) = sim(name, &sets, w);
            let what = format!("{name} {sets:?}");
            let mut stlb: Vec<usize> = stlb_of(&spec, spec.data_entry);
            if let Some(i) = spec.instr_entry {
                stlb.extend(stlb_of(&spec, i));
            }
            stlb.sort();
            stlb.dedup();
            let hits: u64 = stlb.iter().map(|&i| s.levels[i].counts.hits).sum();
            let last: Vec<usize> = stlb.iter().copied().filter(|&i| spec.tlbs[i].next.is_none()).collect();
            let misses: u64 = last.iter().map(|&i| s.levels[i].counts.misses).sum();
            assert_eq!(s.stlb_hits(), hits, "{what}: STLB hits");
            assert_eq!(s.stlb_misses(), misses, "{what}: STLB misses");
            // Every lookup that reaches an STLB hits in one of its parts or misses all.
            let heads = stlb
                .iter()
                .filter(|&&i| !stlb.iter().any(|&j| spec.tlbs[j].next == Some(i)));
            let entered: u64 = heads.map(|&i| s.levels[i].counts.accesses).sum();
            assert_eq!(
                s.stlb_hits() + s.stlb_misses(),
                entered,
                "{what}: lookups entering the STLB"
            );
            // The chase reuses its pages 50 times: an STLB that holds them all hits.
            let entries: usize = stlb.iter().map(|&i| spec.tlbs[i].entries).sum();
            if entries >= 600 && sets.is_empty() {
                assert!(s.stlb_hits() > 20_000, "{what}: {} STLB hits", s.stlb_hits());
            }
            // A last-level miss walks; a first touch faults and walks again.
            let c = &s.counters;
            if let Some(n) = &s.nested {
                // In a guest (machines/vm/), a stage-2 fault repeats the walk too; the
                // cycles are every descriptor read of both stages, every walk-cache lookup
                // of either stage and every stage-2 TLB lookup (translator/nested.rs).
                assert_eq!(c.walks, s.stlb_misses() + c.faults + n.host_faults, "{what}: walks");
                let s2 = n.s2tlb.map_or(0, |t| t.accesses)
                    * spec.vm.as_ref().unwrap().s2tlb.as_ref().map_or(0, |t| t.latency as u64);
                let cycles = c.walk_reads * spec.cost.mem_latency as u64
                    + (s.pwc_lookups + n.pwc2_lookups) * spec.cost.pwc_latency as u64
                    + s2;
                assert_eq!(c.walk_cycles, cycles, "{what}: walk cycles");
                assert_eq!(s.to_json()["mosmodel"]["stlb_hits"], s.stlb_hits(), "{what}");
                continue;
            }
            assert_eq!(c.walks, s.stlb_misses() + c.faults, "{what}: walks");
            let pwc = if spec.pwc_entries.iter().any(|&e| e > 0) {
                spec.cost.pwc_latency as u64
            } else {
                0
            };
            // With data caches a walk read costs where it hit (sim/tests/it/caches.rs checks
            // that); without, `mem_latency` each.
            if spec.caches.is_none() {
                let cycles = (c.walk_reads + c.dirty_writes) * spec.cost.mem_latency as u64 + c.walks * pwc;
                assert_eq!(c.walk_cycles, cycles, "{what}: walk cycles");
            }
            assert_eq!(s.to_json()["mosmodel"]["stlb_hits"], s.stlb_hits(), "{what}");
        }
    }
}

#[test]
fn skylake_split_stlb_hits_are_counted() {
    // 1000 consecutive 4 KiB pages: 1000 / 256 sets ≤ 4 per set in the 6-way STLB, so
    // after the 1000 cold misses every one of the remaining 999,000 chase steps hits
    // the `stlb` part, while the 64-entry L1 (16 sets × 4) misses every time.
    let (_, s) = sim("skylake", &[], "chase:pages=1000,refs=1M,base=0x40000000");
    assert_eq!(s.stlb_misses(), 1000);
    assert_eq!(s.stlb_hits(), 999_000);
    assert_eq!(s.counters.walks, 2000);
}
