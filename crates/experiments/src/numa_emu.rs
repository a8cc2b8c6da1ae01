//! `mmulab reproduce numa-emu` (seed 003; docs/numa.md, "reproduce numa-emu"): NUMA
//! emulation on the Raspberry Pi 5. The board is the catalog's `cortex-a76-pi5` (four
//! Cortex-A76 with their caches) over the LPDDR4X model `lpddr4x-4267-pi5` (dual rank,
//! the top address bit selecting the rank); each workload runs with the default
//! allocation (no `[numa]`: one allocator, lowest free block first) and with
//! `numa=fake=8` plus `numactl --interleave=all`'s policy, on one core and on four.
//!
//! Workloads (memory-bound, as the issue asks, plus one that is not):
//! * `stream`: STREAM triad (three arrays, one pass each part);
//! * `chase`: a dependent pointer chase, one line per 4 KiB page (`caches.mlp = 1` for
//!   it: each load needs the one before, so no two of its misses overlap);
//! * `gups`: HPCC RandomAccess;
//! * `compute`: loads over 128 KiB, which stay in the L2 (a stand-in for the compute
//!   subtests of a benchmark suite);
//! * `mix`: not a run, the Geekbench-like score: the geometric mean of the four times
//!   (Geekbench 6 combines its subtests by geometric mean), so its speedup is the
//!   geometric mean of theirs.
//!
//! With four threads every workload splits the same work over the cores (`threads=4`,
//! `refs` a quarter each), so a row's time is that of the slowest core. Time is the
//! model's application time (`time.app_cycles`: the slowest core's clock, faults and
//! OS work) at the catalog's 2.4 GHz. Besides the 8 GB board: the 4 GB board (4 GiB of
//! memory, `lpddr4x-4267-pi5-4gb`, rank bit 31) and THP (`os.policy = "thp"`: a huge
//! page is one interleave unit).

use mmulab_plot::{Axis, Figure, Panel, Series, Style, PALETTE};
use mmulab_sim::config::load_machine;
use mmulab_sim::pool::Pool;
use mmulab_sim::stats::time::TimeStats;
use mmulab_sim::{Session, SessionOptions, SimError, Stats};
use serde::Serialize;

/// The seed's Geekbench 6 changes with emulated NUMA and interleave: single-core,
/// multi-core (seed 003; raspberrypi/firmware#1854 repeated them).
pub const SEED: [(usize, f64); 2] = [(1, 0.06), (4, 0.18)];

/// The base page: the Pi 5's kernel (Raspberry Pi OS, `bcm2712` config) uses 16 KiB
/// pages (seed 003 and seed 000 say so), so the board runs the `aarch64-16k` granule
/// (`machine.arch`), and THP is its 32 MiB PMD page.
pub const BASE: &str = "16K";

/// The workloads run (their specs: [`spec`]).
const WORKLOADS: [&str; 4] = ["stream", "chase", "gups", "compute"];

/// One row of the result (`--json`'s `rows`).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Cores running the workload (1 or 4).
    pub threads: usize,
    /// `default` or `interleave`.
    pub layout: String,
    /// `stream`, `chase`, `gups`, `compute` or `mix` (the geometric mean of the four).
    pub workload: String,
    /// `8GB` or `4GB`.
    pub board: String,
    /// `16K` (the Pi 5 kernel's base pages) or `THP` (32 MiB).
    pub pages: String,
    /// Application time, seconds.
    pub time_s: f64,
    /// The default layout's time over this row's (1 for the default rows).
    pub speedup: f64,
    /// DRAM row hits per request.
    pub row_hit_rate: f64,
    /// The share of DRAM requests in rank 1.
    pub rank1_share: f64,
    /// DRAM bandwidth over its busy span, GB/s.
    pub bandwidth_gbs: f64,
    /// Mean DRAM latency, nanoseconds.
    pub mean_latency_ns: f64,
    /// Requests that reached the DRAM.
    pub dram_requests: u64,
    /// Mean wait of a request's activate for tRRD, tFAW and refresh, ns per request
    /// (`act_wait_cycles`; rank-level limits on opening rows).
    pub act_wait_ns: f64,
    /// Mean wait of a read for tWTR after its rank's last write, ns per request.
    pub wtr_wait_ns: f64,
    /// Write-buffer drains.
    pub write_drains: u64,
}

