//! A fast analytical DRAM model (docs/memory.md, "DRAM"): channels, ranks, bank groups,
//! banks, rows and columns; the address mapping from config ([`mapping`]); open, closed
//! or capped row policy; the main timings. It implements [`MemoryBackend`].
//!
//! Not cycle by cycle: each request is placed in time once, in arrival order, against
//! the ready times the earlier requests left behind —
//! * per bank: the open row, the earliest activate (after a precharge), the earliest
//!   precharge (tRAS after the activate, tRTP after a read, tWR after write data), the
//!   earliest column command;
//! * per bank group: its last [`ACT_WINDOW`] activates (tRRD_L) and column commands
//!   (tCCD_L), kept as the rank's are;
//! * per rank: its last [`ACT_WINDOW`] activates: a new one takes the first time at
//!   least tRRD from each and tFAW after the fourth before it, so a request to an idle
//!   bank is not held behind an earlier request's late activate (an approximation: the
//!   activates after it are not re-checked for tFAW); the end of the last write data
//!   (tWTR before a read);
//! * per channel: the last [`BUS_WINDOW`] bursts on the data bus; a burst takes the
//!   first free slot at or after its data is ready (tRTRS apart from another rank's),
//!   so a later request to an idle bank can use a gap an earlier one left, as a
//!   controller reorders the requests in its queue;
//! * refresh (optional): rank `r` of `n` is busy for tRFC from `(r + 1) * tREFI / n +
//!   k * tREFI` (DRAMsim3's rank-level staggered refresh); a refresh closes the rank's
//!   rows, and no activate or column command is placed inside one.
//!
//! A request's latency is the time from its arrival to the end of its data burst:
//! queueing behind its bank and the bus, plus CL for a row hit, tRCD + CL for a miss
//! (bank closed), tRP + tRCD + CL for a conflict (another row open, precharged no
//! earlier than tRAS after its activate), plus the burst. Bank-level parallelism and bus
//! contention among cores emerge from the ready times. Within a bank, a request for a row
//! that a conflict closed after the request had arrived is served as FR-FCFS would have
//! served it, as a row hit before that precharge (sched.rs); docs/memory.md compares the
//! result with DRAMsim3.
//!
//! Written here rather than taken from a library: the timing model is the product, and
//! it must run at tens of millions of requests per second inside the simulator.

pub mod config;
pub mod mapping;
pub mod profile;
mod refresh;
mod sched;
pub mod stream;
mod window;

pub use config::{DramConfig, DramSpec, RowPolicy, Timing, TimingConfig};
pub use mapping::{AddressMap, Loc};
pub use sched::{JOIN_CAP, ROWS as REORDER_ROWS};

use crate::mem::backend::{MemReq, MemoryBackend};
use refresh::Refresh;
use window::Window;

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    /// Open row, or `NONE`.
    open: u32,
    /// Hits the open row has taken since its activate.
    hits: u32,
    /// Earliest activate (bank precharged).
    act_ok: u64,
    /// Earliest precharge (row open).
    pre_ok: u64,
    /// Earliest column command.
    col_ok: u64,
    /// Refreshes of its rank it has seen (a refresh closes the row).
    epoch: u64,
}

/// Activates of a rank or bank group a new one may be placed between (as
/// [`BUS_WINDOW`] for bursts). Assumed.
pub const ACT_WINDOW: usize = 32;

/// The recent activates (or column commands) of a rank or bank group, sorted.
#[derive(Clone, Debug, Default)]
struct Acts {
    times: Window<u64>,
    /// No activate before this (the activates that left the window).
    floor: u64,
}

