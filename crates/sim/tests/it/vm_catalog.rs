//! The virtualized cores of the catalog (machines/vm/*.toml; issue #20 item 2): each is a
//! catalog machine, runs a short GUPS in its guest, and its walks read stage-2
//! descriptors. The x86-64 one and the two arm64 ones are all there.

use mmulab_sim::config::from_toml;
use mmulab_sim::{catalog, run, Machine};
use mmulab_trace::workload;

#[test]
fn every_vm_catalog_machine_walks_both_stages() {
    let vms: Vec<&str> = catalog::names().into_iter().filter(|n| catalog::is_vm(n)).collect();
    assert_eq!(vms, ["cortex-a53-kvm", "cortex-a76-kvm", "epyc-zen4-kvm"]);
    for name in vms {
        let spec = from_toml(catalog::get(name).unwrap(), None, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let vm = spec.vm.clone().unwrap_or_else(|| panic!("{name} has no [vm]"));
        assert!(vm.s2tlb.is_some(), "{name}: no stage-2 TLB");
        let mut m = Machine::new(spec).unwrap();
        // 64 MiB of random updates: far beyond every L2 TLB's reach at 4 KiB, so walks
        // happen, and every walk's first guest table read goes through stage 2.
        let mut src = workload::parse("gups:table=64MiB,refs=20K").unwrap();
        let s = run(&mut m, src.as_mut(), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = s
            .nested
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no nested statistics"));
        assert!(n.stage1_refs() > 0, "{name}: no guest walk references");
        assert!(n.stage2_refs() > 0, "{name}: no stage-2 references");
        assert!(n.stage2_translations >= n.stage2_walks, "{name}");
        assert!(n.host_faults > 0, "{name}: the host mapped nothing");
        assert_eq!(n.stage2, vm.stage2.arch_name(), "{name}");
    }
}

/// One x86-64 host (EPT/NPT) and two arm64 hosts (stage-2 granules), as the issue asks.
#[test]
fn the_vm_catalog_has_an_x86_64_and_two_arm64_hosts() {
    let mut x86 = 0;
    let mut arm = 0;
    for name in catalog::names().into_iter().filter(|n| catalog::is_vm(n)) {
        let spec = from_toml(catalog::get(name).unwrap(), None, &[]).unwrap();
        match spec.format.arch_name() {
            "x86_64" => x86 += 1,
            "aarch64" => arm += 1,
            a => panic!("{name}: {a}"),
        }
    }
    assert!(x86 >= 1 && arm >= 2, "x86-64 {x86}, arm64 {arm}");
}