/// The seed's figure beside mmulab's (`--json`'s `seed`).
#[derive(Clone, Debug, Serialize)]
pub struct SeedLine {
    /// 1 (single-core) or 4 (multi-core).
    pub threads: usize,
    /// The seed's change (0.06 = +6 %).
    pub seed_change: f64,
    /// mmulab's change of `mix` on the 8 GB board with 16 KiB pages.
    pub mmulab_change: f64,
    /// Both positive, or both not.
    pub same_direction: bool,
}

/// The whole result: one JSON object.
#[derive(Clone, Debug, Serialize)]
pub struct NumaEmu {
    /// Every row.
    pub rows: Vec<Row>,
    /// The seed's figures beside mmulab's.
    pub seed: Vec<SeedLine>,
    /// Why, in sentences made from the figures.
    pub why: Vec<String>,
}

/// Sizes: `quick` runs an eighth of the references over an eighth of the data (the
/// test suite's size); the full size is what docs/numa.md shows.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Reduced sizes.
    pub quick: bool,
}

#[derive(Clone, Debug)]
struct Case {
    threads: usize,
    interleave: bool,
    workload: &'static str,
    board8: bool,
    thp: bool,
}

/// The workload spec of `c` at `scale` (1 full, 8 quick: sizes and counts divided).
fn spec(c: &Case, scale: u64) -> String {
    let n = c.threads as u64;
    let s = match c.workload {
        // Triad over three 8 MiB arrays (24 MiB, twelve times the L3): 1 M elements,
        // three references each, two passes.
        "stream" => format!("stream:size={}KiB,refs={}", 8192 / scale, 6_000_000 / scale / n),
        // 64 Ki pages (256 MiB), each visited four times.
        "chase" => format!("chase:pages={},refs={}", 65536 / scale, 262_144 * 4 / scale / n),
        // The updates only (HPCC times them alone; `init=on` would put the table's
        // sequential initialisation into the time).
        "gups" => format!("gups:table={}MiB,refs={},init=off", 256 / scale, 4_000_000 / scale / n),
        _ => format!("seq:size=128KiB,refs={}", 4_000_000 / scale / n),
    };
    if n > 1 {
        format!("{s},threads={n}")
    } else {
        s
    }
}

fn sets(c: &Case) -> Vec<String> {
    let mut v = vec![if c.board8 {
        "dram.profile=lpddr4x-4267-pi5".to_string()
    } else {
        "dram.profile=lpddr4x-4267-pi5-4gb".to_string()
    }];
    v.push(format!("memory.size={}", if c.board8 { "8GiB" } else { "4GiB" }));
    v.push("machine.arch=aarch64-16k".into());
    // Private pages, not the shared zero page: the programs these workloads stand for
    // write their data before they read it (a chase builds its cycle, STREAM fills its
    // arrays), so every page they read is their own frame on its node; with the zero
    // page a load-only chase would read one cached frame.
    v.push("os.zero_page=false".into());
    if c.interleave {
        v.push("numa.fake=8".into());
        v.push("numa.policy=interleave".into());
    }
    if c.thp {
        v.push("os.policy=thp".into());
    }
    if c.workload == "chase" {
        v.push("caches.mlp=1".into());
    }
    v
}

/// One run: its statistics.
fn one(c: &Case, scale: u64) -> Result<Stats, SimError> {
    let spec_ = load_machine("cortex-a76-pi5", None, &sets(c))?;
    let mut src = mmulab_trace::workload::parse(&spec(c, scale))?;
    Ok(Session::simulate(spec_, &mut *src, SessionOptions::default())?)
}

