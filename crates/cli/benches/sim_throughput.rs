//! End-to-end throughput and memory of `mmulab sim` (issue: "speed and memory").
//!
//! Runs the real release binary on the issue's example config
//! (tests/data/issue2-example.toml) and reports, from one run of this program:
//!
//! * references per CPU second (one core) for `seq` and `gups` over 1 GiB,
//!   100 M references each, with 4 KiB pages and with 2 MiB pages;
//! * peak resident memory (`wait4` rusage maxrss) of 10 M- and 100 M-reference runs, and
//!   their ratio (it must stay near 1: memory must not grow with trace length);
//! * the ratios between those figures.
//!
//! Each workload runs `--rounds N` times (default 3), the workloads in turn; the table
//! gives the fastest and the median run (the host's speed drifts by tens of percent
//! within minutes: the fastest run is the least disturbed measure of the code).
//!
//! Run: `cargo bench -p mmulab-cli --bench sim_throughput` (add `-- --refs 20M` for a
//! shorter run, `-- --rounds 5` for more runs). Results and their interpretation:
//! docs/benchmarks.md.
//!
//! `-- --against PATH` compares with another `mmulab` binary (e.g. one built from an
//! earlier commit): each workload runs on both binaries alternately, `--rounds N` times
//! each (default 5), and the ratio of their fastest CPU times is reported. On a host
//! whose speed drifts by tens of percent within minutes, only such interleaved ratios
//! are trustworthy.
//!
//! With `--caches`, each of the three `--against` modes compares on the data-cache rows
//! (below) instead of the issue-2 rows.
//!
//! `-- --against PATH --paired` runs the two binaries at the same time instead, each
//! pinned to a CPU of its own (the sides swap every round), and reports the median of
//! the per-round ratios: both runs of a round see the same phase of the host, so the
//! ratio holds still where the times do not. Both run slower than alone (they share the
//! host's caches and perhaps a physical core), so only the ratio is the figure. Needs
//! two CPUs.
//!
//! `-- --against PATH --sliced [--turn-ms N]` runs the two binaries on one CPU in turns
//! of N ms (default 100; the bench stops one and continues the other), so both see the
//! same phases of the host, and reports the ratio of their CPU times, median over
//! `--rounds` (default 5). On this host two runs of one binary so compared differ by
//! 0–4 % with 100 ms turns (alternating whole runs: up to 40 %). Each turn starts with
//! the other's data in the caches, which costs both alike and so dilutes a difference
//! that lies in cache misses: longer turns show more of it but let more of the host's
//! drift into a turn (500 ms: 0.89–1.01 for one binary against itself). Add
//! `--threads 2` to compare the two-thread runs (`--sim-threads 2`, the cache thread on
//! the second CPU): both binaries in turns on every CPU, and the figure is each one's
//! wall time in its turns (to 2 ms), the time a user waits.
//!
//! `-- --count` measures instead what does not drift: per GUPS update over 1 GiB (4 KiB
//! pages), the instructions, branch mispredictions and first-level data-cache misses of
//! Valgrind's cachegrind (`--cache-sim=yes --branch-sim=yes`, its own simple predictor
//! and caches, not the host's), from two runs of different lengths so that setup
//! cancels out; with `--against PATH` for both binaries. Instructions alone mislead:
//! a design with 6% fewer of them but 2.4 more mispredictions per update (a hash-chain
//! search whose "bucket empty?" branch is a coin toss under random addresses) ran 20%
//! slower. Needs `valgrind` (`apt-get install valgrind`); takes about a minute per binary.
//! `-- --count --caches` counts on the data-cache machine (`cortex-a76-pi5`), `--count
//! --dram` with its DRAM model as well.
//!
//! Data caches (issue #22 item 2: ≥ 10 M references/s with caches and DRAM on): the
//! default run ends with four more rows, `seq` and `gups` over 1 GiB (4 KiB pages) on
//! the catalog machine `cortex-a76-pi5` (L1D, L2, shared L3), alone (`caches`) and with
//! `--set dram.profile=lpddr4x-4267-pi5` (`caches+dram`); `-- --caches-only` runs just
//! those. This is the benchmark the issue's figure refers to. Each of them runs twice:
//! on one thread (`--sim-threads 1`), whose rate per CPU second is the model's cost, and
//! with the cache thread (`--sim-threads 2`, the default on a host with two CPUs free:
//! the caches and DRAM on a second thread), whose rate per wall-clock second is the
//! time a user waits; the table has both times for every row (the CPU seconds of a
//! two-thread run are both threads'). The `--against` modes run the rows as `sim` does
//! by default (pinned to one CPU, as `--paired` and `--sliced` are, that is one thread).
//!
//! Before each round of the table the bench measures the host (`Host`): its clock as a
//! chain of dependent adds, and its load-to-use latency at 4 and 16 MiB (`mmulab bench
//! latency`); the line after the table gives their best and median. Absolute rates are
//! only comparable between runs whose host lines agree.

