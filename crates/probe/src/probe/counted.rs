//! TLB levels from exact miss counters, for a target whose counters count each data-TLB
//! level's misses exactly (a simulated core: [`crate::target::Target::exact_counters`]).
//!
//! Level i's capacity for 4 KiB pages is the largest footprint whose chase gives no miss
//! of level i: the 4 KiB sweep brackets the first footprint at which level i's counter is
//! above zero, and bisection with fresh mappings narrows the bracket to one page. No rise
//! of the time curve is needed, so levels that all cost the same (a small L1 over a larger
//! L2, both with the default latency of one cycle) are told apart, which the timing rules
//! cannot do (they take a small rise just before a much larger one for its onset).

use super::{LevelResult, ProbeConfig, Series};
use crate::error::{ProbeError, Result};
use crate::target::{Backing, Stride, Target, TimeUnit};

/// Misses per access of counter `c` over a fresh 4 KiB mapping of `pages` pages.
fn misses(t: &mut dyn Target, pages: usize, c: usize, cfg: &ProbeConfig, seed: u64) -> Result<f64> {
    t.map(Backing::Base, Stride::Page4K, pages, seed)?;
    let m = t.measure(pages, cfg.steps.max(pages * 4), seed ^ 0xABCD)?;
    m.counters
        .get(c)
        .copied()
        .ok_or_else(|| ProbeError::Invalid(format!("target returned no value for counter {c}")))
}

/// One level per counter whose misses appear within the 4 KiB sweep `a`, outwards; stops
/// at the first counter that stays at zero (the sweep never overflowed that level).
pub fn levels(
    t: &mut dyn Target,
    a: &Series,
    cfg: &ProbeConfig,
    names: &[String],
    unit: TimeUnit,
    progress: &mut dyn FnMut(usize),
) -> Result<Vec<LevelResult>> {
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        progress(i);
        let Some(c) = a.counters.get(i) else { break };
        let Some(f) = c.iter().position(|&v| v > 0.0) else {
            break;
        };
        // Bisect: `lo` has no miss of level i, `hi` has some.
        let (mut lo, mut hi) = (if f == 0 { 0 } else { a.x[f - 1] }, a.x[f]);
        let mut k = 0u64;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let seed = cfg.seed ^ (0x1000 + i as u64) ^ (k << 20);
            if misses(t, mid, i, cfg, seed)? > 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
            k += 1;
        }
        // Miss cost: the rise of the time per access from the last sweep point without
        // misses of level i to the last one before level i+1's misses appear, per miss.
        let next = a.counters.get(i + 1);
        let j = (f..a.x.len())
            .take_while(|&j| !next.is_some_and(|n| n[j] > 0.0))
            .last()
            .unwrap_or(f);
        let before = if f == 0 { 0.0 } else { a.excess[f - 1] };
        let miss_cost = (a.excess[j] - before) / c[j].max(1e-9);
        let bracket = [a.x[f.saturating_sub(1)], a.x[f]];
        out.push(LevelResult {
            level: i + 1,
            entries: lo,
            sweep_bracket: bracket,
            method: format!("exact counters ({name})"),
            miss_cost,
            unit: unit.label().into(),
            caches_2m: None,
            caches_2m_how: String::new(),
            splinters_2m: None,
            entries_2m: None,
            counter_knee: Some(bracket),
            refinements: Vec::new(),
            ramp: Default::default(),
        });
    }
    Ok(out)
}