fn row(c: &Case, s: &Stats) -> Result<Row, SimError> {
    let cr = s.caches.as_ref();
    let (d, mhz) = match cr.and_then(|c| c.dram.as_ref()) {
        Some((d, mhz, _)) => (d, *mhz),
        None => return Err(SimError::Config("reproduce numa-emu: the run had no DRAM".into())),
    };
    let clock = s.time.map_or(2400.0, |t| t.clock_mhz);
    let req = d.requests();
    let per_req = |x: u64| if req > 0 { x as f64 / req as f64 } else { 0.0 };
    Ok(Row {
        threads: c.threads,
        layout: if c.interleave { "interleave" } else { "default" }.into(),
        workload: c.workload.into(),
        board: if c.board8 { "8GB" } else { "4GB" }.into(),
        pages: if c.thp { "THP" } else { BASE }.into(),
        time_s: TimeStats::app_cycles(s) as f64 / (clock * 1e6),
        speedup: 1.0,
        row_hit_rate: d.row_hit_rate(),
        rank1_share: if req > 0 {
            d.per_rank.get(1).copied().unwrap_or(0) as f64 / req as f64
        } else {
            0.0
        },
        bandwidth_gbs: d.bandwidth_gbs(mhz),
        act_wait_ns: per_req(d.act_wait_cycles) * 1e3 / mhz,
        wtr_wait_ns: per_req(d.wtr_wait_cycles) * 1e3 / mhz,
        write_drains: d.write_drains,
        mean_latency_ns: d.mean_latency() * 1e3 / mhz,
        dram_requests: req,
    })
}

/// Runs every case on `pool` and builds the result.
pub fn run_all(opts: Options, pool: Pool) -> Result<NumaEmu, SimError> {
    let scale = if opts.quick { 8 } else { 1 };
    let mut cases = Vec::new();
    for (board8, thp) in [(true, false), (false, false), (true, true)] {
        for t in [1, 4] {
            for interleave in [false, true] {
                for w in WORKLOADS {
                    cases.push(Case {
                        threads: t,
                        interleave,
                        workload: w,
                        board8,
                        thp,
                    });
                }
            }
        }
    }
    let stats = crate::freebsd::sensitivity::parallel(&cases, pool, |c| one(c, scale))?;
    let mut rows = Vec::new();
    for (c, s) in cases.iter().zip(&stats) {
        rows.push(row(c, s)?);
    }
    add_mix(&mut rows);
    for i in 0..rows.len() {
        let base = rows
            .iter()
            .find(|b| {
                b.layout == "default"
                    && b.threads == rows[i].threads
                    && b.workload == rows[i].workload
                    && b.board == rows[i].board
                    && b.pages == rows[i].pages
            })
            .map_or(rows[i].time_s, |b| b.time_s);
        rows[i].speedup = if rows[i].time_s > 0.0 {
            base / rows[i].time_s
        } else {
            1.0
        };
    }
    let seed = SEED
        .iter()
        .map(|&(t, seed_change)| {
            let m = find(&rows, t, "interleave", "mix", "8GB", BASE).map_or(0.0, |r| r.speedup - 1.0);
            SeedLine {
                threads: t,
                seed_change,
                mmulab_change: m,
                same_direction: (m > 0.0) == (seed_change > 0.0),
            }
        })
        .collect();
    let why = why(&rows);
    Ok(NumaEmu { rows, seed, why })
}

/// The `mix` rows: per (threads, layout, board, pages), the geometric mean of the
/// workloads' times; DRAM figures summed over them (rates weighted by requests).
fn add_mix(rows: &mut Vec<Row>) {
    let mut mixes = Vec::new();
    for r in rows.iter().filter(|r| r.workload == WORKLOADS[0]) {
        let parts: Vec<&Row> = rows
            .iter()
            .filter(|x| x.threads == r.threads && x.layout == r.layout && x.board == r.board && x.pages == r.pages)
            .collect();
        let n = parts.len() as f64;
        let req: u64 = parts.iter().map(|x| x.dram_requests).sum();
        let w = |f: fn(&Row) -> f64| {
            if req == 0 {
                0.0
            } else {
                parts.iter().map(|x| f(x) * x.dram_requests as f64).sum::<f64>() / req as f64
            }
        };
        mixes.push(Row {
            workload: "mix".into(),
            time_s: (parts.iter().map(|x| x.time_s.max(1e-12).ln()).sum::<f64>() / n).exp(),
            row_hit_rate: w(|x| x.row_hit_rate),
            rank1_share: w(|x| x.rank1_share),
            bandwidth_gbs: w(|x| x.bandwidth_gbs),
            mean_latency_ns: w(|x| x.mean_latency_ns),
            act_wait_ns: w(|x| x.act_wait_ns),
            wtr_wait_ns: w(|x| x.wtr_wait_ns),
            write_drains: parts.iter().map(|x| x.write_drains).sum(),
            dram_requests: req,
            ..r.clone()
        });
    }
    rows.extend(mixes);
}