impl Acts {
    /// `s` if an activate at `s` keeps `spacing` from every recorded one and (with
    /// `faw` > 0) is at least `faw` after the fourth before it; else a later candidate.
    #[inline(always)]
    fn check(&self, s: u64, spacing: u64, faw: u64) -> u64 {
        let s = s.max(self.floor);
        let v = self.times.items();
        let i = sorted_position(v, s);
        if i > 0 && v[i - 1] + spacing > s {
            return v[i - 1] + spacing;
        }
        if i < v.len() && s + spacing > v[i] {
            return v[i] + spacing;
        }
        if faw > 0 && i >= 4 && v[i - 4] + faw > s {
            return v[i - 4] + faw;
        }
        s
    }

    /// For `s` at or after the last recorded time (and at least one recorded): the
    /// earliest time from `s` that [`Acts::check`] leaves where it is, `max(s, last +
    /// spacing, fourth last + faw)`; `None` otherwise. Why that is the fixpoint: from a
    /// time at or after every recorded one, `check` finds position `len`, so it can only
    /// be held off by the last time (`spacing`) and the fourth last (`faw`), both lower
    /// bounds, and returns the bound it breaks; a time at or after both passes. (Speed
    /// only: the common case of a request later than every activate before it.)
    #[inline(always)]
    fn after_last(&self, s: u64, spacing: u64, faw: u64) -> Option<u64> {
        let last = self.times.last()?;
        if s < last {
            return None;
        }
        // The floor (the largest time that left the window) is at most every recorded
        // time (`record` keeps the window sorted and drops its first, smallest, time;
        // every later time was placed at or after the floor by `check`), so `s` is past it.
        let mut a = s.max(last + spacing);
        if faw > 0 && self.times.len() >= 4 {
            a = a.max(self.times.nth_back(3) + faw);
        }
        Some(a)
    }

    /// The time the loop of [`Acts::check`] and [`Refresh::free`] from `s` ends at
    /// (`check`, then `free`, until neither moves it), in one pass that walks the window
    /// from the time's position instead of searching it again every round. The same
    /// time: each step moves only past times that break the constraint it checks (a
    /// time less than `spacing` after an earlier activate or before a later one, one
    /// whose fourth-before activate is at least `v[i-4]`, one inside a refresh), so both
    /// find the earliest time from `s` (and the floor) that breaks none. Returns it and
    /// its position in the window (`items().partition_point(|&a| a <= time)`).
    #[inline(never)]
    fn place(&self, s: u64, spacing: u64, faw: u64, rf: &mut Refresh, t: &Timing) -> (u64, usize) {
        let v = self.times.items();
        let mut s = s.max(self.floor);
        let mut i = v.partition_point(|&a| a <= s);
        loop {
            // `spacing` after the activate before; then past every later one closer
            // than `spacing` (the activates are sorted, so after the walk `v[i]` is the
            // first later than `s`, and `v[i - 1]` at least `spacing` before it).
            if i > 0 {
                s = s.max(v[i - 1] + spacing);
            }
            while i < v.len() && s + spacing > v[i] {
                s = s.max(v[i] + spacing);
                i += 1;
            }
            if faw > 0 && i >= 4 && v[i - 4] + faw > s {
                s = v[i - 4] + faw;
                continue;
            }
            let f = rf.free(s, t);
            if f == s {
                return (s, i);
            }
            s = f;
        }
    }

    #[inline(always)]
    fn record(&mut self, s: u64) {
        self.make_room();
        self.times.insert_sorted(s);
    }

    /// [`Acts::record`] of time `s` at position `i` of the window (as [`Acts::place`]
    /// gives).
    #[inline(always)]
    fn record_at(&mut self, s: u64, i: usize) {
        debug_assert_eq!(self.times.items().partition_point(|&a| a <= s), i);
        let full = self.times.len() == ACT_WINDOW;
        self.make_room();
        // The time that left was the first; it lay before `s` when `i` > 0.
        self.times.insert(if full && i > 0 { i - 1 } else { i }, s);
    }

    /// [`Acts::record`] of a time at or after every recorded one (as
    /// [`Acts::after_last`] gives): an append.
    #[inline(always)]
    fn record_last(&mut self, s: u64) {
        debug_assert!(!matches!(self.times.last(), Some(l) if l > s));
        self.make_room();
        self.times.push(s);
    }

