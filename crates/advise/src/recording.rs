//! Recording the program for advise: with mmtrace (`mmulab_record::mmtrace`, a Valgrind
//! tool built on first use into the cache directory: data references in binary, the whole
//! run or sampled windows) when it builds here, else with Lackey (`mmulab record`'s text
//! recorder), with the ptrace window sampler (`mmulab_record::ptrace_sample`: the program
//! runs natively, windows of instructions are single-stepped; `auto` takes it for a
//! program too long for Valgrind, [`AUTO_PTRACE_ABOVE_S`]), or a given trace. The result
//! says which, and what share of the run's references it holds.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Options;
use mmulab_probe::error::{ProbeError, Result};
use mmulab_record::mmtrace::Sampling;
use mmulab_record::Backend;

/// Lackey's slowdown over a native run, used only to estimate a Lackey prefix's share of
/// the whole run (assumed; docs/advise.md gives the figures measured here).
pub const LACKEY_SLOWDOWN: f64 = 100.0;

/// The same for an mmtrace prefix (`--max-refs` without sampling; assumed: mmtrace's
/// slowdown measured on hash_join here, docs/advise.md). A whole or sampled mmtrace run
/// needs no such figure: the tool counts every reference.
pub const MMTRACE_SLOWDOWN: f64 = 20.0;

/// The ptrace sampler's steps per second of the program's native CPU time, used only to
/// estimate the share of the run its windows hold (the sampler cannot count the
/// instructions between windows: no PMU here). Assumed; docs/advise.md gives the figures
/// measured here (each program's steps per CPU second implied by mmtrace's count).
pub const PTRACE_STEPS_PER_CPU_S: f64 = 1.0e9;

/// `--recorder auto` records with the ptrace sampler instead of mmtrace when mmtrace's
/// run would take longer than this (native CPU seconds × [`MMTRACE_SLOWDOWN`]); seconds.
/// Chosen from the measurements in docs/advise.md § Recording that scales.
pub const AUTO_PTRACE_ABOVE_S: f64 = 120.0;

/// Which recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecorderChoice {
    /// mmtrace when it builds here, else Lackey (the reason is in the output).
    Auto,
    /// Valgrind Lackey.
    Lackey,
    /// mmtrace, or an error saying why it cannot be built.
    Mmtrace,
    /// The ptrace window sampler (x86-64 Linux).
    Ptrace,
}

/// The recording.
#[derive(Clone, Debug, Serialize)]
pub struct RecordingInfo {
    /// Not the whole run: a prefix or sampled windows.
    pub sampled: bool,
    /// `whole`, `prefix`, `sampled` or `given`.
    pub mode: &'static str,
    /// The recorder: `mmtrace`, `lackey` or `given trace`.
    pub recorder: String,
    /// How, in words (`mmtrace, sampled: the first 1000000 of every 10000000 references`).
    pub method: String,
    /// Why mmtrace was not used, when `--recorder auto` fell back to Lackey.
    pub fallback: Option<String>,
    /// References recorded.
    pub references: u64,
    /// References the program made (counted by mmtrace; `None` with Lackey or a prefix).
    pub total_references: Option<u64>,
    /// CPU seconds the recording took (Valgrind and the program).
    pub seconds: f64,
    /// Share of the run's references recorded: exact when counted, else estimated from
    /// the recording's CPU time and the slowdown.
    pub share_estimate: f64,
    /// The recorder's slowdown over the native 4 KiB run (recording CPU seconds / native
    /// CPU seconds); measured for a whole run, else the assumed figure.
    pub slowdown: f64,
    /// The ptrace sampler's windows (`None` for the other recorders).
    pub windows: Option<u64>,
    /// Steps in those windows: instructions, or iterations of REP string instructions.
    pub steps: Option<u64>,
    /// Times the program forked, when the recorder counts them (mmtrace). The trace holds
    /// the first process alone (a child is another address space; no recorder merges
    /// it); the measured CPU times include the children's.
    pub forks: Option<u64>,
    /// The trace carries the pages first touched between its windows (mmtrace sampled:
    /// `mmulab_trace::Event::Touch`), so the simulated runs fault in the memory the
    /// whole run did, not only what the windows touched.
    pub touches: bool,
}