fn find<'a>(rows: &'a [Row], t: usize, layout: &str, w: &str, board: &str, pages: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.threads == t && r.layout == layout && r.workload == w && r.board == board && r.pages == pages)
}

/// Which counted wait carries a latency change from `d` to `i`, in a sentence that
/// claims no more than the counters show.
fn carrier(d: &Row, i: &Row) -> String {
    let dl = d.mean_latency_ns - i.mean_latency_ns;
    let da = d.act_wait_ns - i.act_wait_ns;
    let dw = d.wtr_wait_ns - i.wtr_wait_ns;
    if dl.abs() < 0.5 {
        return "The mean DRAM latency barely moves.".into();
    }
    let counted = da + dw;
    format!(
        "Of the {:.1} ns latency {}, the rank-level activate limits account for {:.1} ns and tWTR for {:.1} ns; the other {:.1} ns is queueing behind busy banks and the data bus{}.",
        dl.abs(),
        if dl > 0.0 { "saved" } else { "added" },
        da,
        dw,
        dl - counted,
        if (dl - counted).abs() > counted.abs() { ", which a second rank's banks relieve (not counted separately)" } else { "" }
    )
}

/// Sentences on what moved: per thread count, the mix's row hits and rank use; the
/// boards; THP.
fn why(rows: &[Row]) -> Vec<String> {
    let mut v = Vec::new();
    let pct = |x: f64| format!("{:.1} %", 100.0 * x);
    let chg = |x: f64| format!("{:+.1} %", 100.0 * (x - 1.0));
    for t in [1, 4] {
        let (Some(d), Some(i)) = (
            find(rows, t, "default", "mix", "8GB", BASE),
            find(rows, t, "interleave", "mix", "8GB", BASE),
        ) else {
            continue;
        };
        let mut best = WORKLOADS
            .iter()
            .filter_map(|w| find(rows, t, "interleave", w, "8GB", BASE))
            .collect::<Vec<_>>();
        best.sort_by(|a, b| b.speedup.total_cmp(&a.speedup));
        let lead = best.first().map_or(String::new(), |b| {
            format!(" The largest change is {} ({}).", b.workload, chg(b.speedup))
        });
        v.push(format!(
            "{t} thread{}: interleave moves the DRAM requests in rank 1 from {} to {} and the row-hit rate from {} to {}; the mix changes {}.{lead} What the counters show (mix, per DRAM request): mean latency {:.1} -> {:.1} ns, of which activates held by tRRD, tFAW and refresh {:.2} -> {:.2} ns and reads held by tWTR {:.2} -> {:.2} ns; write-buffer drains {} -> {}. {}",
            if t == 1 { "" } else { "s" },
            pct(d.rank1_share),
            pct(i.rank1_share),
            pct(d.row_hit_rate),
            pct(i.row_hit_rate),
            chg(i.speedup),
            d.mean_latency_ns,
            i.mean_latency_ns,
            d.act_wait_ns,
            i.act_wait_ns,
            d.wtr_wait_ns,
            i.wtr_wait_ns,
            d.write_drains,
            i.write_drains,
            carrier(d, i),
        ));
    }
    if let (Some(d8), Some(d4), Some(i4)) = (
        find(rows, 4, "default", "mix", "8GB", BASE),
        find(rows, 4, "default", "mix", "4GB", BASE),
        find(rows, 4, "interleave", "mix", "4GB", BASE),
    ) {
        v.push(format!(
            "Boards, 4 threads: with the default layout the 4 GB board's mix takes {:.3} ms against the 8 GB board's {:.3} ms (rank 1 share {} and {}): the model allocates the lowest free frames first, so a small program sits in rank 0 on either board; interleave changes the 4 GB board's mix by {}.",
            d4.time_s * 1e3,
            d8.time_s * 1e3,
            pct(d4.rank1_share),
            pct(d8.rank1_share),
            chg(i4.speedup),
        ));
    }
    if let (Some(i4k), Some(ithp), Some(s4k), Some(sthp), Some(dthp), Some(d4k)) = (
        find(rows, 4, "interleave", "mix", "8GB", BASE),
        find(rows, 4, "interleave", "mix", "8GB", "THP"),
        find(rows, 4, "interleave", "stream", "8GB", BASE),
        find(rows, 4, "interleave", "stream", "8GB", "THP"),
        find(rows, 4, "default", "stream", "8GB", "THP"),
        find(rows, 4, "default", "stream", "8GB", BASE),
    ) {
        let start = if dthp.row_hit_rate + 0.02 < d4k.row_hit_rate {
            format!(
                " With THP the default layout is worse to begin with (stream's row-hit rate {} against {}), which leaves interleave more to win.",
                pct(dthp.row_hit_rate),
                pct(d4k.row_hit_rate)
            )
        } else {
            format!(
                " Stream's default row-hit rate is {} with THP and {} with 16 KiB pages: THP does not change where the default layout starts.",
                pct(dthp.row_hit_rate),
                pct(d4k.row_hit_rate)
            )
        };
        v.push(format!(
            "THP, 4 threads: interleave changes the mix by {} with 16 KiB pages and by {} with THP. A 32 MiB page (the PMD size with 16 KiB pages) is one interleave unit, whole on one node and so in one rank: stream's requests in rank 1 are {} with THP against {} with 16 KiB pages.{start}",
            chg(i4k.speedup),
            chg(ithp.speedup),
            pct(sthp.rank1_share),
            pct(s4k.rank1_share),
        ));
    }
    v
}

