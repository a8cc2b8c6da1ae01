//! The DRAM profile as written (serde, unknown keys rejected) and its validation into
//! the resolved [`DramSpec`] the model runs on. Every error names the key at fault and
//! says what to write instead.

use super::mapping::AddressMap;
use crate::error::ModelError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A DRAM profile (docs/config.md, "DRAM profiles"): geometry, address mapping, row
/// policy and timings. Timings are in DRAM clock cycles (`clock_mhz`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// A short name, e.g. `lpddr4x-4267-pi5`.
    pub name: String,
    /// Free text: where the numbers come from.
    #[serde(default)]
    pub description: String,
    /// The DRAM command clock in MHz (half the data rate: DDR4-3200 → 1600).
    pub clock_mhz: f64,
    /// Independent channels (each with its own data bus).
    pub channels: u32,
    /// Ranks per channel.
    pub ranks: u32,
    /// Bank groups per rank (1 where the standard has none, e.g. LPDDR4).
    #[serde(default = "one")]
    pub bank_groups: u32,
    /// Banks per bank group.
    pub banks_per_group: u32,
    /// Rows per bank.
    pub rows: u32,
    /// Column addresses per row, each `bus_bits` wide across the channel.
    pub columns: u32,
    /// Width of a channel's data bus in bits.
    pub bus_bits: u32,
    /// Burst length in transfers; a request moves `bus_bits / 8 * burst_length` bytes.
    pub burst_length: u32,
    /// Address mapping as a field order, most significant first: two-letter fields
    /// `Ch`, `Ra`, `Bg`, `Ba`, `Ro`, `Co` (any case; DRAMsim3's `rochrababgco` works),
    /// e.g. `RoBaRaCoCh`. A field whose count is 1 may be left out. Exclusive with `bits`.
    #[serde(default)]
    pub mapping: Option<String>,
    /// Address mapping as explicit physical-address bit lists per field, least
    /// significant bit first (keys `ch`, `ra`, `bg`, `ba`, `ro`, `co`). Exclusive with
    /// `mapping`.
    #[serde(default)]
    pub bits: Option<BTreeMap<String, Vec<u32>>>,
    /// XOR hashing: for a field (`ch`, `ra`, `bg`, `ba`), list `i` names the physical
    /// address bits whose parity is XORed into bit `i` of that field.
    #[serde(default)]
    pub xor: BTreeMap<String, Vec<Vec<u32>>>,
    /// `open` (rows stay open until a conflict), `closed` (precharge after every
    /// access) or `capped` (close after `row_hits_cap` hits).
    #[serde(default = "open")]
    pub row_policy: String,
    /// For `row_policy = "capped"`: row hits after which the row is closed.
    #[serde(default)]
    pub row_hits_cap: Option<u32>,
    /// The controller's write buffer per channel, in requests (DRAMsim3's
    /// `trans_queue_size`, 32 by default): writes wait there while reads go first, and
    /// are drained all at once when it is full, or when more than
    /// [`super::WRITE_IDLE_DRAIN`] wait and the channel's data bus is idle. 0: each
    /// write is served at its arrival, in order with the reads.
    #[serde(default = "write_queue")]
    pub write_queue: u32,
    /// Timings in DRAM clock cycles.
    pub timing: TimingConfig,
}

fn write_queue() -> u32 {
    32
}
fn one() -> u32 {
    1
}
fn open() -> String {
    "open".into()
}

/// Timings in DRAM clock cycles (`[timing]`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    /// Read latency: column read command to first data.
    pub cl: u32,
    /// Write latency: column write command to first data (defaults to `cl`).
    #[serde(default)]
    pub cwl: Option<u32>,
    /// Activate to column command.
    pub trcd: u32,
    /// Precharge to activate.
    pub trp: u32,
    /// Activate to precharge, minimum.
    pub tras: u32,
    /// Data transfer of one burst on the bus (defaults to `burst_length / 2`).
    #[serde(default)]
    pub tburst: Option<u32>,
    /// Activate to activate, different banks of one rank (different bank groups).
    pub trrd: u32,
    /// Activate to activate in the same bank group (defaults to `trrd`).
    #[serde(default)]
    pub trrd_l: Option<u32>,
    /// Window in which a rank takes at most four activates.
    pub tfaw: u32,
    /// Column command to column command in the same bank group (defaults to `tburst`).
    #[serde(default)]
    pub tccd_l: Option<u32>,
    /// Write recovery: end of write data to precharge (default 0).
    #[serde(default)]
    pub twr: u32,
    /// Write to read turnaround in a rank: end of write data to read command (default 0).
    #[serde(default)]
    pub twtr: u32,
    /// Read to precharge (default 0).
    #[serde(default)]
    pub trtp: u32,
    /// Rank to rank switch on the data bus (default 0).
    #[serde(default)]
    pub trtrs: u32,
    /// Refresh: a rank is busy this long per refresh (with `trefi`; default: no refresh).
    #[serde(default)]
    pub trfc: Option<u32>,
    /// Refresh interval of a rank; the ranks of a channel take turns, staggered by
    /// `trefi / ranks` (with `trfc`).
    #[serde(default)]
    pub trefi: Option<u32>,
}

