//! #23 items 1, 2 and 5 through the machine, each derived by hand: zero pages
//! (`os.zero_page`), accessed/dirty bits kept by software (`machine.ad`), simulated time
//! and the kernel thread (`machine.clock_mhz`). Every test names the rule whose removal
//! makes it fail.

use mmulab_model::addr::PageSize;
use mmulab_model::os::OsEvent;
use mmulab_sim::config::{load_machine, MachineSpec};
use mmulab_sim::{Machine, Stats};
use mmulab_trace::{AccessKind, MemRef};

fn spec(machine: &str, sets: &[&str]) -> MachineSpec {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load_machine(machine, None, &sets).unwrap_or_else(|e| panic!("{machine} {sets:?}: {e}"))
}

fn run(m: &mut Machine, refs: &[(u64, AccessKind)]) -> Stats {
    for &(addr, kind) in refs {
        m.access(&MemRef::new(addr, kind, 8)).unwrap();
    }
    m.stats()
}

const LOAD: AccessKind = AccessKind::Load;
const STORE: AccessKind = AccessKind::Store;
/// A 2 MiB-aligned address inside the inferred VMA (well above the first 2 MiB).
const VA: u64 = 0x4000_0000;

/// Linux base pages, by default (no `os.zero_page` set): the load maps the zero page
/// (fault 1), the store copies it (fault 2, do_wp_page). Two pages loaded share one zero
/// frame: resident is one 4 KiB frame, not two. Fails without the zero page or if it is
/// not the default (`os.zero_page=false`: 1 fault, resident 8 KiB; checked below).
#[test]
fn load_then_store_is_two_faults_on_linux_base_pages() {
    let mut m = Machine::new(spec("default", &[])).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA + 4096, LOAD)]);
    assert_eq!(s.counters.faults, 2);
    assert_eq!(s.os.count(OsEvent::ZeroPageMaps), 2);
    // Two leaves on the one zero frame: 4096 bytes resident, no page allocated.
    assert_eq!((s.resident_bytes, s.mapped[PageSize::K4.index()]), (4096, 0));
    let s = run(&mut m, &[(VA, STORE)]);
    // Third fault: COW of the first page; resident = zero frame + one copy.
    assert_eq!(s.counters.faults, 3);
    assert_eq!(s.os.count(OsEvent::CowFromZero), 1);
    assert_eq!((s.resident_bytes, s.mapped[PageSize::K4.index()]), (8192, 1));

    let mut m = Machine::new(spec("default", &[])).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA, STORE)]);
    assert_eq!(s.counters.faults, 2, "load then store on Linux: 2 faults");
    // The older behaviour on request: the read fault allocates a page, mapped young and
    // clean; the store finds it writable: 1 fault, and the walker sets the dirty bit.
    let mut m = Machine::new(spec("default", &["os.zero_page=false"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA, STORE)]);
    assert_eq!((s.counters.faults, s.counters.ad_updates), (1, 1));
}

