//! The policy experiments' files (kind `os_policies`, experiments/freebsd.toml): each
//! policy gets its own sets, and sets a policy refuses are named with the fix.

use mmulab_experiments::freebsd::policies as reproduce;
use mmulab_model::addr::PageSize;
use mmulab_sim::config::{load_machine, OsSpec};

#[test]
fn freebsd_experiment_gives_each_policy_its_own_sets() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("experiments/freebsd.toml")).unwrap();
    let e = reproduce::parse(&text, "freebsd.toml").unwrap();
    let n1 = e.machine.iter().find(|m| m.name == "neoverse-n1").unwrap();
    for p in &n1.policies {
        let s = load_machine(&n1.name, None, &n1.sets_for(p)).unwrap();
        assert_eq!(s.memory_bytes, 2 << 30, "{p}");
        match &s.os {
            OsSpec::Thp { thp, khugepaged, .. } => {
                assert_eq!((thp.zero_cycles_per_page, khugepaged.scan_period), (250, 200_000))
            }
            OsSpec::Khugepaged { khugepaged, .. } => assert_eq!(khugepaged.scan_period, 200_000),
            OsSpec::Mthp { mthp, .. } => {
                assert_eq!(
                    (mthp.sizes.as_deref().unwrap_or_default(), mthp.zero_cycles_per_page),
                    (&[PageSize::K64.into()][..], 250)
                )
            }
            OsSpec::Base { .. } | OsSpec::Reservation(_) => {}
            OsSpec::Fixed(_) => panic!("no fixed run"),
        }
    }
}

#[test]
fn experiment_sets_that_one_policy_refuses_are_named_with_the_fix() {
    let file = |machine: &str| {
        format!(
            "kind = \"os_policies\"\nname = \"t\"\ntitle = \"t\"\nseed = \"t\"\n[[workload]]\nid = \"w\"\nlabel = \"w\"\nspec32 = \"seq:size=1MiB\"\nspec64 = \"seq:size=1MiB\"\naccess_cycles = 1\nseed_figure = \"x\"\nseed_time_change = -0.1\nwhy = \"t\"\n[[machine]]\nname = \"skylake\"\nlabel = \"x\"\nbits = 64\npolicies = [\"base\", \"thp\", \"mthp\"]\n{machine}\n"
        )
    };
    let err = |m: &str| reproduce::parse(&file(m), "t.toml").unwrap_err().to_string();
    let e = err("sets = [\"os.mthp.zero_cycles_per_page=250\"]");
    assert!(
        e.contains("t.toml") && e.contains("skylake") && e.contains("policy_sets.mthp"),
        "{e}"
    );
    let e = err("policy_sets.thp = [\"os.mthp.zero_cycles_per_page=250\"]");
    assert!(
        e.contains("policy_sets.thp") && e.contains("os.mthp.zero_cycles_per_page"),
        "{e}"
    );
    let e = err("policy_sets.khugepaged = [\"os.khugepaged.scan_period=1\"]");
    assert!(e.contains("policy_sets.khugepaged") && e.contains("not one of"), "{e}");
    let ok = reproduce::parse(
        &file("sets = [\"memory.size=1GiB\"]\npolicy_sets.mthp = [\"os.mthp.zero_cycles_per_page=250\"]"),
        "t.toml",
    )
    .unwrap();
    let m = &ok.machine[0];
    assert_eq!(m.sets_for("base"), ["memory.size=1GiB", "os.policy=base"]);
    assert_eq!(
        m.sets_for("mthp"),
        ["memory.size=1GiB", "os.mthp.zero_cycles_per_page=250", "os.policy=mthp"]
    );
}