/// Row-buffer policy, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowPolicy {
    /// A row stays open until another row of its bank is needed.
    Open,
    /// Every access precharges its bank afterwards.
    Closed,
    /// A row is closed after this many hits.
    Capped(u32),
}

impl RowPolicy {
    /// Hits a row may take before it is closed (`u32::MAX`: never).
    pub fn hit_cap(self) -> u32 {
        match self {
            RowPolicy::Open => u32::MAX,
            RowPolicy::Closed => 0,
            RowPolicy::Capped(n) => n,
        }
    }
}

/// Resolved timings in DRAM cycles (defaults filled in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Timing {
    pub cl: u64,
    pub cwl: u64,
    pub trcd: u64,
    pub trp: u64,
    pub tras: u64,
    pub tburst: u64,
    pub trrd: u64,
    pub trrd_l: u64,
    pub tfaw: u64,
    pub tccd_l: u64,
    pub twr: u64,
    pub twtr: u64,
    pub trtp: u64,
    pub trtrs: u64,
    pub trfc: u64,
    /// 0: no refresh.
    pub trefi: u64,
}

/// A validated profile: what [`super::Dram`] is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct DramSpec {
    /// The profile's name.
    pub name: String,
    /// DRAM clock in MHz.
    pub clock_mhz: f64,
    /// Counts: channels, ranks, bank groups, banks per group.
    pub channels: u32,
    /// Ranks per channel.
    pub ranks: u32,
    /// Bank groups per rank.
    pub bank_groups: u32,
    /// Banks per bank group.
    pub banks_per_group: u32,
    /// Bytes one request (one burst) moves.
    pub burst_bytes: u64,
    /// Bytes of one row across the channel.
    pub row_bytes: u64,
    /// Total capacity in bytes.
    pub capacity: u64,
    /// The decoder.
    pub map: AddressMap,
    /// Row-buffer policy.
    pub policy: RowPolicy,
    /// Timings.
    pub timing: Timing,
    /// Write buffer entries per channel (0: writes served at arrival).
    pub write_queue: u32,
}

fn err(msg: String) -> ModelError {
    ModelError::Config(msg)
}

fn pow2(key: &str, v: u32) -> Result<u32, ModelError> {
    if v == 0 {
        return Err(err(format!(
            "DRAM key `{key}` is 0; it counts something and must be at least 1"
        )));
    }
    if !v.is_power_of_two() {
        return Err(err(format!(
            "DRAM key `{key}` = {v} is not a power of two; the address mapping needs whole bits (write {} or {})",
            v.next_power_of_two() / 2,
            v.next_power_of_two()
        )));
    }
    Ok(v.trailing_zeros())
}

fn nonzero(key: &str, v: u32) -> Result<u64, ModelError> {
    if v == 0 {
        return Err(err(format!(
            "DRAM key `timing.{key}` is 0; it must be at least 1 DRAM cycle"
        )));
    }
    Ok(v as u64)
}

