//! A real program as a scenario (issue 48, item 3; docs/kernel-check.md § A program):
//! `mmulab check-kernel -- PROGRAM ARGS` runs the program natively while the kernel's
//! counters are read, records it exactly (`mmulab record --recorder ptrace --sample all`:
//! every instruction stepped, the VMAs sampled after every system call that changes them,
//! so each mapping carries its madvise state), simulates the recording with the `[os]`
//! section built from the live settings ([`HostThp::os_toml`]), and compares the fault
//! and split counters.
//!
//! Compared: `thp_fault_alloc`, `thp_fault_fallback`, `thp_split_pmd`,
//! `thp_deferred_split_page` and the per-size mTHP `anon_fault_alloc`,
//! `anon_fault_fallback` and `split_deferred`: the recording carries the program's
//! munmaps (unmap events), its VMA changes (vma events, which split a huge page a VMA
//! split cuts, as mprotect's does) and its successful `MADV_DONTNEED` calls (dontneed
//! events). Shown, not compared: the collapse, shrinker and zero-page counters. Why:
//! khugepaged collapses on the kernel's wall clock (`scan_sleep_millisecs`, 10 s by
//! default), which a short program never reaches (the simulated machine is given a clock
//! so that its khugepaged sleeps in simulated time, as the kernel's does); the huge zero
//! page is one per system; the shrinker runs under memory pressure or `drop_caches`,
//! which a recording does not hold. Not carried either: fork (one address space is
//! recorded) and `MADV_FREE` (lazily freed pages).

use crate::host::{self, HostThp};
use crate::{Outcome, Row, MAX_RUNS};
use mmulab_record::ptrace_sample::{self, WindowSampling};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The simulated machine's clock, MHz (assumed: only khugepaged's sleep reads it, and at
/// any clock of GHz order a run of under 10^10 references is over before its first wake).
pub const CLOCK_MHZ: u64 = 3000;

/// Counters compared exactly (the fault path and the splits), and whether a name is one.
fn compared(name: &str) -> bool {
    matches!(
        name,
        "thp_fault_alloc" | "thp_fault_fallback" | "thp_split_pmd" | "thp_deferred_split_page"
    ) || name.ends_with("/anon_fault_alloc")
        || name.ends_with("/anon_fault_fallback")
        || name.ends_with("/split_deferred")
}

/// Runs `command` natively once: the counter deltas around it, and whether another process
/// moved a counter in the quiet windows before and after (10 and 20 ms).
fn native_once(command: &[String]) -> Result<(BTreeMap<String, u64>, bool), String> {
    let q0 = host::counters();
    std::thread::sleep(Duration::from_millis(10));
    let c0 = host::counters();
    let status = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run `{}`: {e}", command.join(" ")))?;
    let c1 = host::counters();
    std::thread::sleep(Duration::from_millis(20));
    let q1 = host::counters();
    if !status.success() {
        return Err(format!("`{}` failed natively ({status})", command.join(" ")));
    }
    let delta = c1
        .iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(c0.get(k).copied().unwrap_or(0))))
        .collect();
    Ok((delta, q0 != c0 || c1 != q1))
}

/// Records `command` exactly into `trace`.
fn record(command: &[String], trace: &Path, progress: &mut dyn FnMut(&str)) -> Result<u64, String> {
    if let Some(why) = ptrace_sample::unavailable() {
        return Err(format!("cannot record: {why}"));
    }
    let file = std::fs::File::create(trace).map_err(|e| format!("creating {}: {e}", trace.display()))?;
    let opts = mmulab_record::RecordOptions {
        command: command.to_vec(),
        level: 1,
        maps_interval: Duration::from_millis(100),
        stdout_to_stderr: true,
        stdout_null: true,
        max_refs: None,
        env: Vec::new(),
    };
    let every = WindowSampling::parse("all").expect("`all` parses");
    progress("recording it with every instruction stepped (ptrace; about 40,000 instructions a second here)");
    let r = ptrace_sample::record(&opts, every, file, &mut |_| {}, Box::new(|| None))
        .map_err(|e| format!("recording `{}`: {e}", command.join(" ")))?;
    Ok(r.recording.references)
}

