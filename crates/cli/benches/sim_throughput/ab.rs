//! The `--against OTHER` modes of the throughput bench (see its module documentation):
//! whole runs alternating, `--paired`, and `--sliced` (with `--threads 2`, the two-thread
//! runs compared by wall time in turns).

use super::{pin, run, run_on, target_args, Case};
use std::process::Command;

/// Interleaved comparison with another binary (see the module documentation).
pub(super) fn compare(bin: &str, other: &str, cases: &[Case], rounds: usize) {
    println!("CPU seconds, fastest of {rounds} alternating runs: this build vs {other}\n");
    println!(
        "{:<50} {:>6} {:>10} {:>10} {:>8}",
        "workload", "pages", "this", "other", "speedup"
    );
    for c in cases {
        let (mut this, mut that) = (f64::MAX, f64::MAX);
        for _ in 0..rounds {
            this = this.min(run(bin, &c.config, &c.workload, &c.sets).cpu_secs);
            that = that.min(run(other, &c.config, &c.workload, &c.sets).cpu_secs);
        }
        println!(
            "{:<50} {:>6} {this:>10.2} {that:>10.2} {:>8.2}",
            c.label(),
            c.pages,
            that / this
        );
    }
}

/// `--against OTHER --paired`: both binaries at once, one per CPU (see the module
/// documentation); the median of the per-round ratios.
pub(super) fn compare_paired(bin: &str, other: &str, cases: &[Case], rounds: usize) {
    // SAFETY: plain FFI call without arguments.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    assert!(
        cpus >= 2,
        "--paired runs the two binaries side by side and needs two CPUs; this machine has {cpus}"
    );
    println!(
        "CPU seconds, {rounds} rounds of both binaries at the same time (one CPU each, sides swapped each round):"
    );
    ratio_rows(other, cases, rounds, |c, round| {
        std::thread::scope(|s| {
            let a = s.spawn(|| run_on(bin, &c.config, &c.workload, &c.sets, &[], Some(round % 2)));
            let b = run_on(other, &c.config, &c.workload, &c.sets, &[], Some(1 - round % 2));
            (a.join().expect("run thread").cpu_secs, b.cpu_secs)
        })
    });
}

/// `--against OTHER --sliced`: both binaries in turns (see the module documentation);
/// per workload, the median of the per-round ratios. With `threads` 1 both run on one
/// CPU, `--sim-threads 1`, and the figure is CPU time; with 2, `--sim-threads 2` on every
/// CPU (the cache thread on the second), and the figure is the wall time of a binary's
/// own turns until it ends (what a user waits: CPU time would count the two threads'
/// sum).
pub(super) fn compare_sliced(bin: &str, other: &str, cases: &[Case], rounds: usize, turn_ms: u64, threads: usize) {
    let turn = std::time::Duration::from_millis(turn_ms.max(1));
    // The CPU both run on with one thread: the last one (the first often takes
    // interrupts).
    // SAFETY: plain FFI call without arguments.
    let cpus = (unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).max(1) as usize;
    let cpu = (threads == 1).then_some(cpus - 1);
    if threads == 1 {
        println!(
            "CPU seconds, {rounds} rounds of both binaries on one CPU in turns of {} ms:",
            turn.as_millis()
        );
    } else {
        assert!(
            cpus >= 2,
            "--sliced --threads 2 runs the cache thread on a second CPU; this machine has {cpus}"
        );
        println!(
            "wall seconds of each binary's turns, {rounds} rounds of both binaries with --sim-threads 2 in turns of {} ms:",
            turn.as_millis()
        );
    }
    ratio_rows(other, cases, rounds, |c, _| {
        let t = sliced_pair([bin, other], c, cpu, threads, turn);
        (t[0], t[1])
    });
}

