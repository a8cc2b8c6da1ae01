use super::{emit, Args};
use crate::{AccessKind, MemRef, TraceError, TraceSource};

const POLY: u64 = 0x7;
const PERIOD: i64 = 1_317_624_576_693_539_401;

/// One step of the HPCC RandomAccess LFSR (x^64 + x^2 + x + 1).
#[inline(always)]
pub fn hpcc_step(x: u64) -> u64 {
    (x << 1) ^ if (x as i64) < 0 { POLY } else { 0 }
}

/// HPCC's `HPCC_starts(n)`: the n-th element of the RandomAccess LFSR stream, computed by
/// repeated squaring over GF(2) so any stream position can be reached in O(64²).
pub fn hpcc_starts(n: i64) -> u64 {
    let mut n = n;
    while n < 0 {
        n += PERIOD;
    }
    while n > PERIOD {
        n -= PERIOD;
    }
    if n == 0 {
        return 1;
    }
    let mut m2 = [0u64; 64];
    let mut temp = 1u64;
    for m in m2.iter_mut() {
        *m = temp;
        temp = hpcc_step(hpcc_step(temp));
    }
    let mut i: i32 = 62;
    while i >= 0 && (n >> i) & 1 == 0 {
        i -= 1;
    }
    let mut ran = 2u64;
    while i > 0 {
        let mut t = 0u64;
        for (j, m) in m2.iter().enumerate() {
            if (ran >> j) & 1 == 1 {
                t ^= m;
            }
        }
        ran = t;
        i -= 1;
        if (n >> i) & 1 == 1 {
            ran = hpcc_step(ran);
        }
    }
    ran
}

/// HPCC RandomAccess (GUPS): `Table[ran & (words-1)] ^= ran` for each update, i.e. a load
/// and a store of the same 8-byte word. The table size must be a power of two.
pub struct Gups {
    spec: String,
    base: u64,
    mask: u64,
    ran: u64,
    done: u64,
    total: u64,
}

impl Gups {
    pub(crate) fn from_args(a: &mut Args) -> Result<Gups, TraceError> {
        let table = a.size("table", None)?;
        if table < 8 || !table.is_power_of_two() {
            return Err(TraceError::Spec(format!(
                "workload '{}': table must be a power of two of at least 8 bytes",
                a.spec()
            )));
        }
        let words = table / 8;
        let updates = a.count("updates", Some(4 * words))?;
        let refs = a.count("refs", Some(updates * 2))?;
        let seed = a.count("seed", Some(0))?;
        let base = a.addr("base", 0x7f00_0000_0000)?;
        a.positive("refs", refs)?;
        Ok(Gups {
            spec: a.spec().to_string(),
            base,
            mask: words - 1,
            ran: hpcc_starts(seed as i64),
            done: 0,
            total: refs,
        })
    }
}

impl TraceSource for Gups {
    fn next_batch(&mut self, buf: &mut Vec<MemRef>, max: usize) -> Result<usize, TraceError> {
        let (base, mask) = (self.base, self.mask);
        let ran = &mut self.ran;
        Ok(emit(&mut self.done, self.total, buf, max, |i| {
            // Even references load (after advancing the LFSR), odd ones store the same word.
            if i & 1 == 0 {
                *ran = hpcc_step(*ran);
                MemRef::new(base + (*ran & mask) * 8, AccessKind::Load, 8)
            } else {
                MemRef::new(base + (*ran & mask) * 8, AccessKind::Store, 8)
            }
        }))
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.done, self.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_agrees_with_stepping() {
        let mut x = 1u64;
        for n in 0..200i64 {
            assert_eq!(hpcc_starts(n), x, "n={n}");
            x = hpcc_step(x);
        }
    }

    #[test]
    fn pairs_load_then_store_same_word() {
        let mut g = crate::workload::parse("gups:table=1M,updates=1000").unwrap();
        let mut buf = Vec::new();
        while g.next_batch(&mut buf, 333).unwrap() > 0 {}
        assert_eq!(buf.len(), 2000);
        for p in buf.chunks(2) {
            assert_eq!(p[0].kind, AccessKind::Load);
            assert_eq!(p[1].kind, AccessKind::Store);
            assert_eq!(p[0].addr, p[1].addr);
            assert!(p[0].addr >= 0x7f00_0000_0000 && p[0].addr < 0x7f00_0000_0000 + (1 << 20));
        }
    }
}