/// The text table.
pub fn table(r: &NumaEmu) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "NUMA emulation on the Raspberry Pi 5 model (cortex-a76-pi5, LPDDR4X, numa=fake=8 + interleave)\n"
    );
    let _ = writeln!(
        s,
        "{:<5} {:>4} {:>7} {:<10} {:<8} {:>10} {:>8} {:>8} {:>7} {:>7} {:>8}",
        "board", "page", "threads", "layout", "workload", "time ms", "speedup", "row hit", "rank1", "GB/s", "lat ns"
    );
    for x in &r.rows {
        let _ = writeln!(
            s,
            "{:<5} {:>4} {:>7} {:<10} {:<8} {:>10.3} {:>8.3} {:>7.1}% {:>6.1}% {:>7.2} {:>8.1}",
            x.board,
            x.pages,
            x.threads,
            x.layout,
            x.workload,
            x.time_s * 1e3,
            x.speedup,
            100.0 * x.row_hit_rate,
            100.0 * x.rank1_share,
            x.bandwidth_gbs,
            x.mean_latency_ns
        );
    }
    let _ = writeln!(s);
    for l in &r.seed {
        let _ = writeln!(
            s,
            "{}: seed {:+.0} %, mmulab (mix, 8 GB, 16K) {:+.1} %, same direction: {}",
            if l.threads == 1 { "single-core" } else { "multi-core" },
            100.0 * l.seed_change,
            100.0 * l.mmulab_change,
            if l.same_direction { "yes" } else { "no" }
        );
    }
    let _ = writeln!(s);
    for w in &r.why {
        let _ = writeln!(s, "{w}");
    }
    s
}

/// Speedup of interleave over the default layout per workload, 1 and 4 threads (8 GB
/// board, 16 KiB pages), with the seed's Geekbench figures as bars in the mix group.
pub fn figure(r: &NumaEmu) -> Figure {
    let names: Vec<String> = WORKLOADS
        .iter()
        .map(|w| w.to_string())
        .chain(["mix".to_string()])
        .collect();
    let mut p = Panel::new(
        "",
        Axis::categories("workload", names.clone()),
        Axis::linear("speedup of interleave (default = 1)"),
    );
    for (k, t) in [1usize, 4].into_iter().enumerate() {
        let pts = names
            .iter()
            .enumerate()
            .filter_map(|(i, w)| find(&r.rows, t, "interleave", w, "8GB", BASE).map(|x| (i as f64, x.speedup)))
            .collect();
        p.series.push(Series::new(
            format!("{t} thread{}", if t == 1 { "" } else { "s" }),
            Style::Bars,
            PALETTE[k % PALETTE.len()],
            pts,
        ));
    }
    let mix = (names.len() - 1) as f64;
    for (k, &(t, c)) in SEED.iter().enumerate() {
        p.series.push(Series::new(
            format!("seed, {}", if t == 1 { "single-core" } else { "multi-core" }),
            Style::Bars,
            PALETTE[(k + 2) % PALETTE.len()],
            vec![(mix, 1.0 + c)],
        ));
    }
    Figure::new(
        "NUMA emulation on the Pi 5 model: interleave vs default",
        (900, 520),
        vec![p],
    )
}

