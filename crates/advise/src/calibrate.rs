//! Calibrating the runtime model on this machine: native benchmarks at several sizes under
//! 4 KiB pages and THP, the same access patterns simulated on the probed machine, and a
//! least-squares fit of ns per reference on the simulated events (`model.rs`).
//!
//! - `bench latency --order lines` (every load to a random line of the array; one run per
//!   page size sweeps the sizes) beside the `chase` workload over the same number of 4 KiB
//!   pages (every reference to a random page, as the native loads are for the TLB);
//! - `bench gups` at a few table sizes beside the `gups` workload (one load and one store
//!   per update: ns per reference = ns per update / 2).
//!
//! **Protocol** ([`PROTOCOL`]): every benchmark runs `repeats` times under each page size,
//! interleaved, the order of the two page sizes alternating each round, each round with a
//! fresh seed (another random chase); a point's ns per reference is the **median** of its
//! rounds, and the rounds' minimum and maximum are kept beside it (`Point::spread`). The
//! median of n rounds ignores up to ⌊(n−1)/2⌋ outlying rounds on either side; the minimum,
//! used before, kept one lucky round: on the AMD guest of docs/advise.md the 8 MiB chase
//! measured 147.6 ns under 4 KiB pages and 68.1 under THP as the minimum of 2, and 115.0
//! and 143.7 in a calibration 40 minutes later, while the simulator walks the same under
//! both there.
//!
//! The data-cache term D (model.rs) is max(0, 1 − C/F) for a footprint F and the
//! last-level data cache C from sysfs (per reference; half of it for GUPS, whose store
//! hits the line its load brought in).

use super::model::{Point, RuntimeModel};
use super::predict;
use mmulab_probe::bench::{gups, latency, Pages};
use mmulab_probe::error::{ProbeError, Result};

/// Sizes of the latency sweep (bytes): 1 MiB to 256 MiB.
const LAT_MIN: usize = 1 << 20;
const LAT_MAX: usize = 256 << 20;
/// GUPS table sizes (bytes).
const GUPS_SIZES: [usize; 4] = [4 << 20, 16 << 20, 64 << 20, 256 << 20];

/// One size of the latency sweep: its bytes and every round's ns per load.
type SizeRounds = (usize, Vec<f64>);

/// How a calibration point is taken from its rounds (stored with the model, printed).
pub const PROTOCOL: &str = "median of the interleaved rounds (min–max kept)";

/// The median of `v` and its (min, max).
fn median_spread(v: &[f64]) -> (f64, (f64, f64)) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mmulab_probe::knee::median(v), (lo, hi))
}

/// The last-level data cache of CPU 0, bytes (sysfs `cache/index*/size` of the highest
/// level holding data), or 32 MiB assumed when sysfs does not say.
pub fn llc_bytes() -> (u64, bool) {
    let mut best: Option<(u32, u64)> = None;
    for i in 0..8 {
        let d = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{d}/{f}")).map(|s| s.trim().to_string());
        let (Ok(level), Ok(ty), Ok(size)) = (read("level"), read("type"), read("size")) else {
            continue;
        };
        if ty == "Instruction" {
            continue;
        }
        let level: u32 = level.parse().unwrap_or(0);
        let bytes = mmulab_probe::bench::parse_size(&size).map(|b| b as u64).unwrap_or(0);
        let higher = match best {
            Some((l, _)) => level > l,
            None => true,
        };
        if bytes > 0 && higher {
            best = Some((level, bytes));
        }
    }
    match best {
        Some((_, b)) => (b, true),
        None => (32 << 20, false),
    }
}

/// D for uniform random accesses over `footprint` bytes with a cache of `llc` bytes.
pub fn dcache_miss_share(footprint: u64, llc: u64) -> f64 {
    (1.0 - llc as f64 / footprint.max(1) as f64).max(0.0)
}

fn pages_label(p: Pages) -> &'static str {
    if p == Pages::Base {
        "4k"
    } else {
        "thp"
    }
}