    /// Drops the oldest time of a full window.
    #[inline(always)]
    fn make_room(&mut self) {
        if self.times.len() == ACT_WINDOW {
            let old = self.times.pop_front();
            self.floor = self.floor.max(old);
        }
    }
}

/// The first position in sorted `v` whose time is after `s` (`v.partition_point(|&a| a
/// <= s)`), answered at once in the common case of a time after every recorded one.
#[inline(always)]
fn sorted_position(v: &[u64], s: u64) -> usize {
    match v.last() {
        Some(&l) if l > s => v.partition_point(|&a| a <= s),
        _ => v.len(),
    }
}

#[derive(Clone, Debug, Default)]
struct Group {
    /// Its activates (tRRD_L).
    acts: Acts,
    /// Its column commands (tCCD_L).
    cols: Acts,
}

#[derive(Clone, Debug, Default)]
struct Rank {
    /// Its activates (tRRD, tFAW).
    acts: Acts,
    /// End of the last write data (tWTR).
    wr_end: u64,
    /// Its refresh schedule.
    rf: Refresh,
}

/// Bursts on a channel's data bus a request may be placed between: the data bus as a
/// controller with this many requests in flight sees it. Assumed; DRAMsim3's default
/// transaction queue is 32 deep.
pub const BUS_WINDOW: usize = 32;

// A window's array holds the largest window (a channel's holds one burst more than
// `BUS_WINDOW` between its insert and its removal) with room to spare (window.rs).
const _: () = assert!(BUS_WINDOW + 1 < window::CAP && ACT_WINDOW < window::CAP);

#[derive(Clone, Copy, Debug, Default)]
struct Burst {
    start: u64,
    end: u64,
    rank: u32,
}

#[derive(Clone, Debug, Default)]
struct Channel {
    /// The last `BUS_WINDOW` bursts placed, sorted by start.
    busy: Window<Burst>,
    /// No burst starts before this (the end of the bursts that left the window).
    floor: u64,
}

impl Channel {
    /// The first start at or after `ready` where a burst of `len` by `rank` fits on the
    /// bus (`sw` cycles apart from another rank's bursts), and where to record it.
    #[inline]
    fn find(&self, ready: u64, len: u64, rank: u32, sw: u64) -> (u64, usize) {
        let mut s = ready.max(self.floor);
        // Bursts that end more than `sw` before `s` can neither hold the new one off nor
        // leave it a gap (they start before `s`): skip them. The bursts do not overlap
        // and are sorted by start, so by end too, and they form a prefix. (Speed only:
        // the scan below from the first burst gives the same answer.)
        let busy = self.busy.items();
        let skip = match busy.last() {
            Some(l) if l.end + sw >= s => busy.partition_point(|b| b.end + sw < s),
            _ => busy.len(),
        };
        for (i, b) in busy.iter().enumerate().skip(skip) {
            let gap = if b.rank != rank { sw } else { 0 };
            if s + len + gap <= b.start {
                return (s, i);
            }
            s = s.max(b.end + gap);
        }
        (s, busy.len())
    }

    /// `find`'s answer when the bus is idle from `ready` on: every burst ends more than
    /// `sw` before it, so none holds it off or lies after it (and the floor, the end of
    /// a burst that left the window, is at most the last burst's end); `None` otherwise
    /// (and with no burst recorded).
    #[inline(always)]
    fn idle_from(&self, ready: u64, sw: u64) -> Option<(u64, usize)> {
        let last = self.busy.last()?;
        (last.end + sw < ready).then_some((ready, self.busy.len()))
    }

