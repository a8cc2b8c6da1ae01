//! `mmulab sim`: one machine, one trace or workload, statistics out.

use super::convert::ReadOpts;
use crate::progress::ProgressLine;
use anyhow::{bail, Context, Result};
use mmulab_sim::{config, report, Session, SessionOptions, Stats};
use mmulab_trace::{open_trace, open_trace_with, workload, Format, TraceOptions, TraceSource};
use std::path::PathBuf;

/// Simulate a trace or a synthetic workload on a machine.
#[derive(clap::Args)]
pub struct Args {
    /// Machine config (TOML; docs/config.md). Default: the built-in machine
    /// (machines/default.toml).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Machine: a catalog name (`mmulab machines`) or a machine TOML file; with
    /// --config, the config's keys are laid over it (docs/catalog.md).
    #[arg(long, short = 'm', value_name = "NAME_OR_FILE")]
    pub machine: Option<String>,
    /// Trace file to replay.
    #[arg(
        long,
        short,
        conflicts_with = "workload",
        required_unless_present_any = ["workload", "gpu_workload", "gpu_trace", "print_config"]
    )]
    pub trace: Option<PathBuf>,
    /// Trace format: din, lackey, mlt, drmemtrace, champsim, cloudsuite or auto (detected
    /// from content and name).
    #[arg(long, visible_alias = "from", default_value = "auto")]
    pub format: String,
    /// drmemtrace: deliver prefetch records as loads (default: ignore them;
    /// docs/trace-format.md §2.1). Only with --trace.
    #[arg(long, conflicts_with = "workload")]
    pub prefetches: bool,
    /// drmemtrace: map threads to cores by their `cpu` markers (default) or one core per
    /// `thread`. Only with --trace.
    #[arg(long, value_parser = ["cpu", "thread"], conflicts_with = "workload")]
    pub cores: Option<String>,
    /// drmemtrace directories: interleave threads by `timestamp` markers (default) or
    /// `rr:N` (round-robin, N references per turn). Only with --trace.
    #[arg(long, value_name = "timestamp|rr:N", conflicts_with = "workload")]
    pub interleave: Option<String>,
    /// Synthetic workload spec, e.g. `gups:table=1GiB,refs=100M` (docs/workloads.md).
    #[arg(long, short)]
    pub workload: Option<String>,
    /// Print one JSON object on stdout instead of tables. It carries `mmulab` (the version
    /// and git commit of this binary) and `config` (the fully resolved machine
    /// configuration) beside the statistics (docs/output.md, "Provenance").
    #[arg(long)]
    pub json: bool,
    /// Print the fully resolved machine configuration (the machine merged in, --config
    /// and --set applied, every default written out) as TOML and exit without
    /// simulating; with --json, as JSON (`{"mmulab": …, "config": …}`). Given back with
    /// `--config FILE` (and no --machine) it builds the same machine (docs/config.md,
    /// "The resolved configuration").
    #[arg(long, conflicts_with_all = ["trace", "workload", "gpu_workload", "gpu_trace"])]
    pub print_config: bool,
    /// Override a config key: `--set os.policy=fixed --set os.page_size=2M`,
    /// `--set tlb.l2.entries=1536`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Write a time series (JSON lines: coverage by page size, bloat, promotions,
    /// faults, TLB misses, walk cycles; docs/output.md) to FILE.
    #[arg(long, value_name = "FILE")]
    pub timeseries: Option<PathBuf>,
    /// Track the distinct 4 KiB pages touched and report memory bloat (resident −
    /// touched bytes) at the end of the run and at its peak (after every fault and
    /// background tick): `memory.touched_bytes`, `bloat_bytes`, `peak_bloat_bytes`. Costs
    /// a hash-set insert per reference that changes page (a time series tracks them too).
    #[arg(long)]
    pub bloat: bool,
    /// Count per region: for each VMA the trace declares (and one entry for addresses
    /// outside them), the references, their walk cycles, the faults by the page size
    /// they mapped, the resident and the touched bytes (JSON `regions`, docs/output.md
    /// § Regions). A trace without VMAs has only the outside entry. Slower: every
    /// reference takes the general path.
    #[arg(long)]
    pub regions: bool,
    /// References between time-series samples.
    #[arg(long, default_value_t = 1_000_000, requires = "timeseries")]
    pub interval: u64,
    /// Write every request that reaches main memory below the data caches to FILE
    /// (needs a machine with `[caches]`; docs/memory.md, "Request streams").
    #[arg(long, value_name = "FILE")]
    pub mem_trace: Option<PathBuf>,
    /// Line format of --mem-trace: `dramsim3` (`0xADDR READ|WRITE cycle`) or
    /// `ramulator` (`0xADDR R|W`).
    #[arg(
        long,
        value_name = "dramsim3|ramulator",
        default_value = "dramsim3",
        requires = "mem_trace"
    )]
    pub mem_trace_format: String,
    /// GPU profile for --gpu-workload/--gpu-trace: `pi4-v3d`, `pi5-v3d`, `mali-g57` or a
    /// GPU profile TOML file (docs/gpu.md). The CPU machine is the profile's `cpu`
    /// unless --machine names one; --set applies to it (memory.size, memory.age...).
    #[arg(long, value_name = "NAME_OR_FILE")]
    pub gpu: Option<String>,
    /// The GPU's page-table variant: `4K-only` or `big-super` (default: the profile's).
    #[arg(long, value_name = "4K-only|big-super", requires = "gpu")]
    pub gpu_pages: Option<String>,
    /// Run a synthetic GPU workload on the GPU, e.g. `texture:textures=8` (docs/gpu.md).
    #[arg(long, value_name = "SPEC", requires = "gpu", conflicts_with_all = ["trace", "workload", "gpu_trace"])]
    pub gpu_workload: Option<String>,
    /// References to skip before anything is simulated (not simulated at all; as
    /// drcachesim's -skip_refs). docs/output.md, "Warm-up and region of interest".
    #[arg(long, value_name = "N", value_parser = count)]
    pub skip: Option<u64>,
    /// References simulated as warm-up, their statistics reported apart (JSON `warmup`,
    /// a line under the table), as drcachesim's -warmup_refs and ChampSim's
    /// --warmup-instructions. `auto` (default): the workload's own warm-up (gups: its
    /// `Table[i] = i` initialisation), none for a trace.
    #[arg(long, value_name = "N|auto")]
    pub warmup: Option<String>,
    /// References measured after the warm-up, then stop (drcachesim's -sim_refs).
    #[arg(long = "refs", value_name = "N", value_parser = count)]
    pub roi_refs: Option<u64>,
    /// Look up every base page a reference's bytes straddle, each piece counted as a
    /// reference (as DynamoRIO's TLB simulator); default: the first byte's page only.
    #[arg(long)]
    pub straddle: bool,
    /// Count compulsory misses per TLB level (first fill of a translation-entry key;
    /// JSON `tlb.LEVEL.compulsory`).
    #[arg(long)]
    pub compulsory: bool,
    /// Run a GPU trace file on the GPU (docs/gpu.md, "Trace format").
    #[arg(long, value_name = "FILE", requires = "gpu", conflicts_with_all = ["trace", "workload"])]
    pub gpu_trace: Option<PathBuf>,
    /// Host threads for the simulation: 2 runs a machine's data caches and DRAM on a
    /// thread of their own beside the translation (same results, less time;
    /// docs/memory.md, "Speed"), 1 runs everything on one. Default: 2 when the host
    /// lets this process run two threads at once, else 1. Only machines with
    /// `[caches]` use a second thread, and not with --mem-trace.
    #[arg(long, value_name = "1|2", value_parser = clap::value_parser!(u8).range(1..=2))]
    pub sim_threads: Option<u8>,
    /// References at or above the end of the user address space (a kernel or
    /// non-canonical address; x86-64: 0x7ffffffff000 and up): `stop` (default) ends the
    /// run with the trace, the reference's index and its address; `drop` leaves them out
    /// and counts them (JSON `outside_user`; docs/output.md, "References outside the user
    /// address space").
    #[arg(long, value_name = "stop|drop", default_value = "stop", value_parser = mmulab_trace::user_space::OutsideUser::parse)]
    pub outside_user: mmulab_trace::user_space::OutsideUser,
}

