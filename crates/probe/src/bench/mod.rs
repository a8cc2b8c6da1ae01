//! Native benchmarks under a chosen page size: [`gups`] (HPCC RandomAccess), [`latency`]
//! (LMbench lat_mem_rd) and [`bandwidth`] (read, write, copy). Each allocates its memory
//! through [`Memory::alloc`], which verifies and reports the page size actually obtained,
//! and reads TLB counters around the timed part when the machine has them.
//!
//! To add a benchmark: a file here with a `run(&Params) -> Result<BenchResult>` and a
//! variant in [`Kind`].

pub mod bandwidth;
pub mod gups;
pub mod latency;

use serde::Serialize;

use crate::error::{ProbeError, Result};
use crate::knee::median;
use crate::os::mem::{Backed, PageKind, Region};
use crate::os::perf::TlbCounters;
use crate::os::sysfs::{self, MthpGuard};

/// Which benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// HPCC RandomAccess.
    Gups,
    /// lat_mem_rd-style dependent-load latency.
    Latency,
    /// Read, write and copy bandwidth.
    Bandwidth,
}

/// Page size requested for a benchmark's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// 4 KiB.
    Base,
    /// 2 MiB THP.
    Thp,
    /// 2 MiB hugetlbfs.
    Hugetlb,
    /// 1 GiB hugetlbfs.
    Hugetlb1G,
    /// mTHP of this many KiB.
    Mthp(u64),
}

impl Pages {
    /// Parse `4k`, `thp`, `hugetlb` or `mthp-SIZE` (SIZE like `64K`, `64kB`, `16k`).
    pub fn parse(s: &str) -> Result<Pages> {
        let l = s.trim().to_ascii_lowercase();
        match l.as_str() {
            "4k" | "base" => return Ok(Pages::Base),
            "thp" => return Ok(Pages::Thp),
            "hugetlb" => return Ok(Pages::Hugetlb),
            "hugetlb-1g" => return Ok(Pages::Hugetlb1G),
            _ => {}
        }
        if let Some(sz) = l.strip_prefix("mthp-") {
            let bytes = parse_size(sz)?;
            if bytes < 8192 || !bytes.is_power_of_two() {
                return Err(ProbeError::Invalid(format!(
                    "mthp size {sz}: must be a power of two ≥ 8K (e.g. mthp-64K)"
                )));
            }
            return Ok(Pages::Mthp(bytes as u64 / 1024));
        }
        Err(ProbeError::Invalid(format!(
            "pages '{s}': expected 4k, thp, hugetlb, hugetlb-1g or mthp-SIZE (e.g. mthp-64K)"
        )))
    }
    /// Label (`4k`, `thp`, `hugetlb`, `mthp-64K`).
    pub fn label(self) -> String {
        match self {
            Pages::Base => "4k".into(),
            Pages::Thp => "thp".into(),
            Pages::Hugetlb => "hugetlb".into(),
            Pages::Hugetlb1G => "hugetlb-1g".into(),
            Pages::Mthp(k) => format!("mthp-{k}K"),
        }
    }
}

/// Parse a byte size: `4096`, `64K`, `256M`, `1G` (binary units; `kB`/`KiB` accepted).
pub fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.trim_end_matches("ib").trim_end_matches('b');
    let (num, mul) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1usize << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
        .ok_or_else(|| ProbeError::Invalid(format!("size '{s}': expected a number with optional K, M or G")))
}

/// Benchmark memory of a verified page size.
pub struct Memory {
    /// The region.
    pub region: Region,
    /// What backs it.
    pub backed: Backed,
    /// How the page size was obtained (mTHP control changes, ...).
    pub note: String,
    _guard: Option<MthpGuard>,
}

