//! Simulating a recorded trace (or a workload) on this machine's probed geometry under a
//! base-page policy and a huge-page policy, natively or — in a guest — with the nested
//! model over the host pages the probe found ([`host_backing`]): a guest's 2 MiB page over
//! 4 KiB host pages is cached as 4 KiB pieces, so THP shortens the walk (fewer guest
//! levels, each guest table read itself a stage-2 walk) without widening the TLB's reach;
//! over huge host pages it does both (docs/virtualization.md).
//!
//! The huge-page run of a program is simulated with this kernel's live THP settings
//! (`enabled`, `defrag`, `use_zero_page`, read as `mmulab check-kernel --print-os` reads
//! them), and the trace's VMAs carry their madvise state (the recording ran with the THP
//! way's environment): in `madvise` mode only the VMAs the program madvised get huge
//! pages, as in the measured THP runs.

use std::path::Path;

use mmulab_sim::{config, Session, SessionOptions};
use serde::Serialize;

use super::model::Events;
use mmulab_probe::error::{ProbeError, Result};

/// Which stage-2 format a guest on this CPU runs over, from the vendor and architecture.
pub fn stage2_for(arch: &str, vendor: Option<&str>) -> &'static str {
    match (arch, vendor) {
        ("aarch64", _) | ("arm", _) => "aarch64-s2",
        (_, Some("AuthenticAMD")) | (_, Some("HygonGenuine")) => "npt",
        _ => "ept",
    }
}

/// How the host backs a guest's memory, as the probe found it, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostBacking {
    /// The `vm.backing` simulated: `4K` or `hugetlb-2M`.
    pub backing: &'static str,
    /// The probe's evidence, or that there was none (then 4 KiB is assumed).
    pub why: String,
}

/// The host backing from the probe's levels (`ProbeReport::levels` as JSON): a level that
/// held the guest's 2 MiB pages as 2 MiB entries (`caches_2m` true: the 2 MiB curve stayed
/// flat past the level's 4 KiB reach) means the host maps them with huge pages, since a
/// TLB entry is no larger than the host page behind it; levels that missed them like
/// 4 KiB pages (splintered or bypassed) mean 4 KiB host pages. Nothing determined: 4 KiB,
/// assumed (the conservative case: THP then shortens walks but does not widen the reach).
pub fn host_backing(levels: &serde_json::Value) -> HostBacking {
    let levels = levels.as_array().map(Vec::as_slice).unwrap_or_default();
    let held = |want: bool| {
        levels
            .iter()
            .filter(|l| l.get("caches_2m").and_then(serde_json::Value::as_bool) == Some(want))
            .map(|l| format!("L{}", l.get("level").and_then(serde_json::Value::as_u64).unwrap_or(0)))
            .collect::<Vec<_>>()
    };
    let (yes, no) = (held(true), held(false));
    if !yes.is_empty() {
        HostBacking {
            backing: "hugetlb-2M",
            why: format!(
                "the probe found {} holding the guest's 2 MiB pages as 2 MiB entries: the host backs guest memory with huge pages",
                yes.join(", ")
            ),
        }
    } else if !no.is_empty() {
        HostBacking {
            backing: "4K",
            why: format!(
                "the probe found {} missing the guest's 2 MiB pages like 4 KiB ones: the host backs guest memory with 4 KiB pages",
                no.join(", ")
            ),
        }
    } else {
        HostBacking {
            backing: "4K",
            why: "the probe did not determine whether 2 MiB pages are held (or the machine was given with --machine): 4 KiB host pages assumed".into(),
        }
    }
}

/// The machine to simulate: the probed machine, plus in a guest a `[vm]` section with the
/// host backing ([`host_backing`]). Guest memory 8 GiB of the 16 GiB host (assumed: only
/// needs to hold the program).
pub fn machine_text(probed: &str, stage2: Option<(&str, &str)>) -> String {
    let mut s = probed.to_string();
    if let Some((s2, backing)) = stage2 {
        s.push_str(&format!(
            "\n# added by mmulab advise: this machine is a guest (hypervisor detected)\n[vm]\nstage2 = \"{s2}\"\nbacking = \"{backing}\"\nmemory = \"8GiB\"  # assumed\n"
        ));
    }
    s
}