impl DramConfig {
    /// Checks every key and resolves the profile.
    pub fn validate(&self) -> Result<DramSpec, ModelError> {
        if !(self.clock_mhz.is_finite() && self.clock_mhz > 0.0) {
            return Err(err(format!(
                "DRAM key `clock_mhz` = {} must be a positive number of MHz",
                self.clock_mhz
            )));
        }
        let widths = [
            ("ch", pow2("channels", self.channels)?),
            ("ra", pow2("ranks", self.ranks)?),
            ("bg", pow2("bank_groups", self.bank_groups)?),
            ("ba", pow2("banks_per_group", self.banks_per_group)?),
            ("ro", pow2("rows", self.rows)?),
            ("co", {
                let c = pow2("columns", self.columns)?;
                let b = pow2("burst_length", self.burst_length)?;
                if b > c {
                    return Err(err(format!(
                        "DRAM key `columns` = {} is smaller than `burst_length` = {}; a row holds at least one burst",
                        self.columns, self.burst_length
                    )));
                }
                c - b
            }),
        ];
        if self.bus_bits == 0 || self.bus_bits % 8 != 0 || !self.bus_bits.is_power_of_two() {
            return Err(err(format!(
                "DRAM key `bus_bits` = {} must be a power of two and a whole number of bytes (16, 32, 64)",
                self.bus_bits
            )));
        }
        let burst_bytes = (self.bus_bits / 8) as u64 * self.burst_length as u64;
        let offset = burst_bytes.trailing_zeros();
        let map = AddressMap::new(offset, &widths, self.mapping.as_deref(), self.bits.as_ref(), &self.xor)?;
        let policy = match (self.row_policy.as_str(), self.row_hits_cap) {
            ("open", None) => RowPolicy::Open,
            ("closed", None) => RowPolicy::Closed,
            ("capped", Some(n)) => RowPolicy::Capped(n),
            ("capped", None) => {
                return Err(err(
                    "DRAM key `row_policy` = \"capped\" needs `row_hits_cap` (hits after which a row closes)".into(),
                ))
            }
            ("open" | "closed", Some(_)) => {
                return Err(err(format!(
                    "DRAM key `row_hits_cap` only applies to row_policy = \"capped\", not \"{}\"",
                    self.row_policy
                )))
            }
            (p, _) => {
                return Err(err(format!(
                    "DRAM key `row_policy` = \"{p}\" is unknown; write \"open\", \"closed\" or \"capped\""
                )))
            }
        };
        let t = &self.timing;
        let tburst = match t.tburst {
            Some(v) => nonzero("tburst", v)?,
            None => (self.burst_length as u64 / 2).max(1),
        };
        let trrd = nonzero("trrd", t.trrd)?;
        let timing = Timing {
            cl: nonzero("cl", t.cl)?,
            cwl: nonzero("cwl", t.cwl.unwrap_or(t.cl))?,
            trcd: nonzero("trcd", t.trcd)?,
            trp: nonzero("trp", t.trp)?,
            tras: nonzero("tras", t.tras)?,
            tburst,
            trrd,
            trrd_l: nonzero("trrd_l", t.trrd_l.unwrap_or(t.trrd))?,
            tfaw: nonzero("tfaw", t.tfaw)?,
            tccd_l: match t.tccd_l {
                Some(v) => nonzero("tccd_l", v)?,
                None => tburst,
            },
            twr: t.twr as u64,
            twtr: t.twtr as u64,
            trtp: t.trtp as u64,
            trtrs: t.trtrs as u64,
            trfc: 0,
            trefi: 0,
        };
        let (trfc, trefi) = match (t.trfc, t.trefi) {
            (None, None) => (0, 0),
            (Some(rfc), Some(refi)) => {
                let (rfc, refi) = (nonzero("trfc", rfc)?, nonzero("trefi", refi)?);
                if rfc >= refi {
                    return Err(err(format!(
                        "DRAM key `timing.trfc` = {rfc} is not below `timing.trefi` = {refi}; a rank would never leave refresh"
                    )));
                }
                (rfc, refi)
            }
            _ => {
                return Err(err(
                    "DRAM keys `timing.trfc` and `timing.trefi` go together: give both (refresh) or neither".into(),
                ))
            }
        };
        let timing = Timing { trfc, trefi, ..timing };
        let row_bytes = (self.bus_bits / 8) as u64 * self.columns as u64;
        Ok(DramSpec {
            name: self.name.clone(),
            clock_mhz: self.clock_mhz,
            channels: self.channels,
            ranks: self.ranks,
            bank_groups: self.bank_groups,
            banks_per_group: self.banks_per_group,
            burst_bytes,
            row_bytes,
            capacity: 1u64 << map.top_bit(),
            map,
            policy,
            timing,
            write_queue: self.write_queue,
        })
    }
}

impl DramSpec {
    /// Banks in all: channels × ranks × bank groups × banks a group, saturating.
    pub fn banks(&self) -> u64 {
        (self.channels as u64)
            .saturating_mul(self.ranks as u64)
            .saturating_mul(self.bank_groups as u64)
            .saturating_mul(self.banks_per_group as u64)
    }

    /// Host bytes of a report that lists every bank's requests (a count, its JSON value
    /// of `value_bytes` and about 24 bytes of text), saturating.
    pub fn report_bytes(&self, value_bytes: usize) -> u64 {
        self.banks().saturating_mul(8 + value_bytes as u64 + 24)
    }

    /// Host bytes a [`super::Dram`] of this profile allocates: a record per bank, bank
    /// group, rank and channel (their sizes as compiled), each channel's write queue, and
    /// the latency table. Counted in 64 bits (saturating) so that a geometry whose counts
    /// multiply past 32 bits is refused by the host-memory check, not wrapped.
    pub fn host_bytes(&self) -> u64 {
        use std::mem::size_of;
        let ch = self.channels as u64;
        let ranks = ch.saturating_mul(self.ranks as u64);
        let groups = ranks.saturating_mul(self.bank_groups as u64);
        let banks = groups.saturating_mul(self.banks_per_group as u64);
        let per = |n: u64, bytes: usize| n.saturating_mul(bytes as u64);
        [
            per(banks, size_of::<super::Bank>()),
            per(groups, size_of::<super::Group>()),
            per(ranks, size_of::<super::Rank>()),
            per(ch, size_of::<super::Channel>() + size_of::<Vec<(u64, u64)>>()),
            per(ch.saturating_mul(self.write_queue as u64), size_of::<(u64, u64)>()),
            // The released writes (writes.rs): a list and a bound per channel, a count
            // per bank, and as many entries as the buffer holds.
            per(ch, size_of::<Vec<super::writes::Released>>() + size_of::<u64>()),
            per(banks, size_of::<u32>()),
            per(
                ch.saturating_mul(self.write_queue as u64),
                size_of::<super::writes::Released>(),
            ),
            per(super::LAT_TABLE as u64, 4),
        ]
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b))
    }
}
