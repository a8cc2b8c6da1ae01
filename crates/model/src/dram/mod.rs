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

mod bank;
mod bus;
pub mod config;
pub mod mapping;
pub mod profile;
mod rank;
mod refresh;
mod ring;
mod sched;
pub mod stream;
mod writes;

pub use config::{DramConfig, DramSpec, RowPolicy, Timing, TimingConfig};
pub use mapping::{AddressMap, Loc};
pub use sched::{JOIN_CAP, ROWS as REORDER_ROWS};

use crate::mem::backend::{MemReq, MemoryBackend};
use bank::{Bank, BankIndex};
use bus::Channel;
use rank::{Group, Rank};

const NONE: u32 = u32::MAX;

/// Activates of a rank or bank group a new one may be placed between (as
/// [`BUS_WINDOW`] for bursts). Assumed.
pub const ACT_WINDOW: usize = ring::N;

/// Bursts on a channel's data bus a request may be placed between: the data bus as a
/// controller with this many requests in flight sees it. Assumed; DRAMsim3's default
/// transaction queue is 32 deep.
pub const BUS_WINDOW: usize = ring::N;

/// Writes waiting in a channel's buffer above which an idle data bus starts a drain
/// (DRAMsim3's `write_buffer_.size() > 8 && cmd_queue_.QueueEmpty()`).
pub const WRITE_IDLE_DRAIN: usize = 8;

/// Where the model's own clock starts: a request arriving at DRAM cycle `at` is placed
/// at `ORIGIN + at`, and every ready time starts at `ORIGIN` (the image of time 0), so
/// the whole placement is the one from 0 shifted by `ORIGIN` (every rule compares times
/// or adds a timing to one; a latency is a difference; the counters' times are shifted
/// back). What the shift buys: the activate and bus windows start filled with sentinels
/// at time 0, which lie more than any timing (below 2^32 cycles) before every real time
/// and so never bind (ring.rs, rank.rs, bus.rs), and need no emptiness tests. Arrivals
/// are below 2^63 (core cycles times a clock ratio of at most 1024, far beyond any run),
/// so the shifted times do not overflow.
pub(crate) const ORIGIN: u64 = 1 << 40;

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
    /// DRAM cycles activates waited, summed, past the time their bank allowed them: for
    /// tRRD and tFAW in the rank, tRRD_L in the bank group, and refresh (the rank-level
    /// limits on how fast rows open; a request that needs no activate adds nothing).
    pub act_wait_cycles: u64,
    /// DRAM cycles reads waited, summed, for tWTR after their rank's last write burst.
    pub wtr_wait_cycles: u64,
    /// Times a channel's write buffer was drained (full, idle bus, or end of stream).
    pub write_drains: u64,
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
    /// DRAM cycles per core cycle.
    dram_per_core: f64,
    /// Core-cycle times below this convert to DRAM cycles by the signed conversions
    /// alone ([`Dram::to_dram`]); 0 for a clock ratio outside (0, 1024].
    at_signed_below: u64,
    /// How an address finds its bank record (bank.rs).
    index: BankIndex,
    /// The bank count less one: the counts are powers of two (config.rs), so the bank
    /// records' indices are those below it in its bits. The index `locate` gives is one
    /// (bank.rs, tested against the full decode for every profile), so masking it
    /// changes nothing; the mask is what proves the bank's index in bounds.
    bank_mask: usize,
    /// Per bank: its state, its rows closed by conflicts (sched.rs), its count and the
    /// indices of its rank, group and channel records.
    banks: Vec<Bank>,
    ranks: Vec<Rank>,
    /// Everything else a request's placement uses.
    c: Ctx,
    /// [`MemoryBackend::access`]'s conversion of a latency below [`LAT_TABLE`] DRAM
    /// cycles to core cycles, computed by that same expression once per value (speed
    /// only: a table read instead of a division and a rounding per request).
    lat_core: Box<[u32]>,
    /// Per channel: the writes waiting in its buffer (address, arrival), in arrival
    /// order; empty with no buffer (`write_queue` = 0).
    wq: Vec<Vec<(u64, u64)>>,
    /// The writes drains released and the model has not yet placed (writes.rs).
    released: writes::ReleasedWrites,
    /// Buffer entries per channel (0: none).
    wq_cap: usize,
}

