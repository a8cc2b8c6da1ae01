//! Simulating a recorded trace (or a workload) on this machine's probed geometry under a
//! base-page policy and a huge-page policy, natively or — in a guest — with the nested
//! model over 4 KiB host pages: a guest's 2 MiB page over 4 KiB host pages is cached as
//! 4 KiB pieces, so THP shortens the walk (fewer guest levels, each guest table read
//! itself a stage-2 walk) without widening the TLB's reach (docs/virtualization.md).

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

/// The machine to simulate: the probed machine, plus in a guest a `[vm]` section with
/// 4 KiB host backing (what the probe finds on a guest whose 2 MiB pages are not cached
/// as 2 MiB; docs/probe.md). Guest memory 8 GiB of the 16 GiB host (assumed: only needs
/// to hold the program).
pub fn machine_text(probed: &str, stage2: Option<&str>) -> String {
    let mut s = probed.to_string();
    if let Some(s2) = stage2 {
        s.push_str(&format!(
            "\n# added by mmulab advise: this machine is a guest (hypervisor detected)\n[vm]\nstage2 = \"{s2}\"\nbacking = \"4K\"\nmemory = \"8GiB\"  # assumed\n"
        ));
    }
    s
}

/// The page policies compared: `--set` lists for the base-page and the huge-page run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policies {
    /// A recorded program: `base` against Linux `thp` (enabled `always` in the model,
    /// which with the glibc tunable is what malloc'd memory gets: every heap and mmap
    /// chunk madvised).
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
            (Policies::Program, true) => vec!["os.policy=thp".into()],
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
}

/// Runs one source on the machine `text` with `sets`.
fn one(
    text: &str,
    sets: &[String],
    src: &mut dyn mmulab_trace::TraceSource,
    meta: Option<&mmulab_trace::TraceMeta>,
) -> Result<mmulab_sim::Stats> {
    let spec = config::from_toml(text, None, sets)
        .map_err(|e| ProbeError::Invalid(format!("the probed machine config does not load: {e}")))?;
    let opts = SessionOptions {
        meta,
        ..Default::default()
    };
    Session::simulate(spec, src, opts).map_err(|e| match e.stats {
        None => ProbeError::Invalid(format!("building the simulated machine: {}", e.error)),
        Some(_) => ProbeError::Invalid(format!("simulation failed: {}", e.error)),
    })
}

fn huge_bytes(s: &mmulab_sim::Stats) -> u64 {
    // `mapped` counts pages by `PageSize` index.
    let i = mmulab_model::addr::PageSize::M2 as usize;
    s.mapped.get(i).copied().unwrap_or(0) << 21
}

/// Simulates a trace file under both policies.
pub fn simulate_trace(text: &str, nested: bool, trace: &Path) -> Result<Simulated> {
    let meta = mmulab_sim::trace_file_meta(trace);
    let run = |huge: bool| -> Result<mmulab_sim::Stats> {
        let mut src = mmulab_trace::open_trace(trace, None)
            .map_err(|e| ProbeError::Invalid(format!("reading the recorded trace {}: {e}", trace.display())))?;
        one(text, &Policies::Program.sets(huge), &mut *src, meta.as_ref())
    };
    let b = run(false)?;
    let h = run(true)?;
    Ok(Simulated {
        base: Events::of(&b),
        huge: Events::of(&h),
        nested,
        huge_mapped_bytes: huge_bytes(&h),
    })
}

/// Simulates a workload spec under both policies (calibration).
pub fn simulate_workload(text: &str, nested: bool, spec: &str) -> Result<Simulated> {
    let run = |huge: bool| -> Result<mmulab_sim::Stats> {
        let mut src =
            mmulab_trace::workload::parse(spec).map_err(|e| ProbeError::Invalid(format!("workload {spec}: {e}")))?;
        one(text, &Policies::Workload.sets(huge), &mut *src, None)
    };
    let b = run(false)?;
    let h = run(true)?;
    Ok(Simulated {
        base: Events::of(&b),
        huge: Events::of(&h),
        nested,
        huge_mapped_bytes: huge_bytes(&h),
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
}