impl RecordingInfo {
    /// Fills the share and slowdown once the native 4 KiB CPU time `t4` is known.
    pub fn settle(&mut self, t4: f64, simulated_refs: u64) {
        if self.mode == "given" {
            self.references = simulated_refs;
            self.share_estimate = 1.0;
            return;
        }
        match (self.mode, self.total_references) {
            (_, None) if self.recorder == "ptrace" => {
                // The program ran natively between windows: the windows' steps over the
                // steps of the whole run, at an assumed rate (no instruction counter here).
                let steps = self.steps.unwrap_or(0) as f64;
                self.share_estimate = (steps / (t4 * PTRACE_STEPS_PER_CPU_S)).min(1.0);
                self.slowdown = self.seconds / t4;
            }
            ("whole", _) => {
                self.share_estimate = 1.0;
                self.slowdown = self.seconds / t4;
            }
            (_, Some(total)) if total > 0 => {
                self.share_estimate = (self.references as f64 / total as f64).min(1.0);
                // Sampled: the tool ran the whole program.
                self.slowdown = self.seconds / t4;
            }
            _ => {
                self.slowdown = if self.recorder == "lackey" {
                    LACKEY_SLOWDOWN
                } else {
                    MMTRACE_SLOWDOWN
                };
                // The prefix took `seconds` under the tool: about seconds / slowdown natively.
                self.share_estimate = (self.seconds / self.slowdown / t4).min(1.0);
            }
        }
    }
}

