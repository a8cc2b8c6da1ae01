//! The ptrace window sampler on small C programs with known access patterns (x86-64 Linux
//! with a C compiler; skipped elsewhere): the references it records are the addresses the
//! program stores to, derived by hand; sampled windows hold exactly W steps each; threads
//! are followed; nothing is left behind (no zombie); a program that cannot start is a
//! clear error. The tests run one at a time (one lock): each waits for its own children.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mmulab_record::ptrace_sample::{record, WindowSampling};
use mmulab_record::{RecordError, RecordOptions};
use mmulab_trace::format::mlt::read_sections;
use mmulab_trace::{open_trace, AccessKind, Batch, MemRef, TraceSource};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-ptrace-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `src` into `name`; `None` when there is no C compiler.
fn compile(name: &str, src: &str, extra: &[&str]) -> Option<PathBuf> {
    let d = dir();
    let c = d.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = d.join(name);
    let out = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&c)
        .args(extra)
        .output()
        .ok()?;
    assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
    Some(exe)
}

fn options(cmd: &[&str]) -> RecordOptions {
    RecordOptions {
        command: cmd.iter().map(|s| s.to_string()).collect(),
        level: 1,
        maps_interval: Duration::from_millis(50),
        stdout_to_stderr: true,
        stdout_null: false,
        max_refs: None,
        env: Vec::new(),
    }
}

fn refs_of(path: &Path) -> Vec<MemRef> {
    let mut src = open_trace(path, None).unwrap();
    let mut all = Vec::new();
    let mut b = Batch::default();
    loop {
        b.clear();
        if src.next_batch(&mut b, 1 << 16).unwrap() == 0 {
            return all;
        }
        all.extend_from_slice(&b.refs);
    }
}

fn no_child_left() -> bool {
    // SAFETY: waitpid with WNOHANG on any child; -1/ECHILD means none is left, not even a
    // zombie.
    let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL) };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD)
}

const PAGES: &str = r#"
#include <stdio.h>
#define N 64
static volatile int arr[N * 1024];
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%lu\n", (unsigned long)arr);
    fclose(f);
    for (int i = 0; i < N; i++) arr[i * 1024] = i;
    return 0;
}
"#;

#[test]
fn every_store_of_a_page_loop_is_recorded_at_its_address() {
    let _one = crate::one_at_a_time();
    let Some(exe) = compile("pages", PAGES, &[]) else {
        eprintln!("no C compiler: skipped");
        return;
    };
    let d = dir();
    let addr_file = d.join("pages.addr");
    let trace = d.join("pages.mlt");
    let r = record(
        &options(&[exe.to_str().unwrap(), addr_file.to_str().unwrap()]),
        WindowSampling::parse("all").unwrap(),
        std::fs::File::create(&trace).unwrap(),
        &mut |_| {},
        Box::new(|| None),
    );
    let r = match r {
        Err(RecordError::Ptrace(why)) if why.contains("not permitted") => {
            eprintln!("ptrace not permitted here: skipped ({why})");
            return;
        }
        r => r.unwrap(),
    };
    assert!(r.recording.exit_status.success());
    assert!(no_child_left());
    let base: u64 = std::fs::read_to_string(&addr_file).unwrap().trim().parse().unwrap();
    // By hand: arr[i·1024] is an int (4 bytes) at base + i·1024·4 = base + i·4096, stored
    // once for i = 0 … 63 in that order; nothing else touches the array (it is static and
    // volatile, written only by the loop; the C runtime never reads it).
    let expected: Vec<(u64, AccessKind, u16)> = (0..64).map(|i| (base + i * 4096, AccessKind::Store, 4)).collect();
    let refs = refs_of(&trace);
    let in_array: Vec<(u64, AccessKind, u16)> = refs
        .iter()
        .filter(|m| m.addr >= base && m.addr < base + 64 * 4096)
        .map(|m| (m.addr, m.kind, m.size))
        .collect();
    assert_eq!(in_array, expected);
    // The whole run: the loader, libc's start, fopen/fprintf; stack pushes and loads.
    assert_eq!(r.recording.references as usize, refs.len());
    assert!(r.recording.loads > 1000 && r.recording.stores > 1000);
    assert_eq!(r.windows, 1);
    assert!(
        r.steps > 10_000 && r.undecodable == 0,
        "{} steps, {} undecodable",
        r.steps,
        r.undecodable
    );
    // The VMA samples hold the program's own mappings (its binary, no Valgrind).
    let sections = read_sections(&trace).unwrap();
    let vmas = &sections.iter().find(|(n, _)| n == "vmas").unwrap().1;
    assert!(String::from_utf8_lossy(vmas).contains(exe.to_str().unwrap()));
}