use std::path::PathBuf;
use std::process::Command;

#[path = "sim_throughput/ab.rs"]
mod ab;
use ab::{compare, compare_paired, compare_sliced};

struct Run {
    cpu_secs: f64,
    /// Wall-clock seconds from spawn to exit.
    wall_secs: f64,
    max_rss_kib: i64,
    refs: u64,
}

fn run(bin: &str, config: &str, workload: &str, sets: &[&str]) -> Run {
    run_on(bin, config, workload, sets, &[], None)
}

/// The catalog machine of the data-cache rows (issue #22 item 2).
const CACHE_MACHINE: &str = "cortex-a76-pi5";
/// The DRAM profile of the caches + DRAM rows.
const CACHE_DRAM: &str = "dram.profile=lpddr4x-4267-pi5";
/// Private pages on the data-cache rows: under #23's zero-page default a load-only `seq`
/// reads one shared zero frame, which every cache level then holds (a benchmark that
/// measures caches initialises its data).
const CACHE_PRIVATE: &str = "os.zero_page=false";

/// One row: a workload on a target (`config` as [`target_args`] takes it) with `--set`s.
struct Case {
    name: &'static str,
    pages: &'static str,
    workload: String,
    sets: Vec<&'static str>,
    config: String,
}

/// The issue-2 rows: `seq` and `gups` over 1 GiB on `config`, 4 KiB and 2 MiB pages.
fn issue2_cases(config: &str, refs: u64) -> Vec<Case> {
    let mut cases = Vec::new();
    for (name, workload) in [
        ("seq", format!("seq:size=1GiB,refs={refs}")),
        ("gups", format!("gups:table=1GiB,refs={refs},init=off")),
    ] {
        for (pages, sets) in [("4K", vec![]), ("2M", vec!["os.policy=fixed", "os.page_size=2M"])] {
            let (workload, config) = (workload.clone(), config.to_string());
            cases.push(Case {
                name,
                pages,
                workload,
                sets,
                config,
            });
        }
    }
    cases
}

/// The data-cache rows (issue #22 item 2): `seq` and `gups` over 1 GiB (4 KiB pages) on
/// [`CACHE_MACHINE`], alone and with [`CACHE_DRAM`].
fn cache_cases(refs: u64) -> Vec<Case> {
    let mut cases = Vec::new();
    for (name, workload, dram) in [
        ("seq caches", format!("seq:size=1GiB,refs={refs}"), false),
        ("gups caches", format!("gups:table=1GiB,refs={refs},init=off"), false),
        ("seq caches+dram", format!("seq:size=1GiB,refs={refs}"), true),
        (
            "gups caches+dram",
            format!("gups:table=1GiB,refs={refs},init=off"),
            true,
        ),
    ] {
        let sets = if dram {
            vec![CACHE_PRIVATE, CACHE_DRAM]
        } else {
            vec![CACHE_PRIVATE]
        };
        let config = format!("machine:{CACHE_MACHINE}");
        cases.push(Case {
            name,
            pages: "4K",
            workload,
            sets,
            config,
        });
    }
    cases
}

impl Case {
    /// The workload column: the workload, and for a data-cache row what it runs with.
    fn label(&self) -> String {
        match self.name.split_once(' ') {
            Some((_, with)) => format!("{} {with}", self.workload),
            None => self.workload.clone(),
        }
    }
}