/// New pages are mapped young (and Linux's dirty), as the kernels install them, so the
/// walk after a page fault needs no accessed/dirty update. Hand-derived on the default
/// machine (x86-64, hardware A/D), Linux `base` with its zero page: a store at VA: the
/// walk finds no leaf (walk 1), the fault allocates the page (do_anonymous_page: young,
/// and dirty in a writable VMA), the retried walk (walk 2) finds it young and dirty:
/// ad_updates 0 (it was 1 when pages were mapped old and clean); a load at VA + 4 KiB
/// maps the zero page, young: still 0. With `os.zero_page=false`, a load allocates a
/// page, young and clean (as FreeBSD's pmap_enter maps it: PG_A, and PG_M only for a
/// write): 0 updates; the store after it is one hardware dirty update (ad_updates 1,
/// dirty_writes 1) and no fault; the same under `reservation`. Fails if a policy maps a
/// fresh page without the accessed bit (an update after the first access) or Linux's
/// store-faulted page clean (an update at the store).
#[test]
fn fresh_pages_are_mapped_young_and_linux_pages_dirty() {
    let mut m = Machine::new(spec("default", &[])).unwrap();
    let s = run(&mut m, &[(VA, STORE)]);
    assert_eq!((s.counters.faults, s.counters.walks, s.counters.ad_updates), (1, 2, 0));
    let s = run(&mut m, &[(VA + 4096, LOAD), (VA, STORE)]);
    assert_eq!(
        (s.counters.faults, s.counters.ad_updates, s.counters.dirty_writes),
        (2, 0, 0)
    );

    let mut m = Machine::new(spec("default", &["os.zero_page=false"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD)]);
    assert_eq!((s.counters.faults, s.counters.walks, s.counters.ad_updates), (1, 2, 0));
    let s = run(&mut m, &[(VA, STORE)]);
    assert_eq!(
        (s.counters.faults, s.counters.ad_updates, s.counters.dirty_writes),
        (1, 1, 1)
    );

    let mut m = Machine::new(spec("default", &["os.policy=reservation"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD)]);
    assert_eq!((s.counters.faults, s.counters.ad_updates), (1, 0));
    let s = run(&mut m, &[(VA, STORE)]);
    assert_eq!(
        (s.counters.faults, s.counters.ad_updates, s.counters.dirty_writes),
        (1, 1, 1)
    );

    // THP and mTHP (zero pages off: the read allocates) and fixed pages: young too.
    for sets in [
        &["os.policy=thp", "os.zero_page=false"][..],
        &["os.policy=mthp", "os.zero_page=false"][..],
        &["os.policy=fixed", "os.page_size=2M"][..],
    ] {
        let mut m = Machine::new(spec("skylake", sets)).unwrap();
        let s = run(&mut m, &[(VA, LOAD)]);
        assert_eq!((s.counters.faults, s.counters.ad_updates), (1, 0), "{sets:?}");
    }
}

/// Every catalog machine says who keeps its accessed/dirty bits (#23 item 2): software on
/// ARMv7 (short and LPAE descriptors) and on the ARMv8.0 cores (A53, A57, A72, A73),
/// hardware on x86-64 and on the FEAT_HAFDBS cores (A76, Neoverse N1). The expected value
/// is the architecture's, not read from the files; fails if a file loses its `ad` (the
/// default is hardware) or sets the wrong one.
#[test]
fn every_catalog_machine_keeps_a_and_d_as_its_architecture_does() {
    for name in mmulab_sim::catalog::names() {
        let s = spec(name, &[]);
        let arch = s.format.arch_name();
        let hafdbs = name.contains("a76") || name.contains("neoverse-n1");
        let software = match arch {
            "armv7" | "armv7-lpae" => true,
            "aarch64" => !hafdbs,
            "x86_64" => false,
            other => panic!("{name}: architecture {other} not covered"),
        };
        assert_eq!(s.ad_software, software, "{name} ({arch})");
    }
}

/// FreeBSD (policy reservation): a read fault allocates a zeroed page, mapped writable
/// and clean; the store finds it writable: 1 fault. (`os.zero_page` is refused there.)
#[test]
fn load_then_store_is_one_fault_on_freebsd() {
    let mut m = Machine::new(spec("default", &["os.policy=reservation"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA, STORE)]);
    assert_eq!(s.counters.faults, 1);
    assert_eq!(s.os.count(OsEvent::ZeroPageMaps), 0);
    let e = load_machine(
        "default",
        None,
        &["os.policy=reservation".into(), "os.zero_page=true".into()],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("os.zero_page") && e.contains("reservation"), "{e}");
}