const LOOP: &str = r#"
#include <stdlib.h>
#define N 256
static volatile long arr[N * 512];
int main(int argc, char **argv) {
    long rounds = atol(argv[1]);
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < N; i++) arr[i * 512] = r;
    return 0;
}
"#;

#[test]
fn sampled_windows_hold_w_steps_each_every_period() {
    let _one = crate::one_at_a_time();
    let Some(exe) = compile("loop", LOOP, &[]) else {
        return;
    };
    let trace = dir().join("loop.mlt");
    // About 0.3 s of CPU natively (2 M rounds × 256 stores).
    let r = match record(
        &options(&[exe.to_str().unwrap(), "2000000"]),
        WindowSampling::parse("1000/20ms").unwrap(),
        std::fs::File::create(&trace).unwrap(),
        &mut |_| {},
        Box::new(|| None),
    ) {
        Err(RecordError::Ptrace(why)) if why.contains("not permitted") => return,
        r => r.unwrap(),
    };
    assert!(no_child_left());
    // One window per 20 ms of user CPU time (the kernel checks the timer at its tick).
    let expect = r.user_s / 0.020;
    assert!(
        r.windows as f64 >= expect * 0.5 && r.windows as f64 <= expect * 1.5 + 2.0,
        "{} windows for {:.3} s of user time",
        r.windows,
        r.user_s
    );
    let sections = read_sections(&trace).unwrap();
    let text = String::from_utf8(sections.iter().find(|(n, _)| n == "windows").unwrap().1.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len() as u64, r.windows);
    // Every window but perhaps the last (the program may end inside it) steps exactly W.
    for l in &lines[..lines.len() - 1] {
        assert!(l.contains(" steps=1000 "), "{l}");
    }
    assert_eq!(r.steps, lines.iter().map(|l| field(l, "steps")).sum::<u64>());
    assert_eq!(
        r.recording.references,
        lines.iter().map(|l| field(l, "refs")).sum::<u64>()
    );
    // The inner loop is a few instructions per store (a store, an add, a compare and a
    // branch at -O1): most steps are in it, and every store of it lands on a 4 KiB
    // boundary from the array's first element (i·512 longs = i·4096 bytes).
    let stores: Vec<u64> = refs_of(&trace)
        .iter()
        .filter(|m| m.kind == AccessKind::Store && m.size == 8)
        .map(|m| m.addr)
        .collect();
    assert!(
        stores.len() as u64 >= r.steps / 8,
        "{} stores in {} steps",
        stores.len(),
        r.steps
    );
    let base = stores.iter().copied().min().unwrap();
    let on_boundary = stores.iter().filter(|&&a| (a - base) % 4096 == 0).count();
    assert!(
        on_boundary * 100 >= stores.len() * 95,
        "{on_boundary} of {}",
        stores.len()
    );
}

fn field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .unwrap()
        .parse()
        .unwrap()
}

const THREADS: &str = r#"
#include <pthread.h>
#include <stdlib.h>
static volatile long a[1 << 16], b[1 << 16];
static void *work(void *p) {
    volatile long *x = p;
    for (long r = 0; r < 200000; r++)
        for (int i = 0; i < (1 << 16); i += 512) x[i] = r;
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, work, (void *)b);
    work((void *)a);
    pthread_join(t, 0);
    return 0;
}
"#;