/// The `--set` list of a program's huge-page run: Linux `thp` with this kernel's live
/// `enabled`, `defrag` and `use_zero_page` (unreadable: `always`, the model's default).
/// khugepaged stays off: its first scan comes `scan_sleep_millisecs` (10 s by default)
/// after a program starts, and it collapses `pages_to_scan` (4,096) pages per scan, so
/// in a run of seconds it maps little (assumed negligible; not modelled here).
pub fn program_thp_sets() -> Vec<String> {
    let mut v = vec!["os.policy=thp".to_string()];
    if let Ok(h) = mmulab_kernel_check::host::HostThp::read() {
        v.push(format!(
            "os.thp.enabled={}",
            mmulab_kernel_check::host::selected(&h.enabled)
        ));
        v.push(format!(
            "os.thp.defrag={}",
            mmulab_kernel_check::host::selected(&h.defrag)
        ));
        v.push(format!("os.thp.use_zero_page={}", h.use_zero_page));
    }
    v
}

/// The page policies compared: `--set` lists for the base-page and the huge-page run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policies {
    /// A recorded program: `base` against Linux `thp` with the live kernel's settings
    /// ([`program_thp_sets`]).
    Program,
    /// A calibration workload with no VMAs: `base` against `fixed` 2 MiB.
    Workload,
}

impl Policies {
    fn sets(self, huge: bool) -> Vec<String> {
        match (self, huge) {
            (Policies::Program, false) => vec!["os.policy=base".into()],
            // The native benchmarks write every page before the timed loads (the latency
            // chain's links, GUPS's table), so none is Linux's zero page: without this a
            // load-only `chase` reads one shared frame (the zero-page default), and in a
            // guest its data needs one stage-2 translation in all, where the 2 MiB run
            // (`fixed`, no zero page) needs one per host page: 4 KiB came out cheaper than
            // 2 MiB and the calibration dropped every term.
            (Policies::Workload, false) => vec!["os.policy=base".into(), "os.zero_page=false".into()],
            (Policies::Program, true) => program_thp_sets(),
            (Policies::Workload, true) => vec!["os.policy=fixed".into(), "os.page_size=2M".into()],
        }
    }
}

/// One simulated pair.
#[derive(Clone, Debug, Serialize)]
pub struct Simulated {
    /// Events under base pages.
    pub base: Events,
    /// Events under huge pages.
    pub huge: Events,
    /// The nested model was used (a guest).
    pub nested: bool,
    /// Bytes mapped by 2 MiB pages at the end of the huge-page run.
    pub huge_mapped_bytes: u64,
    /// Peak resident bytes of the simulated 4 KiB run (0: not tracked).
    pub peak_resident_4k: u64,
    /// Peak resident bytes of the simulated THP run (0: not tracked).
    pub peak_resident_thp: u64,
    /// The simulated THP run's largest resident − touched bytes (0: not tracked).
    pub peak_bloat_thp: i64,
    /// The `--set` list of the huge-page run.
    pub huge_sets: Vec<String>,
    /// Parts of the trace the saving was measured over ([`PARTS`]; 0 for a workload).
    pub parts: usize,
    /// The relative standard error of the saving per reference (4 KiB minus huge-page walk
    /// cycles) over those parts (forecast::relative_se).
    pub saving_rel_se: f64,
    /// Per-region counters of the 4 KiB run (a recording; empty for a workload). In the
    /// JSON as the advice's `regions` table instead (regions.rs).
    #[serde(skip)]
    pub regions_4k: Vec<mmulab_sim::stats::regions::RegionStats>,
    /// Per-region counters of the THP run (the same regions).
    #[serde(skip)]
    pub regions_thp: Vec<mmulab_sim::stats::regions::RegionStats>,
    /// (start, name) of each VMA of the recording's samples (`[heap]`, a file, or empty
    /// for anonymous memory).
    #[serde(skip)]
    pub region_names: Vec<(u64, String)>,
    /// The recording's allocations, `[start, end)` in the order made (mmtrace's
    /// `allocations` section; empty for other recorders). In the JSON as the advice's
    /// `allocations` instead (regions.rs `by_size`).
    #[serde(skip)]
    pub allocations: Vec<(u64, u64)>,
}