/// THP with use_zero_page: the load maps the huge zero page (fault 1; 2 MiB resident,
/// nothing allocated for the process); the store replaces it by a THP (fault 2: Linux
/// 6.13+ `do_huge_zero_wp_pmd`, checked against the live kernel by check-kernel's
/// 05_read_then_write); later loads and stores in the range hit it without a fault.
/// Fails if the huge zero page is removed (use_zero_page=false: a THP at the load, 1
/// fault in all) or if the store splits it as kernels before 6.13 did.
#[test]
fn huge_zero_page_then_write_allocates_a_thp() {
    let mut m = Machine::new(spec("skylake", &["os.policy=thp", "os.zero_page=true"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD)]);
    assert_eq!(s.counters.faults, 1);
    assert_eq!(s.os.count(OsEvent::HugeZeroPageMaps), 1);
    assert_eq!((s.resident_bytes, s.mapped.iter().sum::<u64>()), (2 << 20, 0));
    let s = run(
        &mut m,
        &[(VA + 0x3000, STORE), (VA + 0x5000, LOAD), (VA + 0x5000, STORE)],
    );
    assert_eq!(s.counters.faults, 2);
    assert_eq!(s.os.count(OsEvent::HugeZeroPageSplits), 0);
    assert_eq!(s.os.count(OsEvent::ThpFaultAlloc), 1);
    assert_eq!(s.mapped[PageSize::M2.index()], 1);

    let mut m = Machine::new(spec(
        "skylake",
        &["os.policy=thp", "os.zero_page=true", "os.thp.use_zero_page=false"],
    ))
    .unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA + 0x3000, STORE)]);
    assert_eq!((s.counters.faults, s.os.count(OsEvent::ThpFaultAlloc)), (1, 1));
}

/// mTHP: a read fault maps the zero page and allocates no folio (alloc_anon_folio runs
/// only for writes); a store to an untouched range allocates a folio. Fails if mTHP
/// allocates on reads (resident would be a whole folio after the load).
#[test]
fn mthp_read_fault_maps_the_zero_page() {
    let mut m = Machine::new(spec("neoverse-n1", &["os.policy=mthp", "os.zero_page=true"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD)]);
    assert_eq!(s.counters.faults, 1);
    assert_eq!(s.os.count(OsEvent::ZeroPageMaps), 1);
    assert_eq!((s.resident_bytes, s.mapped.iter().sum::<u64>()), (4096, 0));
    // The store to the zero entry copies one base page (wp_page_copy, order 0).
    let s = run(&mut m, &[(VA, STORE)]);
    assert_eq!(s.counters.faults, 2);
    assert_eq!(s.mapped[PageSize::K4.index()], 1);
    // A store to an untouched 2 MiB range gets the largest default folio (2 MiB here).
    let s = run(&mut m, &[(VA + (64 << 20), STORE)]);
    assert_eq!(s.counters.faults, 3);
    assert!(s.resident_bytes > 4096 + 4096 + 4096, "{}", s.resident_bytes);
}

/// Software dirty faults: on the Cortex-A53 (catalog: software) under FreeBSD
/// (`reservation`: pmap_enter maps a read-faulted page writable but clean,
/// ATTR_S1_AP_RO with ATTR_SW_DBM), the store then takes a permission fault the handler
/// (pmap_fault) resolves: 1 dirty fault, no page fault; on the Cortex-A76 (catalog:
/// hardware) the walker sets the dirty bit instead (no fault). Charged the fault
/// latency: fault cycles = (1 page fault + 1 dirty fault) x 1000 on the A53. Linux
/// (`base`, zero page on) allocates only at the store's fault, dirty, so the same
/// references take no dirty fault there (2 page faults: the zero page, its copy). Fails
/// if the A53's catalog value or the software rule is removed.
#[test]
fn software_dirty_fault_on_a53_none_on_a76() {
    let a53 = spec("cortex-a53", &["os.policy=reservation"]);
    assert!(a53.ad_software);
    let mut m = Machine::new(a53).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA, STORE), (VA, STORE)]);
    assert_eq!(
        (s.counters.faults, s.counters.af_faults, s.counters.dirty_faults),
        (1, 0, 1)
    );
    assert_eq!(s.counters.fault_cycles, 2 * 1000);
    assert_eq!(s.to_json()["ad_faults"]["dirty"], 1);

    let a76 = spec("cortex-a76", &["os.policy=reservation"]);
    assert!(!a76.ad_software);
    let mut m = Machine::new(a76).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA, STORE), (VA, STORE)]);
    assert_eq!(
        (s.counters.faults, s.counters.dirty_faults, s.counters.dirty_writes),
        (1, 0, 1)
    );
    assert!(s.to_json().get("ad_faults").is_none());

    let mut m = Machine::new(spec("cortex-a53", &[])).unwrap();
    let s = run(&mut m, &[(VA, LOAD), (VA, STORE), (VA, STORE)]);
    assert_eq!(
        (s.counters.faults, s.counters.af_faults, s.counters.dirty_faults),
        (2, 0, 0)
    );
}

