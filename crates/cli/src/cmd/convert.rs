//! `mmulab convert IN OUT`: re-encode a trace. The input is any format mmulab reads; the
//! output is `.mlt` (lossless, compact), `din` or `lackey` text (lossy: din keeps kind and
//! address, lackey kind, address and size; neither keeps core or address space).
//! `mmulab convert --workload SPEC OUT` writes a synthetic workload as a trace instead:
//! an `.mlt` output also carries the workload's VMAs and its warm-up (a `warmup_refs`
//! marker, written before the references), so that `sim --trace OUT` gives the
//! statistics `sim --workload SPEC` gives; text outputs cannot carry them (a note says
//! which `--warmup N` to give).
//!
//! Contract: streaming (constant memory); the markers and metadata sections the input
//! carries (page size, VMAs, …) are written into an `.mlt` output. A damaged input is an
//! error and nothing is written, unless `--salvage` asks to keep the references read
//! before the damage (then the output is complete and valid, and says so in its `source`
//! section). The output goes to a temporary file beside OUT, renamed to OUT when complete
//! (crate::output): an error, a failed write or Ctrl-C leaves OUT as it was. `-` (stdout)
//! and special files are written in place and never removed.

use crate::output::{Counted, OutputFile};
use crate::progress::ProgressLine;
use anyhow::{bail, Context, Result};
use mmulab_trace::format::din::write_din;
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::{
    open_trace_with, Batch, CoreMap, Format, Interleave, MemRef, TraceError, TraceMeta, TraceOptions, TraceSource,
};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Reader options shared by the commands that read traces.
#[derive(clap::Args, Clone, Debug)]
pub struct ReadOpts {
    /// Input format: din, lackey, mlt, drmemtrace, champsim, cloudsuite or auto.
    #[arg(long = "from", visible_alias = "format", default_value = "auto")]
    pub from: String,
    /// drmemtrace: deliver prefetch records as loads (default: ignore them).
    #[arg(long)]
    pub prefetches: bool,
    /// drmemtrace: map threads to cores by their `cpu` markers or one core per `thread`.
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "thread"])]
    pub cores: String,
    /// drmemtrace directories: interleave threads by `timestamp` markers, or `rr:N`
    /// (round-robin, N references per turn).
    #[arg(long, default_value = "timestamp")]
    pub interleave: String,
}

impl ReadOpts {
    /// The library options these flags mean, by the trace crate's one parser (the
    /// parsers [`TraceOptions::parse`] calls: the same meaning and message as a sweep's
    /// and Python's; the message names the flag, `--interleave takes ...`).
    pub fn options(&self) -> Result<TraceOptions> {
        Ok(TraceOptions {
            format: Format::parse(&self.from)?,
            prefetches: self.prefetches,
            cores: CoreMap::parse(&self.cores).map_err(|e| anyhow::anyhow!("--{e}"))?,
            interleave: Interleave::parse(&self.interleave).map_err(|e| anyhow::anyhow!("--{e}"))?,
        })
    }
}