/// The trace is cut into this many parts of equal references (the simulator's time
/// series) to measure how much the saving varies along it.
pub const PARTS: u64 = 20;

/// A writer into a shared buffer (the time series, read after the run).
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// (references, walk cycles) at each sample of a time series (docs/output.md § Time
/// series), cumulative.
fn series_points(text: &[u8]) -> Vec<(u64, u64)> {
    String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            Some((v.get("refs")?.as_u64()?, v.get("walk_cycles")?.as_u64()?))
        })
        .collect()
}

/// Walk cycles per reference in each part between consecutive samples.
fn per_part(points: &[(u64, u64)]) -> Vec<f64> {
    let mut prev = (0u64, 0u64);
    let mut out = Vec::new();
    for &(r, w) in points {
        if r > prev.0 {
            out.push(w.saturating_sub(prev.1) as f64 / (r - prev.0) as f64);
        }
        prev = (r, w);
    }
    out
}

/// Runs one source on the machine `text` with `sets`; with `series` (an interval in
/// references) also the walk cycles per reference of each part.
fn one(
    text: &str,
    sets: &[String],
    src: &mut dyn mmulab_trace::TraceSource,
    meta: Option<&mmulab_trace::TraceMeta>,
    series: Option<u64>,
    regions: bool,
) -> Result<(mmulab_sim::Stats, Vec<f64>)> {
    let spec = config::from_toml(text, None, sets)
        .map_err(|e| ProbeError::Invalid(format!("the probed machine config does not load: {e}")))?;
    let buf = Shared::default();
    let opts = SessionOptions {
        meta,
        series: series.map(|n| (n.max(1), Box::new(buf.clone()) as Box<dyn std::io::Write + Send>)),
        regions,
        ..Default::default()
    };
    let stats = Session::simulate(spec, src, opts).map_err(|e| match e.stats {
        None => ProbeError::Invalid(format!("building the simulated machine: {}", e.error)),
        Some(_) => ProbeError::Invalid(format!("simulation failed: {}", e.error)),
    })?;
    let text = buf.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok((stats, per_part(&series_points(&text))))
}

fn huge_bytes(s: &mmulab_sim::Stats) -> u64 {
    // `mapped` counts pages by `PageSize` index.
    let i = mmulab_model::addr::PageSize::M2 as usize;
    s.mapped.get(i).copied().unwrap_or(0) << 21
}

/// Simulates a trace file of about `refs` references under both policies, measuring the
/// saving over [`PARTS`] parts.
pub fn simulate_trace(text: &str, nested: bool, trace: &Path, refs: u64) -> Result<Simulated> {
    let meta = mmulab_sim::trace_file_meta(trace);
    let every = (refs / PARTS).max(1);
    let run = |huge: bool| -> Result<(mmulab_sim::Stats, Vec<f64>)> {
        let mut src = mmulab_trace::open_trace(trace, None)
            .map_err(|e| ProbeError::Invalid(format!("reading the recorded trace {}: {e}", trace.display())))?;
        one(
            text,
            &Policies::Program.sets(huge),
            &mut *src,
            meta.as_ref(),
            Some(every),
            true,
        )
    };
    let (mut b, pb) = run(false)?;
    let (mut h, ph) = run(true)?;
    let region_names = meta
        .as_ref()
        .map(|m| m.vmas_union().into_iter().map(|v| (v.start, v.name)).collect())
        .unwrap_or_default();
    // Both runs read the same references, so their parts line up.
    let saving: Vec<f64> = pb.iter().zip(&ph).map(|(b, h)| b - h).collect();
    Ok(Simulated {
        base: Events::of(&b),
        huge: Events::of(&h),
        nested,
        huge_mapped_bytes: huge_bytes(&h),
        peak_resident_4k: b.peak_resident_bytes.unwrap_or(0),
        peak_resident_thp: h.peak_resident_bytes.unwrap_or(0),
        peak_bloat_thp: h.peak_bloat_bytes.unwrap_or(0),
        huge_sets: Policies::Program.sets(true),
        parts: saving.len(),
        saving_rel_se: super::forecast::relative_se(&saving),
        regions_4k: b.regions.take().unwrap_or_default(),
        regions_thp: h.regions.take().unwrap_or_default(),
        region_names,
        allocations: meta.as_ref().map(|m| m.allocations()).unwrap_or_default(),
    })
}