/// The part of [`Dram`] a request's placement uses besides its bank and rank records.
#[derive(Clone, Debug)]
struct Ctx {
    t: Timing,
    cap: u32,
    /// Whether a bank group's activates constrain anything its rank's do not. Not with
    /// one group per rank and tRRD_L no longer than tRRD: the group's window then holds
    /// exactly the rank's activates (both record each one), and a time that keeps tRRD
    /// (and tFAW) from them keeps tRRD_L too. The placement takes the earliest time that
    /// meets every constraint (each check moves a candidate only past times that break
    /// one), so leaving out a constraint that never binds changes no time (speed only;
    /// `tests/it/dram_digest.rs` pins the Pi 5 profiles, which have this shape).
    group_acts: bool,
    /// tBURST + tRTRS, for [`Channel::idle_from`].
    idle_gap: u64,
    /// Read to write turnaround: the least time from a read's column command to a later
    /// write's on the rank, CL + tBURST + tRTRS - CWL (DRAMsim3's `read_to_write`), for
    /// [`Rank::read_between_writes`].
    rtw: u64,
    groups: Vec<Group>,
    chans: Vec<Channel>,
    n: Counters,
}

/// The counters a request updates (the per-bank and per-rank ones are in the records;
/// [`Dram::stats`] gathers them, and takes the latest end of a burst from the channels). Times are the model's (shifted by [`ORIGIN`]).
#[derive(Clone, Debug)]
struct Counters {
    /// Requests that found their row open, and their bank closed (the others found
    /// another row open: [`Dram::stats`] counts them as the rest, so that the common
    /// case, a conflict, counts nothing here).
    hits: u64,
    misses: u64,
    /// Reads and writes.
    rw: [u64; 2],
    /// Sum of latencies of reads and of writes.
    lat: [u64; 2],
    beyond_capacity: u64,
    first_arrival: u64,
    /// [`DramStats::act_wait_cycles`], [`DramStats::wtr_wait_cycles`],
    /// [`DramStats::write_drains`].
    act_wait: u64,
    wtr_wait: u64,
    drains: u64,
}

