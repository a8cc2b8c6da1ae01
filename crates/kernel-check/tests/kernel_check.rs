//! Every scenario both ways on this machine's kernel (its own test binary, without the
//! libtest harness, so no other test runs beside it and moves THP counters; and so that
//! this executable can be the scenarios' child process, `child_entry`). Skips with the
//! reason what the kernel or the user cannot run; fails, printing the table, on any
//! difference. Then, as root: the settings are the same after the run as before, and a
//! run interrupted by SIGINT in the middle of a scenario restores them too.

use mmulab_kernel_check as kc;
use std::time::{Duration, Instant};

const SLOW_ENV: &str = "MMULAB_KERNEL_CHECK_SLOW";

/// A scenario that changes two settings and runs for seconds (for the SIGINT test).
fn slow() -> String {
    let mut s = String::from("# slow\nset enabled always\nset hugepages-64kB/enabled always\nmap A 64M\n");
    for _ in 0..400 {
        s += "write A 0 64M\nmadvise A 0 64M dontneed\n";
    }
    s
}

fn main() {
    kc::child_entry();
    let exe = std::env::current_exe().expect("the test's own path");
    if std::env::var_os(SLOW_ENV).is_some() {
        kc::catch_interrupts();
        let o = kc::check("slow", &slow(), &exe);
        println!("{:?}", o.skipped);
        std::process::exit(if kc::native::interrupted() { 130 } else { 0 });
    }
    if !std::path::Path::new(kc::host::THP).exists() {
        println!(
            "kernel_check: skipped: this kernel has no transparent huge pages ({} is missing)",
            kc::host::THP
        );
        return;
    }
    kc::catch_interrupts();
    let before = kc::host::snapshot();
    let t = Instant::now();
    let out = kc::check_all(&[], &exe).expect("the built-in scenarios");
    println!("{}", kc::table(&out));
    println!("kernel_check: {:.1} s", t.elapsed().as_secs_f64());
    assert_eq!(kc::host::snapshot(), before, "every setting is restored after the run");
    assert!(out.len() >= 25, "at least 25 scenarios ship");
    let bad: Vec<&str> = out
        .iter()
        .filter(|o| o.skipped.is_none() && !o.equal())
        .map(|o| o.name.as_str())
        .collect();
    assert!(bad.is_empty(), "kernel and mmulab differ in {bad:?} (table above)");
    program_check();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("kernel_check: the interrupt test skipped: setting THP controls needs root");
        return;
    }
    let mut child = std::process::Command::new(&exe)
        .env(SLOW_ENV, "1")
        .spawn()
        .expect("the slow run");
    let t = Instant::now();
    while kc::host::read_setting("hugepages-64kB/enabled").ok().as_deref() != Some("always") {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the slow scenario never set its settings"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: signals the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let st = child.wait().expect("the slow run ends");
    assert_eq!(
        st.code(),
        Some(130),
        "the slow run saw the interrupt (it ran to its end otherwise)"
    );
    assert_eq!(
        kc::host::snapshot(),
        before,
        "an interrupted run restores every setting"
    );
    println!("kernel_check: interrupted mid-scenario, every setting restored");
}

/// A real program both ways (`check-kernel -- PROGRAM`, kernel-check's program.rs):
/// tests/programs/map_free_split.c built with `cc`, run natively and recorded with every
/// instruction stepped; its THP fault counters must be equal. Skipped with the reason
/// where there is no C compiler or ptrace is not allowed.
fn program_check() {
    let dir = std::env::temp_dir().join(format!("mmulab-kc-program-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let exe = dir.join("map_free_split");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/map_free_split.c");
    let built = std::process::Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        println!(
            "kernel_check: the program check skipped: no C compiler (cc) built {}",
            src.display()
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let t = Instant::now();
    let o = kc::program::check_program(&[exe.display().to_string()], None, &mut |m| {
        println!("kernel_check: {m}")
    });
    let _ = std::fs::remove_dir_all(&dir);
    println!("{}", kc::table(std::slice::from_ref(&o)));
    println!("kernel_check: program check {:.1} s", t.elapsed().as_secs_f64());
    match &o.skipped {
        Some(why) if why.starts_with("cannot record") || why.starts_with("not compared") => {
            println!("kernel_check: the program check skipped: {why}");
        }
        Some(why) => panic!("the program check failed: {why}"),
        None => assert!(o.equal(), "kernel and mmulab differ on the program (table above)"),
    }
}
