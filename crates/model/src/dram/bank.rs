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
    /// Indices of its channel, rank and bank-group records.
    pub(super) chan: u32,
    pub(super) rank: u32,
    pub(super) group: u32,
}

impl Bank {
    /// Bank `bi`: closed, every ready time at the model's time 0 ([`ORIGIN`]).
    pub(super) fn new(bi: usize, index: &BankIndex) -> Self {
        let (chan, rank, group) = index.parents(bi);
        Bank {
            open: NONE,
            hits: 0,
            act_ok: ORIGIN,
            pre_ok: ORIGIN,
            col_ok: ORIGIN,
            epoch: 0,
            requests: 0,
            rows: Reorder::default(),
            chan,
            rank,
            group,
        }
    }

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

    /// A request for `row` (not the open one) arriving at `at` that joins a row a
    /// conflict closed after it arrived (sched.rs): the bank's later work (its ready
    /// times) moves one column slot later, the larger of tBURST and tCCD_L; returns the
    /// earliest time of its column command and the closed row's entry.
    #[inline(always)]
    pub(super) fn join(&mut self, row: u32, at: u64, t: &Timing) -> Option<(u64, usize)> {
        if !self.rows.holds(row) {
            return None;
        }
        self.join_slow(row, at, t)
    }

    #[cold]
    #[inline(never)]
    fn join_slow(&mut self, row: u32, at: u64, t: &Timing) -> Option<(u64, usize)> {
        let col_slot = t.tburst.max(t.tccd_l);
        let j = self.rows.join(row, at, col_slot)?;
        self.act_ok += col_slot;
        self.pre_ok += col_slot;
        self.col_ok += col_slot;
        Some(j)
    }
}

/// One run of address bits landing in the bank index (or the row): `(pa >> shift &
/// mask) << dst`, computed as `(pa & (mask << shift)).rotate_right(shift - dst)` (the
/// rotation taken modulo 64): the kept bits lie in `shift..shift + w` and land in
/// `dst..dst + w`, both inside 0..64, so a rotation right by `shift - dst` (or left by
/// `dst - shift`) moves them there without wrapping, with two operations instead of
/// three.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    /// `mask << shift`: the run's address bits.
    bits: u64,
    /// `(shift - dst) mod 64`.
    rot: u32,
}

impl Run {
    fn new(shift: u32, mask: u64, dst: u32) -> Run {
        Run {
            bits: mask << shift,
            rot: shift.wrapping_sub(dst) & 63,
        }
    }

    #[inline(always)]
    fn get(self, pa: u64) -> u64 {
        (pa & self.bits).rotate_right(self.rot)
    }
}

/// How the bank index is taken from an address, chosen once for the mapping.
#[derive(Clone, Debug)]
enum Bits {
    /// The index's bits lie in one or two runs of address bits (the Pi 5's `RaRoBaCo`:
    /// the rank bit and the three bank bits), the row in one.
    Two([Run; 2], Run),
    /// Any other mapping with one run per field and no hashing: a run per field.
    Four([Run; 4], Run),
    /// Split fields or XOR hashing: [`AddressMap::decode`].
    Decode,
}

/// Finds a request's bank record and its row (the bank record names its rank, group and
/// channel records).
#[derive(Clone, Debug)]
pub(super) struct BankIndex {
    /// The address bits at and above the capacity (`1 << top_bit` bytes; `top_bit` is
    /// at most 63, config.rs).
    pub(super) beyond: u64,
    bits: Bits,
    /// log2 of ranks per channel, bank groups per rank, banks per group (all powers of
    /// two, config.rs): the index `((ch * ranks + ra) * groups + bg) * banks + ba` is
    /// `ch << (lr + lg + lb) | ra << (lg + lb) | bg << lb | ba` (each field is below its
    /// count: its mask has that many bits).
    lr: u32,
    lg: u32,
    lb: u32,
}