/// DRAM-cycle latencies whose core-cycle conversion [`Dram`] keeps in a table (a
/// request's latency is nearly always below it; longer ones are converted as before).
const LAT_TABLE: usize = 4096;

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
        let dpc = spec.clock_mhz / core_mhz;
        Dram {
            dram_per_core: dpc,
            at_signed_below: if dpc > 0.0 && dpc <= 1024.0 { 1 << 52 } else { 0 },
            banks: {
                let index = BankIndex::new(&spec);
                (0..nb).map(|bi| Bank::new(bi, &index)).collect()
            },
            index: BankIndex::new(&spec),
            bank_mask: nb - 1,
            ranks: (0..nr)
                .map(|i| {
                    let off = (i as u64 % spec.ranks as u64 + 1) * spec.timing.trefi / spec.ranks as u64;
                    Rank::new(ORIGIN + off, &spec.timing)
                })
                .collect(),
            // Empty if a value does not fit in 32 bits (a clock ratio no profile has).
            lat_core: (0..LAT_TABLE as u64)
                .map(|l| u32::try_from(lat_to_core(l, dpc)))
                .collect::<Result<_, _>>()
                .unwrap_or_default(),
            wq: vec![Vec::with_capacity(spec.write_queue as usize); spec.channels as usize],
            wq_cap: spec.write_queue as usize,
            released: writes::ReleasedWrites::new(spec.channels as usize, nb, spec.write_queue as usize),
            c: Ctx {
                t: spec.timing,
                cap: spec.policy.hit_cap(),
                group_acts: spec.bank_groups > 1 || spec.timing.trrd_l > spec.timing.trrd,
                idle_gap: spec.timing.tburst + spec.timing.trtrs,
                rtw: (spec.timing.cl + spec.timing.tburst + spec.timing.trtrs).saturating_sub(spec.timing.cwl),
                groups: vec![Group::default(); ng],
                chans: vec![Channel::default(); spec.channels as usize],
                n: Counters {
                    hits: 0,
                    misses: 0,
                    rw: [0; 2],
                    lat: [0; 2],
                    beyond_capacity: 0,
                    first_arrival: u64::MAX,
                    act_wait: 0,
                    wtr_wait: 0,
                    drains: 0,
                },
            },
            spec,
        }
    }

    /// Core cycle `at` in DRAM cycles: `to_u64(to_f64(at) * dram_per_core)`, by the
    /// signed conversions alone (one instruction each on x86-64) when `at` < 2^52 and the
    /// ratio lies in (0, 1024] (`at_signed_below`): then `at` < 2^63 converts exactly
    /// either way, and the product is positive and at most 2^62 (finite, not NaN), where
    /// `to_u64` takes the signed conversion too and that conversion neither saturates
    /// nor sees NaN, so its checks for those can go (the same value; speed only).
    #[inline(always)]
    fn to_dram(&self, at: u64) -> u64 {
        if at < self.at_signed_below {
            let q = at as i64 as f64 * self.dram_per_core;
            // SAFETY: `q` is finite and lies in [0, 2^62] (above), so its truncation
            // fits in an i64, as `to_int_unchecked` requires.
            unsafe { q.to_int_unchecked::<i64>() as u64 }
        } else {
            to_u64(to_f64(at) * self.dram_per_core)
        }
    }

    /// The profile it runs.
    pub fn spec(&self) -> &DramSpec {
        &self.spec
    }

    /// Its counters (gathered from the bank and rank records).
    pub fn stats(&self) -> DramStats {
        let n = &self.c.n;
        let requests = n.rw[0] + n.rw[1];
        DramStats {
            reads: n.rw[0],
            writes: n.rw[1],
            row_hits: n.hits,
            row_misses: n.misses,
            row_conflicts: requests - n.hits - n.misses,
            per_bank: self.banks.iter().map(|b| b.requests).collect(),
            per_rank: {
                // A rank's requests are its banks' (bank `bi` names its rank).
                let mut v = vec![0; self.ranks.len()];
                for b in &self.banks {
                    v[b.rank as usize] += b.requests;
                }
                v
            },
            bytes: requests * self.spec.burst_bytes,
            beyond_capacity: n.beyond_capacity,
            read_latency: n.lat[0],
            write_latency: n.lat[1],
            act_wait_cycles: n.act_wait,
            wtr_wait_cycles: n.wtr_wait,
            write_drains: n.drains,
            first_arrival: if requests > 0 {
                n.first_arrival - ORIGIN
            } else {
                u64::MAX
            },
            // The latest end of a burst: every request's burst ends tBURST after its
            // start, and a channel's newest burst starts after every other it placed
            // (bus.rs), at or after `ORIGIN` once it has placed one.
            last_end: match self.c.chans.iter().map(Channel::last_start).max() {
                Some(s) if requests > 0 => s + self.spec.timing.tburst - ORIGIN,
                _ => 0,
            },
        }
    }

    /// Serves one request of `pa` arriving at DRAM cycle `at`; returns its latency in
    /// DRAM cycles (arrival to the end of its data) and how it found its row.
    pub fn access_dram(&mut self, pa: u64, write: bool, at: u64) -> (u64, RowOutcome) {
        self.serve(pa, write, ORIGIN + at)
    }

    /// [`Dram::access_dram`] at model time `at` (>= [`ORIGIN`]): straight through
    /// without a write buffer, else through it (writes.rs).
    #[inline(always)]
    fn serve(&mut self, pa: u64, write: bool, at: u64) -> (u64, RowOutcome) {
        if self.wq_cap == 0 {
            return self.serve_now(pa, write, at);
        }
        self.serve_buffered(pa, write, at)
    }

    /// Places one request now: the straight path, with the rare cases (a refresh
    /// closing the row, a joined row, an out-of-order activate, a busy bus, bank
    /// groups) in functions of their own.
    #[inline(always)]
    fn serve_now(&mut self, pa: u64, write: bool, at: u64) -> (u64, RowOutcome) {
        let (bi, row) = self.index.locate(pa, &self.spec.map);
        self.serve_located(pa, bi, row, write, at)
    }

    /// [`Dram::serve_now`] of `pa`, already located in bank `bi`, row `row`.
    #[inline(always)]
    fn serve_located(&mut self, pa: u64, bi: usize, row: u32, write: bool, at: u64) -> (u64, RowOutcome) {
        if pa & self.index.beyond != 0 {
            self.c.n.beyond_capacity += 1;
        }
        // SAFETY: masked below `banks.len()`, a power of two (`bank_mask`).
        let b = unsafe { self.banks.get_unchecked_mut(bi & self.bank_mask) };
        // SAFETY: a bank's rank index is below the rank count (`parent`).
        let r = unsafe { parent(&mut self.ranks, b.rank) };
        let t = &self.c.t;
        // Refreshes of the rank started by the time the bank could next act on this
        // request (none without refresh: `refreshes_by` is then 0, as `epoch` stays).
        let n = r.rf.refreshes_by(at.max(b.col_ok), t);
        if n != b.epoch {
            b.refreshed(n, r.rf.ref_off, t);
        }
        if b.open != row && b.rows.holds(row) {
            // It may join a row closed after it arrived (rare).
            return place_joining(&mut self.c, b, r, row, write, at);
        }
        place::<false>(&mut self.c, b, r, row, write, at)
    }
}

