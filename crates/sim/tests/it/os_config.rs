//! `[os]` as the chosen policy's variant: only that policy's sections are accepted (a
//! key of another policy is refused by name), each section is the model's own config
//! type with the documented defaults, and catalog machines take any policy by `--set`
//! (the experiment files' per-policy `policy_sets`: crates/experiments/tests/it/freebsd.rs).

use mmulab_model::addr::PageSize;
use mmulab_model::os::{Defrag, Enabled, KhugepagedConfig, MidSize, MthpConfig, ReclaimConfig, ThpConfig};
use mmulab_sim::config::{from_toml, load_machine, MachineSpec, OsSpec, DEFAULT_TOML, POLICIES};

fn spec(sets: &[&str]) -> Result<MachineSpec, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    from_toml(DEFAULT_TOML, None, &sets).map_err(|e| e.to_string())
}

/// One key of each `[os]` section and the policies that take it (docs/config.md).
const SECTION_KEYS: [(&str, &[&str]); 6] = [
    ("os.page_size=2M", &["fixed"]),
    ("os.reservation.low_watermark=0.02", &["reservation"]),
    ("os.thp.zero_cycles_per_page=250", &["thp"]),
    ("os.khugepaged.scan_period=200000", &["thp", "khugepaged"]),
    ("os.mthp.sizes=[\"64K\"]", &["mthp"]),
    ("os.reclaim.batch_pages=7", &["base", "thp", "khugepaged", "mthp"]),
];

#[test]
fn a_key_of_another_policy_is_refused_by_name() {
    for policy in POLICIES {
        for (set, takes) in SECTION_KEYS {
            let mut sets = vec![format!("os.policy={policy}"), set.to_string()];
            if policy == "fixed" && !set.starts_with("os.page_size") {
                sets.push("os.page_size=2M".into());
            }
            let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
            let key = set.split('=').next().unwrap();
            match spec(&sets) {
                Ok(_) => assert!(takes.contains(&policy), "{key} accepted under {policy}"),
                Err(e) => {
                    assert!(!takes.contains(&policy), "{key} refused under {policy}: {e}");
                    assert!(
                        e.contains(&format!("{key} is set, but os.policy = \"{policy}\""))
                            && e.contains("built-in default config")
                            && e.contains(takes[0])
                            && e.contains("remove it or change os.policy"),
                        "{e}"
                    );
                }
            }
        }
    }
    // An empty section of another policy is refused too (as the section).
    let e = spec(&["os.policy=thp", "os.mthp={}"]).unwrap_err();
    assert!(e.contains("os.mthp is set") && e.contains("[os.mthp]"), "{e}");
    // Keys that are nobody's are named as such; a bad value names its key.
    let e = spec(&["os.colour=1"]).unwrap_err();
    assert!(e.contains("os.colour is not a key of [os]"), "{e}");
    let e = spec(&["os.policy=mthp", "os.mthp.sizes=[\"3K\"]"]).unwrap_err();
    assert!(e.contains("'3K'") && e.contains("os.mthp.sizes"), "{e}");
    let e = spec(&["os.policy=reservation", "os.reservation.mid_size=huge"]).unwrap_err();
    assert!(e.contains("os.reservation.mid_size") && e.contains("none"), "{e}");
    let e = spec(&["os.policy=thp", "os.thp.defrag=eager"]).unwrap_err();
    assert!(e.contains("os.thp.defrag") && e.contains("defer+madvise"), "{e}");
    // Per-size modes: any anonymous order 2 ..= PMD (32K has no page size of its own
    // but is an mTHP size); order 1 (8K) and sizes above the PMD are refused by key.
    let s = spec(&[
        "os.policy=thp",
        "os.thp.sizes={\"32K\"=\"always\", \"128KiB\"=\"madvise\"}",
    ])
    .unwrap();
    let OsSpec::Thp { thp, .. } = &s.os else { panic!("thp") };
    assert_eq!(
        thp.sizes.keys().map(|k| k.to_string()).collect::<Vec<_>>(),
        ["32K", "128K"]
    );
    for bad in ["8K", "4M", "1G"] {
        let e = spec(&["os.policy=thp", &format!("os.thp.sizes={{\"{bad}\"=\"always\"}}")]).unwrap_err();
        assert!(
            e.contains("os.thp.sizes") && e.contains(bad) && e.contains("not an anonymous mTHP size"),
            "{e}"
        );
    }
    let e = spec(&["os.policy=thp", "os.thp.sizes={\"48K\"=\"always\"}"]).unwrap_err();
    assert!(e.contains("48K") && e.contains("power of two"), "{e}");
}