impl Memory {
    /// Allocate `bytes` of the requested page size, every page written, backing verified.
    /// Unavailable page sizes are an error that says why and what to do — never a silent
    /// fallback to another size.
    pub fn alloc(pages: Pages, bytes: usize, seed: u64) -> Result<Memory> {
        let (kind, guard, note) = match pages {
            Pages::Base => (PageKind::Base, None, "4 KiB pages (MADV_NOHUGEPAGE)".to_string()),
            Pages::Thp => {
                sysfs::thp_usable().map_err(ProbeError::Unavailable)?;
                (
                    PageKind::Thp,
                    None,
                    format!("THP via madvise (mode '{}')", sysfs::thp_mode().unwrap_or_default()),
                )
            }
            Pages::Hugetlb => (PageKind::Hugetlb, None, "hugetlbfs 2 MiB pool".to_string()),
            Pages::Hugetlb1G => (PageKind::Hugetlb1G, None, "hugetlbfs 1 GiB pool".to_string()),
            Pages::Mthp(k) => {
                let g = MthpGuard::enable(k).map_err(|e| ProbeError::Unavailable(format!("mthp-{k}K: {e}")))?;
                let n = g.note.clone();
                (PageKind::Mthp(k), Some(g), n)
            }
        };
        let (region, backed) = Region::prepared(bytes, kind, seed)?;
        Ok(Memory {
            region,
            backed,
            note,
            _guard: guard,
        })
    }
}

/// One reported number.
#[derive(Clone, Debug, Serialize)]
pub struct Metric {
    /// Name (`gups`, `ns_per_load`, `read_mb_s`, ...).
    pub name: String,
    /// Value.
    pub value: f64,
    /// Unit.
    pub unit: String,
    /// Whether larger is better (for ratios).
    pub higher_is_better: bool,
}

/// The result of one benchmark run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    /// Which benchmark.
    pub kind: Kind,
    /// Page size requested (`4k`, `thp`, ...).
    pub pages: String,
    /// What backed the memory, verified.
    pub backing: Backed,
    /// How the page size was obtained.
    pub backing_note: String,
    /// Memory used, bytes.
    pub bytes: usize,
    /// The numbers; the first is the primary one.
    pub metrics: Vec<Metric>,
    /// Benchmark-specific details (GUPS verification, latency curve, ...).
    pub details: serde_json::Value,
    /// TLB counter names and values per operation, when counters exist.
    pub counters: Vec<(String, f64)>,
    /// Why there are no counters, when there are none.
    pub counters_note: Option<String>,
}

/// TLB counters around a closure, per operation.
pub fn counted<T>(ops: f64, f: impl FnOnce() -> T) -> (T, Vec<(String, f64)>, Option<String>) {
    match TlbCounters::open() {
        Ok(c) => {
            c.start();
            let v = f();
            let n = c.stop();
            let per = c
                .names()
                .into_iter()
                .zip(n)
                .map(|(k, v)| (k, v as f64 / ops.max(1.0)))
                .collect();
            (v, per, None)
        }
        Err(e) => (f(), Vec::new(), Some(e)),
    }
}

/// A comparison of page sizes over interleaved repeats.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Page sizes compared; ratios are `pages[k] / pages[0]`.
    pub pages: Vec<String>,
    /// All runs, in the order run (interleaved).
    pub runs: Vec<BenchResult>,
    /// Per metric and compared page size: median ratio and its min..max over repeats.
    pub ratios: Vec<Ratio>,
}

/// A ratio with its spread.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    /// Metric name.
    pub metric: String,
    /// `pages[k]` label.
    pub pages: String,
    /// Against `pages[0]`.
    pub versus: String,
    /// Median of the per-repeat ratios.
    pub median: f64,
    /// Smallest per-repeat ratio.
    pub min: f64,
    /// Largest per-repeat ratio.
    pub max: f64,
    /// Repeats.
    pub n: usize,
    /// True if every repeat's ratio lies on the same side of 1: the repeats agree which
    /// page size is faster. False: their spread includes no change, so this many repeats
    /// cannot resolve the effect ([`Ratio::verdict`]).
    pub resolved: bool,
}

impl Ratio {
    /// One sentence a person can act on: the effect, or that the spread cannot resolve it.
    pub fn verdict(&self) -> String {
        if self.resolved {
            format!(
                "resolved: all {} repeats put {} {} {}",
                self.n,
                self.pages,
                if self.median > 1.0 { "above" } else { "below" },
                self.versus
            )
        } else {
            format!(
                "not resolved: the {} repeats' ratios span {:.3}..{:.3}, which includes 1 (no change); the effect ({:+.1} %) is within the run-to-run spread; run more repeats (--repeats) on a quieter machine",
                self.n,
                self.min,
                self.max,
                (self.median - 1.0) * 100.0
            )
        }
    }
}