/// The record of a bank's rank, group or channel: `v[i]` without a bounds check.
///
/// # Safety
/// `i` must be below `v.len()`. It is for the `rank`, `group` and `chan` of a bank
/// record and the vectors `Dram::ranks`, `Ctx::groups` and `Ctx::chans`: `Bank::new`
/// takes them from `BankIndex::parents` of a bank index below the bank count, which
/// shifts out the bank, group and rank bits of that index (all counts are powers of
/// two, config.rs), giving indices below the group, rank and channel counts, the
/// lengths `Dram::new` gives those vectors (never changed; the fields are never
/// written after `Bank::new`).
#[inline(always)]
unsafe fn parent<T>(v: &mut [T], i: u32) -> &mut T {
    debug_assert!((i as usize) < v.len());
    // SAFETY: the caller's promise.
    unsafe { v.get_unchecked_mut(i as usize) }
}

/// [`place`] of a request for a row its bank remembers closing (sched.rs).
#[cold]
#[inline(never)]
fn place_joining(c: &mut Ctx, b: &mut Bank, r: &mut Rank, row: u32, write: bool, at: u64) -> (u64, RowOutcome) {
    place::<true>(c, b, r, row, write, at)
}

/// Places a request for `row` of bank `b` (of rank `r`) arriving at `at`, after its
/// refresh step; returns its latency and how it found its row. With `JOIN` false the
/// caller knows that the bank remembers no closed `row`, so that it joins none.
#[inline(always)]
fn place<const JOIN: bool>(
    c: &mut Ctx,
    b: &mut Bank,
    r: &mut Rank,
    row: u32,
    write: bool,
    at: u64,
) -> (u64, RowOutcome) {
    let Ctx {
        t,
        cap,
        group_acts,
        idle_gap,
        rtw,
        groups,
        chans,
        n,
    } = c;
    let t = &*t;
    let ri = b.rank as usize;
    // SAFETY: a bank's channel index is below the channel count (`parent`).
    let c = unsafe { parent(chans, b.chan) };
    // A row a conflict closed after this request arrived: FR-FCFS would have served
    // it first (sched.rs); the bank's later work moves one column slot later (done
    // by `Bank::join`).
    let joined = if JOIN && b.open != row {
        b.join(row, at, t)
    } else {
        None
    };
    let (outcome, mut cmd) = if let Some((col, _)) = joined {
        n.hits += 1;
        (RowOutcome::Hit, col)
    } else if b.open == row {
        b.hits += 1;
        n.hits += 1;
        (RowOutcome::Hit, at.max(b.col_ok))
    } else {
        let (outcome, earliest) = if b.open == NONE {
            n.misses += 1;
            (RowOutcome::Miss, at.max(b.act_ok))
        } else {
            // Precharge no earlier than tRAS/tRTP/tWR allow, then tRP.
            let pre = at.max(b.pre_ok).max(b.col_ok);
            b.rows.closed(b.open, pre, b.col_ok - 1);
            (RowOutcome::Conflict, pre + t.trp)
        };
        // The first time from `earliest` that meets tRRD and tFAW in the rank,
        // tRRD_L in the group and misses refresh (each step only moves later).
        let act = if *group_acts {
            // SAFETY: a bank's group index is below the group count (`parent`).
            activate_grouped(r, unsafe { parent(groups, b.group) }, earliest, t)
        } else if let Some(a) = r.acts.after_last_faw(earliest, t.trrd, t.tfaw) {
            let act = r.rf.free(a, t);
            // At or after the last recorded activate: appended.
            r.acts.record_last(act);
            act
        } else {
            r.act_late(earliest, t)
        };
        n.act_wait += act - earliest;
        b.open = row;
        b.hits = 0;
        b.pre_ok = act + t.tras;
        (outcome, act + t.trcd)
    };
    if !write && r.wr_end + t.twtr > cmd {
        // Only when the last write's turnaround would hold it: a read may go between
        // writes placed ahead of it (rank.rs).
        let ok = r.read_between_writes(cmd, *rtw, t.twtr);
        n.wtr_wait += ok - cmd;
        cmd = ok;
    }
    // The first column command time from `cmd` that keeps tCCD_L from the group's
    // other column commands, misses refresh, and finds its data a slot on the bus.
    let lat = if write { t.cwl } else { t.cl };
    // SAFETY: as above.
    let g = unsafe { parent(groups, b.group) };
    // The common case, a command after the group's last one whose data finds the
    // bus idle: the loop of `column_slow` would stop after its first round (`check`
    // from a time after every recorded one returns at most `last + tCCD_L`, which
    // passes; an idle bus takes the burst when its data is ready), with these values.
    let start = if let Some(next) = g.cols.after_last(cmd, t.tccd_l) {
        cmd = r.rf.free(next, t);
        let start = if c.idle_from(cmd + lat, *idle_gap) {
            c.reserve_last(cmd + lat, ri as u32);
            cmd + lat
        } else {
            column_bus(r, c, &mut cmd, lat, ri as u32, t)
        };
        // At or after the group's last column command: appended.
        g.cols.record_last(cmd);
        start
    } else {
        let (next, start) = column_slow(g, r, c, cmd, lat, ri as u32, t);
        cmd = next;
        start
    };
    if let Some((_, k)) = joined {
        b.rows.placed(k, cmd);
    }
    let end = start + t.tburst;
    // Each `max` as a compare and a branch to the store (the new time is nearly always
    // the later one): the same value, with one load less.
    if cmd + 1 > b.col_ok {
        b.col_ok = cmd + 1;
    }
    let pre = if write { end + t.twr } else { cmd + t.trtp };
    if pre > b.pre_ok {
        b.pre_ok = pre;
    }
    if write {
        r.record_write(cmd, end);
    }
    if b.hits >= *cap {
        // Auto-precharge as soon as the bank allows it.
        b.open = NONE;
        b.act_ok = b.pre_ok + t.trp;
    }
    b.requests += 1;

    let latency = end - at;
    n.rw[write as usize] += 1;
    n.lat[write as usize] += latency;
    // A compare and a branch (the first arrival is set by the first request, then
    // nearly never moves): the same minimum as `min`, without its load and store.
    if at < n.first_arrival {
        n.first_arrival = at;
    }
    (latency, outcome)
}

