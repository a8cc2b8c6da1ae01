//! Limits that hold and no silent defaults, through the real `mmulab` binary: a machine
//! that needs more host memory than there is is refused with the figure, the built-in
//! workloads run with their defaults on every catalog machine (a 32-bit machine gets a
//! base that fits, and a note saying so), and trace-info leaves control markers out of
//! the loads and the footprint.

use serde_json::Value;
use std::process::{Command, Output};

fn mmulab(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmulab"));
    c.args(args).env_remove("MMULAB_HOST_MEMORY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run mmulab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn memory_size_beyond_host_is_refused_with_figure() {
    // 16 TiB of simulated memory = 2^32 frames × 16 bytes = 64 GiB of bookkeeping; a host
    // stated to have 32 GiB refuses it before allocating (it used to abort).
    let host = [("MMULAB_HOST_MEMORY", "32GiB")];
    let o = mmulab(
        &["sim", "--workload", "chase:pages=10", "--set", "memory.size=16TiB"],
        &host,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("64.0 GiB") && e.contains("memory.size") && e.contains("32.0 GiB"),
        "{e}"
    );
    assert!(e.contains("MMULAB_HOST_MEMORY") && !e.contains("panicked"), "{e}");
    // cores × entries: 4096 cores of a 16M-entry L2 need terabytes.
    let o = mmulab(
        &[
            "sim",
            "--workload",
            "chase:pages=10",
            "--set",
            "machine.cores=4096",
            "--set",
            "tlb.l2.entries=16777216",
        ],
        &host,
    );
    let e = stderr(&o);
    assert!(
        !o.status.success() && e.contains("4096 core(s)") && e.contains("TLBs"),
        "{e}"
    );
    // The same 16 TiB config runs when the host is stated to have enough (1 TiB): the
    // bookkeeping is zeroed memory the run touches only where it maps.
    let o = mmulab(
        &["sim", "--workload", "chase:pages=10", "--set", "memory.size=1TiB"],
        &[("MMULAB_HOST_MEMORY", "8GiB")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn builtin_workload_defaults_run_on_every_catalog_machine() {
    let out = mmulab(&["machines", "--json"], &[]);
    let machines: Value = serde_json::from_slice(&out.stdout).unwrap();
    let machines = machines["machines"].as_array().unwrap();
    assert!(machines.len() >= 15);
    // Each built-in workload with only its required keys and a small count.
    let specs = [
        "gups:table=16MiB,refs=20K",
        "chase:pages=300,refs=20K",
        "stride:pages=300,refs=20K",
        "seq:size=4MiB,refs=20K",
        "build:procs=3,refs=5K",
    ];
    for m in machines {
        let name = m["name"].as_str().unwrap();
        let arch = m["arch"].as_str().unwrap();
        let bits32 = arch.starts_with("armv7");
        for spec in specs {
            let o = mmulab(&["sim", "--machine", name, "--workload", spec, "--json"], &[]);
            let e = stderr(&o);
            assert!(o.status.success(), "{name} {spec}: {e}");
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert!(v["references"].as_u64().unwrap() >= 15_000, "{name} {spec}");
            // A default chosen for the user is said, once, on a 32-bit machine only.
            let notes = e.lines().filter(|l| l.starts_with("mmulab: note: ")).count();
            assert_eq!(notes, bits32 as usize, "{name} ({arch}) {spec}: {e}");
        }
    }
}

#[test]
fn trace_info_ignores_control_markers() {
    // Two loads and a store on two pages of address space 0, then an unmap of the first
    // page (two legacy markers: one event) and an exit: 3 references, 2 loads, footprint
    // 2 pages.
    let dir = std::env::temp_dir().join(format!("mmulab-robust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("markers.lackey");
    std::fs::write(
        &p,
        " L 40000000,8\n S 40000008,8\n L 40001000,8\n L fffe000040000000,8\n L fffe000040001001,8\n L 7ffffffff000,8\n",
    )
    .unwrap();
    let o = mmulab(&["trace-info", "--json", p.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["references"], 3);
    assert_eq!(v["loads"], 2);
    assert_eq!(v["stores"], 1);
    assert_eq!(v["footprint"]["pages_4k"], 2);
    assert_eq!(v["footprint"]["pages_2m"], 1);
    assert_eq!(v["address_range"]["max"], "0x40001000");
    assert_eq!(v["control"]["exit"], 1);
    assert_eq!(v["control"]["unmap"], 1);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn set_machine_name_is_applied_or_rejected_by_sim() {
    // Applied: the A15's ARMv7 LPAE tables walk 3 levels (the default x86-64 machine 4).
    let o = mmulab(
        &[
            "sim",
            "--workload",
            "chase:pages=10",
            "--set",
            "machine.name=cortex-a15",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("mmulab: note:"),
        "the base chosen for ARMv7 is said"
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["walks"]["start_level"].as_array().unwrap().len(), 3);
    let d = mmulab(&["sim", "--workload", "chase:pages=10", "--json"], &[]);
    let d: Value = serde_json::from_slice(&d.stdout).unwrap();
    assert_eq!(d["walks"]["start_level"].as_array().unwrap().len(), 4);
    // Rejected: an unknown name.
    let o = mmulab(
        &[
            "sim",
            "--workload",
            "chase:pages=10",
            "--set",
            "machine.name=cortex-z99",
        ],
        &[],
    );
    assert!(
        !o.status.success() && stderr(&o).contains("cortex-z99"),
        "{}",
        stderr(&o)
    );
}

/// A process limited in address space (`ulimit -v`, as the fuzz harness's worker is)
/// aborted allocating a machine that fits the host's free memory but not the limit; the
/// smaller of the two figures now holds, and the refusal names the limit.
#[test]
fn address_space_limit_is_checked_before_allocating() {
    let exe = env!("CARGO_BIN_EXE_mmulab");
    // 512 GiB of simulated memory needs 2 GiB of frame bookkeeping; the limit is 1 GiB.
    let script =
        format!("ulimit -v 1048576; exec '{exe}' sim --workload gups:table=1MiB,refs=1000 --set memory.size=512GiB");
    let o = Command::new("sh").args(["-c", &script]).output().expect("run sh");
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("address-space limit") && e.contains("memory.size"), "{e}");
    assert!(!e.contains("panicked") && !e.contains("memory allocation"), "{e}");
}

#[test]
fn a_missing_trace_is_named_once_with_its_reason_once() {
    // The reason used to print twice: in the message and again as its source.
    for cmd in [&["trace-info"][..], &["sim", "--trace"][..]] {
        let mut args = cmd.to_vec();
        args.push("/nonexistent/t.mlt");
        let o = mmulab(&args, &[]);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert_eq!(e.matches("No such file or directory").count(), 1, "{cmd:?}: {e}");
        assert!(e.contains("/nonexistent/t.mlt"), "{e}");
    }
}
