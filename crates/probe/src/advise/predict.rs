//! Simulating a recorded trace (or a workload) on this machine's probed geometry under a
//! base-page policy and a huge-page policy, natively or — in a guest — with the nested
//! model over 4 KiB host pages: a guest's 2 MiB page over 4 KiB host pages is cached as
//! 4 KiB pieces, so THP shortens the walk (fewer guest levels, each guest table read
//! itself a stage-2 walk) without widening the TLB's reach (docs/virtualization.md).

use std::path::Path;

use mmulab_sim::{config, Machine};
use serde::Serialize;

use super::model::Events;
use crate::error::{ProbeError, Result};

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
            (_, false) => vec!["os.policy=base".into()],
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
    let mut m = Machine::new(spec).map_err(|e| ProbeError::Invalid(format!("building the simulated machine: {e}")))?;
    if let Some(meta) = meta {
        mmulab_sim::preload_vmas(&mut m, meta);
    }
    mmulab_sim::run(&mut m, src, None).map_err(|e| ProbeError::Invalid(format!("simulation failed: {e}")))
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
