//! `probe --emit-machine` describes the probed machine: probing a simulated ARMv7 core,
//! emitting its config, and probing the emitted config finds the same architecture,
//! levels (entries, huge pages held) and costs.

use mmulab_model::pt::Format;
use mmulab_probe::probe::{self, machine::machine_toml, ProbeConfig, ProbeReport};
use mmulab_probe::target::sim::{huge_size_of, SimTarget};
use mmulab_sim::config::{self, MachineSpec};

fn probe_spec(name: &str, spec: MachineSpec) -> ProbeReport {
    let mut t = SimTarget::new(name, spec);
    probe::run(&mut t, &ProbeConfig::simulated(), &mut |_, _| {}).unwrap()
}

/// (entries, holds huge pages, miss cost) per level.
fn levels(r: &ProbeReport) -> Vec<(usize, Option<bool>, f64)> {
    r.levels.iter().map(|l| (l.entries, l.caches_2m, l.miss_cost)).collect()
}

fn round_trip(name: &str, format: Format, huge: &str) {
    let spec = config::load_machine(name, None, &[]).unwrap();
    let first = probe_spec(name, spec);
    let text = machine_toml(&first);
    let emitted = config::from_toml(&text, None, &[]).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
    assert_eq!(emitted.format, format, "{name}: arch\n{text}");
    // The level holding huge pages lists the format's huge page (1M on short descriptors).
    let holds: Vec<String> = emitted
        .tlbs
        .iter()
        .flat_map(|t| t.page_sizes.iter().skip(1).map(|p| p.to_string()))
        .collect();
    assert!(
        !holds.is_empty() && holds.iter().all(|p| p == huge),
        "{name}: {holds:?}\n{text}"
    );
    let second = probe_spec("emitted", emitted);
    assert_eq!(levels(&first), levels(&second), "{name}\n{text}\n{}", second.table());
}

#[test]
fn emit_machine_armv7_round_trips() {
    // Cortex-A9: ARMv7 short descriptors, 1 MiB sections, no walk cache; L1 32 (miss
    // cost 3 = the L2's latency), L2 128 + 4 side (miss cost 40 = 2 reads × 20).
    round_trip("cortex-a9", Format::Armv7, "1M");
    // Cortex-A15: LPAE, 2 MiB blocks; L1 32 (miss 4 = L2 latency), L2 512 (miss 26 =
    // one read of 25 after walk-cache hits + 1 cycle of walk-cache lookup).
    round_trip("cortex-a15", Format::Armv7Lpae, "2M");
}

#[test]
fn emit_machine_round_trips_on_every_catalog_machine() {
    // Not the virtualized cores (machines/vm/): the probe sees their combined TLBs and
    // two-stage walks as one machine, and an emitted file has no `[vm]` to give back (over
    // 4 KiB host pages it would describe levels that hold no 2 MiB pages).
    for name in mmulab_sim::catalog::names()
        .into_iter()
        .filter(|n| !mmulab_sim::catalog::is_vm(n))
    {
        let spec = config::load_machine(name, None, &[]).unwrap();
        // A variant with data caches (cortex-a76-pi5, ...) has its base's TLBs, probed
        // here under the base's name; its walks cost where their reads hit, which an
        // emitted TLB-only machine cannot describe, so it does not round-trip.
        if spec.caches.is_some() {
            continue;
        }
        let huge = huge_size_of(spec.format).unwrap().to_string();
        round_trip(name, spec.format, &huge);
    }
}

#[test]
fn emitted_latencies_are_the_measured_ones() {
    let spec = config::load_machine("cortex-a9", None, &[]).unwrap();
    let r = probe_spec("cortex-a9", spec);
    let spec = config::from_toml(&machine_toml(&r), None, &[]).unwrap();
    // By hand from machines/cortex-a9.toml: L2 latency 3; a walk of 2 descriptor reads
    // at 20 cycles = 40, written as 1 walk-cache cycle + one read of 39.
    assert_eq!(spec.tlbs[1].latency, 3);
    assert_eq!(spec.cost.pwc_latency + spec.cost.mem_latency, 40);
    assert_eq!(spec.memory_bytes, 4 << 30);
}
