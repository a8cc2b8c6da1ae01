//! `mmulab sim` against DynamoRIO's TLB simulator on the same drmemtrace files (issue #24
//! item 5: mmulab ≥ 10× faster on every one), side by side in one run.
//!
//! Inputs: every drmemtrace directory under `tests/data/drmemtrace/` and
//! `../shared/traces/drmemtrace/` (beside the repository, when present), each as a whole
//! (`-indir DIR` / `mmulab sim -t DIR`) and each of its per-thread `*.trace.zip` /
//! `*.trace.gz` files alone (`-infile FILE` / `mmulab sim -t FILE`); a file whose name and
//! bytes were seen already (the shared copy of a committed sample) is skipped. Both
//! simulate the same TLBs: DynamoRIO with `-tool TLB -TLB_L1D_entries 64 -TLB_L1D_assoc
//! 64 -TLB_L1I_entries 64 -TLB_L1I_assoc 64 -TLB_L2_entries 2048 -TLB_L2_assoc 16
//! -TLB_replace_policy LRU -no_core_serial -cores 1`, mmulab its built-in default machine.
//!
//! Each input runs `--rounds N` times (default 5) on both programs alternately. Times are
//! per process from `wait4`: CPU (user + system, which Linux accounts to the nanosecond
//! and reports in microseconds: no 10 ms clock) and wall (`Instant`); the table gives the
//! fastest of the rounds per side and the ratio DynamoRIO / mmulab of those (above 10:
//! the target). mmulab's fixed start-up cost (process start, config, opening
//! the trace) is measured the same way on a one-reference workload and shown, since on
//! the shortest files it is a visible part of mmulab's time.
//!
//! Run: `cargo bench -p mmulab-cli --bench vs_dynamorio [-- --launcher PATH --rounds N
//! --only SUBSTRING]`. `--launcher` (or `DRMEMTRACE_LAUNCHER`) is DynamoRIO's
//! `clients/bin64/drmemtrace_launcher` (how it was built: docs/benchmarks.md); default
//! `/tmp/h5dr/build/clients/bin64/drmemtrace_launcher`. Without it the bench says so and
//! exits.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// DynamoRIO's options for the TLBs of mmulab's default machine.
const DR_TLB: &[&str] = &[
    "-tool",
    "TLB",
    "-TLB_L1D_entries",
    "64",
    "-TLB_L1D_assoc",
    "64",
    "-TLB_L1I_entries",
    "64",
    "-TLB_L1I_assoc",
    "64",
    "-TLB_L2_entries",
    "2048",
    "-TLB_L2_assoc",
    "16",
    "-TLB_replace_policy",
    "LRU",
    "-no_core_serial",
    "-cores",
    "1",
];

#[derive(Clone, Copy)]
struct Time {
    cpu: f64,
    wall: f64,
}

/// Runs `cmd` to its end with stdout captured; its times and stdout.
fn timed(mut cmd: Command) -> (Time, String) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let wall = Instant::now();
    // Reaped below by wait4, which also returns its resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text).expect("read stdout");
    let mut status = 0;
    // SAFETY: plain FFI call with valid pointers to locals, on our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = wall.elapsed().as_secs_f64();
    let errs = errs.join().unwrap_or_default();
    assert!(
        r == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed (status {status}):\n{errs}"
    );
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    // DynamoRIO's analyzer prints its results on stderr.
    (Time { cpu, wall }, text + &errs)
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    Some(
        args.get(i + 1)
            .unwrap_or_else(|| panic!("{flag} needs a value"))
            .clone(),
    )
}