    /// Reserves the slot `find` returned.
    #[inline]
    fn reserve(&mut self, (start, at): (u64, usize), len: u64, rank: u32) {
        let b = Burst {
            start,
            end: start + len,
            rank,
        };
        if at == self.busy.len() {
            self.busy.push(b);
        } else {
            self.busy.insert(at, b);
        }
        if self.busy.len() > BUS_WINDOW {
            let old = self.busy.pop_front();
            self.floor = self.floor.max(old.end);
        }
    }
}

/// How a request found its bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOutcome {
    /// The row was open.
    Hit,
    /// The bank was precharged (closed).
    Miss,
    /// Another row was open.
    Conflict,
}

/// The DRAM model's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DramStats {
    /// Read (fill) requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Requests that found their row open.
    pub row_hits: u64,
    /// Requests that found their bank closed.
    pub row_misses: u64,
    /// Requests that found another row open.
    pub row_conflicts: u64,
    /// Requests per bank, index `((ch * ranks + ra) * bank_groups + bg) * banks_per_group + ba`.
    pub per_bank: Vec<u64>,
    /// Requests per rank, index `ch * ranks + ra`.
    pub per_rank: Vec<u64>,
    /// Bytes moved.
    pub bytes: u64,
    /// Requests whose address lay at or above the capacity (decoded modulo it).
    pub beyond_capacity: u64,
    /// Sum of read latencies, DRAM cycles.
    pub read_latency: u64,
    /// Sum of write latencies, DRAM cycles.
    pub write_latency: u64,
    /// Earliest arrival, DRAM cycles (`u64::MAX` before the first request).
    pub first_arrival: u64,
    /// Latest end of a data burst, DRAM cycles.
    pub last_end: u64,
}

