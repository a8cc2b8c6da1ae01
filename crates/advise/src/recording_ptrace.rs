//! advise's recording with the ptrace window sampler (`mmulab_record::ptrace_sample`): the
//! program runs natively and windows of its instructions are single-stepped. The share of
//! the run the windows hold is stated, not counted (`RecordingInfo::settle`).

use std::path::{Path, PathBuf};

use super::recording::{cpu_children, RecordingInfo};
use super::Options;
use mmulab_probe::error::{ProbeError, Result};
use mmulab_record::ptrace_sample;

/// Fewer windows than this are flagged in the output (assumed: hash_join's 2 windows at
/// the default period predicted 0.88 where 15–17 windows and mmtrace predicted 1.28,
/// docs/advise.md).
pub const FEW_WINDOWS: u64 = 10;

/// Records `opts.command` with the sampler's `sampling` into a temporary trace in `dir`.
pub fn record(
    opts: &Options,
    sampling: ptrace_sample::WindowSampling,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(PathBuf, bool, RecordingInfo)> {
    if let Some(why) = ptrace_sample::unavailable() {
        return Err(ProbeError::Unavailable(why));
    }
    if opts.sample.is_some() {
        return Err(ProbeError::Invalid(
            "--sample ON/PERIOD counts references (mmtrace); the ptrace sampler's windows are W/PERIOD with a time unit (e.g. 20k/100ms)".into(),
        ));
    }
    let path = dir.join(format!("advise-{}.mlt", std::process::id()));
    let file = std::fs::File::create(&path).map_err(|e| ProbeError::io(format!("creating {}", path.display()), e))?;
    progress(&format!(
        "recording the program with the ptrace sampler ({})",
        sampling.describe()
    ));
    let ropts = super::recording::record_options(opts);
    let before = cpu_children();
    let r = match ptrace_sample::record(&ropts, sampling, file, &mut |_| {}, Box::new(|| None)) {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return Err(ProbeError::Unavailable(format!("recording failed: {e}")));
        }
    };
    let cpu = cpu_children() - before;
    let rec = &r.recording;
    let (mode, method) = match (rec.truncated, sampling.whole()) {
        (true, _) => ("prefix", format!("ptrace, prefix of {} data references", rec.references)),
        (false, true) => ("whole", "ptrace, whole run (every instruction stepped; data references)".to_string()),
        (false, false) => (
            "sampled",
            format!(
                "ptrace, sampled: {}{} ({} windows, {} steps, {} data references, {} pages touched between them{})",
                sampling.describe(),
                if opts.window.is_none() && sampling != ptrace_sample::WindowSampling::default() {
                    " (the period from the native run's time: about 100 windows)"
                } else {
                    ""
                },
                r.windows,
                r.steps,
                rec.references,
                r.touches,
                match (r.windows_other_threads, r.windows < FEW_WINDOWS) {
                    (_, true) => format!(
                        "; only {} windows: too few to stand for the run, give a shorter period (--sample W/PERIOD) or use mmtrace",
                        r.windows
                    ),
                    (0, _) => String::new(),
                    (n, _) => format!("; {n} windows in threads other than the main one"),
                }
            ),
        ),
    };
    Ok((
        path,
        true,
        RecordingInfo {
            sampled: mode != "whole",
            mode,
            recorder: "ptrace".into(),
            method,
            fallback: None,
            references: rec.references,
            total_references: (mode == "whole").then_some(rec.references),
            seconds: cpu,
            share_estimate: 1.0,
            slowdown: f64::NAN,
            windows: Some(r.windows),
            steps: Some(r.steps),
            // The sampler does not follow children (nor count them): the trace is the
            // first process's (docs/advise.md).
            forks: None,
            touches: mode == "sampled" && r.touches > 0,
        },
    ))
}
