//! Limits that hold and no silent defaults in machine configs: documented ranges are
//! enforced up front with the range named, the host memory a machine needs is stated
//! before anything is allocated, and `--set machine.name` is applied or rejected.

use mmulab_model::pt::Format;
use mmulab_sim::config::{load, load_machine, MachineSpec};
use mmulab_sim::limits;

fn sets(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

fn err(s: &[&str]) -> String {
    load(None, &sets(s)).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn set_machine_name_is_applied_or_rejected() {
    // A known name: the machine is that machine (ARMv7 LPAE, the A15's 512-entry L2).
    let spec: MachineSpec = load(None, &sets(&["machine.name=cortex-a15"])).unwrap();
    assert_eq!(spec.format, Format::Armv7Lpae);
    let l2 = spec.tlbs.iter().find(|t| t.name == "l2").unwrap();
    assert_eq!(l2.entries, 512);
    assert_eq!(spec.memory_bytes, 2 << 30);
    // Other --set keys still apply on top of it, whatever their order.
    let spec = load(None, &sets(&["tlb.l2.entries=1024", "machine.name=cortex-a15"])).unwrap();
    assert_eq!(spec.tlbs.iter().find(|t| t.name == "l2").unwrap().entries, 1024);
    assert_eq!(spec.format, Format::Armv7Lpae);
    // With --machine, a later --set machine.name wins.
    let spec = load_machine("skylake", None, &sets(&["machine.name=cortex-a9"])).unwrap();
    assert_eq!(spec.format, Format::Armv7);
    // An unknown name is an error naming it and the catalog.
    let e = err(&["machine.name=cortex-z99"]);
    assert!(e.contains("cortex-z99") && e.contains("catalog"), "{e}");
}

#[test]
fn walk_cache_sizes_and_cycle_keys_beyond_range_are_refused_with_range() {
    let e = err(&["walk.pwc_entries=[4, 8, 4294967295]"]);
    assert!(e.contains("walk.pwc_entries[2]") && e.contains("1048576"), "{e}");
    assert!(load(None, &sets(&["walk.pwc_entries=[0, 0, 1048576]"])).is_ok());
    let e = err(&["walk.mem_latency=4294967295"]);
    assert!(e.contains("walk.mem_latency") && e.contains("1000000"), "{e}");
    let e = err(&["tlb.l2.latency=2000000"]);
    assert!(e.contains("tlb[l2].latency"), "{e}");
    // OS cycle keys: their totals stay in 64 bits (they wrapped to 18446744073709550592).
    let e = err(&["os.policy=thp", "os.thp.zero_cycles_per_page=9223372036854775807"]);
    assert!(
        e.contains("os.thp.zero_cycles_per_page") && e.contains("10000000"),
        "{e}"
    );
    let e = err(&["os.reclaim.swap_in_cycles=10000001"]);
    assert!(e.contains("os.reclaim.swap_in_cycles"), "{e}");
    assert!(load(None, &sets(&["os.reclaim.swap_in_cycles=10000000"])).is_ok());
}

#[test]
fn host_need_scales_with_memory_cores_and_entries() {
    // 16 TiB = 2^32 frames × 16 bytes = 64 GiB of bookkeeping, stated before allocating.
    let spec = load(None, &sets(&["memory.size=16TiB"])).unwrap();
    let need = limits::host_need(&spec);
    assert_eq!(need.parts[0].1, 64 << 30);
    // 4096 cores × a 16M-entry L2: at least 4096 × 16M × 16 bytes of entries (1 TiB).
    let spec = load(None, &sets(&["machine.cores=4096", "tlb.l2.entries=16777216"])).unwrap();
    let need = limits::host_need(&spec);
    assert!(need.total() >= 4096 * (16 << 20) * 16, "{}", need.total());
    // The default machine needs little: 16 GiB → 64 MiB of frames, small TLBs.
    let need = limits::host_need(&load(None, &[]).unwrap());
    assert!(need.total() < 128 << 20, "{}", need.total());
}