impl DramStats {
    /// Requests served.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes
    }
    /// Row hits per request (0 with none).
    pub fn row_hit_rate(&self) -> f64 {
        ratio(self.row_hits, self.requests())
    }
    /// Cycles from the first arrival to the end of the last burst.
    pub fn span(&self) -> u64 {
        self.last_end.saturating_sub(self.first_arrival)
    }
    /// Bytes per nanosecond (GB/s) over the span, at `clock_mhz`.
    pub fn bandwidth_gbs(&self, clock_mhz: f64) -> f64 {
        let ns = self.span() as f64 * 1e3 / clock_mhz;
        if ns > 0.0 {
            self.bytes as f64 / ns
        } else {
            0.0
        }
    }
    /// Mean latency of all requests, DRAM cycles.
    pub fn mean_latency(&self) -> f64 {
        ratio(self.read_latency + self.write_latency, self.requests())
    }
    /// Mean latency of reads, DRAM cycles.
    pub fn mean_read_latency(&self) -> f64 {
        ratio(self.read_latency, self.reads)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The DRAM model (see the module doc).
#[derive(Clone, Debug)]
pub struct Dram {
    spec: DramSpec,
    t: Timing,
    cap: u32,
    /// DRAM cycles per core cycle.
    dram_per_core: f64,
    /// Core-cycle times below this convert to DRAM cycles by the signed conversions
    /// alone ([`Dram::to_dram`]); 0 for a clock ratio outside (0, 1024].
    at_signed_below: u64,
    banks: Vec<Bank>,
    groups: Vec<Group>,
    ranks: Vec<Rank>,
    chans: Vec<Channel>,
    /// Rows closed by conflicts, for row-hit-first reordering (sched.rs).
    reorder: sched::Reorder,
    /// Whether a bank group's activates constrain anything its rank's do not. Not with
    /// one group per rank and tRRD_L no longer than tRRD: the group's window then holds
    /// exactly the rank's activates (both record each one), and a time that keeps tRRD
    /// (and tFAW) from them keeps tRRD_L too. The placement takes the earliest time that
    /// meets every constraint (each check moves a candidate only past times that break
    /// one), so leaving out a constraint that never binds changes no time (speed only;
    /// `tests/dram_digest.rs` pins the Pi 5 profiles, which have this shape).
    group_acts: bool,
    /// [`MemoryBackend::access`]'s conversion of a latency below [`LAT_TABLE`] DRAM
    /// cycles to core cycles, computed by that same expression once per value (speed
    /// only: a table read instead of a division and a rounding per request).
    lat_core: Box<[u32]>,
    stats: DramStats,
}

/// DRAM-cycle latencies whose core-cycle conversion [`Dram`] keeps in a table (a
/// request's latency is nearly always below it; longer ones are converted as before).
const LAT_TABLE: usize = 1024;

/// A latency of `lat` DRAM cycles in core cycles (rounded up), at `dram_per_core` DRAM
/// cycles per core cycle.
#[inline(always)]
fn lat_to_core(lat: u64, dram_per_core: f64) -> u64 {
    ceil_u64(to_f64(lat) / dram_per_core)
}

impl Dram {
    /// A model of `spec` whose requesters run at `core_mhz` ([`MemoryBackend::access`]
    /// takes and returns core cycles; [`Dram::access_dram`] works in DRAM cycles).
    pub fn new(spec: DramSpec, core_mhz: f64) -> Self {
        let nr = (spec.channels * spec.ranks) as usize;
        let ng = nr * spec.bank_groups as usize;
        let nb = ng * spec.banks_per_group as usize;
        let bank = Bank {
            open: NONE,
            ..Bank::default()
        };
        Dram {
            t: spec.timing,
            cap: spec.policy.hit_cap(),
            dram_per_core: spec.clock_mhz / core_mhz,
            at_signed_below: {
                let dpc = spec.clock_mhz / core_mhz;
                if dpc > 0.0 && dpc <= 1024.0 {
                    1 << 52
                } else {
                    0
                }
            },
            banks: vec![bank; nb],
            groups: vec![Group::default(); ng],
            ranks: (0..nr)
                .map(|i| {
                    let off = (i as u64 % spec.ranks as u64 + 1) * spec.timing.trefi / spec.ranks as u64;
                    Rank {
                        rf: Refresh::new(off, &spec.timing),
                        ..Rank::default()
                    }
                })
                .collect(),
            chans: vec![Channel::default(); spec.channels as usize],
            reorder: sched::Reorder::new(nb),
            group_acts: spec.bank_groups > 1 || spec.timing.trrd_l > spec.timing.trrd,
            lat_core: {
                let dpc = spec.clock_mhz / core_mhz;
                (0..LAT_TABLE as u64)
                    .map(|l| u32::try_from(lat_to_core(l, dpc)).unwrap_or(u32::MAX))
                    .collect()
            },
            stats: DramStats {
                per_bank: vec![0; nb],
                per_rank: vec![0; nr],
                first_arrival: u64::MAX,
                ..DramStats::default()
            },
            spec,
        }
    }

    /// Core cycle `at` in DRAM cycles: `to_u64(to_f64(at) * dram_per_core)`, by the
    /// signed conversions alone (one instruction each on x86-64) when `at` < 2^52 and the
    /// ratio lies in (0, 1024] (`at_signed_below`): then `at` < 2^63 converts exactly
    /// either way, and the product is positive and below 2^62, where `to_u64` takes the
    /// signed conversion too (the same value; speed only).
    #[inline(always)]
    fn to_dram(&self, at: u64) -> u64 {
        if at < self.at_signed_below {
            (at as i64 as f64 * self.dram_per_core) as i64 as u64
        } else {
            to_u64(to_f64(at) * self.dram_per_core)
        }
    }

    /// The profile it runs.
    pub fn spec(&self) -> &DramSpec {
        &self.spec
    }

    /// Its counters.
    pub fn stats(&self) -> &DramStats {
        &self.stats
    }

    /// Serves one request of `pa` arriving at DRAM cycle `at`; returns its latency in
    /// DRAM cycles (arrival to the end of its data) and how it found its row.
    #[inline]
    pub fn access_dram(&mut self, pa: u64, write: bool, at: u64) -> (u64, RowOutcome) {
        let t = &self.t;
        let s = &self.spec;
        if pa >> s.map.top_bit() != 0 {
            self.stats.beyond_capacity += 1;
        }
        let l = s.map.decode(pa);
        let ri = (l.ch * s.ranks + l.ra) as usize;
        let gi = ri * s.bank_groups as usize + l.bg as usize;
        let bi = gi * s.banks_per_group as usize + l.ba as usize;
        let b = &mut self.banks[bi];
        let g = &mut self.groups[gi];
        let r = &mut self.ranks[ri];
        let c = &mut self.chans[l.ch as usize];

        // Refreshes of the rank started by the time the bank could next act on this
        // request (none without refresh: `trefi` 0).
        let est = at.max(b.col_ok);
        if t.trefi > 0 {
            let n = r.rf.refreshes_by(est, t);
            if n != b.epoch {
                b.epoch = n;
                b.open = NONE;
                b.act_ok = b.act_ok.max(r.rf.ref_off + (n - 1) * t.trefi + t.trfc);
            }
        }
        // A row a conflict closed after this request arrived: FR-FCFS would have served
        // it first (sched.rs); the bank's later work moves one column slot later.
        let col_slot = t.tburst.max(t.tccd_l);
        let joined = if b.open != l.ro {
            self.reorder.join(bi, l.ro, at, col_slot)
        } else {
            None
        };
        let (outcome, mut cmd) = if let Some((col, _)) = joined {
            b.act_ok += col_slot;
            b.pre_ok += col_slot;
            b.col_ok += col_slot;
            (RowOutcome::Hit, col)
        } else if b.open == l.ro {
            b.hits += 1;
            (RowOutcome::Hit, at.max(b.col_ok))
        } else {
            let (outcome, earliest) = if b.open == NONE {
                (RowOutcome::Miss, at.max(b.act_ok))
            } else {
                // Precharge no earlier than tRAS/tRTP/tWR allow, then tRP.
                let pre = at.max(b.pre_ok).max(b.col_ok);
                self.reorder.closed(bi, b.open, pre, b.col_ok.saturating_sub(1));
                (RowOutcome::Conflict, pre + t.trp)
            };
            // The first time from `earliest` that meets tRRD and tFAW in the rank,
            // tRRD_L in the group and misses refresh (each step only moves later).
            let act = if self.group_acts {
                let mut act = earliest;
                loop {
                    let next = r.acts.check(act, t.trrd, t.tfaw);
                    let next = g.acts.check(next, t.trrd_l, 0);
                    let next = r.rf.free(next, t);
                    if next == act {
                        break;
                    }
                    act = next;
                }
                r.acts.record(act);
                g.acts.record(act);
                act
            } else if let Some(a) = r.acts.after_last(earliest, t.trrd, t.tfaw) {
                let act = r.rf.free(a, t);
                // At or after the last recorded activate: appended.
                r.acts.record_last(act);
                act
            } else {
                let (act, i) = r.acts.place(earliest, t.trrd, t.tfaw, &mut r.rf, t);
                r.acts.record_at(act, i);
                act
            };
            b.open = l.ro;
            b.hits = 0;
            b.pre_ok = act + t.tras;
            (outcome, act + t.trcd)
        };
        if !write {
            cmd = cmd.max(r.wr_end + t.twtr);
        }
        // The first column command time from `cmd` that keeps tCCD_L from the group's
        // other column commands, misses refresh, and finds its data a slot on the bus.
        let lat = if write { t.cwl } else { t.cl };
        // The common case, a command after the group's last one whose data finds the
        // bus idle: the loop below would stop after its first round (`check` from a time
        // after every recorded one returns at most `last + tCCD_L`, which passes; an
        // idle bus takes the burst when its data is ready), with these values.
        let fast = g.cols.after_last(cmd, t.tccd_l, 0).and_then(|next| {
            let next = r.rf.free(next, t);
            c.idle_from(next + lat, t.trtrs).map(|slot| (next, slot))
        });
        let slot = if let Some((next, slot)) = fast {
            cmd = next;
            // At or after the group's last column command: appended.
            g.cols.record_last(cmd);
            slot
        } else {
            let slot = loop {
                let next = r.rf.free(g.cols.check(cmd, t.tccd_l, 0), t);
                let slot = c.find(next + lat, t.tburst, ri as u32, t.trtrs);
                cmd = slot.0 - lat;
                if cmd == next {
                    break slot;
                }
            };
            g.cols.record(cmd);
            slot
        };
        c.reserve(slot, t.tburst, ri as u32);
        if let Some((_, k)) = joined {
            self.reorder.placed(bi, k, cmd);
        }
        let end = slot.0 + t.tburst;
        b.col_ok = b.col_ok.max(cmd + 1);
        b.pre_ok = b.pre_ok.max(if write { end + t.twr } else { cmd + t.trtp });
        if write {
            r.wr_end = r.wr_end.max(end);
        }
        if b.hits >= self.cap {
            // Auto-precharge as soon as the bank allows it.
            b.open = NONE;
            b.act_ok = b.pre_ok + t.trp;
        }

        let st = &mut self.stats;
        let latency = end - at;
        match outcome {
            RowOutcome::Hit => st.row_hits += 1,
            RowOutcome::Miss => st.row_misses += 1,
            RowOutcome::Conflict => st.row_conflicts += 1,
        }
        if write {
            st.writes += 1;
            st.write_latency += latency;
        } else {
            st.reads += 1;
            st.read_latency += latency;
        }
        st.per_bank[bi] += 1;
        st.per_rank[ri] += 1;
        st.bytes += s.burst_bytes;
        st.first_arrival = st.first_arrival.min(at);
        st.last_end = st.last_end.max(end);
        (latency, outcome)
    }
}

/// `x as f64`, by the signed conversion (one instruction on x86-64; the unsigned one is
/// a sequence) when `x` < 2^63: the same integer rounded the same way (speed only).
#[inline(always)]
fn to_f64(x: u64) -> f64 {
    if (x as i64) >= 0 {
        x as i64 as f64
    } else {
        x as f64
    }
}

/// `q as u64` (truncating, saturating, NaN to 0), by the signed conversion when
/// 0 <= `q` < 2^63, where both truncate to the same integer (speed only).
#[inline(always)]
fn to_u64(q: f64) -> u64 {
    if (0.0..9_223_372_036_854_775_808.0).contains(&q) {
        q as i64 as u64
    } else {
        q as u64
    }
}

/// `q.ceil() as u64` without the library call `f64::ceil` is on the baseline x86-64
/// target (no SSE4.1 rounding instruction): the truncation, plus one if it lies below
/// `q`. The same value for every `q`: a fraction rounds up; an integer (every `f64` of
/// 2^52 or more is one) stays; at or above 2^64 both saturate to `u64::MAX`; NaN and
/// negatives give 0 both ways (speed only; tested below).
#[inline(always)]
fn ceil_u64(q: f64) -> u64 {
    let t = to_u64(q);
    if to_f64(t) < q {
        t.saturating_add(1)
    } else {
        t
    }
}

impl MemoryBackend for Dram {
    /// Converts `req.at` to DRAM cycles, serves the request, and returns its latency in
    /// core cycles (rounded up).
    #[inline]
    fn access(&mut self, req: &MemReq) -> u64 {
        let at = self.to_dram(req.at);
        let (lat, _) = self.access_dram(req.pa, req.write, at);
        match self.lat_core.get(lat as usize) {
            // A table entry saturated at u32::MAX (a clock ratio no profile has) is
            // converted again.
            Some(&c) if c != u32::MAX => c as u64,
            _ => lat_to_core(lat, self.dram_per_core),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests;
