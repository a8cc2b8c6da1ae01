//! `mmulab advise`: will huge pages help this program, and by how much?
//!
//! 1. This machine's probed TLB geometry and calibrated runtime model come from the
//!    per-machine cache ([`cache`]), built on first use (the probe, then [`calibrate`]).
//! 2. The program runs natively, interleaved 4 KiB / THP (the ways that work here,
//!    [`child`]), `runs` times each after one untimed warm-up; smaps_rollup sampled while
//!    it runs says which page sizes it actually got.
//! 3. A reference trace is recorded with Valgrind Lackey (whole, or a prefix of
//!    `max_refs` references) and simulated on the probed machine under base pages and THP
//!    ([`predict`]; in a guest with the nested model over 4 KiB host pages).
//! 4. The runtime model turns the simulated translation events into time saved; measured
//!    and predicted speed-ups, the translation share and the verdict ([`verdict`]).
//!
//! Contract: nothing is printed; progress goes to a callback; errors name what to do.
//!
//! The crate is the application over the others: `mmulab-probe` (the TLB probe, the native
//! benchmarks behind [`calibrate`], the Linux facilities in `os/`), `mmulab-record` (the
//! recorders, [`recording`]) and `mmulab-sim` (the simulated runs, [`predict`]). Linux
//! only: elsewhere the crate is empty and `mmulab advise` says so.
#![cfg(target_os = "linux")]

pub mod cache;
pub mod calibrate;
pub mod child;
pub mod faults;
pub mod forecast;
pub mod model;
pub mod plan;
pub mod predict;
pub mod proposal;
pub mod recording;
pub mod recording_ptrace;
pub mod regions;
pub mod shim;
pub mod target;
pub mod third;
pub mod verdict;

use std::path::PathBuf;

use serde::Serialize;

use child::Way;
use mmulab_probe::error::{ProbeError, Result};
use model::RuntimeModel;
pub use recording::{RecorderChoice, RecordingInfo, LACKEY_SLOWDOWN, MMTRACE_SLOWDOWN};
pub use target::{given_machine, machine, machine_of, probe_machine};

/// What to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Timed runs of each way (`None`: chosen from the warm-up's time, [`plan::rounds`]).
    pub runs: Option<usize>,
    /// Record at most this many references (a prefix).
    pub max_refs: Option<u64>,
    /// The recorder.
    pub recorder: RecorderChoice,
    /// Record sampled windows (mmtrace only).
    pub sample: Option<mmulab_record::mmtrace::Sampling>,
    /// The ptrace sampler's windows (default [`mmulab_record::ptrace_sample::WindowSampling::default`]).
    pub window: Option<mmulab_record::ptrace_sample::WindowSampling>,
    /// Use this trace instead of recording one.
    pub trace: Option<PathBuf>,
    /// Probe again even if a cached probe exists.
    pub reprobe: bool,
    /// Calibrate the runtime model again.
    pub calibrate: bool,
    /// Repeats of each calibration benchmark.
    pub calibration_repeats: usize,
    /// The cache directory (default [`cache::dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Take the TLB geometry from this machine config instead of probing (stored in the
    /// cache in place of the probe's; the model is recalibrated).
    pub machine: Option<PathBuf>,
}

/// A way that could not be used, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Unavailable {
    /// The way.
    pub way: String,
    /// Why.
    pub why: String,
}