/// Convert a trace between formats (output format from OUT's extension), or write a
/// synthetic workload as a trace (`convert --workload SPEC OUT`).
#[derive(clap::Args)]
pub struct Args {
    /// Input trace (file, or drmemtrace directory); with --workload, leave it out and
    /// give only OUTPUT.
    #[arg(value_name = "INPUT")]
    pub input: Option<PathBuf>,
    /// Output file; `.mlt`, `.din` or `.lackey` picks the format unless --to is given;
    /// `-` writes to stdout (give --to).
    #[arg(value_name = "OUTPUT")]
    pub output: Option<PathBuf>,
    /// Write this synthetic workload (docs/workloads.md, e.g. `gups:table=1GiB,refs=100M`)
    /// as a trace instead of converting one: `convert --workload SPEC OUT`. An `.mlt`
    /// output carries the workload's VMAs and warm-up, so `sim --trace OUT` simulates to
    /// the statistics of `sim --workload SPEC` (on a machine with the same address width
    /// as --machine).
    #[arg(long, value_name = "SPEC")]
    pub workload: Option<String>,
    /// With --workload: the machine whose virtual-address width lays the workload out
    /// (a catalog name or machine TOML file, as `sim --machine`; default: the built-in
    /// machine).
    #[arg(long, short = 'm', value_name = "NAME_OR_FILE", requires = "workload")]
    pub machine: Option<String>,
    #[command(flatten)]
    pub read: ReadOpts,
    /// Output format: mlt, din or lackey (default: from OUT's extension).
    #[arg(long)]
    pub to: Option<String>,
    /// zstd level for .mlt output (1–22).
    #[arg(long, default_value_t = 3)]
    pub level: i32,
    /// On damaged input, keep the references read before the damage instead of failing.
    #[arg(long)]
    pub salvage: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OutFormat {
    Mlt,
    Din,
    Lackey,
}

fn out_format(a: &Args, output: &Path) -> Result<OutFormat> {
    let name = match &a.to {
        Some(t) => t.clone(),
        None => {
            let n = output
                .file_name()
                .map(|n| n.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            n.rsplit('.').next().unwrap_or("").to_string()
        }
    };
    Ok(match name.as_str() {
        "mlt" => OutFormat::Mlt,
        "din" => OutFormat::Din,
        "lackey" => OutFormat::Lackey,
        other => {
            bail!("cannot write '{other}' traces: give OUT a .mlt, .din or .lackey extension, or --to mlt|din|lackey")
        }
    })
}

enum Sink {
    Mlt(Box<MltWriter<BufWriter<Counted<File>>>>),
    Text(BufWriter<Counted<File>>, OutFormat),
}

/// Why the copy ended.
enum End {
    /// The input's end.
    Done,
    /// The input is damaged (`--salvage` keeps what came before).
    Input(TraceError),
    /// The output could not be written (never kept).
    Output(std::io::Error),
    /// Ctrl-C or SIGTERM (never kept).
    Interrupted,
}

impl Sink {
    /// Writes a batch: into `.mlt` with its events as event frames; into din or Lackey
    /// text (no event records) with its events in the legacy encoding
    /// (mmulab_trace::event), which every reader decodes back into events.
    fn push(&mut self, b: &Batch) -> std::io::Result<()> {
        match self {
            Sink::Mlt(w) => w.push_batch(b),
            Sink::Text(..) => b.for_each_run(|x| match x {
                Ok(refs) => self.push_refs(refs),
                Err(e) => self.push_refs(&e.legacy_refs()),
            }),
        }
    }

    fn push_refs(&mut self, refs: &[MemRef]) -> std::io::Result<()> {
        match self {
            Sink::Mlt(w) => w.push_all(refs),
            Sink::Text(w, OutFormat::Din) => refs.iter().try_for_each(|r| write_din(w, r)),
            Sink::Text(w, _) => refs.iter().try_for_each(|r| {
                let k = ["L", "S", "I"][r.kind as usize];
                if k == "I" {
                    writeln!(w, "I  {:08x},{}", r.addr, r.size)
                } else {
                    writeln!(w, " {k} {:08x},{}", r.addr, r.size)
                }
            }),
        }
    }
}

/// The `markers` section text for `meta` (lines `name value`).
pub fn markers_text(meta: &TraceMeta) -> String {
    meta.markers.iter().map(|(k, v)| format!("{k} {v}\n")).collect()
}

/// What `convert` reads: a trace file, or a workload (`--workload`).
struct Input {
    src: Box<dyn TraceSource + Send>,
    /// The input's name in messages and the `source` section.
    name: String,
    /// The trace file, if the input is one.
    path: Option<PathBuf>,
}

/// The input and output the arguments name (`INPUT OUTPUT`, or `--workload SPEC OUTPUT`).
fn input_output(a: &Args) -> Result<(Input, PathBuf)> {
    match (&a.workload, &a.input, &a.output) {
        (Some(spec), Some(out), None) => {
            if a.read.from != "auto" || a.read.prefetches || a.salvage {
                bail!("--from, --prefetches and --salvage apply to a trace read, not to --workload (drop them)");
            }
            let machine = a.machine.as_deref().unwrap_or("default");
            let spec_m =
                mmulab_sim::config::load_machine(machine, None, &[]).with_context(|| format!("--machine {machine}"))?;
            let src = super::sim::source(None, "auto", Some(spec), spec_m.format.va_bits())?;
            let name = format!("workload {spec}");
            Ok((Input { src, name, path: None }, out.clone()))
        }
        (Some(_), _, _) => {
            bail!("give --workload SPEC and one OUTPUT path (no INPUT): mmulab convert --workload SPEC OUT")
        }
        (None, Some(input), Some(out)) => {
            let opts = a.read.options()?;
            let src = open_trace_with(input, &opts)?;
            if input.canonicalize().ok() == out.canonicalize().ok() && out.exists() {
                bail!("{}: input and output are the same file", out.display());
            }
            let name = input.display().to_string();
            Ok((
                Input {
                    src,
                    name,
                    path: Some(input.clone()),
                },
                out.clone(),
            ))
        }
        (None, _, _) => bail!("give INPUT and OUTPUT (mmulab convert IN OUT), or --workload SPEC OUT"),
    }
}

pub fn run(a: Args) -> Result<()> {
    crate::signals::stop_on_interrupt();
    let (input, out_path) = input_output(&a)?;
    let to = out_format(&a, &out_path)?;
    let Input { mut src, name, path } = input;
    let warmup = src.warmup_refs();
    let output = OutputFile::new(&out_path)?;
    let out = BufWriter::with_capacity(1 << 20, Counted::new(output.open()?));
    let mut sink = match to {
        OutFormat::Mlt => {
            let mut w = MltWriter::new(out, a.level)?;
            // Before the references, so that a reader knows it from the start.
            if warmup > 0 {
                w.section(
                    "markers",
                    format!("{} {warmup}\n", mmulab_trace::meta::marker::WARMUP_REFS).as_bytes(),
                )?;
            }
            Sink::Mlt(Box::new(w))
        }
        t => Sink::Text(out, t),
    };
    let t0 = Instant::now();
    let (n, touches, end) = pump(&mut *src, &mut sink, &name);
    // What happens to OUT: a temporary file is dropped (removed) unless committed below;
    // stdout or a special file keeps what was written.
    let kept = if output.in_place() {
        format!(
            "{} is incomplete: written in place, it holds the {n} references read before the stop",
            out_path.display()
        )
    } else {
        format!("{} was not written", out_path.display())
    };
    let err = match end {
        End::Done => None,
        End::Input(e) if a.salvage => Some(e),
        End::Input(e) => {
            return Err(anyhow::Error::new(e).context(format!(
                "conversion stopped; {kept} (pass --salvage to keep the references read before the damage)"
            )))
        }
        End::Output(e) => {
            return Err(anyhow::Error::new(e).context(format!("cannot write {}; {kept}", out_path.display())))
        }
        End::Interrupted => {
            errln!("mmulab convert: interrupted after {n} references; {kept}");
            return Ok(());
        }
    };
    let bytes =
        finish(sink, &*src, &name, err.as_ref(), to).with_context(|| format!("writing {}", out_path.display()))?;
    output.commit()?;
    let elapsed = t0.elapsed().as_secs_f64();
    let in_bytes = path
        .as_deref()
        .map_or(String::new(), |p| format!(" ({} bytes)", dir_or_file_size(p)));
    errln!(
        "mmulab convert: {n} references from {name}{in_bytes} to {} ({bytes} bytes, {:.2} bytes/reference) in {elapsed:.2} s ({:.1} M refs/s)",
        out_path.display(),
        bytes as f64 / n.max(1) as f64,
        n as f64 / elapsed.max(1e-9) / 1e6
    );
    if to != OutFormat::Mlt {
        errln!("mmulab convert: note: {to:?} text keeps neither core nor address space (use .mlt for a lossless copy)");
        if touches > 0 {
            errln!("mmulab convert: note: {to:?} text cannot carry the input's {touches} touch, vma and dontneed events (pages touched between sampled windows, VMA changes and MADV_DONTNEED calls of an exact recording): they were dropped, so a simulation of the output faults those pages in only when a window touches them (use .mlt to keep them)");
        }
        if warmup > 0 {
            errln!("mmulab convert: note: {to:?} text cannot say the workload's warm-up: simulate it with `mmulab sim --trace {} --warmup {warmup}` (an .mlt output carries it)", out_path.display());
        }
    }
    Ok(())
}

/// Copies every reference until the input ends, fails, or Ctrl-C; returns the count,
/// the touch and vma events seen (a text output drops them) and why it ended.
fn pump(src: &mut dyn TraceSource, sink: &mut Sink, input: &str) -> (u64, u64, End) {
    let mut p = ProgressLine::new(&format!("convert {input}"));
    let mut buf = Batch::with_capacity(1 << 16);
    let mut n = 0u64;
    let mut touches = 0u64;
    let end = loop {
        if mmulab_sim::stop_requested() {
            break End::Interrupted;
        }
        buf.clear();
        let r = src.next_batch(&mut buf, 1 << 16);
        if let Err(e) = sink.push(&buf) {
            break End::Output(e);
        }
        n += buf.refs.len() as u64;
        touches += buf
            .events
            .iter()
            .filter(|e| {
                matches!(
                    e.event,
                    mmulab_trace::Event::Touch { .. }
                        | mmulab_trace::Event::Vma { .. }
                        | mmulab_trace::Event::DontNeed { .. }
                )
            })
            .count() as u64;
        match r {
            Ok(0) => break End::Done,
            Ok(_) => p.update(n, src.progress()),
            Err(e) => break End::Input(e),
        }
    };
    p.finish();
    (n, touches, end)
}

/// Writes the metadata and closes the output; returns its size in bytes.
fn finish(sink: Sink, src: &dyn TraceSource, input: &str, err: Option<&TraceError>, to: OutFormat) -> Result<u64> {
    match sink {
        Sink::Mlt(mut w) => {
            let meta = src.meta().unwrap_or_default();
            let mut source = format!("mmulab convert from {input} ({})\n", src.describe());
            if let Some(e) = err {
                source.push_str(&format!("salvaged: the input was damaged: {e}\n"));
            }
            w.section("source", source.as_bytes())?;
            let mut markers = markers_text(&meta);
            for (k, v) in [("threads", meta.threads), ("processes", meta.processes)] {
                if let Some(v) = v.filter(|_| !meta.markers.contains_key(k)) {
                    markers.push_str(&format!("{k} {v}\n"));
                }
            }
            if !markers.is_empty() {
                w.section("markers", markers.as_bytes())?;
            }
            for (name, body) in meta.sections.iter().filter(|(n, _)| n != "markers" && n != "source") {
                w.section(name, body)?;
            }
            let mut out = w.finish()?;
            out.flush()?;
            Ok(out.get_ref().bytes())
        }
        Sink::Text(mut w, _) => {
            let _ = to;
            w.flush()?;
            Ok(w.get_ref().bytes())
        }
    }
}

/// Size of a file, or the sum of the files of a directory.
pub fn dir_or_file_size(p: &Path) -> u64 {
    if p.is_dir() {
        std::fs::read_dir(p)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| dir_or_file_size(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::ReadOpts;
    use mmulab_sweep::point::ReadSpec;

    /// One parser (issue 46): a reader-option string means the same through the CLI's
    /// flags (`sim`, `convert`, `trace-info`) and a sweep point (and so Python, which
    /// builds sweep points). `rr` alone used to be `rr:1000` in the CLI and an error in a
    /// sweep; `rr:0` and unknown names are errors in both, with one message.
    #[test]
    fn cli_and_sweep_read_options_agree() {
        let interleaves = [
            "timestamp",
            "rr",
            "rr:",
            "rr:1000",
            "rr:7",
            "rr7",
            "rr:0",
            "rr:x",
            "round",
        ];
        for (cores, interleave) in ["cpu", "thread", "core"]
            .iter()
            .flat_map(|c| interleaves.map(|i| (*c, i)))
        {
            let cli = ReadOpts {
                from: "auto".into(),
                prefetches: true,
                cores: cores.into(),
                interleave: interleave.into(),
            }
            .options()
            .map(|o| format!("{o:?}"))
            // The CLI names the flag (`--interleave takes ...`), a sweep the key.
            .map_err(|e| e.to_string().trim_start_matches("--").to_string());
            let sweep = ReadSpec {
                format: "auto".into(),
                prefetches: true,
                cores: cores.into(),
                interleave: interleave.into(),
            }
            .options()
            .map(|o| format!("{o:?}"));
            assert_eq!(cli, sweep, "cores {cores}, interleave {interleave}");
        }
        let rr = ReadSpec {
            format: "auto".into(),
            prefetches: false,
            cores: "cpu".into(),
            interleave: "rr".into(),
        };
        assert!(format!("{:?}", rr.options().unwrap()).contains("RoundRobin(1000)"));
    }
}