/// The inputs: each drmemtrace directory, then its thread files (see the module doc).
fn inputs(roots: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for root in roots {
        let Ok(rd) = std::fs::read_dir(root) else { continue };
        let mut dirs: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            files.retain(|p| {
                let n = p.file_name().unwrap_or_default().to_string_lossy();
                !n.contains("schedule") && (n.ends_with(".trace.zip") || n.ends_with(".trace.gz"))
            });
            files.sort();
            if files.is_empty() {
                continue;
            }
            // A directory whose files were all seen is a copy: skip it and them.
            let keys: Vec<(String, Vec<u8>)> = files
                .iter()
                .map(|f| {
                    let name = f.file_name().unwrap_or_default().to_string_lossy().to_string();
                    (name, std::fs::read(f).unwrap_or_default())
                })
                .collect();
            if keys.iter().all(|k| seen.contains(k)) {
                continue;
            }
            let dname = dir.file_name().unwrap_or_default().to_string_lossy().to_string();
            out.push((format!("{dname}/ ({} threads)", files.len()), dir.clone()));
            for (f, k) in files.iter().zip(keys) {
                if seen.insert(k) {
                    let n = f.file_name().unwrap_or_default().to_string_lossy().to_string();
                    out.push((format!("{dname}/{n}"), f.clone()));
                }
            }
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = arg(&args, "--rounds")
        .map(|r| r.parse().expect("--rounds N"))
        .unwrap_or(5)
        .max(1);
    let launcher = arg(&args, "--launcher")
        .or_else(|| std::env::var("DRMEMTRACE_LAUNCHER").ok())
        .unwrap_or_else(|| "/tmp/h5dr/build/clients/bin64/drmemtrace_launcher".into());
    if !Path::new(&launcher).is_file() {
        println!(
            "DynamoRIO's drmemtrace_launcher is not at {launcher}: build it (docs/benchmarks.md) and pass --launcher PATH"
        );
        return;
    }
    let only = arg(&args, "--only");
    let bin = env!("CARGO_BIN_EXE_mmulab");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let roots = [
        root.join("tests/data/drmemtrace"),
        root.join("../shared/traces/drmemtrace"),
    ];
    let mut list = inputs(&roots);
    if let Some(o) = &only {
        list.retain(|(label, _)| label.contains(o.as_str()));
    }
    assert!(!list.is_empty(), "no drmemtrace inputs under {roots:?}");

    let mmulab = |path: &Path| {
        let mut c = Command::new(bin);
        c.env("MMULAB_PROGRESS", "off")
            .arg("sim")
            .arg("-t")
            .arg(path)
            .arg("--json");
        c
    };
    let dynamorio = |path: &Path| {
        let mut c = Command::new(&launcher);
        c.arg(if path.is_dir() { "-indir" } else { "-infile" })
            .arg(path)
            .args(DR_TLB);
        c
    };
    // mmulab's fixed cost: a run of one reference on the default machine.
    let mut startup = Vec::new();
    for _ in 0..rounds.max(5) {
        let mut c = Command::new(bin);
        c.env("MMULAB_PROGRESS", "off")
            .args(["sim", "--workload", "seq:size=4KiB,refs=1", "--json"]);
        startup.push(timed(c).0);
    }
    let best_start = startup.iter().map(|t| t.cpu).fold(f64::MAX, f64::min);
    let best_start_wall = startup.iter().map(|t| t.wall).fold(f64::MAX, f64::min);

    println!(
        "mmulab sim -t INPUT --json (default machine) vs {launcher} -indir|-infile INPUT {}",
        DR_TLB.join(" ")
    );
    println!("{rounds} rounds alternating; times are the fastest round per side (CPU = user + system, from wait4)\n");
    println!("| input | references | DynamoRIO CPU s | mmulab CPU s | ratio (CPU) | DynamoRIO wall s | mmulab wall s | ratio (wall) | mmulab CPU median s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut worst = f64::MAX;
    for (label, path) in &list {
        let (mut dr, mut mm) = (Vec::new(), Vec::new());
        let mut refs = 0;
        for _ in 0..rounds {
            dr.push(timed(dynamorio(path)).0);
            let (t, out) = timed(mmulab(path));
            let v: serde_json::Value = serde_json::from_str(out.trim()).expect("mmulab --json prints one object");
            refs = v["references"].as_u64().unwrap_or(0);
            mm.push(t);
        }
        let best = |v: &[Time], f: fn(&Time) -> f64| v.iter().map(f).fold(f64::MAX, f64::min);
        let (dc, mc) = (best(&dr, |t| t.cpu), best(&mm, |t| t.cpu));
        let (dw, mw) = (best(&dr, |t| t.wall), best(&mm, |t| t.wall));
        worst = worst.min(dc / mc);
        println!(
            "| {label} | {refs} | {dc:.4} | {mc:.4} | {:.1} | {dw:.4} | {mw:.4} | {:.1} | {:.4} |",
            dc / mc,
            dw / mw,
            median(mm.iter().map(|t| t.cpu).collect())
        );
    }
    println!(
        "\nmmulab start-up (sim of 1 reference, fastest of {}): {best_start:.4} s CPU, {best_start_wall:.4} s wall",
        startup.len()
    );
    println!(
        "smallest CPU ratio over the {} inputs: {worst:.1} (target: >= 10 on every one)",
        list.len()
    );
}
