//! The per-bank record of the DRAM model (everything a request reads or writes of its
//! bank, in one place: one index, one bounds check) and the address-to-record index.

use super::config::{DramSpec, Timing};
use super::mapping::AddressMap;
use super::sched::Reorder;
use super::{NONE, ORIGIN};

/// A bank's record. Times are the model's (from [`ORIGIN`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Bank {
    /// Open row, or `NONE`.
    pub(super) open: u32,
    /// Hits the open row has taken since its activate.
    pub(super) hits: u32,
    /// Earliest activate (bank precharged).
    pub(super) act_ok: u64,
    /// Earliest precharge (row open).
    pub(super) pre_ok: u64,
    /// Earliest column command.
    pub(super) col_ok: u64,
    /// Refreshes of its rank it has seen (a refresh closes the row).
    pub(super) epoch: u64,
    /// Requests served.
    pub(super) requests: u64,
    /// Rows closed by conflicts, for row-hit-first reordering (sched.rs).
    pub(super) rows: Reorder,
}

impl Default for Bank {
    /// Closed, every ready time at the model's time 0 ([`ORIGIN`]).
    fn default() -> Self {
        Bank {
            open: NONE,
            hits: 0,
            act_ok: ORIGIN,
            pre_ok: ORIGIN,
            col_ok: ORIGIN,
            epoch: 0,
            requests: 0,
            rows: Reorder::default(),
        }
    }
}

impl Bank {
    /// Its rank has started `n` refreshes (more than the bank has seen): the row is
    /// closed and the next activate waits for the end of the last refresh (the rank's
    /// first starts at `ref_off`). Rare: about once per tREFI per bank.
    #[cold]
    #[inline(never)]
    pub(super) fn refreshed(&mut self, n: u64, ref_off: u64, t: &Timing) {
        self.epoch = n;
        self.open = NONE;
        self.act_ok = self.act_ok.max(ref_off + (n - 1) * t.trefi + t.trfc);
    }
}

/// Finds a request's channel, rank, bank group and bank records and its row.
#[derive(Clone, Debug)]
pub(super) struct BankIndex {
    /// Address bits decoded (the capacity is `1 << top` bytes).
    pub(super) top: u32,
    /// For a mapping with every field in one run of bits and no XOR hashing (any field
    /// order): the shift and mask of channel, rank, bank group, bank and row (mask 0 for
    /// a field of no bits), as [`AddressMap::decode`] uses them (the column is not
    /// needed); `None` for other mappings, which decode in full.
    fields: Option<[(u32, u64); 5]>,
    /// log2 of ranks per channel, bank groups per rank, banks per group (all powers of
    /// two, config.rs): a record's index `(ch * ranks + ra) * ...` is a shift and an or.
    lr: u32,
    lg: u32,
    lb: u32,
}

impl BankIndex {
    pub(super) fn new(spec: &DramSpec) -> BankIndex {
        BankIndex {
            top: spec.map.top_bit(),
            fields: spec.map.field_runs().map(|f| {
                let mut out = [(0u32, 0u64); 5];
                for (o, i) in out.iter_mut().zip(f) {
                    *o = (i.0 as u32, i.1);
                }
                out
            }),
            lr: spec.ranks.trailing_zeros(),
            lg: spec.bank_groups.trailing_zeros(),
            lb: spec.banks_per_group.trailing_zeros(),
        }
    }

    /// Indices of `pa`'s channel, rank, bank group and bank records, and its row. A
    /// field is below its count (its mask has that many bits), so `ch << lr | ra` is
    /// `ch * ranks + ra`, and so on.
    #[inline(always)]
    pub(super) fn locate(&self, pa: u64, map: &AddressMap) -> (usize, usize, usize, usize, u32) {
        let (ch, ra, bg, ba, ro) = match &self.fields {
            Some(f) => {
                let get = |i: usize| (pa >> f[i].0) & f[i].1;
                (get(0), get(1), get(2), get(3), get(4) as u32)
            }
            None => {
                let l = map.decode(pa);
                (l.ch as u64, l.ra as u64, l.bg as u64, l.ba as u64, l.ro)
            }
        };
        let ri = ch << self.lr | ra;
        let gi = ri << self.lg | bg;
        let bi = gi << self.lb | ba;
        (ch as usize, ri as usize, gi as usize, bi as usize, ro)
    }
}
