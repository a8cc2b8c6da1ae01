//! `mmulab`: a thin front end over the mmulab libraries. Each subcommand lives in
//! `cmd/NAME.rs` with its clap `Args` and a `run` function.

mod cmd;
mod output;
mod progress;
mod signals;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mmulab: a laboratory for superpages — probe real TLBs, simulate translation, reproduce
/// experiments.
#[derive(Parser)]
#[command(name = "mmulab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run built-in workloads under 4 KiB and 2 MiB pages on the default machine and
    /// compare them (the main job).
    Demo(cmd::demo::Args),
    /// Simulate a trace or workload on a machine config.
    Sim(cmd::sim::Args),
    /// Miss-ratio curves of a TLB level: every size 1..N in one pass (LRU, exact).
    Mrc(cmd::mrc::Args),
    /// Sweep configurations: parameters crossed into points, each a `sim` run, on a local
    /// pool or Ray; results as Parquet or CSV, resumable.
    Sweep(cmd::sweep::Args),
    /// Convert a trace between formats.
    Convert(cmd::convert::Args),
    /// Summarise a trace: counts by kind, threads, address spaces, footprint, markers.
    TraceInfo(cmd::trace_info::Args),
    /// Record a program's memory references with Valgrind Lackey into an .mlt trace.
    Record(cmd::record::Args),
    /// Measure this machine's data TLBs (entries per level, 2 MiB support) from behaviour.
    Probe(cmd::probe::Args),
    /// Native benchmarks (GUPS, latency, bandwidth) under 4 KiB, THP, mTHP or hugetlbfs pages.
    Bench(cmd::bench::Args),
    /// Will huge pages help a program? Measured (4 KiB vs THP runs) and predicted
    /// (recorded, simulated on this machine's probed TLBs), with a verdict.
    Advise(cmd::advise::Args),
    /// List the machine catalog (cores usable with --machine NAME).
    Machines(cmd::machines::Args),
    /// Run the DRAM model alone on a DRAMsim3-format request stream (or generate one).
    Dram(cmd::dram::Args),
    /// Reproduce an experiment of the source documents (experiments/*.toml).
    Reproduce(cmd::reproduce::Args),
}

fn main() -> ExitCode {
    signals::default_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => cmd::demo::run(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Mrc(a) => cmd::mrc::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Convert(a) => cmd::convert::run(a),
        Command::TraceInfo(a) => cmd::trace_info::run(a),
        Command::Record(a) => cmd::record::run(a),
        Command::Probe(a) => cmd::probe::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Advise(a) => cmd::advise::run(a),
        Command::Machines(a) => cmd::machines::run(a),
        Command::Dram(a) => cmd::dram::run(a),
        Command::Reproduce(a) => cmd::reproduce::run(a),
    };
    if let Err(e) = &result {
        eprintln!("mmulab: error: {e:#}");
    }
    // Stopped by Ctrl-C or SIGTERM (signals.rs): the command printed what it did; the
    // status says it was interrupted, as a shell reports a process killed by the signal.
    if let Some(sig) = signals::interrupted() {
        eprintln!("mmulab: interrupted by {}", signals::name(sig));
        return ExitCode::from(128 + sig as u8);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(2),
    }
}
