//! Issue 47 item 2: in a guest, advise simulates the host backing the probe found. The
//! probe is run on simulated guests of this machine (machines/vm/epyc-zen4-kvm.toml) over
//! 4 KiB host pages and over 2 MiB host pages; its levels, as advise caches them, decide
//! `vm.backing`. Over 4 KiB host pages a guest's 2 MiB page is cached as 4 KiB pieces
//! (the levels miss it like 4 KiB pages); over 2 MiB host pages the TLB holds it whole.

use mmulab_advise::predict::{host_backing, machine_text};
use mmulab_probe::probe::{self, ProbeConfig};
use mmulab_probe::target::sim::SimTarget;

const MACHINE: &str = include_str!("../../../../machines/vm/epyc-zen4-kvm.toml");

fn probed_backing(host: &str) -> (&'static str, String) {
    let spec = mmulab_sim::config::from_toml(MACHINE, None, &[format!("vm.backing={host}")]).unwrap();
    let mut t = SimTarget::new(host, spec);
    let r = probe::run(&mut t, &ProbeConfig::quick(), &mut |_, _| {}).unwrap();
    let hb = host_backing(&serde_json::to_value(&r.levels).unwrap());
    (hb.backing, hb.why)
}

#[test]
fn the_simulated_host_backing_follows_what_the_probe_found() {
    let (small, why) = probed_backing("4K");
    assert_eq!(small, "4K", "{why}");
    assert!(why.contains("missing the guest's 2 MiB pages"), "{why}");
    let (huge, why) = probed_backing("hugetlb-2M");
    assert_eq!(huge, "hugetlb-2M", "{why}");
    assert!(why.contains("holding the guest's 2 MiB pages"), "{why}");
}

#[test]
fn without_probe_levels_4k_host_pages_are_assumed_and_said() {
    let hb = host_backing(&serde_json::Value::Null);
    assert_eq!(hb.backing, "4K");
    assert!(hb.why.contains("assumed"));
    // The section advise adds loads, with the backing chosen.
    let probed = MACHINE.split("\n[vm]").next().unwrap();
    for b in ["4K", "hugetlb-2M"] {
        let text = machine_text(probed, Some(("npt", b)));
        let spec = mmulab_sim::config::from_toml(&text, None, &[]).unwrap();
        assert!(spec.vm.is_some(), "{text}");
    }
}