/// The activate's time with bank groups: the first time from `earliest` that meets
/// tRRD and tFAW in the rank, tRRD_L in the group and misses refresh (each step only
/// moves later); recorded in both windows.
#[inline(never)]
fn activate_grouped(r: &mut Rank, g: &mut Group, earliest: u64, t: &Timing) -> u64 {
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
}

/// The column command's time from `cmd` (after the group's last column command by at
/// least tCCD_L, outside refresh) when its data finds the bus busy: the loop of
/// [`column_slow`] from the second round on, where `check` returns its time unchanged
/// (a time at least tCCD_L after every recorded column command passes). Moves `cmd`
/// to the time found; reserves the bus slot and returns its start (the reservation
/// here keeps few of the caller's values live across this call: speed only).
#[inline(never)]
fn column_bus(r: &mut Rank, c: &mut Channel, cmd: &mut u64, lat: u64, rank: u32, t: &Timing) -> u64 {
    loop {
        let slot = c.find(*cmd + lat, t.tburst, rank, t.trtrs);
        let next = slot.0 - lat;
        if next == *cmd {
            c.reserve(slot, t.tburst, rank);
            return slot.0;
        }
        *cmd = r.rf.free(next, t);
    }
}

/// The column command's time from `cmd` when it lies before the group's last: the first
/// that keeps tCCD_L from the group's other column commands, misses refresh, and finds
/// its data (`lat` later) a slot on the bus; recorded in the group's window, the slot
/// reserved. Returns it and the slot's start.
#[inline(never)]
fn column_slow(
    g: &mut Group,
    r: &mut Rank,
    c: &mut Channel,
    mut cmd: u64,
    lat: u64,
    rank: u32,
    t: &Timing,
) -> (u64, u64) {
    let slot = loop {
        let next = r.rf.free(g.cols.check(cmd, t.tccd_l, 0), t);
        let slot = c.find(next + lat, t.tburst, rank, t.trtrs);
        cmd = slot.0 - lat;
        if cmd == next {
            break slot;
        }
    };
    g.cols.record(cmd);
    c.reserve(slot, t.tburst, rank);
    (cmd, slot.0)
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

impl Dram {
    /// [`MemoryBackend::access`] of a request for `pa` at core cycle `at`, its fields
    /// passed by value (in registers: the caches call it directly, cache/mod.rs).
    #[inline(never)]
    pub fn access_core(&mut self, pa: u64, write: bool, at: u64) -> u64 {
        let at = ORIGIN + self.to_dram(at);
        let (lat, _) = self.serve(pa, write, at);
        match self.lat_core.get(lat as usize) {
            Some(&c) => c as u64,
            None => lat_to_core(lat, self.dram_per_core),
        }
    }
}

impl MemoryBackend for Dram {
    /// Converts `req.at` to DRAM cycles, serves the request, and returns its latency in
    /// core cycles (rounded up).
    #[inline]
    fn access(&mut self, req: &MemReq) -> u64 {
        self.access_core(req.pa, req.write, req.at)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests;