/// Simulated time: khugepaged (policy khugepaged, pages_to_scan = 512: one 2 MiB range
/// a wake-up) sleeps scan_sleep_millisecs = 1 of simulated time. At 1 MHz, 1 ms is 1000
/// cycles; each first touch of a page costs the fault latency (1000 cycles), so the
/// machine's time passes 1 ms with the first fault's cycles plus translation, and the
/// first wake-up (checked every reference: tick_interval = 1) comes at the first
/// reference after 1 ms. Touching all 512 pages of one 2 MiB range costs 512 faults =
/// 512 ms, so by then many wake-ups have come; the range is collapsed once it has at
/// most max_ptes_none = 0 empty entries, i.e. at the first wake-up after the 512th page
/// is touched. The copy (512 x copy_cycles_per_page = 512 x 10) is the kernel thread's:
/// `kernel.cycles` = 5120 and the application's `os.os_cycles` = 0. Fails if khugepaged
/// ignores the clock (scan_period = 10^6 references: no wake-up in 600 references) or if
/// its cycles are charged to the application.
#[test]
fn khugepaged_runs_on_simulated_time_and_its_cycles_are_the_kernel_threads() {
    let sets = [
        "os.policy=khugepaged",
        "machine.clock_mhz=1",
        "os.tick_interval=1",
        "os.khugepaged.scan_sleep_millisecs=1",
        "os.khugepaged.pages_to_scan=512",
        "os.khugepaged.max_ptes_none=0",
        "os.khugepaged.copy_cycles_per_page=10",
    ];
    let mut m = Machine::new(spec("skylake", &sets)).unwrap();
    let refs: Vec<(u64, AccessKind)> = (0..512).map(|i| (VA + i * 4096, STORE)).collect();
    let s = run(&mut m, &refs);
    assert_eq!(s.os.collapses, 0, "the last page's fault comes after the last wake-up");
    let t = s.time.expect("a clock");
    // One wake-up per fault after the first (each fault is 1000 cycles = 1 ms).
    assert!(t.kernel.wakeups >= 500, "{:?}", t.kernel);
    let s = run(&mut m, &[(VA, LOAD), (VA, LOAD)]);
    assert_eq!(s.os.collapses, 1);
    let t = s.time.unwrap();
    assert_eq!((t.kernel.pages_collapsed, t.kernel.cycles), (1, 512 * 10));
    assert_eq!(s.os.os_cycles, 0, "the copy is the kernel thread's");
    let j = s.to_json();
    assert_eq!(j["kernel"]["cycles"], 5120);
    assert!(j["time"]["app_seconds"].as_f64().unwrap() >= 0.512);

    // Charged to the application, the same copy is in the application's cycles.
    let mut sets2 = sets.to_vec();
    sets2.push("os.background_charge=application");
    let mut m = Machine::new(spec("skylake", &sets2)).unwrap();
    let mut refs2 = refs.clone();
    refs2.extend([(VA, LOAD), (VA, LOAD)]);
    let s = run(&mut m, &refs2);
    assert_eq!((s.os.collapses, s.os.os_cycles), (1, 5120));
}

/// Without a clock nothing about time is reported and background work stays on the
/// reference clock, as before (the pinned results rely on it).
#[test]
fn without_a_clock_no_time_is_reported() {
    let mut m = Machine::new(spec("skylake", &["os.policy=khugepaged"])).unwrap();
    let s = run(&mut m, &[(VA, LOAD)]);
    assert!(s.time.is_none());
    let j = s.to_json();
    assert!(j.get("time").is_none() && j.get("kernel").is_none());
    let e = load_machine("default", None, &["machine.clock_mhz=0".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("machine.clock_mhz"), "{e}");
    let e = load_machine("default", None, &["machine.ad=sometimes".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("sometimes"), "{e}");
    let e = load_machine("default", None, &["os.background_charge=nobody".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("os.background_charge"), "{e}");
}