#[test]
fn a_second_thread_is_followed_and_the_program_ends_normally() {
    let _one = crate::one_at_a_time();
    let Some(exe) = compile("threads", THREADS, &["-pthread"]) else {
        return;
    };
    let trace = dir().join("threads.mlt");
    let r = match record(
        &options(&[exe.to_str().unwrap()]),
        WindowSampling::parse("500/5ms").unwrap(),
        std::fs::File::create(&trace).unwrap(),
        &mut |_| {},
        Box::new(|| None),
    ) {
        Err(RecordError::Ptrace(why)) if why.contains("not permitted") => return,
        r => r.unwrap(),
    };
    assert!(r.recording.exit_status.success(), "{}", r.recording.exit_status);
    assert_eq!(r.threads, 2);
    // About 50 ms of user CPU time per thread (2 × 200,000 × 128 stores): windows came.
    assert!(
        r.windows >= 1 && r.steps >= 500,
        "{} windows, {} steps",
        r.windows,
        r.steps
    );
    assert!(no_child_left());
}

#[test]
fn a_program_that_cannot_start_is_a_clear_error_and_leaves_nothing() {
    let _one = crate::one_at_a_time();
    let e = record(
        &options(&["/nonexistent/prog"]),
        WindowSampling::default(),
        std::io::sink(),
        &mut |_| {},
        Box::new(|| None),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("cannot start `/nonexistent/prog`") || text.contains("not permitted"),
        "{text}"
    );
    assert!(no_child_left());
}

/// A worker thread blocked in `read` takes the timer signals while the main thread blocks
/// them (for its first 0.3 s of CPU); then the main thread takes them. The worker's window
/// is a single step over a blocking `read`: it never ends by itself. Before
/// `abandon_window` that one window was the whole recording (every later signal was
/// suppressed while it was under way); now it is abandoned at the second signal the main
/// thread takes with no step made, and the main thread's remaining ~0.6 s of CPU gets
/// windows every 20 ms. The program then ends normally (the abandoned step's SIGTRAP is
/// swallowed, not passed on).
const BLOCKED_WORKER: &str = r#"
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
static int fds[2];
static volatile long sink;
static void *idle(void *p) { char c; read(fds[0], &c, 1); return p; }
static double cpu(void) {
    struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void spin(double s) { double t0 = cpu(); while (cpu() - t0 < s) for (int i = 0; i < 1000; i++) sink += i; }
int main(void) {
    pipe(fds);
    pthread_t t;
    pthread_create(&t, 0, idle, 0); /* before the mask: a thread inherits its creator's */
    sigset_t v; sigemptyset(&v); sigaddset(&v, SIGVTALRM);
    pthread_sigmask(SIG_BLOCK, &v, 0);
    spin(0.3);
    pthread_sigmask(SIG_UNBLOCK, &v, 0);
    spin(0.6);
    write(fds[1], "x", 1);
    pthread_join(t, 0);
    return 0;
}
"#;

#[test]
fn a_window_stuck_on_a_blocked_thread_is_abandoned_and_sampling_goes_on() {
    let _one = crate::one_at_a_time();
    let Some(exe) = compile("blocked", BLOCKED_WORKER, &["-pthread"]) else {
        return;
    };
    let trace = dir().join("blocked.mlt");
    let r = match record(
        &options(&[exe.to_str().unwrap()]),
        WindowSampling::parse("200/20ms").unwrap(),
        std::fs::File::create(&trace).unwrap(),
        &mut |_| {},
        Box::new(|| None),
    ) {
        Err(RecordError::Ptrace(why)) if why.contains("not permitted") => return,
        r => r.unwrap(),
    };
    assert!(r.recording.exit_status.success(), "{}", r.recording.exit_status);
    assert!(r.abandoned_windows >= 1, "{} abandoned", r.abandoned_windows);
    // 0.6 s at one window per 20 ms: 30 expected; half of it, at least, even on a loaded
    // machine (stuck, there was 1).
    assert!(r.windows >= 10, "{} windows", r.windows);
    assert!(no_child_left());
}
