//! `mmulab advise [--runs N] [--json] [--max-refs N] -- CMD ARGS…`: will huge pages help
//! this program? The work is the library's (`mmulab_advise`, docs/advise.md);
//! this command parses the arguments and prints the answer.

use anyhow::{bail, Result};
use std::path::PathBuf;

/// Measure and predict what transparent huge pages do for a program, and say how sure.
#[derive(clap::Args)]
pub struct Args {
    /// Timed runs of each way (4 KiB, THP), interleaved, after one untimed warm-up;
    /// `auto`: 5, fewer for a long program (as many rounds as fit 2 minutes at the
    /// warm-up's time, at least 2; docs/advise.md § Time).
    #[arg(long, value_name = "N|auto", default_value = "auto", value_parser = parse_runs)]
    pub runs: Runs,
    /// Print one JSON object on stdout (docs/output.md).
    #[arg(long)]
    pub json: bool,
    /// Record only the first N references (a prefix; the output says so and estimates
    /// its share of the run). Default: the whole run.
    #[arg(long, value_name = "N")]
    pub max_refs: Option<u64>,
    /// The recorder: `mmtrace` (a small Valgrind tool built on first use: data references
    /// in binary, whole or sampled), `lackey`, `ptrace` (x86-64: the program runs natively
    /// and windows of its instructions are single-stepped), or `auto` (mmtrace when it
    /// builds here, else Lackey, saying why; ptrace for a program whose mmtrace recording
    /// would take over 2 minutes, docs/advise.md).
    #[arg(long, value_name = "auto|mmtrace|lackey|ptrace", default_value = "auto", value_parser = ["auto", "mmtrace", "lackey", "ptrace"])]
    pub recorder: String,
    /// Record sampled windows: with mmtrace the first ON references of every PERIOD (e.g.
    /// `1M/10M`, K/M/G = 10^3/10^6/10^9; default every reference); with ptrace W steps
    /// every PERIOD of the program's user CPU time (e.g. `10k/100ms`; default 10k every
    /// 100 ms or every 1/100 of the native user time when longer; `all` steps the whole
    /// run).
    #[arg(long, value_name = "ON/PERIOD")]
    pub sample: Option<String>,
    /// Simulate this trace (.mlt, e.g. from `mmulab record`) instead of recording one.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Probe this machine again instead of using the cached probe.
    #[arg(long)]
    pub reprobe: bool,
    /// (Re)build the runtime model (native benchmarks beside their simulation); without
    /// a command, only that.
    #[arg(long)]
    pub calibrate: bool,
    /// Rounds of each calibration benchmark under each page size, interleaved; the median
    /// is kept (docs/advise.md § Runtime model).
    #[arg(long, default_value_t = 5)]
    pub calibration_repeats: usize,
    /// Where the per-machine cache lives (default $XDG_CACHE_HOME/mmulab or
    /// ~/.cache/mmulab).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Take this machine's TLB geometry from a machine config (TOML, e.g. from `mmulab
    /// probe --emit-machine` on a quiet day) instead of probing; stored in the cache in
    /// place of the probe, and the model is recalibrated on it.
    #[arg(long, value_name = "FILE.toml")]
    pub machine: Option<PathBuf>,
    /// Draw each region's predicted gain against the extra memory THP costs there (the
    /// region table) to FILE (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(last = true)]
    pub command: Vec<String>,
}

/// `--runs`: a count, or chosen from the program's time.
#[derive(Clone, Copy, Debug)]
pub struct Runs(pub Option<usize>);

fn parse_runs(s: &str) -> std::result::Result<Runs, String> {
    if s == "auto" {
        return Ok(Runs(None));
    }
    s.parse::<usize>()
        .map(|n| Runs(Some(n)))
        .map_err(|_| format!("'{s}' is neither a number of runs nor `auto`"))
}

pub fn run(a: Args) -> Result<()> {
    #[cfg(not(target_os = "linux"))]
    {
        let _ = a;
        bail!("unsupported: `mmulab advise` runs programs through Linux interfaces (prctl, /proc smaps_rollup); this OS is not Linux");
    }
    #[cfg(target_os = "linux")]
    run_linux(a)
}

