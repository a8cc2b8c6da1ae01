//! `mmulab`: a thin front end over the mmulab libraries. Each subcommand lives in
//! `cmd/NAME.rs` with its clap `Args` and a `run` function.

#[macro_use]
mod console;
mod cmd;
mod lazy;
mod output;
mod progress;
mod provenance;
mod signals;

use clap::{Parser, Subcommand};
use lazy::Lazy;
use std::process::ExitCode;

/// mmulab: a laboratory for superpages — probe real TLBs, simulate translation, reproduce
/// experiments.
#[derive(Parser)]
#[command(name = "mmulab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's arguments are [`Lazy`]: defined only for the subcommand used.
#[derive(Subcommand)]
enum Command {
    /// Run built-in workloads under 4 KiB and 2 MiB pages on the default machine and
    /// compare them (the main job).
    Demo(Lazy<cmd::demo::Args>),
    /// Simulate a trace or workload on a machine config.
    Sim(Lazy<cmd::sim::Args>),
    /// Miss-ratio curves of a TLB level: every size 1..N in one pass (LRU, exact).
    Mrc(Lazy<cmd::mrc::Args>),
    /// Sweep configurations: parameters crossed into points, each a `sim` run, on a local
    /// pool or Ray; results as Parquet or CSV, resumable.
    Sweep(Lazy<cmd::sweep::Args>),
    /// Convert a trace between formats.
    Convert(Lazy<cmd::convert::Args>),
    /// Summarise a trace: counts by kind, threads, address spaces, footprint, markers.
    TraceInfo(Lazy<cmd::trace_info::Args>),
    /// Record a program's memory references with Valgrind Lackey into an .mlt trace.
    Record(Lazy<cmd::record::Args>),
    /// Measure this machine's data TLBs (entries per level, 2 MiB support) from behaviour.
    Probe(Lazy<cmd::probe::Args>),
    /// Native benchmarks (GUPS, latency, bandwidth) under 4 KiB, THP, mTHP or hugetlbfs pages.
    Bench(Lazy<cmd::bench::Args>),
    /// Will huge pages help a program? Measured (4 KiB vs THP runs) and predicted
    /// (recorded, simulated on this machine's probed TLBs), with a verdict.
    Advise(Lazy<cmd::advise::Args>),
    /// List the machine catalog (cores usable with --machine NAME).
    Machines(Lazy<cmd::machines::Args>),
    /// Run the DRAM model alone on a DRAMsim3-format request stream (or generate one).
    Dram(Lazy<cmd::dram::Args>),
    /// Reproduce an experiment of the source documents (experiments/*.toml).
    Reproduce(Lazy<cmd::reproduce::Args>),
    /// Check mmulab's Linux THP/mTHP model against this machine's kernel, scenario by
    /// scenario (docs/kernel-check.md).
    CheckKernel(Lazy<cmd::check_kernel::Args>),
}

fn main() -> ExitCode {
    // A `check-kernel` scenario's child process is this executable re-run.
    mmulab_kernel_check::child_entry();
    signals::default_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(Lazy(a)) => cmd::demo::run(a),
        Command::Sim(Lazy(a)) => cmd::sim::run(a),
        Command::Mrc(Lazy(a)) => cmd::mrc::run(a),
        Command::Sweep(Lazy(a)) => cmd::sweep::run(a),
        Command::Convert(Lazy(a)) => cmd::convert::run(a),
        Command::TraceInfo(Lazy(a)) => cmd::trace_info::run(a),
        Command::Record(Lazy(a)) => cmd::record::run(a),
        Command::Probe(Lazy(a)) => cmd::probe::run(a),
        Command::Bench(Lazy(a)) => cmd::bench::run(a),
        Command::Advise(Lazy(a)) => cmd::advise::run(a),
        Command::Machines(Lazy(a)) => cmd::machines::run(a),
        Command::Dram(Lazy(a)) => cmd::dram::run(a),
        Command::Reproduce(Lazy(a)) => cmd::reproduce::run(a),
        Command::CheckKernel(Lazy(a)) => cmd::check_kernel::run(a),
    };
    if let Err(e) = &result {
        errln!("mmulab: error: {e:#}");
    }
    // A write to stdout or stderr failed (console.rs): say so, never a panic.
    if let Some(e) = console::failure() {
        errln!("mmulab: error: {e}");
        return ExitCode::from(2);
    }
    // Stopped by Ctrl-C or SIGTERM (signals.rs): the command printed what it did; the
    // status says it was interrupted, as a shell reports a process killed by the signal.
    if let Some(sig) = signals::interrupted() {
        errln!("mmulab: interrupted by {}", signals::name(sig));
        return ExitCode::from(128 + sig as u8);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(2),
    }
}