#[test]
fn the_chosen_policy_s_keys_reach_the_model_types() {
    let s = spec(&[
        "os.policy=thp",
        "os.thp.enabled=madvise",
        "os.thp.defrag=defer+madvise",
        "os.thp.zero_cycles_per_page=250",
        "os.khugepaged.enabled=true",
        "os.khugepaged.max_ptes_none=64",
        "os.reclaim.enabled=true",
    ])
    .unwrap();
    let OsSpec::Thp {
        thp,
        khugepaged,
        reclaim,
    } = &s.os
    else {
        panic!("{:?}", s.os)
    };
    assert_eq!((thp.enabled, thp.defrag), (Enabled::Madvise, Defrag::DeferMadvise));
    assert_eq!((thp.zero_cycles_per_page, thp.compaction_cycles), (250, 200_000));
    assert!(khugepaged.enabled && khugepaged.max_ptes_none == Some(64) && khugepaged.scan_period == 1_000_000);
    assert!(reclaim.enabled && s.os.reclaim().enabled);
    let s = spec(&["os.policy=mthp", "os.mthp.sizes=[\"64KiB\", \"2M\"]"]).unwrap();
    let OsSpec::Mthp { mthp, .. } = &s.os else { panic!() };
    assert_eq!(mthp.sizes, Some(vec![PageSize::K64.into(), PageSize::M2.into()]));
    let s = spec(&[
        "os.policy=reservation",
        "os.reservation.size=2M",
        "os.reservation.mid_size=none",
        "os.reservation.low_watermark=0.1",
    ])
    .unwrap();
    let OsSpec::Reservation(r) = &s.os else { panic!() };
    assert_eq!(
        (r.size, r.mid_size, r.low_watermark),
        (Some(PageSize::M2), MidSize::Off, 0.1)
    );
    let s = spec(&["os.policy=fixed", "os.page_size=2MiB"]).unwrap();
    assert_eq!(s.os, OsSpec::Fixed(PageSize::M2));
    assert_eq!(s.os.name(), "fixed");
}

