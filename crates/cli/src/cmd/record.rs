//! `mmulab record -o FILE -- CMD ARGS…`: trace a real program with Valgrind Lackey
//! (`valgrind --tool=lackey --trace-mem=yes`) straight into an `.mlt` file. The recorder
//! (streaming through a pipe, VMA samples of /proc/PID/maps) is the library's
//! (`mmulab_record`); this command parses the arguments, writes the output file
//! and prints the summary. With `--json`, the program's stdout goes to stderr so that
//! stdout holds only the summary object.

use crate::output::OutputFile;
use crate::progress::ProgressLine;
use anyhow::{bail, Result};
use mmulab_record::{Backend, RecordError, RecordOptions, Recorder};
use std::path::PathBuf;
use std::time::Duration;

/// Record a program's memory references (through Valgrind Lackey) into an .mlt trace.
#[derive(clap::Args)]
pub struct Args {
    /// Output trace (.mlt); `-` writes it to stdout.
    #[arg(short, long)]
    pub output: PathBuf,
    /// zstd level of the output (1–22).
    #[arg(long, default_value_t = 3)]
    pub level: i32,
    /// How often to sample /proc/PID/maps while the program runs, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub maps_interval_ms: u64,
    /// Print the closing summary as one JSON object on stdout (the program's stdout then
    /// goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// The recorder: `lackey` (data and instruction references, text), `mmtrace` (a
    /// small Valgrind tool built on first use into the cache directory: data references
    /// in binary, much faster; docs/advise.md) or `ptrace` (x86-64 Linux: the program runs
    /// natively and windows of its instructions are single-stepped: data references).
    #[arg(long, value_name = "lackey|mmtrace|ptrace", default_value = "lackey", value_parser = ["lackey", "mmtrace", "ptrace"])]
    pub recorder: String,
    /// With mmtrace: record only the first ON references of every PERIOD (e.g. `1M/10M`).
    /// With ptrace: W steps every PERIOD of the program's user CPU time (`10k/100ms`, the
    /// default; `all` steps the whole run).
    #[arg(long, value_name = "ON/PERIOD")]
    pub sample: Option<String>,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true)]
    pub command: Vec<String>,
}

pub fn run(a: Args) -> Result<()> {
    if a.json && a.output.as_os_str() == "-" {
        bail!("-o - writes the trace to stdout, where --json would print its summary too: give a file or drop --json");
    }
    if a.recorder == "ptrace" {
        return run_ptrace(a);
    }
    let recorder = Recorder::new()?;
    let sampling = match &a.sample {
        Some(s) if a.recorder == "mmtrace" => {
            Some(mmulab_record::mmtrace::Sampling::parse(s).map_err(|e| anyhow::anyhow!("--sample: {e}"))?)
        }
        Some(_) => bail!("--sample needs --recorder mmtrace (Lackey records every reference)"),
        None => None,
    };
    let backend = if a.recorder == "mmtrace" {
        let dir = mmulab_advise::cache::dir()?.join("valgrind-mmtrace");
        let lib_dir = mmulab_record::mmtrace::build(&dir)
            .map_err(|e| anyhow::anyhow!("{e}; `--recorder lackey` needs no build"))?;
        Backend::Mmtrace { lib_dir, sampling }
    } else {
        Backend::Lackey
    };
    // Ctrl-C reaches Valgrind too (same process group) and ends the program; mmulab then
    // stays to close a valid trace of what was recorded, and exits with 130.
    crate::signals::stop_on_interrupt();
    if a.output.extension().and_then(|e| e.to_str()) != Some("mlt") && a.output.as_os_str() != "-" {
        errln!(
            "mmulab record: note: {} does not end in .mlt; writing mmulab's .mlt format anyway",
            a.output.display()
        );
    }
    // Written beside the output and renamed when complete (crate::output).
    let output = OutputFile::new(&a.output)?;
    let opts = options(&a);
    let mut p = ProgressLine::new(&format!("record {}", a.command[0]));
    let recorded = recorder.record_with(
        &backend,
        &opts,
        output.open()?,
        &mut |refs| p.update(refs, None),
        Box::new(crate::signals::interrupted),
    );
    p.finish();
    let r = match recorded {
        Ok(r) => r,
        Err(e) => {
            if let RecordError::ValgrindFailed { messages, .. } = &e {
                for m in messages {
                    errln!("{m}");
                }
            }
            return Err(e.into());
        }
    };
    output.commit()?;
    let (refs, bytes, elapsed) = (r.references, r.bytes, r.seconds);
    let status = r.exit_status;
    let summary = serde_json::json!({
        "output": a.output.display().to_string(),
        "references": refs,
        "loads": r.loads,
        "stores": r.stores,
        "ifetches": r.ifetches,
        "bytes": bytes,
        "bytes_per_reference": bytes as f64 / refs.max(1) as f64,
        "vma_samples": r.vma_samples,
        "vmas_last_sample": r.vmas_last_sample,
        "seconds": elapsed,
        "exit_status": status.code(),
        "recorder": a.recorder,
        "total_references": r.total_references,
        "forks": r.forks,
    });
    if a.json {
        outln!("{}", serde_json::to_string(&summary)?);
    } else {
        errln!(
            "mmulab record: {refs} references ({} loads, {} stores, {} ifetches) of `{}` in {elapsed:.1} s → {} ({bytes} bytes, {:.2} bytes/reference); {} VMA samples ({} VMAs in the last)",
            r.loads, r.stores, r.ifetches, a.command.join(" "), a.output.display(), bytes as f64 / refs.max(1) as f64, r.vma_samples, r.vmas_last_sample
        );
    }
    if !status.success() {
        errln!("mmulab record: warning: the program exited with {status}; the trace covers what it did until then");
    }
    if let Some(n) = r.forks.filter(|&n| n > 0) {
        errln!("mmulab record: note: the program forked {n} time(s); the trace is its first process alone (a child is another address space)");
    }
    Ok(())
}

