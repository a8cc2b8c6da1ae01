//! The proposal measured (issue 50 item 3): after the recording has chosen the regions,
//! advise runs the program a third way, THP on those regions only (the preload shim of
//! shim.rs), in rounds beside a 4 KiB run and a full-THP run (the order rotating each
//! round, as the first runs), and reports each way's speed-up over the 4 KiB run of its
//! round and its peak RSS. The full-THP runs are repeated here, not taken from the first
//! rounds: the host's speed drifts by 20 % within minutes, and the share of full THP's
//! gain the proposal keeps is only meaningful between runs of the same minutes.

use serde::Serialize;

use mmulab_probe::error::Result;

use super::child::{self, Way};
use super::proposal::Proposal;
use super::{shim, verdict};

/// The third way's measurements.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProposalMeasured {
    /// How THP was confined to the regions.
    pub mechanism: String,
    /// The shim's region list (`MMULAB_THP_REGIONS`): sizes in bytes, `heap`.
    pub regions_env: String,
    /// Proposed regions the shim leaves out (file mappings, the stack): they keep the
    /// pages THP's `madvise` mode gives them without a madvise.
    pub left_out: Vec<String>,
    /// Rounds of (4 KiB, proposal, full THP) runs.
    pub runs: usize,
    /// Median over the rounds of the 4 KiB run's CPU time over the proposal's.
    pub speedup: f64,
    /// Lowest and highest of those ratios.
    pub low: f64,
    /// See `low`.
    pub high: f64,
    /// The full-THP way's speed-up in the same rounds.
    pub thp_speedup: f64,
    /// The share of full THP's gain the proposal keeps, (speedup − 1)/(thp_speedup − 1);
    /// null where full THP gains nothing.
    pub gain_kept: Option<f64>,
    /// Median peak RSS (VmHWM), bytes: 4 KiB, proposal, full THP.
    pub rss_4k: u64,
    /// See `rss_4k`.
    pub rss_proposal: u64,
    /// See `rss_4k`.
    pub rss_thp: u64,
    /// The proposal's extra peak RSS over 4 KiB as a share of full THP's; null where full
    /// THP costs none.
    pub extra_rss_share: Option<f64>,
    /// The fewest AnonHugePages bytes seen in a proposal run (0: the kernel gave the
    /// proposed regions no huge page, so the shim matched nothing the program maps).
    pub anon_huge_min: u64,
}

/// Measures `proposal` on `cmd` in `rounds` rounds with `thp` as the full-THP way,
/// preparing memory for `peak` anonymous bytes before each run; the shim library goes
/// into `dir`. `Ok(Err(why))`: the third way cannot run (a static binary, a region the
/// shim cannot reach); `Err`: a run failed.
pub fn measure(
    cmd: &[String],
    proposal: &Proposal,
    rounds: usize,
    thp: Way,
    peak: u64,
    dir: &std::path::Path,
    progress: &mut dyn FnMut(&str),
) -> Result<std::result::Result<ProposalMeasured, String>> {
    if let Some(why) = cmd.first().and_then(|p| shim::unreachable(p)) {
        return Ok(Err(why));
    }
    let (regions_env, left_out) = match shim::spec(&proposal.regions) {
        Ok(s) => s,
        Err(why) => return Ok(Err(why)),
    };
    let lib = shim::install(dir)?;
    let env = vec![
        ("LD_PRELOAD".to_string(), shim::preload(&lib)),
        (shim::ENV.to_string(), regions_env.clone()),
    ];
    let ways = [Way::Base4k, Way::Proposal, thp];
    let mut runs: Vec<child::Run> = Vec::new();
    for r in 0..rounds {
        for k in 0..ways.len() {
            let way = ways[(k + r) % ways.len()];
            progress(&format!("proposal round {}/{rounds}: {}", r + 1, way.label()));
            let top = runs.iter().map(|x| x.anon_max).fold(peak, u64::max);
            child::prepare_memory(child::touch_bytes(top, child::mem_available()));
            let e: &[(String, String)] = if way == Way::Proposal { &env } else { &[] };
            runs.push(child::run_env(cmd, way, e)?);
        }
    }
    let times = |w: Way| runs.iter().filter(|x| x.way == w).map(|x| x.cpu_s).collect::<Vec<_>>();
    let t4 = times(Way::Base4k);
    let (Some(p), Some(t)) = (
        verdict::measure(&t4, &times(Way::Proposal)),
        verdict::measure(&t4, &times(thp)),
    ) else {
        return Ok(Err("a run took no CPU time: too short to time".into()));
    };
    let rss = |w: Way| {
        let mut v: Vec<u64> = runs.iter().filter(|x| x.way == w).map(|x| x.rss_max).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (r4, rp, rt) = (rss(Way::Base4k), rss(Way::Proposal), rss(thp));
    Ok(Ok(ProposalMeasured {
        mechanism: "LD_PRELOAD shim: madvise(MADV_HUGEPAGE) on allocations of the proposed sizes and the brk heap (crates/advise/shim/thp_regions.c)".into(),
        regions_env,
        left_out,
        runs: p.runs,
        speedup: p.speedup,
        low: p.low,
        high: p.high,
        thp_speedup: t.speedup,
        gain_kept: kept(p.speedup, t.speedup),
        rss_4k: r4,
        rss_proposal: rp,
        rss_thp: rt,
        extra_rss_share: (rt > r4).then(|| (rp as f64 - r4 as f64) / (rt - r4) as f64),
        anon_huge_min: runs
            .iter()
            .filter(|x| x.way == Way::Proposal)
            .map(|x| x.anon_huge_max)
            .min()
            .unwrap_or(0),
    }))
}

/// The share of full THP's gain (speed-up less one) a way with speed-up `s` keeps; null
/// where full THP's `thp` gains nothing.
pub fn kept(s: f64, thp: f64) -> Option<f64> {
    (thp > 1.0).then(|| (s - 1.0) / (thp - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gain_kept_is_the_share_of_the_speed_up_above_one() {
        // Full THP 1.20, proposal 1.18: 0.18/0.20 = 90 % of the gain.
        assert!((kept(1.18, 1.20).unwrap() - 0.9).abs() < 1e-12);
        // A proposal slower than 4 KiB keeps a negative share.
        assert!(kept(0.95, 1.10).unwrap() < 0.0);
        // Full THP gains nothing: no share.
        assert_eq!(kept(1.05, 1.0), None);
        assert_eq!(kept(1.05, 0.9), None);
    }
}