/// `config` as `sim` takes it: a config file, or `machine:NAME` for a catalog machine.
fn target_args(config: &str) -> [&str; 2] {
    match config.strip_prefix("machine:") {
        Some(m) => ["--machine", m],
        None => ["--config", config],
    }
}

/// Makes `cmd`'s process run on CPU `cpu` only.
fn pin(cmd: &mut Command, cpu: usize) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only makes the
    // async-signal-safe sched_setaffinity call on a local set.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// [`run`], pinned to CPU `cpu` if given.
/// `extra`: more `sim` arguments (`--sim-threads N`).
fn run_on(bin: &str, config: &str, workload: &str, sets: &[&str], extra: &[&str], cpu: Option<usize>) -> Run {
    let mut cmd = Command::new(bin);
    if let Some(cpu) = cpu {
        pin(&mut cmd, cpu);
    }
    // No progress lines from the child between the table's rows.
    cmd.env("MMULAB_PROGRESS", "off");
    cmd.arg("sim").args(target_args(config));
    cmd.args(["--workload", workload, "--json"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    cmd.args(extra);
    cmd.stdout(std::process::Stdio::piped());
    let start = std::time::Instant::now();
    // Reaped below by wait4, which also returns its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("spawn mmulab");
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.expect("stdout");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text).expect("read stdout");
    let mut status = 0;
    // SAFETY: plain FFI call with valid pointers to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall_secs = start.elapsed().as_secs_f64();
    assert!(
        r == pid && status == 0,
        "mmulab sim {workload} failed (status {status})"
    );
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON object");
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu_secs = tv(usage.ru_utime) + tv(usage.ru_stime);
    Run {
        cpu_secs,
        wall_secs,
        max_rss_kib: usage.ru_maxrss,
        refs: v["references"].as_u64().unwrap(),
    }
}

/// The thread's CPU time in seconds.
fn thread_cpu_secs() -> f64 {
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: plain FFI call with a valid pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// The host's clock as this process sees it, in G cycles per second of CPU time: a chain
/// of dependent register adds (latency one cycle on current out-of-order x86-64 and arm64
/// cores, the loop's own count and branch beside it). `None` on other ISAs.
fn host_clock_ghz() -> Option<f64> {
    const N: u64 = 400_000_000;
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return None;
    }
    let start = thread_cpu_secs();
    let mut x = 0u64;
    for _ in 0..N {
        // SAFETY: one add on a register the asm owns; no memory, no stack.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            std::arch::asm!("add {0}, 1", inout(reg) x, options(nomem, nostack))
        };
        #[cfg(target_arch = "aarch64")]
        unsafe {
            std::arch::asm!("add {0}, {0}, #1", inout(reg) x, options(nomem, nostack))
        };
    }
    let secs = thread_cpu_secs() - start;
    assert_eq!(std::hint::black_box(x), N);
    Some(N as f64 / secs / 1e9)
}

/// The host's state, measured before each round of the table: its clock, and the
/// load-to-use latency of `mmulab bench latency` (lat_mem_rd `-t`'s random ring, 4 KiB
/// pages, docs/probe.md) at 4 MiB (about the simulator's working set: host L2 and L3)
/// and 16 MiB (host L3, which neighbours on the host share). On this workplace's KVM
/// guests the same build has run 2x apart on different days (docs/benchmarks.md);
/// these say how the host stood.
#[derive(Default)]
struct Host {
    clock: Vec<f64>,
    near_ns: Vec<f64>,
    l3_ns: Vec<f64>,
}

impl Host {
    /// One measurement. The latency runs in its own process (`mmulab bench latency`),
    /// so its buffers stay out of this process's peak RSS, which every child `mmulab`
    /// would inherit across fork and exec (`ru_maxrss` keeps the pre-exec mark).
    fn measure(&mut self, bin: &str) {
        self.clock.extend(host_clock_ghz());
        let out = Command::new(bin)
            .args(["bench", "latency", "--size", "16M", "--loads", "1000000", "--json"])
            .stderr(std::process::Stdio::null())
            .output()
            .expect("run mmulab bench latency");
        assert!(out.status.success(), "mmulab bench latency failed ({})", out.status);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        let at = |mb: f64| {
            v["details"]["curve"]
                .as_array()
                .and_then(|c| c.iter().find(|p| p["size_mb"].as_f64() == Some(mb)))
                .and_then(|p| p["ns"].as_f64())
                .unwrap_or_else(|| panic!("bench latency has no {mb} MiB point"))
        };
        self.near_ns.push(at(4.0));
        self.l3_ns.push(at(16.0));
    }