/// `--recorder ptrace`: the window sampler (`mmulab_record::ptrace_sample`, no Valgrind).
fn run_ptrace(a: Args) -> Result<()> {
    use mmulab_record::ptrace_sample::{self, WindowSampling};
    let sampling = match &a.sample {
        Some(s) => WindowSampling::parse(s).map_err(|e| anyhow::anyhow!("--sample: {e}"))?,
        None => WindowSampling::default(),
    };
    if let Some(why) = ptrace_sample::unavailable() {
        bail!("{why}");
    }
    // The program runs in its own process group: a Ctrl-C reaches mmulab, which passes it on.
    crate::signals::stop_on_interrupt();
    let output = OutputFile::new(&a.output)?;
    let opts = options(&a);
    let mut p = ProgressLine::new(&format!("record {}", a.command[0]));
    let recorded = ptrace_sample::record(
        &opts,
        sampling,
        output.open()?,
        &mut |refs| p.update(refs, None),
        Box::new(crate::signals::interrupted),
    );
    p.finish();
    let r = recorded?;
    output.commit()?;
    let rec = &r.recording;
    let summary = serde_json::json!({
        "output": a.output.display().to_string(),
        "references": rec.references,
        "loads": rec.loads,
        "stores": rec.stores,
        "ifetches": rec.ifetches,
        "bytes": rec.bytes,
        "bytes_per_reference": rec.bytes as f64 / rec.references.max(1) as f64,
        "vma_samples": rec.vma_samples,
        "vmas_last_sample": rec.vmas_last_sample,
        "seconds": rec.seconds,
        "exit_status": rec.exit_status.code(),
        "recorder": "ptrace",
        "total_references": null,
        "sampling": sampling.describe(),
        "windows": r.windows,
        "steps": r.steps,
        "user_s": r.user_s,
        "sys_s": r.sys_s,
        "threads": r.threads,
        "windows_other_threads": r.windows_other_threads,
        "undecodable": r.undecodable,
        "vsib_skipped": r.vsib_skipped,
        "early_signals": r.early_signals,
        "abandoned_windows": r.abandoned_windows,
        "touches": r.touches,
        "pagemap_bytes": r.pagemap_bytes,
        "pagemap_seconds": r.pagemap_seconds,
    });
    if a.json {
        outln!("{}", serde_json::to_string(&summary)?);
    } else {
        errln!(
            "mmulab record: {} data references ({} loads, {} stores) of `{}` in {} windows ({} steps; {}; {} pages touched between them) in {:.1} s (program CPU {:.2} s user, {:.2} s system) → {} ({} bytes); {} VMA samples; {} threads",
            rec.references, rec.loads, rec.stores, a.command.join(" "), r.windows, r.steps, sampling.describe(), r.touches,
            rec.seconds, r.user_s, r.sys_s, a.output.display(), rec.bytes, rec.vma_samples, r.threads
        );
    }
    if !rec.exit_status.success() {
        errln!(
            "mmulab record: warning: the program exited with {}; the trace covers what it did until then",
            rec.exit_status
        );
    }
    Ok(())
}

/// The recorders' options from the arguments (every recorder takes the same).
fn options(a: &Args) -> RecordOptions {
    RecordOptions {
        command: a.command.clone(),
        level: a.level,
        maps_interval: Duration::from_millis(a.maps_interval_ms),
        stdout_to_stderr: a.json,
        stdout_null: false,
        max_refs: None,
        env: Vec::new(),
    }
}