/// The table row: `mmulab reproduce numa-emu`.
pub struct NumaEmuExperiment;

impl crate::Experiment for NumaEmuExperiment {
    fn name(&self) -> &'static str {
        "numa-emu"
    }
    fn source(&self) -> &'static str {
        "003"
    }
    fn about(&self) -> &'static str {
        "seed 003's NUMA emulation on the Raspberry Pi 5 model (cortex-a76-pi5, LPDDR4X
lpddr4x-4267-pi5): default allocation against numa=fake=8 with interleave, 1 and 4
threads, STREAM triad, pointer chase, GUPS, a cache-resident loop and their geometric
mean (Geekbench-like), beside the seed's +6 % / +18 %; also the 4 GB board and THP
(docs/numa.md); --quick runs an eighth of the size."
    }
    fn options(&self) -> &'static [crate::Opt] {
        &[crate::Opt {
            flag: "--quick",
            value: None,
        }]
    }
    fn run(&self, input: &crate::Input) -> anyhow::Result<crate::Output> {
        let r = run_all(
            Options {
                quick: input.options.quick,
            },
            input.pool,
        )?;
        let mut out = crate::Output::new(table(&r), serde_json::to_value(&r)?);
        out.figure = input.figure.then(|| figure(&r));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_set_the_board_the_layout_and_the_chase_mlp() {
        let c = Case {
            threads: 4,
            interleave: true,
            workload: "chase",
            board8: false,
            thp: true,
        };
        assert_eq!(
            sets(&c),
            [
                "dram.profile=lpddr4x-4267-pi5-4gb",
                "memory.size=4GiB",
                "machine.arch=aarch64-16k",
                "os.zero_page=false",
                "numa.fake=8",
                "numa.policy=interleave",
                "os.policy=thp",
                "caches.mlp=1"
            ]
        );
        // A quarter of the references per thread.
        assert_eq!(spec(&c, 1), "chase:pages=65536,refs=262144,threads=4");
        // The Pi 5 kernel's 16 KiB pages: the machine's granule and its 32 MiB THP.
        let m = load_machine("cortex-a76-pi5", None, &sets(&c)).unwrap();
        assert_eq!(m.format.base_page().bytes(), 16 << 10);
    }

    #[test]
    fn the_quick_run_gives_a_table_a_figure_and_one_json_object() {
        use crate::Experiment as _;
        let options = crate::Options {
            quick: true,
            ..crate::Options::default()
        };
        let out = NumaEmuExperiment
            .run(&crate::Input {
                source: crate::Source::BuiltIn,
                options: &options,
                figure: true,
                pool: Pool::new(2),
            })
            .unwrap();
        assert!(out.figure.is_some() && !out.table.is_empty());
        assert!(out.json.is_object(), "one JSON object");
        // Every row on 16 KiB or THP pages, with the DRAM's wait counters; the sentences
        // name the counted waits, not a mechanism no counter shows.
        let rows = out.json["rows"].as_array().unwrap();
        assert!(rows.iter().all(|r| r["pages"] == BASE || r["pages"] == "THP"));
        assert!(rows
            .iter()
            .all(|r| r["act_wait_ns"].as_f64().is_some() && r["write_drains"].as_u64().is_some()));
        let why = out.json["why"].as_array().unwrap();
        assert!(why
            .iter()
            .any(|w| w.as_str().unwrap().contains("activates held by tRRD, tFAW and refresh")));
        assert!(!why.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("gain is rank parallelism (each rank's activates")));
    }
}