/// The defaults are the documented ones (docs/config.md), each written once: a config
/// that spells every default out resolves to the same machine as one that writes none
/// (in particular `khugepaged.enabled`, off, as documented).
#[test]
fn documented_defaults_are_the_model_defaults() {
    let reclaim = [
        "os.reclaim.enabled=false",
        "os.reclaim.min_free_pages=64",
        "os.reclaim.batch_pages=32",
        "os.reclaim.swap_in_cycles=100000",
        "os.reclaim.swap_out_cycles_per_page=5000",
    ];
    // pages_to_scan, max_ptes_none and mthp.sizes default by granule (HPAGE_PMD_NR * 8,
    // HPAGE_PMD_NR - 1, granule::default_mthp_sizes), so they have no one value to spell
    // out here; crates/model/tests/it/os_granule.rs checks those defaults.
    let khugepaged = [
        "os.khugepaged.enabled=false",
        "os.khugepaged.scan_period=1000000",
        "os.khugepaged.copy_cycles_per_page=1000",
        "os.khugepaged.defrag=true",
    ];
    let thp = [
        "os.thp.enabled=always",
        "os.thp.defrag=madvise",
        "os.thp.compaction_cycles=200000",
        "os.thp.migrate_cycles_per_page=4000",
        "os.thp.zero_cycles_per_page=0",
        "os.thp.use_zero_page=true",
        "os.thp.shrink_underused=true",
    ];
    let mthp = ["os.mthp.zero_cycles_per_page=0"];
    let common = ["os.fault_latency=1000", "os.tick_interval=100000"];
    let cases: [(&str, Vec<&str>); 5] = [
        ("base", reclaim.to_vec()),
        ("reservation", vec!["os.reservation.low_watermark=0"]),
        ("thp", [&thp[..], &khugepaged[..], &reclaim[..]].concat()),
        ("khugepaged", [&khugepaged[..], &reclaim[..]].concat()),
        ("mthp", [&mthp[..], &reclaim[..]].concat()),
    ];
    for (policy, keys) in cases {
        let p = format!("os.policy={policy}");
        let implicit = spec(&[&p]).unwrap();
        let explicit = spec(&[&[p.as_str()][..], &keys, &common].concat()).unwrap();
        assert_eq!(implicit.os, explicit.os, "{policy}");
        assert_eq!(implicit.cost, explicit.cost, "{policy}");
        assert_eq!(implicit.tick_interval, explicit.tick_interval, "{policy}");
    }
    // And the model's own defaults are those values.
    assert!(!KhugepagedConfig::default().enabled);
    assert_eq!(ThpConfig::default().enabled, Enabled::Always);
    assert_eq!(MthpConfig::default().sizes, None);
    assert_eq!(
        mmulab_model::os::granule::default_mthp_sizes(mmulab_model::pt::Format::X86_64),
        [PageSize::K16, PageSize::K64, PageSize::M2].map(mmulab_model::addr::FolioSize::from)
    );
    assert!(!ReclaimConfig::default().enabled);
    // No [os] at all: policy base with every default.
    let text = DEFAULT_TOML.replace("[os]\npolicy = \"base\"", "");
    assert!(!text.contains("[os]"));
    let none = from_toml(&text, None, &[]).unwrap();
    let base = spec(&[]).unwrap();
    assert_eq!(
        (none.os, none.cost, none.tick_interval),
        (base.os, base.cost, base.tick_interval)
    );
}

/// Catalog machine files are merged under the user's config and `--set` lands on top:
/// `--set os.policy=P` on any catalog machine gives policy P, refused only where the
/// kernel does not offer it on the format (no THP or mTHP on armv7 short descriptors;
/// no FreeBSD reservations with 16K or 64K pages).
#[test]
fn every_catalog_machine_takes_every_policy_by_set() {
    for name in mmulab_sim::catalog::names() {
        let base = load_machine(name, None, &[]).unwrap();
        for policy in POLICIES {
            let mut sets = vec![format!("os.policy={policy}")];
            if policy == "fixed" {
                // The format's smallest leaf above 4K.
                sets.push(format!("os.page_size={}", base.format.page_sizes()[1]));
            }
            match load_machine(name, None, &sets) {
                Ok(s) => assert_eq!(s.os.name(), policy, "{name}"),
                Err(e) => {
                    let e = e.to_string();
                    let linux = ["thp", "khugepaged", "mthp"].contains(&policy)
                        && base.format == mmulab_model::pt::Format::Armv7
                        && e.contains("LPAE");
                    let freebsd = policy == "reservation" && base.format.base_page() != PageSize::K4;
                    assert!(linux || freebsd, "{name} {policy}: {e}");
                }
            }
        }
    }
}

/// A size given without its unit parses as an integer where a string belongs: the error
/// names the key and says how to write it.
#[test]
fn a_size_without_its_unit_is_refused_with_how_to_write_it() {
    let e = spec(&["memory.size=0"]).unwrap_err();
    assert!(e.contains("memory.size"), "{e}");
    assert!(e.contains("give a size with its unit, e.g. `64MiB` or `0B`"), "{e}");
    // Another type error gets no such hint.
    let e = spec(&["memory.size=true"]).unwrap_err();
    assert!(!e.contains("with its unit"), "{e}");
}