/// CPU time of this process's reaped children, seconds.
pub(crate) fn cpu_children() -> f64 {
    // SAFETY: an all-zero rusage is valid for getrusage to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer; RUSAGE_CHILDREN counts reaped children.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The backend for `choice`: (backend, why mmtrace was not used).
fn backend(choice: RecorderChoice, sample: Option<Sampling>, dir: &Path) -> Result<(Backend, Option<String>)> {
    if choice == RecorderChoice::Ptrace {
        return Err(ProbeError::Invalid(
            "the ptrace sampler is not a Valgrind backend".into(),
        ));
    }
    if choice == RecorderChoice::Lackey {
        if sample.is_some() {
            return Err(ProbeError::Invalid(
                "--sample needs the mmtrace recorder (Lackey records every reference): drop --recorder lackey".into(),
            ));
        }
        return Ok((Backend::Lackey, None));
    }
    match mmulab_record::mmtrace::build(&dir.join("valgrind-mmtrace")) {
        Ok(lib_dir) => Ok((
            Backend::Mmtrace {
                lib_dir,
                sampling: sample,
            },
            None,
        )),
        Err(e) if choice == RecorderChoice::Auto && sample.is_none() => Ok((Backend::Lackey, Some(e))),
        Err(e) => Err(ProbeError::Unavailable(format!(
            "{e}; without mmtrace, record with Lackey (`--recorder lackey`, no --sample)"
        ))),
    }
}

/// What every recorder is asked for here: the program, level 1, a VMA sample every 50 ms,
/// its stdout on stderr (advise's own stdout is the report), the prefix limit, and the
/// THP way's environment (`GLIBC_TUNABLES`: the recorded run madvises what the measured
/// THP runs madvise, and the VMA samples carry it, so that the simulated THP run gives huge
/// pages where they got them).
pub(super) fn record_options(opts: &Options) -> mmulab_record::RecordOptions {
    mmulab_record::RecordOptions {
        command: opts.command.clone(),
        level: 1,
        maps_interval: std::time::Duration::from_millis(50),
        stdout_to_stderr: true,
        stdout_null: false,
        max_refs: opts.max_refs,
        env: crate::thp_ways(&crate::child::thp_mode())
            .0
            .first()
            .map_or_else(Vec::new, |w| w.env()),
    }
}

/// Whether the recording is the ptrace sampler's.
fn takes_ptrace(opts: &Options, native_cpu_s: f64, valgrind: bool) -> bool {
    match opts.recorder {
        RecorderChoice::Ptrace => true,
        RecorderChoice::Auto => opts.sample.is_none() && auto_takes_ptrace(native_cpu_s, valgrind),
        _ => false,
    }
}

/// CPU per single step of the ptrace sampler, seconds (assumed: 20–28 µs measured in this
/// KVM guest, docs/advise.md § The ptrace sampler); only for the time-left estimate.
pub const PTRACE_STEP_S: f64 = 25e-6;

/// About how long the recording will take, seconds (for the progress line's time left:
/// the slowdowns above, or the sampler's steps at [`PTRACE_STEP_S`]); 0 for a given trace.
pub fn estimate_s(opts: &Options, native_cpu_s: f64, native_user_s: f64) -> f64 {
    if opts.trace.is_some() {
        return 0.0;
    }
    let valgrind = mmulab_record::Recorder::new().is_ok();
    if takes_ptrace(opts, native_cpu_s, valgrind) {
        let s = opts
            .window
            .unwrap_or_else(|| super::plan::window_sampling(native_user_s));
        if s.whole() {
            // Every instruction stepped, at an assumed 10^9 per CPU second.
            return native_cpu_s * PTRACE_STEPS_PER_CPU_S * PTRACE_STEP_S;
        }
        let windows = native_user_s / s.period.as_secs_f64().max(1e-3);
        return native_cpu_s + windows * s.window as f64 * PTRACE_STEP_S;
    }
    let slowdown = if opts.recorder == RecorderChoice::Lackey {
        LACKEY_SLOWDOWN
    } else {
        MMTRACE_SLOWDOWN
    };
    native_cpu_s * slowdown
}

/// Whether `auto` takes the ptrace sampler for a program of `native_cpu_s` (mmtrace would
/// take longer than [`AUTO_PTRACE_ABOVE_S`], and the sampler runs here), or when Valgrind
/// is missing.
pub fn auto_takes_ptrace(native_cpu_s: f64, valgrind: bool) -> bool {
    mmulab_record::ptrace_sample::unavailable().is_none()
        && (!valgrind || native_cpu_s * MMTRACE_SLOWDOWN > AUTO_PTRACE_ABOVE_S)
}

/// Records the program (or takes the given trace) into a temporary file: (trace, whether
/// it is temporary, what was recorded). `native_cpu_s`: the program's native CPU time (for
/// `auto`'s choice); `native_user_s` its user time (the ptrace sampler's default period,
/// [`super::plan::window_sampling`]).
pub fn record(
    opts: &Options,
    dir: &Path,
    native_cpu_s: f64,
    native_user_s: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<(PathBuf, bool, RecordingInfo)> {
    if let Some(t) = &opts.trace {
        let refs = mmulab_trace::open_trace(t, None)
            .map_err(|e| ProbeError::Invalid(format!("--trace {}: {e}", t.display())))?;
        drop(refs);
        return Ok((
            t.clone(),
            false,
            RecordingInfo {
                sampled: false,
                mode: "given",
                recorder: "given trace".into(),
                method: format!("given trace {}", t.display()),
                fallback: None,
                references: 0,
                total_references: None,
                seconds: 0.0,
                share_estimate: f64::NAN,
                slowdown: f64::NAN,
                windows: None,
                steps: None,
                forks: None,
                touches: false,
            },
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| ProbeError::io(format!("creating {}", dir.display()), e))?;
    let valgrind = mmulab_record::Recorder::new();
    if takes_ptrace(opts, native_cpu_s, valgrind.is_ok()) {
        let sampling = opts
            .window
            .unwrap_or_else(|| super::plan::window_sampling(native_user_s));
        return crate::recording_ptrace::record(opts, sampling, dir, progress);
    }
    let recorder = valgrind.map_err(|e| ProbeError::Unavailable(e.to_string()))?;
    let (backend, fallback) = backend(opts.recorder, opts.sample, dir)?;
    let path = dir.join(format!("advise-{}.mlt", std::process::id()));
    let file = std::fs::File::create(&path).map_err(|e| ProbeError::io(format!("creating {}", path.display()), e))?;
    let name = match backend {
        Backend::Lackey => "lackey",
        Backend::Mmtrace { .. } => "mmtrace",
    };
    progress(&format!("recording the program with Valgrind ({name})"));
    let ropts = record_options(opts);
    let before = cpu_children();
    let r = recorder.record_with(&backend, &ropts, file, &mut |_| {}, Box::new(|| None));
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return Err(ProbeError::Unavailable(format!("recording failed: {e}")));
        }
    };
    let cpu = cpu_children() - before;
    let data = if name == "mmtrace" {
        "data references"
    } else {
        "data and instruction references"
    };
    let (mode, mut method) = match (r.truncated, r.sampling) {
        (true, _) => ("prefix", format!("{name}, prefix of {} {data}", r.references)),
        (false, Some(s)) => (
            "sampled",
            format!(
                "{name}, sampled: the first {} of every {} {data}, and the first read and write of each page between them",
                s.on, s.period
            ),
        ),
        (false, None) => ("whole", format!("{name}, whole run ({data})")),
    };
    if let Some(n) = r.forks.filter(|&n| n > 0) {
        method += &forked(n);
    }
    Ok((
        path,
        true,
        RecordingInfo {
            sampled: mode != "whole",
            mode,
            recorder: name.into(),
            method,
            fallback,
            references: r.references,
            total_references: if r.truncated { None } else { r.total_references },
            seconds: cpu,
            share_estimate: 1.0,
            slowdown: f64::NAN,
            windows: None,
            steps: None,
            forks: r.forks,
            touches: mode == "sampled" && name == "mmtrace",
        },
    ))
}

/// What a recording of a program that forked `n` times holds, in words.
pub(crate) fn forked(n: u64) -> String {
    format!(
        "; the program forked {n} time{}: only its first process is recorded and simulated (a child is another address space), while the measured times include the children's CPU time",
        if n == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(mode: &'static str, recorder: &str, refs: u64, total: Option<u64>, seconds: f64) -> RecordingInfo {
        RecordingInfo {
            sampled: mode != "whole",
            mode,
            recorder: recorder.into(),
            method: String::new(),
            fallback: None,
            references: refs,
            total_references: total,
            seconds,
            share_estimate: 1.0,
            slowdown: f64::NAN,
            windows: None,
            steps: None,
            forks: None,
            touches: false,
        }
    }

    #[test]
    fn the_share_is_counted_when_the_tool_counts_and_estimated_otherwise() {
        // Sampled: 1 M of 10 M references recorded, exactly 10 %; slowdown 30 s / 2 s.
        let mut s = info("sampled", "mmtrace", 1_000_000, Some(10_000_000), 30.0);
        s.settle(2.0, 0);
        assert_eq!((s.share_estimate, s.slowdown), (0.1, 15.0));
        // A Lackey prefix: 10 s under Lackey ≈ 0.1 s natively of a 2 s run: 5 %.
        let mut p = info("prefix", "lackey", 5_000_000, None, 10.0);
        p.settle(2.0, 0);
        assert_eq!(p.slowdown, LACKEY_SLOWDOWN);
        assert!((p.share_estimate - 0.05).abs() < 1e-12);
        // Whole: share 1, slowdown measured.
        let mut w = info("whole", "mmtrace", 7, Some(7), 8.0);
        w.settle(2.0, 0);
        assert_eq!((w.share_estimate, w.slowdown), (1.0, 4.0));
    }

    #[test]
    fn a_ptrace_sample_states_its_share_from_its_steps() {
        // 40 windows of 20,000 steps = 800,000 steps of a 2 s program: at the assumed
        // 10^9 steps per CPU second it ran 2·10^9, so the share is 0.04 %; the slowdown is
        // measured (3 s of recording over 2 s).
        let mut p = info("sampled", "ptrace", 300_000, None, 3.0);
        p.windows = Some(40);
        p.steps = Some(800_000);
        p.settle(2.0, 0);
        assert!((p.share_estimate - 800_000.0 / (2.0 * PTRACE_STEPS_PER_CPU_S)).abs() < 1e-15);
        assert_eq!(p.slowdown, 1.5);
        // Never more than the whole run.
        p.steps = Some(u64::MAX);
        p.settle(2.0, 0);
        assert_eq!(p.share_estimate, 1.0);
    }
}
