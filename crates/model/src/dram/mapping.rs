//! Physical address → (channel, rank, bank group, bank, row, column): from a field order
//! string (DRAMsim3's style, e.g. `RoBaRaCoCh`, most significant field first) or from
//! explicit bit lists, with optional XOR hashing of the channel/rank/bank bits.
//!
//! The low `offset` bits address bytes within one burst and are not decoded. Decoding is
//! compiled once into contiguous runs of bits, so a field order costs one shift and mask
//! per field.

use crate::error::ModelError;
use std::collections::BTreeMap;

/// Field names in the order of [`Loc`]'s fields (and of the decoder's output).
pub const FIELDS: [&str; 6] = ["ch", "ra", "bg", "ba", "ro", "co"];

/// A decoded address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loc {
    /// Channel.
    pub ch: u32,
    /// Rank within the channel.
    pub ra: u32,
    /// Bank group within the rank.
    pub bg: u32,
    /// Bank within the bank group.
    pub ba: u32,
    /// Row within the bank.
    pub ro: u32,
    /// Column, in bursts, within the row.
    pub co: u32,
}

/// One contiguous run of address bits landing in one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    field: u8,
    pa_shift: u8,
    dst_shift: u8,
    mask: u64,
}

/// The compiled decoder (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressMap {
    top: u32,
    runs: Vec<Run>,
    /// (field, bit of the field, mask of address bits whose parity flips it).
    xor: Vec<(u8, u8, u64)>,
    /// When every field is one contiguous run of bits (or none) and nothing is hashed,
    /// as a field order gives: per field, its shift and mask (0 for an absent field), so
    /// [`AddressMap::decode`] needs no loop (the same result as the runs; speed only).
    single: Option<[(u8, u64); 6]>,
    /// Address bits of each field, least significant first (for display).
    bits: [Vec<u32>; 6],
}

fn err(msg: String) -> ModelError {
    ModelError::Config(msg)
}

fn field_index(name: &str) -> Option<usize> {
    FIELDS.iter().position(|f| f.eq_ignore_ascii_case(name))
}