/// Run `run(pages)` for each page size, `repeats` times, interleaved (the order rotates
/// each repeat), and compute per-repeat ratios against the first page size.
pub fn compare(
    pages: &[Pages],
    repeats: usize,
    mut run: impl FnMut(Pages) -> Result<BenchResult>,
) -> Result<Comparison> {
    if pages.len() < 2 || repeats == 0 {
        return Err(ProbeError::Invalid(
            "--compare needs two or more page sizes and ≥ 1 repeat".into(),
        ));
    }
    let mut per: Vec<Vec<BenchResult>> = vec![Vec::new(); pages.len()];
    let mut runs = Vec::new();
    for r in 0..repeats {
        for k in 0..pages.len() {
            let i = (k + r) % pages.len();
            let res = run(pages[i])?;
            per[i].push(res.clone());
            runs.push(res);
        }
    }
    let mut ratios = Vec::new();
    for m in 0..per[0][0].metrics.len() {
        for i in 1..pages.len() {
            let v: Vec<f64> = (0..repeats)
                .map(|r| per[i][r].metrics[m].value / per[0][r].metrics[m].value)
                .collect();
            let (min, max) = (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            ratios.push(Ratio {
                metric: per[0][0].metrics[m].name.clone(),
                pages: pages[i].label(),
                versus: pages[0].label(),
                median: median(&v),
                min,
                max,
                n: repeats,
                resolved: min > 1.0 || max < 1.0,
            });
        }
    }
    Ok(Comparison {
        pages: pages.iter().map(|p| p.label()).collect(),
        runs,
        ratios,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result whose one metric is `v`.
    fn result(v: f64) -> BenchResult {
        BenchResult {
            kind: Kind::Gups,
            pages: "x".into(),
            backing: crate::os::mem::Backed {
                kernel_page_bytes: 4096,
                ok: true,
                how: String::new(),
                fraction: 1.0,
            },
            backing_note: String::new(),
            bytes: 0,
            metrics: vec![Metric {
                name: "m".into(),
                value: v,
                unit: "u".into(),
                higher_is_better: true,
            }],
            details: serde_json::Value::Null,
            counters: Vec::new(),
            counters_note: None,
        }
    }

    #[test]
    fn compare_says_when_the_spread_cannot_resolve_the_effect() {
        // Base runs give 100; the other page size 108, 97, 110 in its three repeats:
        // a +8 % median inside a spread that crosses 1.
        let run = |values: Vec<f64>| {
            let mut it = values.into_iter();
            compare(&[Pages::Base, Pages::Thp], 3, move |p| {
                Ok(result(if p == Pages::Base { 100.0 } else { it.next().unwrap() }))
            })
            .unwrap()
            .ratios
            .remove(0)
        };
        let r = run(vec![108.0, 97.0, 110.0]);
        assert!((r.median - 1.08).abs() < 1e-9 && !r.resolved, "{r:?}");
        assert!(
            r.verdict().starts_with("not resolved") && r.verdict().contains("+8.0 %"),
            "{}",
            r.verdict()
        );
        let r = run(vec![108.0, 103.0, 110.0]);
        assert!(r.resolved && r.verdict().contains("above"), "{}", r.verdict());
        let r = run(vec![92.0, 95.0, 99.0]);
        assert!(r.resolved && r.verdict().contains("below"), "{}", r.verdict());
    }
    #[test]
    fn parses_pages_and_sizes() {
        assert_eq!(Pages::parse("4k").unwrap(), Pages::Base);
        assert_eq!(Pages::parse("mthp-64K").unwrap(), Pages::Mthp(64));
        assert_eq!(Pages::parse("mthp-16kB").unwrap(), Pages::Mthp(16));
        assert!(Pages::parse("mthp-3K").is_err());
        assert!(Pages::parse("huge").is_err());
        assert_eq!(parse_size("256M").unwrap(), 256 << 20);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("x").is_err() && parse_size("0").is_err());
    }
}