/// A count with decimal suffixes (`100M`), for --skip and --refs.
fn count(s: &str) -> Result<u64, String> {
    mmulab_trace::units::parse_count(s)
}

/// The region of interest the arguments name (docs/output.md).
pub fn roi(a: &Args) -> Result<mmulab_sim::Roi> {
    let warmup = match a.warmup.as_deref() {
        None | Some("auto") => mmulab_sim::Warmup::Auto,
        Some(n) => mmulab_sim::Warmup::Refs(
            count(n).map_err(|e| anyhow::anyhow!("--warmup takes a count (e.g. 1M) or `auto`: {e}"))?,
        ),
    };
    Ok(mmulab_sim::Roi {
        skip: a.skip.unwrap_or(0),
        warmup,
        refs: a.roi_refs,
        straddle: a.straddle,
        compulsory: a.compulsory,
    })
}

/// Opens the reference stream the arguments name, a workload laid out for a machine
/// whose virtual addresses are `va_bits` wide (defaults it chose are printed as notes).
pub fn source(
    trace: Option<&PathBuf>,
    format: &str,
    workload: Option<&str>,
    va_bits: u32,
) -> Result<Box<dyn TraceSource + Send>> {
    Ok(match (trace, workload) {
        (Some(path), _) => open_trace(path, Format::parse(format)?)?,
        (None, Some(spec)) => {
            let (src, notes) = workload::parse_for(spec, va_bits)?;
            for n in notes {
                errln!("mmulab: note: {n}");
            }
            src
        }
        (None, None) => bail!("give --trace FILE or --workload SPEC"),
    })
}