/// The page sizes the runs got.
#[derive(Clone, Debug, Serialize)]
pub struct PageSizes {
    /// Largest `AnonHugePages` of any 4 KiB run, bytes (0 expected).
    pub base_anon_huge_max: u64,
    /// Per THP way: the smallest of its runs' largest `AnonHugePages`, bytes.
    pub thp_anon_huge_min: Vec<(Way, u64)>,
    /// The main THP way's largest `AnonHugePages` of any run, bytes (the peak the
    /// simulated THP run is compared with).
    pub thp_anon_huge_peak: u64,
    /// That run's mappings that held huge pages or were madvised, at its peak.
    pub thp_mappings: Vec<child::HugeMapping>,
    /// Largest `Anonymous` seen, bytes.
    pub anon_max: u64,
    /// Whether the THP runs were seen with huge pages (`null`: no sample was taken: the
    /// program ended within the first sampling interval).
    pub thp_verified: Option<bool>,
    /// Ways used.
    pub ways_used: Vec<Way>,
    /// Ways not available here.
    pub ways_unavailable: Vec<Unavailable>,
    /// System THP mode.
    pub thp_mode: String,
}

/// The prediction.
#[derive(Clone, Debug, Serialize)]
pub struct Predicted {
    /// Predicted speed-up (4 KiB time / THP time); `null` when withheld.
    pub speedup: f64,
    /// Lower end of the 90 % interval (`interval`); `null` when withheld.
    pub low: f64,
    /// Upper end of the 90 % interval.
    pub high: f64,
    /// The interval and where its width comes from.
    pub interval: forecast::Interval,
    /// Why no prediction is given (no number is invented), when it is not.
    pub withheld: Option<String>,
    /// Why no gain is predicted although the simulation gives one (the THP runs got no
    /// huge pages).
    pub no_gain: Option<String>,
    /// The simulated THP run's huge pages beside the measured THP runs' peak.
    pub huge_pages: forecast::HugeAgreement,
    /// Predicted translation time of the 4 KiB run, seconds.
    pub translation_s_4k: f64,
    /// Predicted translation time of the THP run, seconds.
    pub translation_s_thp: f64,
    /// Page-fault time THP saves, seconds (measured fault costs × faults).
    pub fault_s_saved: f64,
    /// Page-fault time of each way, seconds: (4 KiB, THP), the measured cost of a 4 KiB
    /// and of a 2 MiB first-touch fault (`machine.fault_costs`) times the fault counts.
    pub fault_s: (f64, f64),
    /// The extra resident memory THP costs: predicted (simulated peak resident of each
    /// way) beside measured (peak RSS of each way).
    pub bloat: forecast::Bloat,
    /// Where the fault counts came from: `counted` (the native runs' minor faults),
    /// `simulated` (the recording's), or `native` (the native runs' peak memory, for a
    /// sampled or prefix recording that saw fewer).
    pub faults_from: &'static str,
    /// The fault counts used: 4 KiB run, THP run, of which 2 MiB.
    pub faults: (u64, u64, u64),
    /// Why the prediction is not to be relied on, when it is not: the model's translation
    /// time exceeds the measured run (the saving was capped), or the program's overlap lies
    /// outside the calibration's (`null`: neither).
    pub out_of_range: Option<String>,
    /// The 4 KiB run's measured CPU ns per reference (references of the whole run:
    /// recorded, or for a prefix estimated from its share).
    pub ns_per_ref_4k: f64,
    /// The program's overlap o (model.rs): its 4 KiB ns per reference over a dependent
    /// chase's at the same walk rate, at most 1.
    pub overlap: f64,
    /// The model's γ: the saving scales with overlap^γ.
    pub overlap_exponent: f64,
    /// Simulated events (of the recording).
    pub simulated: predict::Simulated,
    /// The model's fit error (RMS, ns per reference; mean relative).
    pub model_rmse_ns: f64,
    /// Mean relative error of the fit.
    pub model_mean_rel_error: f64,
    /// Mean error of the fit's speed-ups over the calibration pairs, percentage points.
    pub model_speedup_error_pp: f64,
    /// The nested (guest) model was used.
    pub nested: bool,
    /// In a guest: the host backing simulated and the probe's evidence for it (`null`: not
    /// a guest, or a `--machine` file with its own `[vm]`).
    pub host_backing: Option<predict::HostBacking>,
}

