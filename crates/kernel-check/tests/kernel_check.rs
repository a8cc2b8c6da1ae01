//! Every scenario both ways on this machine's kernel (its own test binary, without the
//! libtest harness, so no other test runs beside it and moves THP counters; and so that
//! this executable can be the scenarios' child process, `child_entry`). Skips with the
//! reason what the kernel or the user cannot run; fails, printing the table, on any
//! difference.

fn main() {
    mmulab_kernel_check::child_entry();
    if !std::path::Path::new(mmulab_kernel_check::host::THP).exists() {
        println!(
            "kernel_check: skipped: this kernel has no transparent huge pages ({} is missing)",
            mmulab_kernel_check::host::THP
        );
        return;
    }
    mmulab_kernel_check::catch_interrupts();
    let exe = std::env::current_exe().expect("the test's own path");
    let t = std::time::Instant::now();
    let out = mmulab_kernel_check::check_all(&[], &exe).expect("the built-in scenarios");
    let table = mmulab_kernel_check::table(&out);
    println!("{table}");
    println!("kernel_check: {:.1} s", t.elapsed().as_secs_f64());
    assert!(out.len() >= 25, "at least 25 scenarios ship");
    let bad: Vec<&str> = out
        .iter()
        .filter(|o| o.skipped.is_none() && !o.equal())
        .map(|o| o.name.as_str())
        .collect();
    assert!(bad.is_empty(), "kernel and mmulab differ in {bad:?} (table above)");
}