/// Simulates a workload spec under both policies (calibration).
pub fn simulate_workload(text: &str, nested: bool, spec: &str) -> Result<Simulated> {
    let run = |huge: bool| -> Result<mmulab_sim::Stats> {
        let mut src =
            mmulab_trace::workload::parse(spec).map_err(|e| ProbeError::Invalid(format!("workload {spec}: {e}")))?;
        Ok(one(text, &Policies::Workload.sets(huge), &mut *src, None, None, false)?.0)
    };
    let b = run(false)?;
    let h = run(true)?;
    Ok(Simulated {
        base: Events::of(&b),
        huge: Events::of(&h),
        nested,
        huge_mapped_bytes: huge_bytes(&h),
        peak_resident_4k: 0,
        peak_resident_thp: 0,
        peak_bloat_thp: 0,
        huge_sets: Policies::Workload.sets(true),
        parts: 0,
        saving_rel_se: 0.0,
        regions_4k: Vec::new(),
        regions_thp: Vec::new(),
        region_names: Vec::new(),
        allocations: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calibration's chase over 4,096 pages (16 MiB, past the 3,072-entry L2 TLB's
    /// reach) in the KVM guest of this machine: every reference misses the TLB under both
    /// page sizes, and a 2 MiB guest page ends the guest walk a level sooner, so the
    /// 4 KiB run must cost more walk cycles. With the zero page on for the base run its data
    /// shared one guest frame (one stage-2 translation for all), and 4 KiB came out at
    /// about half the 2 MiB run's walk cycles.
    #[test]
    fn a_calibration_chase_in_a_guest_walks_longer_under_4k_pages() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/vm/epyc-zen4-kvm.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let s = simulate_workload(&text, true, "chase:pages=4096,refs=200000").unwrap();
        assert_eq!(s.base.references, 200_000);
        assert!(s.base.llt_misses >= 199_000 && s.huge.llt_misses >= 199_000);
        assert!(
            s.base.walk_cycles > s.huge.walk_cycles,
            "4 KiB {} walk cycles, 2 MiB {}",
            s.base.walk_cycles,
            s.huge.walk_cycles
        );
    }

    /// Issue 47 item 8, two kinds of host: the same chase over 4,096 pages (16 MiB, past
    /// the 3,072-entry L2 TLB's reach) in this machine's guest, over 4 KiB host pages and
    /// over 2 MiB host pages. Over 4 KiB host pages the guest's 2 MiB pages are cached as
    /// 4 KiB pieces: the THP run misses the last-level TLB on (nearly) every reference, as
    /// the 4 KiB run does. Over 2 MiB host pages its 8 huge pages fit any TLB: it misses
    /// only on first touch, so the model sees the reach THP adds there and not here.
    #[test]
    fn thp_widens_the_reach_only_over_huge_host_pages() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/vm/epyc-zen4-kvm.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let probed = text.split("\n[vm]").next().unwrap();
        let run = |backing: &str| {
            let t = machine_text(probed, Some(("npt", backing)));
            simulate_workload(&t, true, "chase:pages=4096,refs=200000").unwrap()
        };
        let small = run("4K");
        assert!(small.base.llt_misses >= 199_000 && small.huge.llt_misses >= 199_000);
        let huge = run("hugetlb-2M");
        assert!(huge.base.llt_misses >= 199_000, "{}", huge.base.llt_misses);
        assert!(huge.huge.llt_misses <= 100, "{}", huge.huge.llt_misses);
        assert!(huge.huge.walk_cycles * 100 < small.huge.walk_cycles);
    }
}
