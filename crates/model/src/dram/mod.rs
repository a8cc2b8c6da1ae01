//! A fast analytical DRAM model (docs/memory.md, "DRAM"): channels, ranks, bank groups,
//! banks, rows and columns; the address mapping from config ([`mapping`]); open, closed
//! or capped row policy; the main timings. It implements [`MemoryBackend`].
//!
//! Not cycle by cycle: each request is placed in time once, in arrival order, against
//! the ready times the earlier requests left behind —
//! * per bank: the open row, the earliest activate (after a precharge), the earliest
//!   precharge (tRAS after the activate, tRTP after a read, tWR after write data), the
//!   earliest column command;
//! * per bank group: the earliest activate (tRRD_L) and column command (tCCD_L);
//! * per rank: the earliest activate (tRRD) and the last four activates (tFAW), the end
//!   of the last write data (tWTR before a read);
//! * per channel: when the data bus is free, and which rank drove it last (tRTRS).
//!
//! A request's latency is the time from its arrival to the end of its data burst:
//! queueing behind its bank and the bus, plus CL for a row hit, tRCD + CL for a miss
//! (bank closed), tRP + tRCD + CL for a conflict (another row open, precharged no
//! earlier than tRAS after its activate), plus the burst. Bank-level parallelism and bus
//! contention among cores emerge from the ready times. Commands are issued in arrival
//! order (no FR-FCFS reordering) and refresh is not modelled; docs/memory.md compares
//! the result with DRAMsim3.
//!
//! Written here rather than taken from a library: the timing model is the product, and
//! it must run at tens of millions of requests per second inside the simulator.

pub mod config;
pub mod mapping;
pub mod profile;
pub mod stream;

pub use config::{DramConfig, DramSpec, RowPolicy, Timing, TimingConfig};
pub use mapping::{AddressMap, Loc};

use crate::mem::backend::{MemReq, MemoryBackend};

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
}

#[derive(Clone, Copy, Debug, Default)]
struct Group {
    act_ok: u64,
    col_ok: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Rank {
    act_ok: u64,
    /// Earliest activate allowed by tFAW, one per activate in the last four.
    faw: [u64; 4],
    faw_i: usize,
    /// End of the last write data (tWTR).
    wr_end: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Channel {
    bus_free: u64,
    last_rank: u32,
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
    banks: Vec<Bank>,
    groups: Vec<Group>,
    ranks: Vec<Rank>,
    chans: Vec<Channel>,
    stats: DramStats,
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
            banks: vec![bank; nb],
            groups: vec![Group::default(); ng],
            ranks: vec![Rank::default(); nr],
            chans: vec![Channel::default(); spec.channels as usize],
            stats: DramStats {
                per_bank: vec![0; nb],
                per_rank: vec![0; nr],
                first_arrival: u64::MAX,
                ..DramStats::default()
            },
            spec,
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
        let t = self.t;
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

        let (outcome, mut cmd) = if b.open == l.ro {
            b.hits += 1;
            (RowOutcome::Hit, at.max(b.col_ok))
        } else {
            let (outcome, earliest) = if b.open == NONE {
                (RowOutcome::Miss, at.max(b.act_ok))
            } else {
                // Precharge no earlier than tRAS/tRTP/tWR allow, then tRP.
                (RowOutcome::Conflict, at.max(b.pre_ok).max(b.col_ok) + t.trp)
            };
            let act = earliest.max(g.act_ok).max(r.act_ok).max(r.faw[r.faw_i]);
            g.act_ok = act + t.trrd_l;
            r.act_ok = act + t.trrd;
            r.faw[r.faw_i] = act + t.tfaw;
            r.faw_i = (r.faw_i + 1) & 3;
            b.open = l.ro;
            b.hits = 0;
            b.pre_ok = act + t.tras;
            (outcome, act + t.trcd)
        };
        cmd = cmd.max(g.col_ok);
        if !write {
            cmd = cmd.max(r.wr_end + t.twtr);
        }
        let lat = if write { t.cwl } else { t.cl };
        let mut data = cmd + lat;
        let bus = c.bus_free
            + if c.last_rank != ri as u32 && c.bus_free > 0 {
                t.trtrs
            } else {
                0
            };
        if data < bus {
            data = bus;
            cmd = data - lat;
        }
        let end = data + t.tburst;
        c.bus_free = end;
        c.last_rank = ri as u32;
        g.col_ok = cmd + t.tccd_l;
        b.col_ok = cmd + 1;
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

impl MemoryBackend for Dram {
    /// Converts `req.at` to DRAM cycles, serves the request, and returns its latency in
    /// core cycles (rounded up).
    #[inline]
    fn access(&mut self, req: &MemReq) -> u64 {
        let at = (req.at as f64 * self.dram_per_core) as u64;
        let (lat, _) = self.access_dram(req.pa, req.write, at);
        (lat as f64 / self.dram_per_core).ceil() as u64
    }
}

#[cfg(test)]
mod tests;