/// Simulates `trace` on the default machine with `os_toml` and a clock; the model's
/// kernel-named counters.
fn simulate(trace: &Path, os_toml: &str) -> Result<BTreeMap<String, u64>, String> {
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(16, |kb| (kb >> 20) + 1)
        .max(16);
    let text = format!(
        "{os_toml}\n[machine]\nname = \"default\"\nclock_mhz = {CLOCK_MHZ}\n\n[memory]\nsize = \"{mem_gib}GiB\"\n"
    );
    let spec = mmulab_sim::config::from_toml(&text, None, &[]).map_err(|e| format!("the machine config: {e}"))?;
    let meta = mmulab_sim::trace_file_meta(trace);
    let mut src = mmulab_trace::open_trace(trace, None).map_err(|e| format!("reading {}: {e}", trace.display()))?;
    let opts = mmulab_sim::SessionOptions {
        meta: meta.as_ref(),
        ..Default::default()
    };
    let stats = mmulab_sim::Session::simulate(spec, &mut *src, opts).map_err(|e| format!("simulating: {e}"))?;
    Ok(stats.os.kernel_counters().into_iter().collect())
}

/// Checks `command` (a program and its arguments) both ways. `keep` keeps the recording
/// there (else it goes to a temporary file, removed afterwards).
pub fn check_program(command: &[String], keep: Option<&Path>, progress: &mut dyn FnMut(&str)) -> Outcome {
    let mut out = Outcome {
        name: command.first().map_or_else(String::new, |p| {
            Path::new(p)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        }),
        description: format!("`{}` run natively and recorded exactly", command.join(" ")),
        ..Default::default()
    };
    if command.is_empty() {
        out.skipped = Some("no program given (mmulab check-kernel -- PROGRAM ARGS)".into());
        return out;
    }
    let trace: PathBuf = keep.map_or_else(
        || std::env::temp_dir().join(format!("mmulab-check-kernel-{}.mlt", std::process::id())),
        Path::to_path_buf,
    );
    let r = check_with(command, &trace, &mut out, progress);
    if keep.is_none() {
        let _ = std::fs::remove_file(&trace);
    }
    if let Err(e) = r {
        out.rows.clear();
        out.skipped = Some(e);
    }
    out
}

/// Address-space randomisation off for this process and the programs it starts
/// (`personality(ADDR_NO_RANDOMIZE)`, inherited across fork and exec), restored when
/// dropped. Why: where mmap places a block decides how many whole 2 MiB ranges it holds,
/// so the native run and the recording must see the same layout (with randomisation, a
/// malloc'd 6 MiB block held 2 or 3 THPs from run to run).
struct NoAslr(Option<libc::c_int>);

impl NoAslr {
    fn new() -> NoAslr {
        // SAFETY: personality(2) with 0xffffffff only queries the persona.
        let old = unsafe { libc::personality(0xffff_ffff) };
        if old < 0 {
            return NoAslr(None);
        }
        // SAFETY: sets this process's persona; restored in Drop.
        let set = unsafe { libc::personality((old | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) };
        NoAslr((set >= 0).then_some(old))
    }
}

impl Drop for NoAslr {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            // SAFETY: restores the persona read in `new`.
            unsafe { libc::personality(old as libc::c_ulong) };
        }
    }
}

fn check_with(
    command: &[String],
    trace: &Path,
    out: &mut Outcome,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let host = HostThp::read()?;
    let _layout = NoAslr::new();
    progress("running the program natively");
    let mut nat = BTreeMap::new();
    let mut disturbed = true;
    for attempt in 1..=MAX_RUNS {
        out.runs = attempt;
        let (d, dist) = native_once(command)?;
        nat = d;
        disturbed = dist;
        if !dist {
            break;
        }
    }
    let refs = record(command, trace, progress)?;
    progress(&format!("simulating its {refs} references"));
    let sim = simulate(trace, &host.os_toml())?;
    let get = |m: &BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let mut names: Vec<&String> = nat
        .iter()
        .chain(sim.iter())
        .filter(|(k, n)| {
            (k.starts_with("thp_") && (sim.contains_key(*k) || **n > 0)) || (k.starts_with("hugepages-") && **n > 0)
        })
        .map(|(k, _)| k)
        .collect();
    names.sort_by_key(|k| (!compared(k), !k.starts_with("thp_"), (*k).clone()));
    names.dedup();
    out.rows = names
        .into_iter()
        .map(|k| Row {
            name: k.clone(),
            kernel: get(&nat, k),
            mmulab: get(&sim, k),
            compared: compared(k),
        })
        .collect();
    if disturbed && !out.equal() {
        return Err(format!(
            "not compared: other processes moved THP counters around each of {MAX_RUNS} native runs (a busy machine)"
        ));
    }
    Ok(())
}