/// The answer.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// The program.
    pub command: Vec<String>,
    /// Measured speed-up.
    pub measured: verdict::Measured,
    /// Predicted speed-up.
    pub predicted: Predicted,
    /// Translation share of the 4 KiB run's time (predicted).
    pub translation_share: f64,
    /// The verdict.
    pub verdict: String,
    /// Where THP pays: each region of the recording with its share of the gain, the
    /// extra resident memory and the fault time THP costs there, by gain per MiB of
    /// extra memory (regions.rs; docs/advise.md § Regions).
    pub regions: Vec<regions::Region>,
    /// What the region table does not cover (a sampled or prefix recording saw part of
    /// the run's memory), or `null`.
    pub regions_note: Option<String>,
    /// The recording's allocations of 2 MiB or more by size, with the gain and extra
    /// memory of the regions they are (regions.rs `by_size`); empty where the recorder
    /// writes no allocations (all but mmtrace).
    pub allocations: Vec<regions::BySize>,
    /// What to do: the regions that keep 90 % of the gain at the least extra memory, as
    /// madvise calls, a hugetlb pool and the glibc setting (proposal.rs).
    pub proposal: proposal::Proposal,
    /// Page sizes verified.
    pub page_sizes: PageSizes,
    /// The recording.
    pub recording: RecordingInfo,
    /// Every timed run, in order.
    pub runs: Vec<child::Run>,
    /// The time compared.
    pub time_basis: &'static str,
    /// The machine: cache file, whether reused, hypervisor, probed levels.
    pub machine: serde_json::Value,
    /// The 1-minute load average before the runs and after them.
    pub load_average: (f64, f64),
    /// The rounds of native runs chosen, and from what.
    pub plan: plan::Plan,
    /// How the runs were made comparable: memory compacted before every timed run
    /// (`child::prepare_memory`), or why not.
    pub protocol: String,
}

/// The 1-minute load average.
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// The ways of getting THP here, and those that are not available with the reason.
pub fn thp_ways(mode: &std::result::Result<String, String>) -> (Vec<Way>, Vec<Unavailable>) {
    let always_why = "the system's THP mode is madvise; advise does not change a system setting: as root, `echo always > /sys/kernel/mm/transparent_hugepage/enabled`, rerun, and restore it";
    match mode.as_deref() {
        Ok("always") => (vec![Way::GlibcHugetlbTunable, Way::ThpAlways], vec![]),
        Ok("madvise") => (
            vec![Way::GlibcHugetlbTunable],
            vec![Unavailable {
                way: "thp always".into(),
                why: always_why.into(),
            }],
        ),
        Ok(m) => (
            vec![],
            vec![Unavailable {
                way: "thp (any)".into(),
                why: format!("the system's THP mode is {m}: no process can get transparent huge pages"),
            }],
        ),
        Err(e) => (
            vec![],
            vec![Unavailable {
                way: "thp (any)".into(),
                why: e.clone(),
            }],
        ),
    }
}