impl BankIndex {
    pub(super) fn new(spec: &DramSpec) -> BankIndex {
        let lr = spec.ranks.trailing_zeros();
        let lg = spec.bank_groups.trailing_zeros();
        let lb = spec.banks_per_group.trailing_zeros();
        let bits = match spec.map.field_runs() {
            None => Bits::Decode,
            Some(f) => {
                // Fields ch, ra, bg, ba at their places in the index.
                let dst = [lr + lg + lb, lg + lb, lb, 0];
                // (shift, mask, dst) of the fields with bits.
                let mut runs: Vec<(u32, u64, u32)> = (0..4)
                    .map(|i| (f[i].0 as u32, f[i].1, dst[i]))
                    .filter(|r| r.1 != 0)
                    .collect();
                let row = Run::new(f[4].0 as u32, f[4].1, 0);
                // Join runs adjacent both in the address and in the index.
                runs.sort_by_key(|r| r.2);
                let mut merged: Vec<(u32, u64, u32)> = Vec::new();
                for r in runs {
                    match merged.last_mut() {
                        Some(l) if l.0 + l.1.count_ones() == r.0 && l.2 + l.1.count_ones() == r.2 => {
                            l.1 |= r.1 << l.1.count_ones();
                        }
                        _ => merged.push(r),
                    }
                }
                let joined: Vec<Run> = merged.iter().map(|r| Run::new(r.0, r.1, r.2)).collect();
                if joined.len() <= 2 {
                    let mut two = [Run::default(); 2];
                    two[..joined.len()].copy_from_slice(&joined);
                    Bits::Two(two, row)
                } else {
                    let mut four = [Run::default(); 4];
                    four[..joined.len()].copy_from_slice(&joined);
                    Bits::Four(four, row)
                }
            }
        };
        BankIndex {
            beyond: !((1u64 << spec.map.top_bit()) - 1),
            bits,
            lr,
            lg,
            lb,
        }
    }

    /// The index of `pa`'s bank record, and its row.
    #[inline(always)]
    pub(super) fn locate(&self, pa: u64, map: &AddressMap) -> (usize, u32) {
        match &self.bits {
            Bits::Two(r, ro) => ((r[0].get(pa) | r[1].get(pa)) as usize, ro.get(pa) as u32),
            Bits::Four(r, ro) => (
                (r[0].get(pa) | r[1].get(pa) | r[2].get(pa) | r[3].get(pa)) as usize,
                ro.get(pa) as u32,
            ),
            Bits::Decode => self.locate_decoded(pa, map),
        }
    }

    #[inline(never)]
    fn locate_decoded(&self, pa: u64, map: &AddressMap) -> (usize, u32) {
        let l = map.decode(pa);
        let ri = (l.ch as usize) << self.lr | l.ra as usize;
        let gi = ri << self.lg | l.bg as usize;
        (gi << self.lb | l.ba as usize, l.ro)
    }

    /// The bank index's channel, rank and bank-group indices.
    pub(super) fn parents(&self, bi: usize) -> (u32, u32, u32) {
        let gi = bi >> self.lb;
        let ri = gi >> self.lg;
        ((ri >> self.lr) as u32, ri as u32, gi as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::super::profile;
    use super::*;

    #[test]
    fn the_index_is_the_decoded_fields() {
        // Every built-in profile (Two for the Pi 5s, Four for DDR4/DDR5) and split bit
        // lists (Decode), on random addresses: the record index and row must be those of
        // the full decode.
        let mut specs: Vec<DramSpec> = profile::BUILTIN.iter().map(|b| profile::load(b.0).unwrap()).collect();
        // The Pi 5's geometry with the column's top bit and the row's lowest swapped.
        let lists = profile::BUILTIN[0].1.replace("mapping = \"RaRoBaCo\"\n", "")
            + "[bits]\nco = [6, 7, 8, 9, 31]\nba = [11, 12, 13]\nra = [32]\n\
               ro = [10, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]\n";
        specs.push(profile::parse(&lists, "lists").unwrap());
        let kinds: Vec<&str> = specs
            .iter()
            .map(|s| match BankIndex::new(s).bits {
                Bits::Two(..) => "two",
                Bits::Four(..) => "four",
                Bits::Decode => "decode",
            })
            .collect();
        assert_eq!(kinds, ["two", "two", "four", "four", "decode"]);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for s in &specs {
            let ix = BankIndex::new(s);
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let l = s.map.decode(x);
                let want = ((l.ch * s.ranks + l.ra) * s.bank_groups + l.bg) * s.banks_per_group + l.ba;
                assert_eq!(ix.locate(x, &s.map), (want as usize, l.ro), "{} {x:#x}", s.name);
                assert_eq!(
                    ix.parents(want as usize),
                    (
                        l.ch,
                        l.ch * s.ranks + l.ra,
                        (l.ch * s.ranks + l.ra) * s.bank_groups + l.bg
                    )
                );
            }
        }
    }
}