/// The trace reader options of `sim`: the same meaning and parsing as `convert`'s and
/// `trace-info`'s (`ReadOpts`), defaults `cpu` and `timestamp`.
fn read_options(a: &Args) -> Result<TraceOptions> {
    ReadOpts {
        from: a.format.clone(),
        prefetches: a.prefetches,
        cores: a.cores.clone().unwrap_or_else(|| "cpu".into()),
        interleave: a.interleave.clone().unwrap_or_else(|| "timestamp".into()),
    }
    .options()
}

/// The resolved configuration of this run as JSON, once known: the failure object of
/// `sim --json` carries it too.
static RESOLVED: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();

/// The keys every `sim --json` object carries beside the statistics: `mmulab`
/// (provenance) and, once the machine resolved, `config`.
pub fn add_provenance(v: &mut serde_json::Value, config: Option<&serde_json::Value>) {
    v["mmulab"] = crate::provenance::json();
    if let Some(c) = config {
        v["config"] = c.clone();
    }
}

/// `--sim-threads` of this process (0: not given).
static SIM_THREADS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether a simulation runs its data caches on a second thread
/// ([`mmulab_sim::Machine::set_pipeline`]): `--sim-threads 2`, or by default when the host lets
/// this process run two threads at once.
fn pipeline_on() -> bool {
    match SIM_THREADS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2),
        n => n >= 2,
    }
}

/// Runs `src` on a machine built from `spec`, with progress; returns the statistics,
/// or an error that carries the statistics gathered before it.
pub fn simulate(spec: config::MachineSpec, src: &mut dyn TraceSource, label: &str) -> Result<Stats> {
    simulate_with(spec, src, label, Extras::default(), None, &mmulab_sim::Roi::default())
}