    /// Best and median of each figure, as the table's last line.
    fn line(&mut self) -> String {
        fn best_median(v: &mut [f64], higher_is_better: bool) -> String {
            if v.is_empty() {
                return "not measured on this ISA".into();
            }
            v.sort_by(|a, b| {
                if higher_is_better {
                    b.total_cmp(a)
                } else {
                    a.total_cmp(b)
                }
            });
            format!("{:.2} ({:.2})", v[0], v[v.len() / 2])
        }
        format!(
            "host before each round, best (median): clock {} G cycles/s of CPU time (dependent adds); \
             load-to-use {} ns over 4 MiB, {} over 16 MiB (mmulab bench latency)",
            best_median(&mut self.clock, true),
            best_median(&mut self.near_ns, false),
            best_median(&mut self.l3_ns, false)
        )
    }
}

fn parse_refs(args: &[String]) -> u64 {
    let i = args.iter().position(|a| a == "--refs");
    i.and_then(|i| args.get(i + 1))
        .map(|s| mmulab_trace::units::parse_count(s).expect("--refs N"))
        .unwrap_or(100_000_000)
}

/// The value after `flag`, if given.
fn arg_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    Some(
        args.get(i + 1)
            .unwrap_or_else(|| panic!("{flag} needs a value"))
            .as_str(),
    )
}

/// Cachegrind event totals of one `mmulab sim` run of `workload`.
fn cachegrind(bin: &str, config: &str, sets: &[&str], workload: &str) -> std::collections::BTreeMap<String, f64> {
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=yes",
            "--cachegrind-out-file=/dev/null",
            bin,
        ])
        .arg("sim")
        .args(target_args(config))
        .args(["--workload", workload, "--json"])
        .args(sets.iter().flat_map(|s| ["--set", *s]))
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("--count runs valgrind, which failed to start ({e}): apt-get install valgrind"));
    assert!(
        out.status.success(),
        "valgrind mmulab sim {workload} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Summary lines look like "==123== I   refs:      1,901,545,443" (first number only).
    let mut totals = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        let Some((name, rest)) = line.split_once("== ").and_then(|(_, l)| l.split_once(':')) else {
            continue;
        };
        let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(n) = rest
            .split_whitespace()
            .next()
            .and_then(|n| n.replace(',', "").parse::<f64>().ok())
        {
            totals.insert(name, n);
        }
    }
    totals
}