/// The CPU times of the runs of one way, in the order run.
fn cpu_times(runs: &[child::Run], w: Way) -> Vec<f64> {
    runs.iter().filter(|x| x.way == w).map(|x| x.cpu_s).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Why a prediction is outside what the model was calibrated on: the translation time it
/// gives the 4 KiB run (`tr4`, s) exceeds 95 % of the measured run (`t4`, s: the saving is
/// capped there), or the program's overlap `o` is below the smallest of the calibration's
/// independent pairs (`range`), where o^γ is extrapolated.
pub fn out_of_range(tr4: f64, t4: f64, o: f64, range: Option<(f64, f64)>) -> Option<String> {
    let below = range.filter(|&(lo, _)| o < lo);
    let span = |(lo, hi): (f64, f64)| format!("{lo:.3}–{hi:.3}");
    if tr4 > 0.95 * t4 {
        return Some(format!(
            "the model gives the 4 KiB run {tr4:.1} s of translation, more than its measured {t4:.1} s: the prediction is capped and not usable{}",
            below.map_or(String::new(), |r| format!(
                " (the program's overlap o = {o:.3} is below the calibration's {}; recalibrate on a quiet machine, `--calibrate`)",
                span(r)
            ))
        ));
    }
    below.map(|r| {
        format!(
            "the program's overlap o = {o:.3} is below the calibration's {}: o^γ is extrapolated",
            span(r)
        )
    })
}

/// The shortest program advise times, CPU seconds: below it the CPU clock's resolution
/// (a 4 ms tick here, `CONFIG_TICK_CPU_ACCOUNTING`) and the start-up (dynamic loading,
/// exec) are a large part of each run.
pub const MIN_RUN_S: f64 = 0.1;

/// Runs the whole advice.
pub fn advise(opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<Advice> {
    if opts.command.is_empty() {
        return Err(ProbeError::Invalid(
            "no command given: `mmulab advise -- CMD ARGS…`".into(),
        ));
    }
    if opts.runs == Some(0) {
        return Err(ProbeError::Invalid("--runs must be at least 1".into()));
    }
    if opts.max_refs == Some(0) {
        return Err(ProbeError::Invalid("--max-refs must be at least 1".into()));
    }
    if std::fs::metadata("/proc/self/smaps_rollup").is_err() {
        return Err(ProbeError::Unavailable(
            "/proc/self/smaps_rollup is unreadable: advise verifies page sizes there (Linux ≥ 4.14 with /proc mounted)"
                .into(),
        ));
    }
    let mode = child::thp_mode();
    let (thp, unavailable) = thp_ways(&mode);
    if thp.is_empty() {
        return Err(ProbeError::Unavailable(format!(
            "no way to run the program with transparent huge pages here: {}",
            unavailable
                .iter()
                .map(|u| u.why.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    child::check_command(&opts.command)?;
    if opts.trace.is_none() && opts.recorder != RecorderChoice::Ptrace {
        let valgrind = mmulab_record::Recorder::new();
        // auto falls back to the ptrace sampler where Valgrind is missing (recording.rs).
        let fallback = opts.recorder == RecorderChoice::Auto && mmulab_record::ptrace_sample::unavailable().is_none();
        if !fallback {
            valgrind.map_err(|e| ProbeError::Unavailable(e.to_string()))?;
        }
    }
    // One untimed warm-up (page cache, dynamic loader) first: a program that fails is
    // reported before the long probe and calibration.
    progress("warm-up run");
    let warm = child::run(&opts.command, Way::Base4k)?;
    if warm.cpu_s < MIN_RUN_S {
        return Err(ProbeError::Invalid(format!(
            "`{}` ran {:.0} ms of CPU time: too short to time (advise needs at least {:.0} ms, where the clock's resolution and the start-up stay small); give it more work",
            child::shown(&opts.command),
            warm.cpu_s * 1e3,
            MIN_RUN_S * 1e3
        )));
    }
    let (mc, cache_path, reused) = machine(opts, progress)?;
    let model: &RuntimeModel = mc.model.as_ref().expect("machine() calibrates");
    let load_before = load_average();

    // Native runs: interleaved rounds whose order rotates; as many rounds as fit the
    // budget at the warm-up's time unless given (plan.rs).
    let mut ways = vec![Way::Base4k];
    ways.extend(thp.iter().copied());
    let mut plan = plan::rounds(opts.runs, warm.wall_s, ways.len());
    let record_s = recording::estimate_s(opts, warm.cpu_s, warm.user_s);
    let mut runs = Vec::new();
    let mut prepared = true;
    // The memory each run's preparation touches: the warm-up's anonymous peak and more.
    let mut touched = (u64::MAX, 0u64);
    if plan.warmup_timed {
        // The first round's first run is 4 KiB: the warm-up stands for it.
        runs.push(warm.clone());
    }
    let started = std::time::Instant::now();
    let mut r = 0;
    loop {
        if r >= plan.rounds {
            // Under auto, more rounds while the median is not resolved (plan.rs).
            let m = verdict::measure(&cpu_times(&runs, Way::Base4k), &cpu_times(&runs, thp[0]));
            let resolved = m.as_ref().is_none_or(|m| verdict::resolved(m, plan::RESOLVE));
            if !plan::another_round(&plan, r, started.elapsed().as_secs_f64(), resolved) {
                break;
            }
            if let Some(m) = m {
                progress(&format!(
                    "the median speed-up {:.3} is not resolved yet ({:.0} % interval {:.3}–{:.3}, wider than ±{:.0} %): one more round",
                    m.speedup,
                    m.median_confidence * 100.0,
                    m.median_low,
                    m.median_high,
                    plan::RESOLVE * 100.0
                ));
            }
            plan.rounds += 1;
            plan.rounds_added += 1;
        }
        for k in 0..ways.len() {
            if r == 0 && k == 0 && plan.warmup_timed {
                continue;
            }
            let way = ways[(k + r) % ways.len()];
            let left = (plan.rounds * ways.len() - runs.len()) as f64 * warm.wall_s + record_s;
            progress(&format!(
                "run {}/{}: {}{}",
                r + 1,
                plan.rounds,
                way.label(),
                plan::eta(left)
            ));
            // Sized by the largest anonymous peak so far: the warm-up is a 4 KiB run, and
            // a THP run can peak far higher (two_regions.c: 66 MiB against 575 MiB), so
            // the THP runs after the first find what they take backed.
            let peak = runs.iter().map(|x| x.anon_max).fold(warm.anon_max, u64::max);
            let (compacted, t) = child::prepare_memory(child::touch_bytes(peak, child::mem_available()));
            prepared &= compacted;
            touched = (touched.0.min(t), touched.1.max(t));
            runs.push(child::run(&opts.command, way)?);
        }
        r += 1;
    }
    let load_after = load_average();
    let t4 = cpu_times(&runs, Way::Base4k);
    // The THP way measured: the glibc tunable (present whenever any way is).
    let main_thp = thp[0];
    let tt = cpu_times(&runs, main_thp);
    let mut measured = verdict::measure(&t4, &tt).ok_or_else(|| {
        ProbeError::Invalid(format!(
            "`{}` ran too briefly to time (CPU time 0 in a run); give it more work",
            child::shown(&opts.command)
        ))
    })?;
    let rss = |w: Way| median(runs.iter().filter(|x| x.way == w).map(|x| x.rss_max as f64).collect()) as u64;
    measured.rss_4k = rss(Way::Base4k);
    measured.rss_thp = rss(main_thp);
    let sampled_any = runs.iter().filter(|x| x.way == main_thp).all(|x| x.samples > 0);
    let thp_min = |w: Way| {
        runs.iter()
            .filter(|x| x.way == w)
            .map(|x| x.anon_huge_max)
            .min()
            .unwrap_or(0)
    };
    let peak_run = runs
        .iter()
        .filter(|x| x.way == main_thp)
        .max_by_key(|x| x.anon_huge_max);
    let page_sizes = PageSizes {
        base_anon_huge_max: runs
            .iter()
            .filter(|x| x.way == Way::Base4k)
            .map(|x| x.anon_huge_max)
            .max()
            .unwrap_or(0),
        thp_anon_huge_min: thp.iter().map(|&w| (w, thp_min(w))).collect(),
        thp_anon_huge_peak: peak_run.map_or(0, |r| r.anon_huge_max),
        thp_mappings: peak_run.map(|r| r.huge_mappings.clone()).unwrap_or_default(),
        anon_max: runs.iter().map(|x| x.anon_max).max().unwrap_or(0),
        thp_verified: sampled_any.then_some(thp_min(main_thp) > 0),
        ways_used: ways.clone(),
        ways_unavailable: unavailable,
        thp_mode: mode.unwrap_or_else(|e| e),
    };

    // Record and simulate.
    let dir = match &opts.cache_dir {
        Some(d) => d.clone(),
        None => cache::dir()?,
    };
    let user4 = median(runs.iter().filter(|x| x.way == Way::Base4k).map(|x| x.user_s).collect());
    let (trace, temporary, mut rec) = recording::record(opts, &dir, median(t4.clone()), user4, progress)?;
    let (text, nested, host_backing) = machine_of(&mc);
    progress("simulating the trace under base pages and THP");
    let sim = predict::simulate_trace(&text, nested, &trace, rec.references);
    if temporary {
        let _ = std::fs::remove_file(&trace);
    }
    let sim = sim?;
    let t4_med = median(t4.clone());
    rec.settle(t4_med, sim.base.references);
    // The whole run's references (the recording's, scaled up for a prefix), its
    // measured 4 KiB ns per reference, and the model's overlap (model.rs).
    let scale = 1.0 / rec.share_estimate.max(1e-9);
    let refs_total = sim.base.references as f64 * scale;
    let y4 = t4_med * 1e9 / refs_total.max(1.0);
    let (x4, xh) = (sim.base.per_ref(0.0), sim.huge.per_ref(0.0));
    let overlap = model.overlap(y4, x4[0]);
    let tr4 = model.translation_ns_per_ref(y4, &x4, x4[0]) * refs_total * 1e-9;
    let trh = model.translation_ns_per_ref(y4, &xh, x4[0]) * refs_total * 1e-9;
    let (faults, faults_from) = faults::choose(
        &runs,
        main_thp,
        rec.mode == "whole" || rec.mode == "given",
        (sim.base.faults, sim.huge.faults, sim.huge.huge_pages),
    );
    let fc = mc.fault_costs.as_ref();
    let fault_saved = fc.map_or(0.0, |c| c.saved_s(faults.0, faults.1, faults.2));
    let fault_s = (
        fc.map_or(0.0, |c| c.time_s(faults.0, 0)),
        fc.map_or(0.0, |c| c.time_s(faults.1, faults.2)),
    );
    let whole = rec.mode == "whole" || rec.mode == "given";
    let coverage = if whole {
        forecast::Coverage::Whole
    } else if rec.mode == "sampled" && rec.touches {
        forecast::Coverage::Touches
    } else {
        forecast::Coverage::Part
    };
    let bloat = forecast::bloat(
        measured.rss_4k,
        measured.rss_thp,
        sim.peak_resident_4k,
        sim.peak_resident_thp,
        sim.peak_bloat_thp,
        coverage,
    );
    let saved = (tr4 - trh + fault_saved).min(t4_med * 0.95);
    let out_of_range = out_of_range(tr4, t4_med, overlap, model.overlap_range());
    let no_gain = forecast::no_gain(page_sizes.thp_verified);
    let withheld = forecast::withheld(rec.mode, rec.windows, recording_ptrace::FEW_WINDOWS);
    let speedup = match (&withheld, &no_gain) {
        (Some(_), _) => f64::NAN,
        (None, Some(_)) => 1.0,
        (None, None) => t4_med / (t4_med - saved),
    };
    let sampling_se = if whole { 0.0 } else { sim.saving_rel_se };
    // The larger of the in-sample and the held-out calibration errors.
    let interval = forecast::interval(
        speedup,
        model.speedup_error_pp.max(model.holdout_error_pp.unwrap_or(0.0)),
        model
            .speedup_error_max_pp
            .max(model.holdout_error_max_pp.unwrap_or(0.0)),
        sampling_se,
    );
    let huge_pages = forecast::huge_agreement(
        page_sizes.thp_anon_huge_peak,
        sim.huge_mapped_bytes,
        rec.mode == "prefix" || (rec.mode == "sampled" && !rec.touches),
    );
    let share = (tr4 / t4_med).min(1.0);
    let region_table = regions::table(
        &sim.regions_4k,
        &sim.regions_thp,
        &sim.region_names,
        if no_gain.is_some() { 0.0 } else { tr4 - trh },
        fc,
        regions::fault_scale(
            fault_saved,
            fc.map_or(0.0, |c| {
                c.saved_s(sim.base.faults, sim.huge.faults, sim.huge.huge_pages)
            }),
        ),
    );
    let mut proposal = proposal::propose(
        &region_table,
        region_table.iter().map(|r| r.extra_rss_bytes).sum(),
        t4_med,
        withheld.is_some() || no_gain.is_some(),
        child::mem_available(),
    );
    if proposal.not_measured.is_none() && !proposal.regions.is_empty() {
        // The third way (third.rs): THP on the proposed regions only.
        let peak = runs.iter().map(|x| x.anon_max).max().unwrap_or(0);
        match third::measure(
            &opts.command,
            &proposal,
            plan.rounds - plan.rounds_added,
            main_thp,
            peak,
            &dir,
            progress,
        )? {
            Ok(m) => {
                proposal.speedup = Some(m.speedup);
                proposal.rss = Some(m.rss_proposal);
                proposal.measured = Some(m);
            }
            Err(why) => proposal.not_measured = Some(why),
        }
    }
    let regions_note = match coverage {
        forecast::Coverage::Whole => None,
        forecast::Coverage::Touches => Some(
            "the recording (sampled) holds windows of the run's references and every page's first touch between them: each region's faults and memory are the whole run's, its walk cycles the windows'".to_string(),
        ),
        forecast::Coverage::Part => Some(format!(
            "the recording ({}) saw part of the run: each region's faults and memory are those of what it saw",
            rec.mode
        )),
    };
    let predicted = Predicted {
        speedup,
        low: if speedup.is_finite() { interval.low } else { f64::NAN },
        high: if speedup.is_finite() { interval.high } else { f64::NAN },
        interval,
        withheld,
        no_gain,
        huge_pages,
        translation_s_4k: tr4,
        translation_s_thp: trh,
        fault_s_saved: fault_saved,
        fault_s,
        bloat,
        faults_from,
        faults,
        out_of_range,
        ns_per_ref_4k: y4,
        overlap,
        overlap_exponent: model.overlap_exponent,
        simulated: sim,
        model_rmse_ns: model.rmse_ns,
        model_mean_rel_error: model.mean_rel_error,
        model_speedup_error_pp: model.speedup_error_pp,
        nested,
        host_backing: host_backing.clone(),
    };
    let brief = verdict::PredictedBrief {
        speedup,
        translation_share: share,
        guest_4k_backing: nested && host_backing.as_ref().is_none_or(|h| h.backing == "4K"),
    };
    let v = verdict::verdict(
        &measured,
        speedup.is_finite().then_some(&brief),
        page_sizes.thp_verified,
    );
    let v = match verdict::faults_sentence(
        fault_s,
        if predicted.no_gain.is_some() { 0.0 } else { tr4 - trh },
        t4_med,
        faults.2,
        fc.map_or((None, None), |c| (c.p99_ns_4k, c.p99_ns_2m)),
    ) {
        Some(f) if page_sizes.thp_verified != Some(false) => format!("{v}; {f}"),
        _ => v,
    };
    let allocations = regions::by_size(&predicted.simulated.allocations, &region_table);
    Ok(Advice {
        command: opts.command.clone(),
        measured,
        predicted,
        translation_share: share,
        verdict: v,
        allocations,
        regions: region_table,
        regions_note,
        proposal,
        page_sizes,
        recording: rec,
        runs,
        time_basis: "CPU time of the program (user + system, from wait4), so that waiting for a CPU on a loaded machine does not count",
        machine: serde_json::json!({
            "cpu_id": mc.cpu_id,
            "cache_file": cache_path.display().to_string(),
            "reused": reused,
            "hypervisor": mc.hypervisor,
            "hypervisor_vendor": mc.hypervisor_vendor,
            "levels": mc.probe_levels,
            "fault_costs": mc.fault_costs,
            "model": {"version": model.version, "coef": model.coef, "coef_w2": model.coef_w2, "features": model::FEATURES, "overlap_exponent": model.overlap_exponent, "dropped": model.dropped, "rmse_ns": model.rmse_ns, "mean_rel_error": model.mean_rel_error, "speedup_error_pp": model.speedup_error_pp, "speedup_error_max_pp": model.speedup_error_max_pp, "holdout_error_pp": model.holdout_error_pp, "holdout_error_max_pp": model.holdout_error_max_pp, "points": model.points.len(), "protocol": model.protocol},
        }),
        load_average: (load_before, load_after),
        plan,
        protocol: format!(
            "{}; {}; ways interleaved, the order rotating each round; the median of the per-round pairs",
            if prepared {
                format!("memory compacted ({}) before every timed run", child::COMPACT_MEMORY)
            } else {
                format!("memory NOT compacted before the runs ({} is writable by root only: a THP run after a 4 KiB run may pay for compaction in its faults)", child::COMPACT_MEMORY)
            },
            match touched {
                (0 | u64::MAX, _) => "no memory touched before some runs (the mapping failed): in a guest whose host reclaims free memory, first touches may pay host faults".to_string(),
                (a, b) if a == b => format!("{} MiB of memory touched and freed just before each (the host backs what the run then takes)", a >> 20),
                (a, b) => format!("{}–{} MiB of memory touched and freed just before each (the largest anonymous peak so far and more; the host backs what the run then takes)", a >> 20, b >> 20),
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_file_given_again_is_recognised_wherever_it_is_named_from() {
        let a = "# from machines/vm/x.toml (mmulab advise --machine)\n[machine]\ncores = 1\n";
        let b = "# from ../../machines/vm/x.toml (mmulab advise --machine)\n[machine]\ncores = 1\n";
        let c = "# from machines/vm/x.toml (mmulab advise --machine)\n[machine]\ncores = 2\n";
        assert_eq!(target::given_body(a), target::given_body(b));
        assert_ne!(target::given_body(a), target::given_body(c));
        // A probed entry (no such line) never matches a given one.
        assert_eq!(target::given_body("[machine]\ncores = 1\n"), None);
    }

    #[test]
    fn a_prediction_outside_the_calibration_is_flagged() {
        // 581.8 s of translation in a 78 s run: capped, with the overlap named.
        let w = out_of_range(581.8, 78.0, 0.04, Some((0.069, 0.171))).unwrap();
        assert!(w.contains("capped and not usable") && w.contains("0.069–0.171"), "{w}");
        // Within the run's time but below the range: extrapolated.
        let w = out_of_range(5.0, 78.0, 0.04, Some((0.069, 0.171))).unwrap();
        assert!(w.contains("extrapolated"), "{w}");
        // Inside: nothing.
        assert_eq!(out_of_range(5.0, 78.0, 0.1, Some((0.069, 0.171))), None);
        assert_eq!(out_of_range(5.0, 78.0, 0.01, None), None);
    }

    #[test]
    fn thp_ways_follow_the_system_mode() {
        let (w, u) = thp_ways(&Ok("madvise".into()));
        assert_eq!(w, vec![Way::GlibcHugetlbTunable]);
        assert!(u[0].why.contains("does not change a system setting"));
        let (w, u) = thp_ways(&Ok("always".into()));
        assert_eq!(w, vec![Way::GlibcHugetlbTunable, Way::ThpAlways]);
        assert!(u.is_empty());
        let (w, u) = thp_ways(&Ok("never".into()));
        assert!(w.is_empty() && u[0].why.contains("never"));
    }
}