/// The error of [`simulate`] when a run stopped on an error: the statistics of the
/// references simulated before it (`complete: false`), what was simulated, and the
/// error. (A run stopped by Ctrl-C is no error: its statistics say `complete: false`.)
#[derive(Debug)]
pub struct Stopped {
    pub stats: Box<Stats>,
    pub source: String,
    pub error: anyhow::Error,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Stopped {}

/// What a run writes or tracks beside its statistics (none by default).
#[derive(Default)]
pub struct Extras<'a> {
    /// A time series: a sample every `.0` references, JSON lines to the file `.1`.
    pub series: Option<(u64, &'a std::path::Path)>,
    /// The memory request stream below the caches, in a format, to a file.
    pub mem_trace: Option<(mmulab_sim::MemTraceFormat, &'a std::path::Path)>,
    /// Track touched pages: bloat at the end and at its peak (`--bloat`).
    pub bloat: bool,
    /// Count per region (`--regions`).
    pub regions: bool,
    /// References outside the user address space: stop or drop (`--outside-user`).
    pub outside_user: mmulab_trace::user_space::OutsideUser,
}

/// [`simulate`] with an optional time series (`interval` references, JSON lines to a
/// file) and the trace's metadata read up front, whose VMAs are preloaded
/// (docs/policies.md), through the simulator's front door ([`Session`]). The time series
/// and the request stream of a run that stopped early cover the references simulated
/// and are kept.
pub fn simulate_with(
    spec: config::MachineSpec,
    src: &mut dyn TraceSource,
    label: &str,
    extras: Extras<'_>,
    meta: Option<&mmulab_trace::TraceMeta>,
    roi: &mmulab_sim::Roi,
) -> Result<Stats> {
    let Extras {
        series,
        mem_trace,
        bloat,
        regions,
        outside_user,
    } = extras;
    // Checked before a file is created: a machine without caches gets no stream, and
    // an interval of 0 no time series.
    if mem_trace.is_some() && spec.caches.is_none() {
        bail!("--mem-trace needs data caches: give the machine a [caches] section (docs/memory.md), e.g. --machine cortex-a76-pi5");
    }
    if series.is_some_and(|(interval, _)| interval == 0) {
        bail!("--interval must be positive");
    }
    let mut session = Session::new(spec)?;
    let mut opts = SessionOptions {
        roi: roi.clone(),
        pipeline: pipeline_on(),
        meta,
        bloat,
        regions,
        outside_user,
        ..Default::default()
    };
    let mut mem_trace_file = None;
    if let Some((format, path)) = mem_trace {
        let out = crate::output::OutputFile::new(path).context("cannot create the memory request stream")?;
        opts.mem_trace = Some((format, Box::new(out.open_named()?)));
        mem_trace_file = Some(out);
    }
    let mut series_file = None;
    if let Some((interval, path)) = series {
        let out = crate::output::OutputFile::new(path).context("cannot create the time series")?;
        opts.series = Some((interval, Box::new(out.open_named()?)));
        series_file = Some(out);
    }
    let mut p = ProgressLine::new(label);
    let mut progress = |n, f| p.update(n, f);
    opts.progress = Some(&mut progress);
    let res = session.run(src, opts);
    p.finish();
    // The request stream and the time series are kept when the run stopped early: they
    // cover what ran.
    for out in [mem_trace_file, series_file].into_iter().flatten() {
        out.commit()?;
    }
    match res {
        Ok(s) => Ok(s),
        Err(e) => {
            let partial = e.stats.unwrap_or_else(|| Box::new(session.stats()));
            errln!(
                "mmulab: the run stopped early; statistics of the {} references simulated before the error:",
                partial.counters.references
            );
            errln!("{}", report::single(&partial, "partial results"));
            Err(anyhow::Error::new(Stopped {
                stats: partial,
                source: label.to_string(),
                error: e.error.into(),
            }))
        }
    }
}

/// Runs `mmulab sim`. With `--json`, stdout holds exactly one JSON object whatever
/// happens: the statistics, or on a failure the partial statistics (if the run had
/// started) with `"complete": false` and an `error` object.
pub fn run(a: Args) -> Result<()> {
    crate::signals::stop_on_interrupt();
    let json = a.json;
    let result = run_to_end(a);
    if let (true, Err(e)) = (json, &result) {
        let mut v = match e.downcast_ref::<Stopped>() {
            Some(s) => {
                let mut v = s.stats.to_json();
                v["source"] = serde_json::Value::String(s.source.clone());
                v
            }
            None => serde_json::json!({}),
        };
        v["complete"] = serde_json::Value::Bool(false);
        v["error"] = serde_json::json!({ "message": format!("{e:#}") });
        add_provenance(&mut v, RESOLVED.get());
        outln!("{}", serde_json::to_string(&v)?);
    }
    result
}

fn run_to_end(a: Args) -> Result<()> {
    if a.gpu_workload.is_some() || a.gpu_trace.is_some() {
        return super::sim_gpu::run(&a);
    }
    let resolved =
        config::resolve(a.machine.as_deref(), a.config.as_deref(), &a.sets).context("invalid machine config")?;
    let config_json = resolved.to_json();
    let _ = RESOLVED.set(config_json.clone());
    if a.print_config {
        if a.json {
            let mut v = serde_json::json!({});
            add_provenance(&mut v, Some(&config_json));
            outln!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            outln!("# {}", crate::provenance::line());
            out!("{}", resolved.to_toml());
        }
        return Ok(());
    }
    let spec = resolved.spec;
    for n in spec.notes() {
        errln!("mmulab: note: {n}");
    }
    let roi = roi(&a)?;
    // Options that would be ignored are refused, never silently dropped (issue 51).
    if a.workload.is_some() && a.trace.is_none() && a.format != "auto" {
        bail!(
            "--format {} applies to --trace: a workload is generated, not read (drop --format)",
            a.format
        );
    }
    if a.roi_refs == Some(0) {
        bail!("--refs 0 would measure nothing: give the references to measure after the warm-up (e.g. --refs 1M), or leave --refs out to measure to the end");
    }
    if let Some(n) = a.sim_threads {
        SIM_THREADS.store(n, std::sync::atomic::Ordering::Relaxed);
    }
    let mut src = match &a.trace {
        Some(path) => open_trace_with(path, &read_options(&a)?)?,
        None => source(None, &a.format, a.workload.as_deref(), spec.format.va_bits())?,
    };
    let what = src.describe();
    let title = format!(
        "mmulab sim: {what} on {} ({} core{}), OS policy {}",
        match (&a.machine, &a.config) {
            (Some(m), _) => m.clone(),
            (None, Some(p)) => p.display().to_string(),
            (None, None) => "the default machine".into(),
        },
        spec.cores,
        if spec.cores == 1 { "" } else { "s" },
        spec.os.name()
    );
    // An .mlt trace may keep its VMA samples anywhere in the file: read them up front so
    // the policies see them from the first fault (other sources: the run loop looks).
    let meta = a.trace.as_deref().and_then(mmulab_sim::trace_file_meta);
    let mem_trace = match &a.mem_trace {
        Some(p) => Some((
            mmulab_sim::MemTraceFormat::parse(&a.mem_trace_format).map_err(anyhow::Error::msg)?,
            p.as_path(),
        )),
        None => None,
    };
    let stats = simulate_with(
        spec,
        &mut src,
        &what,
        Extras {
            series: a.timeseries.as_deref().map(|p| (a.interval, p)),
            mem_trace,
            bloat: a.bloat,
            regions: a.regions,
            outside_user: a.outside_user,
        },
        meta.as_ref(),
        &roi,
    )?;
    // --skip past the end simulated nothing: say so rather than print a run of nothing.
    if let (Some(skip), Some(r)) = (a.skip, stats.roi.as_ref()) {
        if stats.complete && r.skipped < skip {
            bail!(
                "--skip {skip}: {what} ended after {} references, all skipped; nothing was simulated (give a smaller --skip)",
                r.skipped
            );
        }
    }
    if a.json {
        let mut v = stats.to_json();
        v["source"] = serde_json::Value::String(what);
        add_provenance(&mut v, Some(&config_json));
        outln!("{}", serde_json::to_string(&v)?);
    } else {
        out!("{}", report::single(&stats, &title));
        if let Some(line) = mmulab_sim::roi_line(&stats) {
            outln!("{line}");
        }
        if !stats.complete {
            outln!("{}", crate::signals::incomplete_line(stats.counters.references));
        }
    }
    Ok(())
}
