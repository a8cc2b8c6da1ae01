//! The ptrace window sampler (x86-64 Linux): a recorder that runs the program natively and,
//! every PERIOD of its user CPU time, stops one thread and single-steps a window of W
//! instructions, decoding each ([`decode`], with the `iced-x86` crate) and computing the
//! addresses of its data references from the registers; then lets it run on natively. The
//! references go into an `.mlt` trace like mmtrace's (data references only, loads and
//! stores), with the VMA samples (`/proc/PID/maps` at each window) and a `windows` section
//! giving each window's steps and references, so the share recorded is stated; at each
//! window the pages the program touched since the last one are written as touch events
//! ([`mmulab_trace::Event::Touch`], from /proc/PID/pagemap: `pages.rs`). Valgrind
//! instruments the whole run (mmtrace: 5–21× the native CPU time here); the sampler costs
//! only its windows.
//!
//! How (`run.rs`): the child is spawned in its own process group with `PTRACE_TRACEME`
//! and an `ITIMER_VIRTUAL` timer of PERIOD (interval timers survive `execve`; it counts
//! the process's user CPU time, all threads). Each `SIGVTALRM` reaches the tracer as a
//! signal-delivery stop of the thread the kernel chose (the one running); that thread is
//! stepped (`PTRACE_SINGLESTEP`, `PTRACE_GETREGS` before each instruction, the
//! instruction's bytes from `/proc/PID/mem`), the signal is suppressed, and the thread
//! continues (`PTRACE_CONT`). Options `PTRACE_O_TRACECLONE` (new threads are traced, not
//! lost; each window steps one thread while the others run), `PTRACE_O_TRACEEXEC` (a
//! program that execs another is followed) and `PTRACE_O_EXITKILL` (if mmulab dies, by
//! Ctrl-C or otherwise, the kernel kills the program: no orphan). Other signals are passed
//! on. Children the program forks are not followed (as under Valgrind).
//!
//! Written here rather than taken from a crate: the sampler is the product (the recorder);
//! the decoding is the `iced-x86` crate's, and the system calls are `libc`'s.
//!
//! Contract: nothing is printed; errors are [`RecordError`]s.

mod code;
pub mod decode;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod pages;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod run;
mod vmas;

use std::io::Write;
use std::time::Duration;

use crate::{RecordError, RecordOptions, Recording};

/// Windows of `window` steps every `period` of the program's user CPU time; a period of 0
/// steps the whole run (every instruction: exact, and slow — for tests and small runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSampling {
    /// Steps per window (an instruction, or one iteration of a REP string instruction).
    pub window: u64,
    /// User CPU time of the program between windows; zero: step everything.
    pub period: Duration,
}

impl Default for WindowSampling {
    /// 10,000 steps every 100 ms of the program's user CPU time: here (a KVM guest, 20–28 µs
    /// of CPU per step) the recording costs about 3–4× the native run; docs/advise.md § The
    /// ptrace sampler gives what the settings cost and what they change.
    fn default() -> Self {
        WindowSampling {
            window: 10_000,
            period: Duration::from_millis(100),
        }
    }
}

impl WindowSampling {
    /// Parses `W/PERIOD`: W a count (K/M = 10^3/10^6), PERIOD a time with its unit (`ms`
    /// or `s`): `20k/100ms`; or `all` (step the whole run).
    pub fn parse(s: &str) -> Result<WindowSampling, String> {
        if s.trim() == "all" {
            return Ok(WindowSampling {
                window: u64::MAX,
                period: Duration::ZERO,
            });
        }
        let (w, p) = s
            .split_once('/')
            .ok_or_else(|| format!("ptrace sampling '{s}': expected W/PERIOD (e.g. 20k/100ms) or `all`"))?;
        let window = mmulab_trace::units::parse_count(w)?;
        let p = p.trim();
        let (num, scale) = if let Some(n) = p.strip_suffix("ms") {
            (n, 1e-3)
        } else if let Some(n) = p.strip_suffix('s') {
            (n, 1.0)
        } else {
            return Err(format!(
                "ptrace sampling '{s}': the period needs a unit, ms or s (e.g. 100ms): it is the program's user CPU time"
            ));
        };
        let secs: f64 = num
            .trim()
            .parse()
            .map_err(|_| format!("ptrace sampling '{s}': '{p}' is not a time"))?;
        // The kernel checks CPU timers at its tick: below a millisecond means nothing.
        if window == 0 || !(0.001..=3600.0).contains(&(secs * scale)) {
            return Err(format!("ptrace sampling '{s}': needs W ≥ 1 and 1 ms ≤ PERIOD ≤ 1 h"));
        }
        Ok(WindowSampling {
            window,
            period: Duration::from_secs_f64(secs * scale),
        })
    }

