//! One-pass TLB miss-ratio curves: the misses of a fully associative LRU TLB of every
//! size from 1 to N entries, and of set-associative LRU TLBs for power-of-two set counts,
//! from one pass over a trace (docs/mrc.md).
//!
//! A TLB entry's key is what mmulab's TLB keys it by: the page-size class, the virtual
//! page number at that size, and the address space. Every reference is translated at one
//! page size ([`MrcOptions::page_size`], chosen from the machine's OS policy and the
//! level's sizes by [`MrcOptions::for_level`]); a reference of a kind the level does not
//! serve is not counted. Each core has its own TLB, as in `sim`.
//!
//! Exactness: LRU is a stack algorithm, so the fully associative curve ([`stack`]) and
//! every way count of a set count ([`assoc`]) are exact: a test compares every point
//! with a separate `sim` run. Trace events that make `sim` shoot down TLB entries
//! (unmaps, exits) are not modelled; [`Curve::events`] counts them. Optional SHARDS
//! sampling ([`MrcOptions::sample`]; Waldspurger et al., FAST 2015, fixed rate) runs
//! beside the exact curve and reports its error against it.
//!
//! Entry point: [`curve`] (a plain function over a `TraceSource`, for the CLI and later
//! bindings alike).
#![deny(missing_docs)]

pub mod assoc;
mod output;
pub mod stack;

pub use output::figure;

use assoc::SetStacks;
use mmulab_model::addr::PageSize;
use mmulab_model::tlb::{Serves, Unsupported};
use mmulab_sim::config::{MachineSpec, OsSpec};
use mmulab_trace::{AccessKind, Batch, TraceError, TraceSource};
use serde::Serialize;
use stack::StackDistance;