impl AddressMap {
    /// Builds the decoder. `widths` are the fields' bit counts in [`FIELDS`] order;
    /// exactly one of `order` and `bits` must be given.
    pub fn new(
        offset: u32,
        widths: &[(&str, u32); 6],
        order: Option<&str>,
        bits: Option<&BTreeMap<String, Vec<u32>>>,
        xor: &BTreeMap<String, Vec<Vec<u32>>>,
    ) -> Result<Self, ModelError> {
        let top = offset + widths.iter().map(|w| w.1).sum::<u32>();
        if top > 63 {
            return Err(err(format!(
                "DRAM geometry spans {top} address bits; at most 63 are supported (fewer rows or columns)"
            )));
        }
        let mut fb: [Vec<u32>; 6] = Default::default();
        match (order, bits) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "DRAM keys `mapping` and `bits` are both set; give the field order or the bit lists, not both"
                        .into(),
                ))
            }
            (None, None) => {
                return Err(err(
                    "DRAM address mapping missing: set `mapping` (a field order such as \"RoBaRaCoCh\") or `[bits]`"
                        .into(),
                ))
            }
            (Some(s), None) => {
                if s.len() % 2 != 0 || !s.is_ascii() {
                    return Err(err(format!(
                        "DRAM key `mapping` = \"{s}\" is not a sequence of two-letter fields (Ch, Ra, Bg, Ba, Ro, Co)"
                    )));
                }
                let tokens: Vec<&str> = (0..s.len()).step_by(2).map(|i| &s[i..i + 2]).collect();
                let mut seen = [false; 6];
                let mut pos = offset;
                for tok in tokens.iter().rev() {
                    let f = field_index(tok).ok_or_else(|| {
                        err(format!(
                            "DRAM key `mapping` = \"{s}\": unknown field \"{tok}\"; the fields are Ch, Ra, Bg, Ba, Ro, Co"
                        ))
                    })?;
                    if seen[f] {
                        return Err(err(format!("DRAM key `mapping` = \"{s}\" names field \"{tok}\" twice")));
                    }
                    seen[f] = true;
                    fb[f] = (pos..pos + widths[f].1).collect();
                    pos += widths[f].1;
                }
                for (f, w) in widths.iter().enumerate() {
                    if !seen[f] && w.1 > 0 {
                        return Err(err(format!(
                            "DRAM key `mapping` = \"{s}\" leaves out field \"{}\", which needs {} bit(s) (key `{}`)",
                            FIELDS[f], w.1, w.0
                        )));
                    }
                }
            }
            (None, Some(lists)) => {
                for (k, list) in lists {
                    let f = field_index(k).filter(|_| k.len() == 2).ok_or_else(|| {
                        err(format!(
                            "DRAM key `bits.{k}` is unknown; the fields are ch, ra, bg, ba, ro, co"
                        ))
                    })?;
                    if list.len() as u32 != widths[f].1 {
                        return Err(err(format!(
                            "DRAM key `bits.{k}` lists {} bit(s) but `{}` needs {}",
                            list.len(),
                            widths[f].0,
                            widths[f].1
                        )));
                    }
                    fb[f] = list.clone();
                }
                for (f, w) in widths.iter().enumerate() {
                    if w.1 > 0 && !lists.keys().any(|k| k.eq_ignore_ascii_case(FIELDS[f])) {
                        return Err(err(format!(
                            "DRAM key `bits.{}` is missing; `{}` needs {} bit(s)",
                            FIELDS[f], w.0, w.1
                        )));
                    }
                }
                let mut owner: BTreeMap<u32, usize> = BTreeMap::new();
                for (f, list) in fb.iter().enumerate() {
                    for &b in list {
                        if b < offset {
                            return Err(err(format!(
                                "DRAM key `bits.{}` uses address bit {b}, inside a burst (bits 0..{offset} address bytes of one burst)",
                                FIELDS[f]
                            )));
                        }
                        if let Some(g) = owner.insert(b, f) {
                            return Err(err(format!(
                                "DRAM keys `bits.{}` and `bits.{}` both use address bit {b}",
                                FIELDS[g], FIELDS[f]
                            )));
                        }
                    }
                }
                if let Some(b) = (offset..top).find(|b| !owner.contains_key(b)) {
                    return Err(err(format!(
                        "DRAM key `bits` does not cover address bit {b}: the fields must use exactly bits {offset}..{top} \
                         (the geometry's capacity; bits above it: {:?})",
                        owner.keys().filter(|&&x| x >= top).collect::<Vec<_>>()
                    )));
                }
            }
        }
        let mut runs = Vec::new();
        for (f, list) in fb.iter().enumerate() {
            let mut i = 0;
            while i < list.len() {
                let mut j = i + 1;
                while j < list.len() && list[j] == list[j - 1] + 1 {
                    j += 1;
                }
                runs.push(Run {
                    field: f as u8,
                    pa_shift: list[i] as u8,
                    dst_shift: i as u8,
                    mask: (1u64 << (j - i)) - 1,
                });
                i = j;
            }
        }
        let mut xr = Vec::new();
        for (k, lists) in xor {
            let f = field_index(k)
                .filter(|&f| f < 4 && k.len() == 2)
                .ok_or_else(|| err(format!("DRAM key `xor.{k}`: only ch, ra, bg and ba can be hashed")))?;
            if lists.len() as u32 > widths[f].1 {
                return Err(err(format!(
                    "DRAM key `xor.{k}` has {} list(s) but the field has {} bit(s)",
                    lists.len(),
                    widths[f].1
                )));
            }
            for (i, l) in lists.iter().enumerate() {
                let mut mask = 0u64;
                for &b in l {
                    if b < offset || b >= top {
                        return Err(err(format!(
                            "DRAM key `xor.{k}` uses address bit {b}, outside the decoded bits {offset}..{top}"
                        )));
                    }
                    if fb[f].contains(&b) {
                        return Err(err(format!(
                            "DRAM key `xor.{k}` uses address bit {b}, which is the field's own bit; XOR with bits of other fields (usually the row)"
                        )));
                    }
                    mask |= 1u64 << b;
                }
                xr.push((f as u8, i as u8, mask));
            }
        }
        let single = if xr.is_empty() && (0..6).all(|f| runs.iter().filter(|r| r.field as usize == f).count() <= 1) {
            let mut fs = [(0u8, 0u64); 6];
            for r in &runs {
                fs[r.field as usize] = (r.pa_shift, r.mask);
            }
            Some(fs)
        } else {
            None
        };
        Ok(AddressMap {
            top,
            runs,
            xor: xr,
            single,
            bits: fb,
        })
    }

    /// Address bits decoded (the capacity is `1 << top_bit()` bytes).
    pub fn top_bit(&self) -> u32 {
        self.top
    }

    /// Address bits of field `f` (index into [`FIELDS`]), least significant first.
    pub fn field_bits(&self, f: usize) -> &[u32] {
        &self.bits[f]
    }

    /// For a mapping with every field in one run of bits and no XOR hashing: per field
    /// in [`FIELDS`] order, the shift and mask [`AddressMap::decode`] applies (mask 0
    /// for a field of no bits); `None` otherwise.
    pub(crate) fn field_runs(&self) -> Option<[(u8, u64); 6]> {
        self.single
    }

    /// Decodes `pa` (bits at and above the capacity are ignored).
    #[inline]
    pub fn decode(&self, pa: u64) -> Loc {
        if let Some(f) = &self.single {
            let get = |i: usize| ((pa >> f[i].0) & f[i].1) as u32;
            return Loc {
                ch: get(0),
                ra: get(1),
                bg: get(2),
                ba: get(3),
                ro: get(4),
                co: get(5),
            };
        }
        self.decode_runs(pa)
    }

    /// [`AddressMap::decode`] by the runs and the XOR hashes (any mapping).
    fn decode_runs(&self, pa: u64) -> Loc {
        let mut v = [0u32; 6];
        for r in &self.runs {
            v[r.field as usize] |= (((pa >> r.pa_shift) & r.mask) << r.dst_shift) as u32;
        }
        for &(f, i, m) in &self.xor {
            v[f as usize] ^= ((pa & m).count_ones() & 1) << i;
        }
        Loc {
            ch: v[0],
            ra: v[1],
            bg: v[2],
            ba: v[3],
            ro: v[4],
            co: v[5],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_per_field_decodes_as_the_runs_do() {
        // Field orders (one run per field: the shortcut) and bit lists with split fields
        // (no shortcut): `decode` must equal the run-by-run decoding on random addresses.
        let widths = [("ch", 1), ("ra", 1), ("bg", 2), ("ba", 2), ("ro", 14), ("co", 7)];
        let none = BTreeMap::new();
        let mut maps = Vec::new();
        for order in ["RoBgBaRaCoCh", "RaRoBgBaCoCh", "ChRaBgBaRoCo", "CoRoBaBgRaCh"] {
            maps.push(AddressMap::new(6, &widths, Some(order), None, &none).unwrap());
        }
        let mut bits = BTreeMap::new();
        bits.insert("ch".to_string(), vec![6]);
        bits.insert("co".to_string(), vec![7, 8, 9, 20, 21, 22, 23]);
        bits.insert("bg".to_string(), vec![10, 24]);
        bits.insert("ba".to_string(), vec![11, 12]);
        bits.insert("ra".to_string(), vec![13]);
        bits.insert("ro".to_string(), (14..20).chain(25..33).collect());
        maps.push(AddressMap::new(6, &widths, None, Some(&bits), &none).expect("bit lists"));
        let shortcut: Vec<bool> = maps.iter().map(|m| m.single.is_some()).collect();
        assert_eq!(shortcut, [true, true, true, true, false]);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for m in &maps {
                assert_eq!(m.decode(x), m.decode_runs(x), "{x:#x}");
            }
        }
    }
}