/// Runs the calibration on the machine `text` (`nested`: a guest) and fits the model.
/// `progress` gets a phase name.
pub fn calibrate(text: &str, nested: bool, repeats: usize, progress: &mut dyn FnMut(&str)) -> Result<RuntimeModel> {
    let (llc, _) = llc_bytes();
    let mut points = Vec::new();
    // Latency: minimum ns per load per size over interleaved runs.
    let params = latency::Params {
        max_bytes: LAT_MAX,
        min_bytes: LAT_MIN,
        stride: 64,
        order: latency::Order::Lines,
        loads: 1_000_000,
    };
    // Per page size, per size of the sweep: (bytes, ns per load of every round).
    let mut rounds: Vec<(Pages, Vec<SizeRounds>)> = vec![(Pages::Base, vec![]), (Pages::Thp, vec![])];
    for r in 0..repeats.max(1) {
        for k in 0..2 {
            let k = (k + r) % 2;
            progress(&format!(
                "calibrate: latency {} ({}/{})",
                pages_label(rounds[k].0),
                r + 1,
                repeats
            ));
            let res = latency::run(rounds[k].0, &params, 0xCA11 + r as u64)?;
            let curve = res.details["curve"].as_array().cloned().unwrap_or_default();
            for (i, pt) in curve.iter().enumerate() {
                let size = (pt["size_mb"].as_f64().unwrap_or(0.0) * (1 << 20) as f64) as usize;
                let ns = pt["ns"].as_f64().unwrap_or(f64::NAN);
                match rounds[k].1.get_mut(i) {
                    Some(e) => e.1.push(ns),
                    None => rounds[k].1.push((size, vec![ns])),
                }
            }
        }
    }
    progress("calibrate: simulating the latency runs");
    let sizes: Vec<usize> = rounds[0].1.iter().map(|(s, _)| *s).collect();
    for (i, &size) in sizes.iter().enumerate() {
        let pages = size / 4096;
        let refs = (pages * 16).max(1_000_000);
        let sim = predict::simulate_workload(text, nested, &format!("chase:pages={pages},refs={refs}"))?;
        let d = dcache_miss_share(size as u64, llc);
        for (k, ev) in [(0, sim.base), (1, sim.huge)] {
            let Some((_, ns)) = rounds[k].1.get(i) else { continue };
            let (y, spread) = median_spread(ns);
            points.push(Point {
                what: format!("latency lines {} MiB {}", size >> 20, pages_label(rounds[k].0)),
                x: ev.per_ref(d),
                y,
                spread: Some(spread),
            });
        }
    }
    // GUPS.
    for &table in &GUPS_SIZES {
        let mut ns: [Vec<f64>; 2] = [vec![], vec![]];
        for r in 0..repeats.max(1) {
            for k in 0..2 {
                let k = (k + r) % 2;
                let p = if k == 0 { Pages::Base } else { Pages::Thp };
                progress(&format!(
                    "calibrate: gups {} MiB {} ({}/{})",
                    table >> 20,
                    pages_label(p),
                    r + 1,
                    repeats
                ));
                let res = gups::run(p, table, 0x6095 + r as u64)?;
                let per_update = res
                    .metrics
                    .iter()
                    .find(|m| m.name == "ns_per_update")
                    .map(|m| m.value)
                    .ok_or_else(|| ProbeError::Invalid("gups reported no ns_per_update".into()))?;
                ns[k].push(per_update / 2.0);
            }
        }
        progress("calibrate: simulating the gups runs");
        let sim = predict::simulate_workload(text, nested, &format!("gups:table={}MiB,refs=2M", table >> 20))?;
        let d = dcache_miss_share(table as u64, llc) / 2.0;
        for (k, ev) in [(0, sim.base), (1, sim.huge)] {
            let (y, spread) = median_spread(&ns[k]);
            points.push(Point {
                what: format!("gups {} MiB {}", table >> 20, if k == 0 { "4k" } else { "thp" }),
                x: ev.per_ref(d),
                y,
                spread: Some(spread),
            });
        }
    }
    let mut model = RuntimeModel::fit(points.clone()).map_err(|e| {
        let table: Vec<String> = points
            .iter()
            .map(|p| {
                format!(
                    "{}: {:.2} ns, W {:.3} M {:.4} H {:.4} D {:.3}",
                    p.what, p.y, p.x[0], p.x[1], p.x[2], p.x[3]
                )
            })
            .collect();
        ProbeError::Invalid(format!("{e}; the points were:\n  {}", table.join("\n  ")))
    })?;
    model.protocol = format!("{PROTOCOL}, {} rounds", repeats.max(1));
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_cache_term() {
        // 64 MiB over a 32 MiB cache: half the accesses miss; a fitting footprint none.
        assert_eq!(dcache_miss_share(64 << 20, 32 << 20), 0.5);
        assert_eq!(dcache_miss_share(16 << 20, 32 << 20), 0.0);
    }

    #[test]
    fn a_point_is_the_median_of_its_rounds_not_the_lucky_one() {
        // The 8 MiB THP chase of docs/advise.md: one lucky round among five.
        let (y, (lo, hi)) = median_spread(&[143.7, 68.1, 140.2, 150.9, 139.0]);
        assert_eq!(y, 140.2);
        assert_eq!((lo, hi), (68.1, 150.9));
        let (y, _) = median_spread(&[2.0, 4.0]);
        assert_eq!(y, 3.0);
    }
}