#[cfg(target_os = "linux")]
fn run_linux(a: Args) -> Result<()> {
    use mmulab_advise::{self as advise, Options};
    if a.command.is_empty() && !a.calibrate && !a.reprobe && a.machine.is_none() {
        bail!("no command given: `mmulab advise [OPTIONS] -- CMD ARGS…` (or `mmulab advise --calibrate`)");
    }
    if a.runs.0 == Some(0) {
        bail!("--runs must be at least 1");
    }
    if a.calibration_repeats == 0 {
        bail!("--calibration-repeats must be at least 1");
    }
    if let Some(p) = &a.plot {
        if a.command.is_empty() {
            bail!("--plot draws a program's regions: give the program after `--`");
        }
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let (sample, window) = match &a.sample {
        Some(s) if a.recorder == "ptrace" => (
            None,
            Some(mmulab_record::ptrace_sample::WindowSampling::parse(s).map_err(|e| anyhow::anyhow!("--sample: {e}"))?),
        ),
        Some(s) => (
            Some(mmulab_record::mmtrace::Sampling::parse(s).map_err(|e| anyhow::anyhow!("--sample: {e}"))?),
            None,
        ),
        None => (None, None),
    };
    let opts = Options {
        command: a.command.clone(),
        runs: a.runs.0,
        max_refs: a.max_refs,
        recorder: match a.recorder.as_str() {
            "lackey" => advise::RecorderChoice::Lackey,
            "mmtrace" => advise::RecorderChoice::Mmtrace,
            "ptrace" => advise::RecorderChoice::Ptrace,
            _ => advise::RecorderChoice::Auto,
        },
        sample,
        window,
        trace: a.trace.clone(),
        reprobe: a.reprobe,
        calibrate: a.calibrate,
        calibration_repeats: a.calibration_repeats,
        cache_dir: a.cache_dir.clone(),
        machine: a.machine.clone(),
    };
    let mut line = crate::progress::ProgressLine::new("advise");
    let mut progress = |p: &str| line.phase(p, None);
    if a.command.is_empty() {
        let r = advise::machine(&opts, &mut progress);
        line.finish();
        let (c, path, _) = r?;
        let m = c.model.as_ref().expect("machine() calibrates");
        if a.json {
            outln!("{}", serde_json::json!({"cache_file": path, "model": m}));
        } else {
            outln!(
                "runtime model of this machine ({}), stored in {}:",
                c.cpu_id,
                path.display()
            );
            out!("{}", model_text(m));
        }
        return Ok(());
    }
    let r = advise::advise(&opts, &mut progress);
    line.finish();
    let adv = r?;
    if let Some(p) = &a.plot {
        let f = advise::regions::figure(&adv.regions, &format!("mmulab advise: {}", child_shown(&adv.command)));
        crate::output::write_with(p, |path| f.write(path))?;
    }
    if a.json {
        outln!("{}", serde_json::to_string(&adv)?);
        return Ok(());
    }
    let m = &adv.measured;
    let p = &adv.predicted;
    let pct = |x: f64| (x - 1.0) * 100.0;
    outln!("mmulab advise: {}", adv.command.join(" "));
    outln!(
        "measured speed-up (4 KiB time / THP time): {:.3}  ({:+.1} %; pairs {:+.1} % .. {:+.1} %, {} pairs; CPU time user+sys)",
        m.speedup,
        pct(m.speedup),
        pct(m.low),
        pct(m.high),
        m.runs,
    );
    outln!(
        "  the median's {:.0} % interval (sign test over the pairs): {:.3} – {:.3}{}",
        m.median_confidence * 100.0,
        m.median_low,
        m.median_high,
        if adv.plan.rounds_added > 0 {
            format!(
                "; {} rounds added to the planned {} because it was wider than ±{:.0} %",
                adv.plan.rounds_added,
                adv.plan.rounds - adv.plan.rounds_added,
                mmulab_advise::plan::RESOLVE * 100.0
            )
        } else {
            String::new()
        }
    );
    if adv.plan.rounds_from == "auto" && adv.plan.rounds < mmulab_advise::plan::ROUNDS_MAX {
        outln!(
            "  ({} pairs: the program runs {:.0} s, so --runs auto kept the native runs near {:.0} s{}; --runs N for more)",
            adv.plan.rounds,
            adv.plan.warmup_wall_s,
            mmulab_advise::plan::NATIVE_BUDGET_S,
            if adv.plan.warmup_timed {
                ", the warm-up counted as the first 4 KiB run"
            } else {
                ""
            }
        );
    }
    match &p.withheld {
        Some(why) => outln!("predicted speed-up:                        withheld: {why}"),
        None => outln!(
            "predicted speed-up:                        {:.3}  ({:+.1} %; 90 % interval {:.3} – {:.3}; overlap o {:.3}, {:.1} ns/ref at 4 KiB)",
            p.speedup,
            pct(p.speedup),
            p.low,
            p.high,
            p.overlap,
            p.ns_per_ref_4k,
        ),
    }
    outln!("  interval: {}", p.interval.how);
    if let Some(w) = &p.no_gain {
        outln!("  note: {w}");
    }
    if let Some(h) = &p.host_backing {
        outln!("  guest: simulated over vm.backing = {} ({})", h.backing, h.why);
    } else if p.nested {
        outln!("  guest: the machine file's own [vm]");
    }
    if let Some(w) = &p.out_of_range {
        outln!("  note: {w}");
    }
    let hp = &p.huge_pages;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    outln!(
        "huge pages, THP way: measured AnonHugePages peak {:.1} MiB, simulated {:.1} MiB ({})",
        mib(hp.measured_peak_bytes),
        mib(hp.simulated_bytes),
        match (hp.agree, &hp.note) {
            (true, _) => "agree within 5 %".to_string(),
            (false, Some(n)) => n.clone(),
            (false, None) => "disagree".to_string(),
        }
    );
    // A madvised mapping under 2 MiB without huge pages cannot hold one: not listed.
    for m in adv
        .page_sizes
        .thp_mappings
        .iter()
        .filter(|m| m.anon_huge > 0 || m.size >= 2 << 20)
    {
        outln!(
            "  measured: {} of {:.1} MiB: {:.1} MiB huge{}",
            m.name,
            mib(m.size),
            mib(m.anon_huge),
            if m.advised { ", madvised" } else { "" }
        );
    }
    outln!(
        "translation share of the 4 KiB run:        {:.1} %  (saved: translation {:.3} s, page faults {:.3} s, faults {})",
        adv.translation_share * 100.0,
        p.translation_s_4k - p.translation_s_thp,
        p.fault_s_saved,
        match p.faults_from {
            "counted" => "counted in the native runs (minor faults)",
            "native" => "from the native runs' peak memory (the recording saw fewer)",
            _ => "as simulated",
        }
    );
    let b = &p.bloat;
    let smib = |x: i64| x as f64 / (1u64 << 20) as f64;
    outln!(
        "memory: peak RSS {:.1} MiB at 4 KiB, {:.1} MiB with THP: THP costs {:+.1} MiB measured, {} ({})",
        mib(m.rss_4k),
        mib(m.rss_thp),
        smib(b.measured_extra_bytes),
        match b.predicted_extra_bytes {
            Some(x) => format!("{:+.1} MiB predicted", smib(x)),
            None => "not predicted".to_string(),
        },
        b.why
    );
    if p.fault_s.0 > 0.0 {
        outln!(
            "page faults: {:.3} s at 4 KiB, {:.3} s with THP (measured fault costs × the faults {})",
            p.fault_s.0,
            p.fault_s.1,
            match p.faults_from {
                "counted" => "counted in the native runs",
                "native" => "from the native runs' peak memory",
                _ => "simulated",
            }
        );
    }
    print_regions(&adv.regions, adv.regions_note.as_deref());
    print_allocations(&adv.allocations);
    print_proposal(&adv.proposal);
    let ps = &adv.page_sizes;
    outln!(
        "page sizes: 4 KiB runs AnonHugePages ≤ {} KiB; THP runs ≥ {} KiB ({}), THP mode {}",
        ps.base_anon_huge_max >> 10,
        ps.thp_anon_huge_min.first().map_or(0, |x| x.1 >> 10),
        match ps.thp_verified {
            Some(true) => "verified",
            Some(false) => "NO huge pages",
            None => "not verified: the program ended before the first sample",
        },
        ps.thp_mode
    );
    for w in &ps.ways_used {
        outln!("  used: {}", w.label());
    }
    for u in &ps.ways_unavailable {
        outln!("  unavailable: {}: {}", u.way, u.why);
    }
    let r = &adv.recording;
    outln!(
        "recording: {} ({} references, {:.1} s CPU; share of the run {:.1} %{})",
        r.method,
        r.references,
        r.seconds,
        r.share_estimate * 100.0,
        match (r.mode, r.total_references) {
            ("whole", _) => format!(", {:.0}× the native run", r.slowdown),
            (_, None) if r.recorder == "ptrace" => format!(
                ", estimated at an assumed {:.0e} steps per CPU second; {:.1}× the native run",
                mmulab_advise::recording::PTRACE_STEPS_PER_CPU_S,
                r.slowdown
            ),
            (_, Some(t)) => format!(" of {t} references, counted; {:.0}× the native run", r.slowdown),
            _ => format!(", estimated with an assumed slowdown of {}×", r.slowdown),
        }
    );
    if let Some(f) = &r.fallback {
        outln!("  (Lackey, because mmtrace is unavailable: {f})");
    }
    outln!(
        "load average {:.2} before, {:.2} after; protocol: {}",
        adv.load_average.0,
        adv.load_average.1,
        adv.protocol
    );
    outln!("verdict: {}", adv.verdict);
    Ok(())
}

#[cfg(target_os = "linux")]
fn model_text(m: &mmulab_advise::model::RuntimeModel) -> String {
    let mut s = format!(
        "  serial translation ns/ref T = {:.4}·walk_cycles + {:.4}·llt_misses + {:.4}·llt_hits + {:.6}·walk_cycles²\n  \
         saved ns/ref = o^{:.2} · (T(4 KiB) − T(huge)), o = measured 4 KiB ns/ref ÷ a dependent chase's at the same walk rate (≤ 1)\n",
        m.coef[0], m.coef[1], m.coef[2], m.coef_w2, m.overlap_exponent
    );
    s.push_str(&format!(
        "  fit over {} pairs (in-sample): speed-up error {:.1} points mean, {:.1} worst; huge-page time RMS error {:.2} ns/ref, mean relative {:.1} %\n",
        m.points.len() / 2,
        m.speedup_error_pp,
        m.speedup_error_max_pp,
        m.rmse_ns,
        m.mean_rel_error * 100.0,
    ));
    if let (Some(mean), Some(worst)) = (m.holdout_error_pp, m.holdout_error_max_pp) {
        s.push_str(&format!(
            "  held out (each pair predicted by the model fitted without it): speed-up error {mean:.1} points mean, {worst:.1} worst\n"
        ));
    }
    for d in &m.dropped {
        s.push_str(&format!("  dropped: {d}\n"));
    }
    s.push_str(&format!(
        "  each point: {}\n",
        if m.protocol.is_empty() {
            "the minimum of its rounds (a model calibrated before the median was kept; `--calibrate` remeasures)"
        } else {
            &m.protocol
        }
    ));
    let range = |r: Option<(f64, f64)>| r.map(|(lo, hi)| format!(" ({lo:.1}–{hi:.1})")).unwrap_or_default();
    for p in m.pair_fits() {
        s.push_str(&format!(
            "  {:<24} {:<9} o {:.3}  4 KiB {:7.2}{} ns  huge {:7.2}{} ns  model {:7.2} ns  speed-up {:.3}, model {:.3}\n",
            p.what,
            if p.dependent { "chase" } else { "overlaps" },
            p.overlap,
            p.measured.0,
            range(p.spread[0]),
            p.measured.1,
            range(p.spread[1]),
            p.predicted_huge,
            p.speedup.0,
            p.speedup.1
        ));
    }
    s
}

/// Regions the text shows (all are in the JSON).
const REGION_ROWS: usize = 12;

/// The per-region table: where THP pays, by gain per MiB of the extra memory it costs.
/// The recording's allocations of 2 MiB or more by size (mmtrace's), when it wrote any:
/// what an allocation loop's regions are.
fn print_allocations(sizes: &[mmulab_advise::regions::BySize]) {
    if sizes.is_empty() {
        return;
    }
    let mib = |b: i64| b as f64 / (1u64 << 20) as f64;
    outln!("allocations of 2 MiB or more, by size (the recording's mappings; gain and extra memory of the regions they are):");
    for a in sizes.iter().take(8) {
        outln!(
            "  {} × {:.1} MiB at {} address{}: gain {:.3} s, extra {:+.1} MiB",
            a.count,
            mib(a.bytes as i64),
            a.addresses,
            if a.addresses == 1 { "" } else { "es" },
            a.gain_s,
            mib(a.extra_rss_bytes)
        );
    }
    if sizes.len() > 8 {
        outln!("  … and {} other sizes (--json lists them all)", sizes.len() - 8);
    }
}

fn print_regions(regions: &[mmulab_advise::regions::Region], note: Option<&str>) {
    if regions.is_empty() {
        return;
    }
    let mib = |b: i64| b as f64 / (1u64 << 20) as f64;
    outln!("where THP pays (by gain per MiB of extra memory; the gain split by each region's simulated walk saving, plus its fault time; gain % of the gaining regions' sum):");
    outln!(
        "  {:<28} {:>18} {:>9} {:>7} {:>9} {:>9} {:>9} {:>11}",
        "region",
        "start",
        "MiB",
        "gain %",
        "gain s",
        "extra MiB",
        "bloat MiB",
        "faults Δ s"
    );
    let total: f64 = regions.iter().map(|r| r.gain_s).sum();
    // `gain %`: of the gain of the regions that gain (the proposal's denominator), so a
    // gaining region's share stays positive when losses elsewhere outweigh it.
    let gains: f64 = regions.iter().map(|r| r.gain_s.max(0.0)).sum();
    // Regions with neither a gain (under 0.1 % of the total) nor 64 KiB of extra memory
    // are counted, not listed.
    let shown: Vec<_> = regions
        .iter()
        .filter(|r| r.gain_s.abs() >= 1e-3 * total.abs().max(1e-9) || r.extra_rss_bytes.abs() >= 64 << 10)
        .collect();
    for r in shown.iter().take(REGION_ROWS) {
        let mut name = r.name.rsplit('/').next().unwrap_or(&r.name).to_string();
        if name.chars().count() > 28 {
            name = name.chars().take(27).collect::<String>() + "…";
        }
        outln!(
            "  {:<28} {:>18} {:>9.1} {:>7.1} {:>9.3} {:>+9.1} {:>9.1} {:>+11.4}",
            name,
            r.start.map_or("-".to_string(), |s| format!("{s:#x}")),
            mib(r.bytes as i64),
            if gains > 0.0 { 100.0 * r.gain_s / gains } else { 0.0 },
            r.gain_s,
            mib(r.extra_rss_bytes),
            mib(r.bloat_bytes as i64),
            r.fault_s.1 - r.fault_s.0
        );
    }
    let more = regions.len() - shown.len().min(REGION_ROWS);
    if more > 0 {
        outln!("  … {more} more regions (no gain, no extra memory, or past the first {REGION_ROWS}) in --json");
    }
    if let Some(n) = note {
        outln!("  note: {n}");
    }
}

/// The proposal: which regions, what they keep, and how to apply it.
fn print_proposal(p: &mmulab_advise::proposal::Proposal) {
    let mib = |b: i64| b as f64 / (1u64 << 20) as f64;
    if p.regions.is_empty() {
        if let Some(n) = &p.nothing_to_choose {
            outln!("proposal: {n}");
        }
        return;
    }
    outln!(
        "proposal: huge pages on {} region{} keep {:.1} % of the gain ({:.3} s{}) for {:+.1} MiB of extra memory{}",
        p.regions.len(),
        if p.regions.len() == 1 { "" } else { "s" },
        p.gain_share * 100.0,
        p.gain_s,
        p.predicted_speedup
            .map_or(String::new(), |s| format!(", predicted speed-up {s:.3}")),
        mib(p.extra_rss_bytes),
        p.extra_rss_share
            .map_or(String::new(), |x| format!(" ({:.1} % of full THP's)", x * 100.0))
    );
    if let Some(n) = &p.nothing_to_choose {
        outln!("  {n}");
    }
    for m in &p.madvise {
        outln!("  {m}");
    }
    outln!("  hugetlb: {}", p.hugetlb);
    outln!("  glibc: {}", p.glibc);
    match (&p.measured, &p.not_measured) {
        (Some(m), _) => {
            let mib_u = |b: u64| b as f64 / (1u64 << 20) as f64;
            outln!(
                "  measured ({} rounds of 4 KiB, proposal, full THP; {}): speed-up {:.3} (range {:.3}–{:.3}) against full THP's {:.3}{}; peak RSS {:.1} / {:.1} / {:.1} MiB{}",
                m.runs,
                m.mechanism.split(':').next().unwrap_or(&m.mechanism),
                m.speedup,
                m.low,
                m.high,
                m.thp_speedup,
                m.gain_kept
                    .map_or(String::new(), |k| format!(": {:.0} % of its gain", k * 100.0)),
                mib_u(m.rss_4k),
                mib_u(m.rss_proposal),
                mib_u(m.rss_thp),
                m.extra_rss_share
                    .map_or(String::new(), |x| format!(" ({:.0} % of full THP's extra)", x * 100.0))
            );
            if !m.left_out.is_empty() {
                outln!(
                    "  the shim left out (not allocations it sees): {}",
                    m.left_out.join(", ")
                );
            }
            if m.anon_huge_min == 0 {
                outln!("  warning: a proposal run got no huge page (AnonHugePages 0): the shim matched no allocation of the proposed sizes; apply the madvise calls in the program instead");
            }
        }
        (None, Some(why)) if p.nothing_to_choose.is_none() => outln!("  not measured: {why}"),
        _ => {}
    }
}

/// The command as the plot's title shows it (its program's file name and arguments).
fn child_shown(cmd: &[String]) -> String {
    let mut v: Vec<&str> = cmd.iter().map(String::as_str).collect();
    if let Some(first) = v.first_mut() {
        *first = first.rsplit('/').next().unwrap_or(first);
    }
    v.join(" ")
}