/// References read per batch.
const BATCH: usize = 8192;
/// SHARDS: a key is sampled when the low 24 bits of its hash are below `rate * 2^24`.
const SAMPLE_BITS: u32 = 24;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum MrcError {
    /// Options that cannot make a curve (names the option and what to do).
    #[error("{0}")]
    Options(String),
    /// The trace could not be read (names the file and offset).
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct MrcOptions {
    /// The largest fully associative size, in entries (the curve has 1..=N).
    pub max_entries: usize,
    /// Set counts (powers of two, 2..=N) for set-associative curves: ways 1..=N/sets.
    pub sets: Vec<usize>,
    /// SHARDS sampling rate in (0, 1], computed beside the exact curve.
    pub sample: Option<f64>,
    /// The page size every reference is translated at.
    pub page_size: PageSize,
    /// The reference kinds the TLB sees.
    pub serves: Serves,
    /// Cores, each with its own TLB (a reference's core modulo this, as `sim` maps it).
    pub cores: usize,
    /// The level's name (for the output).
    pub level: String,
}

impl MrcOptions {
    /// Options for level `level` (default: the level data references enter) of `spec`:
    /// the kinds it serves, the machine's cores, and the page size: `page_size` if given,
    /// else the one size the OS policy maps (`base`: 4K; `fixed`: `os.page_size`); other
    /// policies map several sizes as a run goes and need `page_size`. A size the level
    /// does not hold is splintered to the largest smaller size it holds, as the TLB does.
    pub fn for_level(
        spec: &MachineSpec,
        level: Option<&str>,
        page_size: Option<PageSize>,
        max_entries: usize,
    ) -> Result<MrcOptions, MrcError> {
        let i = match level {
            Some(name) => spec.tlbs.iter().position(|t| t.name == name).ok_or_else(|| {
                MrcError::Options(format!(
                    "--level {name}: the machine has no TLB level of that name; its levels: {}",
                    spec.tlbs.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
                ))
            })?,
            None => spec.data_entry,
        };
        let t = &spec.tlbs[i];
        let size = match (page_size, &spec.os) {
            (Some(p), _) => p,
            (None, OsSpec::Base { .. }) => PageSize::K4,
            (None, OsSpec::Fixed(p)) => *p,
            (None, os) => {
                return Err(MrcError::Options(format!(
                    "the OS policy '{}' maps pages of several sizes as a run goes; a one-pass curve \
                     translates every reference at one size: pass --page-size (e.g. 4K or 2M)",
                    os.name()
                )))
            }
        };
        // A size the machine's page tables cannot map at all (16K on x86-64) is no curve
        // of this machine: refused, not silently drawn for the base page a splintering
        // level would hold instead.
        let mappable = spec.format.page_sizes();
        if !mappable.contains(&size) {
            return Err(MrcError::Options(format!(
                "--page-size {size}: this machine's page tables ({}) map {} pages, not {size}",
                spec.format.arch_name(),
                mappable.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        let held = t.page_sizes.iter().copied().filter(|&p| p <= size).max();
        let page_size = match (t.page_sizes.contains(&size), t.unsupported, held) {
            (true, _, _) => size,
            (false, Unsupported::Splinter, Some(p)) => p,
            _ => {
                return Err(MrcError::Options(format!(
                    "TLB level '{}' holds {} pages, not {}; it would not cache these translations: \
                     choose --page-size among its sizes or another --level",
                    t.name,
                    t.page_sizes
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    size
                )))
            }
        };
        Ok(MrcOptions {
            max_entries,
            sets: Vec::new(),
            sample: None,
            page_size,
            serves: t.serves,
            cores: spec.cores.max(1),
            level: t.name.clone(),
        })
    }

    /// Host memory the curves of these options take: per core, the histograms (8 bytes
    /// an entry), a stack-distance structure bounded by the largest size (at most 64
    /// bytes a kept key: its hash-map entry and two slots of the tree window, stack.rs)
    /// and each set count's stacks (8 bytes a way); and the curves handed back (24 bytes
    /// a point, more for set-associative points).
    pub fn host_need(&self) -> mmulab_base::host_memory::Need {
        let n = self.max_entries as u64;
        let cores = self.cores.max(1) as u64;
        let shards = self.sample.is_some() as u64;
        let sets = self.sets.len() as u64;
        let per_core = n
            .saturating_mul(8 * (1 + shards) + 64 * (1 + shards))
            .saturating_add(n.saturating_mul(16).saturating_mul(sets));
        let mut need = mmulab_base::host_memory::Need::new();
        need.add(
            format!("--max-entries {n}: {cores} core(s)' stacks and histograms"),
            cores.saturating_mul(per_core),
        );
        need.add(
            format!("--max-entries {n}: the curves"),
            n.saturating_mul(24 * (1 + shards) + 32 * sets),
        );
        need.add("program and buffers (assumed)", 32 << 20);
        need
    }

    fn check(&self) -> Result<(), MrcError> {
        let n = self.max_entries;
        if n == 0 || n > 1 << 24 {
            return Err(MrcError::Options(format!(
                "--max-entries {n}: give a size from 1 to 16777216"
            )));
        }
        for &s in &self.sets {
            if s < 2 || !s.is_power_of_two() || s > n {
                return Err(MrcError::Options(format!(
                    "--sets {s}: a set count must be a power of two from 2 to --max-entries ({n}) \
                     (one set is the fully associative curve)"
                )));
            }
        }
        if let Some(r) = self.sample {
            if !(r > 0.0 && r <= 1.0) {
                return Err(MrcError::Options(format!(
                    "--sample {r}: a sampling rate is in (0, 1], e.g. 0.01"
                )));
            }
        }
        Ok(())
    }
}

/// One point of a fully associative curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// TLB entries.
    pub entries: u64,
    /// Misses of a TLB of that size.
    pub misses: u64,
    /// `misses / references` (0 when there were no references).
    pub miss_ratio: f64,
}

/// One point of a set-associative curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetPoint {
    /// Ways per set.
    pub ways: u64,
    /// TLB entries (`sets * ways`).
    pub entries: u64,
    /// Misses.
    pub misses: u64,
    /// `misses / references`.
    pub miss_ratio: f64,
}

/// The curve of one set count.
#[derive(Clone, Debug, Serialize)]
pub struct SetCurve {
    /// Sets.
    pub sets: u64,
    /// Ways 1..=max_entries/sets.
    pub curve: Vec<SetPoint>,
}

/// The SHARDS estimate and its error against the exact curve.
#[derive(Clone, Debug, Serialize)]
pub struct Sampled {
    /// The sampling rate.
    pub rate: f64,
    /// References whose key was sampled.
    pub sampled_references: u64,
    /// The estimated curve (misses = estimated ratio x references).
    pub curve: Vec<Point>,
    /// Mean over sizes 1..=N of |estimated - exact miss ratio|.
    pub mean_abs_error: f64,
    /// The largest |estimated - exact miss ratio|.
    pub max_abs_error: f64,
}

/// A miss-ratio curve and what it was computed from.
#[derive(Clone, Debug, Serialize)]
pub struct Curve {
    /// The TLB level it stands for.
    pub level: String,
    /// The page size of every translation.
    pub page_size: PageSize,
    /// References the level saw (of the kinds it serves).
    pub references: u64,
    /// Trace events (unmaps, exits) met and not modelled.
    pub events: u64,
    /// False when the run was stopped (Ctrl-C) before the end of the trace.
    pub complete: bool,
    /// The fully associative curve, entries 1..=N.
    pub curve: Vec<Point>,
    /// Set-associative curves, one per set count asked for.
    pub set_associative: Vec<SetCurve>,
    /// The SHARDS estimate, when asked for.
    pub sampled: Option<Sampled>,
}

/// The state of one core's TLB.
struct Core {
    fa: StackDistance,
    /// `hist[d]` for d < N (first references and distances of N or more are the rest).
    hist: Vec<u64>,
    sets: Vec<SetStacks>,
    shards: Option<Shards>,
    last: u64,
    last_sampled: bool,
}

/// SHARDS state: a stack over the sampled keys and a histogram of scaled distances.
struct Shards {
    threshold: u64,
    rate: f64,
    stack: StackDistance,
    hist: Vec<u64>,
    refs: u64,
}

/// splitmix64's finaliser: a well-mixed hash of the key, for spatial sampling.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Core {
    fn new(o: &MrcOptions) -> Core {
        let n = o.max_entries;
        Core {
            fa: StackDistance::with_limit(n),
            hist: vec![0; n + 1],
            sets: o.sets.iter().map(|&s| SetStacks::new(s, n / s)).collect(),
            shards: o.sample.map(|rate| Shards {
                threshold: (rate * (1u64 << SAMPLE_BITS) as f64).round().max(1.0) as u64,
                rate,
                // Sampled distances d' stand for d'/rate: below N means d' < N * rate.
                stack: StackDistance::with_limit((n as f64 * rate).ceil() as usize + 1),
                hist: vec![0; n + 1],
                refs: 0,
            }),
            last: u64::MAX,
            last_sampled: false,
        }
    }

    #[inline]
    fn access(&mut self, key: u64, vpn: u64) {
        let n = self.hist.len() - 1;
        if key == self.last {
            // An immediate repeat: distance 0 everywhere.
            self.hist[0] += 1;
            for s in &mut self.sets {
                s.hist[0] += 1;
            }
            if self.last_sampled {
                if let Some(sh) = &mut self.shards {
                    sh.refs += 1;
                    sh.hist[0] += 1;
                }
            }
            return;
        }
        self.last = key;
        if let Some(d) = self.fa.access(key) {
            self.hist[(d as usize).min(n)] += 1;
        }
        for s in &mut self.sets {
            s.access(key, vpn);
        }
        self.last_sampled = false;
        if let Some(sh) = &mut self.shards {
            if mix(key) & ((1 << SAMPLE_BITS) - 1) < sh.threshold {
                self.last_sampled = true;
                sh.refs += 1;
                // A sampled distance d' stands for d'/rate distinct entries.
                if let Some(d) = sh.stack.access(key) {
                    sh.hist[((d as f64 / sh.rate) as usize).min(n)] += 1;
                }
            }
        }
    }
}

/// Misses at sizes 1..=N from a histogram of distances (`hist[N]`: N or more) and the
/// references (the misses at size N and beyond are those not in it).
fn misses_by_size(hist: &[u64], total: u64) -> Vec<u64> {
    let n = hist.len() - 1;
    let mut hits = 0u64;
    (0..n)
        .map(|c| {
            hits += hist[c];
            total - hits
        })
        .collect()
}

fn ratio(m: u64, refs: u64) -> f64 {
    if refs == 0 {
        0.0
    } else {
        m as f64 / refs as f64
    }
}

/// Computes the curves of `opts` over `src` in one pass. Stops early (and says
/// `complete: false`) when `mmulab_sim::request_stop` was called (Ctrl-C).
pub fn curve(src: &mut dyn TraceSource, opts: &MrcOptions) -> Result<Curve, MrcError> {
    opts.check()?;
    opts.host_need()
        .check(
            "this curve",
            "lower --max-entries, the --sets counts or the machine's cores",
        )
        .map_err(MrcError::Options)?;
    let shift = opts.page_size.shift();
    let class = opts.page_size as u64;
    let cores = opts.cores.max(1);
    let mut state: Vec<Core> = (0..cores).map(|_| Core::new(opts)).collect();
    let (data, instr) = match opts.serves {
        Serves::Data => (true, false),
        Serves::Instr => (false, true),
        Serves::Unified => (true, true),
    };
    let mut buf = Batch::with_capacity(BATCH);
    let mut refs = 0u64;
    let mut events = 0u64;
    let mut complete = true;
    loop {
        if mmulab_sim::stop_requested() {
            complete = false;
            break;
        }
        buf.clear();
        if src.next_batch(&mut buf, BATCH)? == 0 {
            break;
        }
        events += buf.events.len() as u64;
        for r in &buf.refs {
            let served = if r.kind == AccessKind::IFetch { instr } else { data };
            if !served {
                continue;
            }
            refs += 1;
            let vpn = r.addr >> shift;
            // mmulab's TLB key: (vpn << 4 | size class), tagged with the address space
            // in bits 48.. (unique for addresses below 2^56 at 4 KiB pages).
            let key = ((vpn << 4) | class) ^ ((r.asid as u64) << 48);
            let core = if cores == 1 { 0 } else { r.core as usize % cores };
            state[core].access(key, vpn);
        }
    }
    Ok(assemble(opts, &state, refs, events, complete))
}

/// Sums the cores' histograms into curves.
fn assemble(opts: &MrcOptions, state: &[Core], refs: u64, events: u64, complete: bool) -> Curve {
    let n = opts.max_entries;
    let sum = |f: &dyn Fn(&Core) -> &[u64], len: usize| {
        let mut h = vec![0u64; len];
        for c in state {
            for (a, b) in h.iter_mut().zip(f(c)) {
                *a += b;
            }
        }
        h
    };
    let hist = sum(&|c| &c.hist, n + 1);
    let curve: Vec<Point> = misses_by_size(&hist, refs)
        .into_iter()
        .enumerate()
        .map(|(i, m)| Point {
            entries: i as u64 + 1,
            misses: m,
            miss_ratio: ratio(m, refs),
        })
        .collect();
    let set_associative = opts
        .sets
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let depth = n / s;
            let h = sum(&|c| &c.sets[k].hist, depth + 1);
            SetCurve {
                sets: s as u64,
                curve: misses_by_size(&h, refs)
                    .into_iter()
                    .enumerate()
                    .map(|(w, m)| SetPoint {
                        ways: w as u64 + 1,
                        entries: (s * (w + 1)) as u64,
                        misses: m,
                        miss_ratio: ratio(m, refs),
                    })
                    .collect(),
            }
        })
        .collect();
    let sampled = opts.sample.map(|rate| {
        let sh: Vec<&Shards> = state.iter().filter_map(|c| c.shards.as_ref()).collect();
        let srefs: u64 = sh.iter().map(|s| s.refs).sum();
        let mut h = vec![0u64; n + 1];
        for s in &sh {
            for (a, b) in h.iter_mut().zip(&s.hist) {
                *a += b;
            }
        }
        let est: Vec<Point> = misses_by_size(&h, srefs)
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                let r = ratio(m, srefs);
                Point {
                    entries: i as u64 + 1,
                    misses: (r * refs as f64).round() as u64,
                    miss_ratio: r,
                }
            })
            .collect();
        let errs: Vec<f64> = est
            .iter()
            .zip(&curve)
            .map(|(a, b)| (a.miss_ratio - b.miss_ratio).abs())
            .collect();
        Sampled {
            rate,
            sampled_references: srefs,
            mean_abs_error: errs.iter().sum::<f64>() / errs.len().max(1) as f64,
            max_abs_error: errs.iter().copied().fold(0.0, f64::max),
            curve: est,
        }
    });
    Curve {
        level: opts.level.clone(),
        page_size: opts.page_size,
        references: refs,
        events,
        complete,
        curve,
        set_associative,
        sampled,
    }
}