/// The table of `--paired` and `--sliced`: for each case, `rounds` rounds of
/// `pair(case, round)` = (this build's CPU seconds, the other's), and the medians and
/// range of the ratios.
fn ratio_rows(other: &str, cases: &[Case], rounds: usize, pair: impl Fn(&Case, usize) -> (f64, f64)) {
    println!("this build vs {other}; speedup = other / this per round, median of the rounds\n");
    println!(
        "{:<50} {:>6} {:>14} {:>14} {:>8} {:>16}",
        "workload", "pages", "this (median)", "other (median)", "speedup", "speedup range"
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for c in cases {
        let (mut this, mut that, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (a, b) = pair(c, round);
            this.push(a);
            that.push(b);
            ratio.push(b / a);
        }
        let (lo, hi) = ratio
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)));
        println!(
            "{:<50} {:>6} {:>14.2} {:>14.2} {:>8.3} {:>16}",
            c.label(),
            c.pages,
            median(&mut this),
            median(&mut that),
            median(&mut ratio),
            format!("{lo:.3}..{hi:.3}")
        );
    }
}

/// Runs `bins` on case `c` with `--sim-threads threads`, one at a time in turns of
/// `turn` (pinned to CPU `cpu` if given), to the end of both: with one thread their CPU
/// seconds, with more the wall seconds of their turns.
fn sliced_pair(bins: [&str; 2], c: &Case, cpu: Option<usize>, threads: usize, turn: std::time::Duration) -> [f64; 2] {
    let workload = &c.workload;
    let threads_arg = threads.to_string();
    let mut pids = [0 as libc::pid_t; 2];
    for (i, bin) in bins.iter().enumerate() {
        let mut cmd = Command::new(bin);
        // No progress lines between the turns' output (a stopped child's came late).
        cmd.env("MMULAB_PROGRESS", "off");
        cmd.arg("sim").args(target_args(&c.config));
        cmd.args(["--workload", workload, "--json"])
            .stdout(std::process::Stdio::null());
        // One thread is what `sim` runs pinned to one CPU (and all a binary from before
        // `--sim-threads` knows).
        if threads != 1 {
            cmd.args(["--sim-threads", &threads_arg]);
        }
        for s in &c.sets {
            cmd.args(["--set", s]);
        }
        if let Some(cpu) = cpu {
            pin(&mut cmd, cpu);
        }
        pids[i] = cmd.spawn().expect("spawn mmulab").id() as libc::pid_t;
        // Stopped until its first turn (it has only just started: a few milliseconds of
        // setup at most, for each alike). The stop is reaped like every later one.
        // SAFETY: plain FFI calls on our own child's pid, with pointers to locals.
        unsafe {
            libc::kill(pids[i], libc::SIGSTOP);
            let mut status = 0;
            libc::waitpid(pids[i], &mut status, libc::WUNTRACED);
        }
    }
    let mut secs = [f64::NAN; 2];
    let mut wall = [0f64; 2];
    let mut live = [true; 2];
    let mut k = 0;
    // How often a turn looks whether its binary ended (the wall time's resolution).
    let step = std::time::Duration::from_millis(2);
    while live.iter().any(|&l| l) {
        let i = k % 2;
        k += 1;
        if !live[i] {
            continue;
        }
        let mut status = 0;
        // SAFETY (every block below): plain FFI calls on our own child's pid, with
        // pointers to locals.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let start = std::time::Instant::now();
        unsafe { libc::kill(pids[i], libc::SIGCONT) };
        // The turn, in steps: an end within it is reaped at once (no stop is pending: a
        // continued child reports none until it is stopped again).
        let mut ended = false;
        while start.elapsed() < turn {
            std::thread::sleep(step.min(turn.saturating_sub(start.elapsed())));
            let r = unsafe { libc::wait4(pids[i], &mut status, libc::WNOHANG, &mut usage) };
            if r == pids[i] {
                ended = true;
                break;
            }
            assert!(r == 0, "wait4 failed");
        }
        wall[i] += start.elapsed().as_secs_f64();
        if !ended {
            unsafe { libc::kill(pids[i], libc::SIGSTOP) };
            // Reap it if it ended meanwhile (a stop, reported with WUNTRACED, is not an
            // end).
            loop {
                let r = unsafe { libc::wait4(pids[i], &mut status, libc::WUNTRACED, &mut usage) };
                assert!(r == pids[i], "wait4 failed");
                if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                    ended = true;
                    break;
                }
                if libc::WIFSTOPPED(status) {
                    break;
                }
            }
        }
        if ended {
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "{} sim {workload} failed (status {status})",
                bins[i]
            );
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            secs[i] = if threads == 1 {
                tv(usage.ru_utime) + tv(usage.ru_stime)
            } else {
                wall[i]
            };
            live[i] = false;
        }
    }
    secs
}