/// `--count`: cachegrind events per GUPS update (see the module documentation).
fn count(bins: &[&str], config: &str, sets: &[&str]) {
    let (short, long) = (2_000_000u64, 4_000_000u64);
    println!(
        "cachegrind events per GUPS update over 1 GiB, 4 KiB pages: (updates={long} minus updates={short}) / {} ({config} {sets:?})\n",
        long - short
    );
    let events = [
        ("I refs", "instructions"),
        ("Mispredicts", "mispredicts"),
        ("D1 misses", "D1 misses"),
    ];
    print!("{:<44}", "binary");
    for (_, label) in events {
        print!(" {label:>13}");
    }
    println!();
    for bin in bins {
        // The two runs side by side (one core each).
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| cachegrind(bin, config, sets, &format!("gups:table=1GiB,updates={short},init=off")));
            let b = cachegrind(bin, config, sets, &format!("gups:table=1GiB,updates={long},init=off"));
            (a.join().expect("cachegrind thread"), b)
        });
        print!("{bin:<44}");
        for (key, _) in events {
            let get = |m: &std::collections::BTreeMap<String, f64>| {
                m.get(key).copied().unwrap_or_else(|| {
                    panic!(
                        "cachegrind printed no '{key}' total (another valgrind version?); its summary lines are parsed"
                    )
                })
            };
            let per = (get(&b) - get(&a)) / (long - short) as f64;
            print!(" {per:>13.2}");
        }
        println!();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let refs = parse_refs(&args);
    let bin = env!("CARGO_BIN_EXE_mmulab");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = root.join("tests/data/issue2-example.toml").display().to_string();
    if args.iter().any(|a| a == "--count") {
        let mut bins = vec![bin];
        bins.extend(arg_value(&args, "--against"));
        // `--caches`: on the data-cache machine; `--dram`: with its DRAM too.
        let (target, sets) = match (args.iter().any(|a| a == "--caches"), args.iter().any(|a| a == "--dram")) {
            (false, false) => (config.clone(), &[][..]),
            (_, dram) => (
                format!("machine:{CACHE_MACHINE}"),
                if dram {
                    &[CACHE_PRIVATE, CACHE_DRAM][..]
                } else {
                    &[CACHE_PRIVATE][..]
                },
            ),
        };
        count(&bins, &target, sets);
        return;
    }
    if let Some(other) = arg_value(&args, "--against") {
        let rounds = arg_value(&args, "--rounds")
            .map(|r| r.parse().expect("--rounds N"))
            .unwrap_or(5)
            .max(1);
        // `--caches`: the data-cache rows instead of the issue-2 rows.
        let cases = if args.iter().any(|a| a == "--caches") {
            cache_cases(refs)
        } else {
            issue2_cases(&config, refs)
        };
        if args.iter().any(|a| a == "--sliced") {
            let turn_ms = arg_value(&args, "--turn-ms")
                .map(|t| t.parse().expect("--turn-ms N"))
                .unwrap_or(100);
            let threads = arg_value(&args, "--threads")
                .map(|t| t.parse().expect("--threads 1|2"))
                .unwrap_or(1usize);
            assert!(matches!(threads, 1 | 2), "--threads takes 1 or 2");
            compare_sliced(bin, other, &cases, rounds, turn_ms, threads);
        } else if args.iter().any(|a| a == "--paired") {
            compare_paired(bin, other, &cases, rounds);
        } else {
            compare(bin, other, &cases, rounds);
        }
        return;
    }
    let rounds: usize = arg_value(&args, "--rounds")
        .map(|r| r.parse().expect("--rounds N"))
        .unwrap_or(3)
        .max(1);
    println!(
        "mmulab sim throughput, config tests/data/issue2-example.toml, {} M references per run\n",
        refs / 1_000_000
    );
    println!("M refs/s is per second of the process's CPU time (user + system), which another load on the");
    println!("machine inflates less than wall-clock time. Each workload runs {rounds} times, the workloads in");
    println!("turn (so drift of the host's speed touches all alike): the fastest run is the least");
    println!("disturbed measure of the code, the median shows the spread.\n");
    println!("The data-cache rows run once on one thread (`--sim-threads 1`) and once with the cache thread");
    println!("(`--sim-threads 2`: the table's CPU seconds are both threads'; wall s and M refs/s wall are the");
    println!("time a user waits). Rows without caches run on one thread either way.\n");
    println!(
        "{:<62} {:>6} {:>10} {:>10} {:>13} {:>13} {:>8} {:>9} {:>12}",
        "workload",
        "pages",
        "fastest s",
        "median s",
        "M refs/s best",
        "M refs/s med",
        "wall s",
        "M/s wall",
        "peak RSS MiB"
    );
    // The issue-2 rows, then the data-cache rows (`--caches-only`: those alone), each of
    // those on one thread and with the cache thread.
    let caches_only = args.iter().any(|a| a == "--caches-only");
    let mut cases: Vec<(Case, &[&str])> = if caches_only {
        Vec::new()
    } else {
        issue2_cases(&config, refs).into_iter().map(|c| (c, &[][..])).collect()
    };
    for threads in [&["--sim-threads", "1"][..], &["--sim-threads", "2"][..]] {
        cases.extend(cache_cases(refs).into_iter().map(|c| (c, threads)));
    }
    let mut runs: Vec<Vec<Run>> = cases.iter().map(|_| Vec::new()).collect();
    let mut host = Host::default();
    for _ in 0..rounds {
        host.measure(bin);
        for (i, (c, extra)) in cases.iter().enumerate() {
            let r = run_on(bin, &c.config, &c.workload, &c.sets, extra, None);
            assert_eq!(r.refs, refs);
            runs[i].push(r);
        }
    }
    // Per (row, threads): the fastest and median rate per CPU second, the fastest per
    // wall-clock second.
    let mut best = std::collections::BTreeMap::new();
    let mut median = std::collections::BTreeMap::new();
    let mut wall = std::collections::BTreeMap::new();
    for ((c, extra), rs) in cases.iter().zip(&mut runs) {
        let threads = extra.last().copied().unwrap_or("1");
        rs.sort_by(|a, b| a.cpu_secs.total_cmp(&b.cpu_secs));
        let (fast, mid) = (&rs[0], &rs[rs.len() / 2]);
        let rate = |r: &Run| r.refs as f64 / r.cpu_secs / 1e6;
        let wall_best = rs.iter().map(|r| r.wall_secs).fold(f64::INFINITY, f64::min);
        let wall_rate = refs as f64 / wall_best / 1e6;
        best.insert((c.name, c.pages, threads), rate(fast));
        median.insert((c.name, c.pages, threads), rate(mid));
        wall.insert((c.name, c.pages, threads), wall_rate);
        let rss = rs.iter().map(|r| r.max_rss_kib).max().unwrap_or(0);
        let label = match extra.last() {
            Some(t) => format!("{}, {t} thread{}", c.label(), if *t == "1" { "" } else { "s" }),
            None => c.label(),
        };
        println!(
            "{:<62} {:>6} {:>10.2} {:>10.2} {:>13.1} {:>13.1} {:>8.2} {:>9.1} {:>12.1}",
            label,
            c.pages,
            fast.cpu_secs,
            mid.cpu_secs,
            rate(fast),
            rate(mid),
            wall_best,
            wall_rate,
            rss as f64 / 1024.0
        );
    }
    println!("{}", host.line());
    println!();
    println!(
        "data caches ({CACHE_MACHINE}, --set {CACHE_PRIVATE}; +dram: --set {CACHE_DRAM}): target >= 10 M refs/s (issue #22 item 2); fastest of {rounds} (median)"
    );
    println!("per CPU second on one thread (the model's cost), and per wall-clock second with the cache thread:");
    for name in ["seq caches", "gups caches", "seq caches+dram", "gups caches+dram"] {
        let (b, m) = (best[&(name, "4K", "1")], median[&(name, "4K", "1")]);
        let w = wall[&(name, "4K", "2")];
        println!(
            "{name:<16}: {b:.1} M refs/s per CPU second ({:.2} x target) (median {m:.1}); {w:.1} per wall second with 2 threads ({:.2} x target)",
            b / 10.0,
            w / 10.0
        );
    }
    if caches_only {
        return;
    }
    let small = run(
        bin,
        &config,
        &format!("gups:table=1GiB,refs={},init=off", refs / 10),
        &[],
    );
    let large = run(bin, &config, &format!("gups:table=1GiB,refs={refs},init=off"), &[]);
    println!();
    println!("targets: seq >= 100 M refs/s, gups >= 30 M refs/s (4 KiB pages); fastest of {rounds} (median)");
    for (name, target) in [("seq", 100.0), ("gups", 30.0)] {
        let (b, m) = (best[&(name, "4K", "1")], median[&(name, "4K", "1")]);
        println!(
            "{name:<4} 4K: {b:.1} M refs/s ({:.2} x target) (median {m:.1}, {:.2} x)",
            b / target,
            m / target
        );
    }
    println!(
        "gups 2M / 4K simulation speed: {:.2}",
        best[&("gups", "2M", "1")] / best[&("gups", "4K", "1")]
    );
    println!(
        "seq / gups simulation speed (4K): {:.2}",
        best[&("seq", "4K", "1")] / best[&("gups", "4K", "1")]
    );
    println!(
        "peak RSS, gups {}M refs / {}M refs: {:.1} MiB / {:.1} MiB = {:.3} (1.0 = does not grow with length)",
        refs / 1_000_000,
        refs / 10_000_000,
        large.max_rss_kib as f64 / 1024.0,
        small.max_rss_kib as f64 / 1024.0,
        large.max_rss_kib as f64 / small.max_rss_kib as f64
    );
}