    /// Whether every instruction is stepped.
    pub fn whole(&self) -> bool {
        self.period.is_zero()
    }

    /// In words, for the output and the trace's `source` section.
    pub fn describe(&self) -> String {
        if self.whole() {
            "every instruction of the run stepped".into()
        } else {
            format!(
                "windows of {} steps every {} ms of the program's user CPU time",
                self.window,
                self.period.as_secs_f64() * 1e3
            )
        }
    }
}

/// What a ptrace recording produced, beyond [`Recording`].
#[derive(Clone, Debug)]
pub struct PtraceRecording {
    /// The common part (references by kind, bytes, VMA samples, exit status; its
    /// `total_references` is `None`: the sampler does not count the references outside its
    /// windows).
    pub recording: Recording,
    /// Windows stepped.
    pub windows: u64,
    /// Steps in them (instructions, or iterations of REP string instructions).
    pub steps: u64,
    /// User and system CPU seconds of the program under the sampler.
    pub user_s: f64,
    /// System CPU seconds (the single-step traps are mostly here).
    pub sys_s: f64,
    /// Threads seen (the main thread included).
    pub threads: u64,
    /// Windows that stepped a thread other than the main one.
    pub windows_other_threads: u64,
    /// Instructions that could not be decoded (nothing recorded for them).
    pub undecodable: u64,
    /// Gathers and scatters not recorded (vector index registers).
    pub vsib_skipped: u64,
    /// Timer signals suppressed without a window: they came before the program had run
    /// half a period natively since the last window (single-stepping adds user time that
    /// the timer counts; `run.rs`, `native_since_window`).
    pub early_signals: u64,
    /// Windows given up because their thread blocked in a single step (an idle worker
    /// thread that took the timer signal; `run.rs`, `abandon_window`): their steps are kept.
    pub abandoned_windows: u64,
    /// Pages first touched (or first written) between windows, written as touch events
    /// (pages.rs: from /proc/PID/pagemap at each window; none for a whole-run recording).
    pub touches: u64,
    /// Bytes of /proc/PID/pagemap read to find them.
    pub pagemap_bytes: u64,
    /// Wall seconds those reads took (the program is stopped meanwhile).
    pub pagemap_seconds: f64,
}

/// Whether the sampler can run on this build: the reason if not.
pub fn unavailable() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("the ptrace sampler runs on Linux only".into());
    }
    if !cfg!(target_arch = "x86_64") {
        return Some(format!(
            "the ptrace sampler decodes x86-64 instructions; this machine is {}: use --recorder mmtrace",
            std::env::consts::ARCH
        ));
    }
    None
}

/// Runs `opts.command` under the sampler and writes its references, with the page size,
/// the command line, the VMA samples and the windows as metadata, as an `.mlt` trace to
/// `out`. `progress` gets the references written so far, every 65,536; `forward` is polled
/// every 50 ms for a signal to pass on to the program (the program runs in its own process
/// group, so a Ctrl-C at the terminal reaches only mmulab). The program's stdin is
/// `/dev/null`.
pub fn record<W: Write>(
    opts: &RecordOptions,
    sampling: WindowSampling,
    out: W,
    progress: &mut dyn FnMut(u64),
    forward: Box<dyn Fn() -> Option<i32> + Send>,
) -> Result<PtraceRecording, RecordError> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        run::record(opts, sampling, out, progress, forward)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = (opts, sampling, out, progress, forward);
        Err(RecordError::Ptrace(unavailable().unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_parsed_and_checked() {
        assert_eq!(
            WindowSampling::parse("20k/100ms"),
            Ok(WindowSampling {
                window: 20_000,
                period: Duration::from_millis(100)
            })
        );
        assert_eq!(WindowSampling::parse("1M/2s").unwrap().period, Duration::from_secs(2));
        assert!(WindowSampling::parse("all").unwrap().whole());
        assert!(WindowSampling::parse("20k/100").unwrap_err().contains("needs a unit"));
        assert!(WindowSampling::parse("0/10ms").is_err());
        assert!(WindowSampling::parse("10/0.1ms").is_err());
        assert!(WindowSampling::parse("10").unwrap_err().contains("W/PERIOD"));
        assert_eq!(WindowSampling::default().window, 10_000);
    }
}
