use super::Args;
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
///
/// As HPCC (`HPCC_RandomAccess` in RandomAccess/core_single_cpu.c), the table is first
/// initialised, `for (i=0; i<TableSize; i++) Table[i] = i;` (one 8-byte store per word,
/// in order), before "Begin timing here": those `words` stores come first and are the
/// workload's warm-up ([`TraceSource::warmup_refs`]), simulated but reported apart by
/// `sim` unless `--warmup` says otherwise. On by default (`init=on`), as HPCC runs;
/// `init=off` leaves them out (the table is then first touched by the updates, which
/// was mmulab's behaviour before #23). With `threads=N`, thread `i` initialises the
/// `i`-th of N slices of the table (as a parallel `for` over the table splits it); with
/// `copies=N` each copy initialises its own table. The updates are HPCC's scalar
/// equivalent (one LFSR stream from `HPCC_starts(seed)`), not its 128 interleaved
/// streams.
pub struct Gups {
    spec: String,
    base: u64,
    mask: u64,
    ran: u64,
    /// Initialising stores still to emit (`Table[init_next..init]`), then the updates.
    init_next: u64,
    /// The end (exclusive) of this part's slice of the initialisation.
    init: u64,
    /// Its start.
    init_first: u64,
    done: u64,
    total: u64,
}

impl super::Generator for Gups {
    const NAME: &'static str = "gups";
    fn from_args(a: &mut Args) -> Result<Gups, TraceError> {
        let table = a.size("table", None)?;
        if table < 8 || !table.is_power_of_two() {
            return Err(TraceError::Spec(format!(
                "workload '{}': table must be a power of two of at least 8 bytes",
                a.spec()
            )));
        }
        let words = table / 8;
        let updates = a.count("updates", Some(words.saturating_mul(4)))?;
        let refs = a.refs(updates.saturating_mul(2))?;
        // Thread i of n (`threads=n`) takes the i-th segment of `updates` of the one
        // random stream, as HPCC's MPI RandomAccess gives each process
        // HPCC_starts(updates_per_process × rank).
        let seed = a.count("seed", Some(0))? + a.thread().map_or(0, |(i, _)| i.saturating_mul(updates));
        let base = a.base(0x7f00_0000_0000, Some(table))?;
        // Thread i of n initialises words [i·words/n, (i+1)·words/n).
        let (first, last) = match a.thread() {
            Some((i, n)) => (words * i / n, words * (i + 1) / n),
            None => (0, words),
        };
        let (init_next, init) = if a.flag("init", true)? { (first, last) } else { (0, 0) };
        if refs.saturating_add(init - init_next) > super::MAX_REFS {
            return Err(TraceError::Spec(format!(
                "workload '{}': the {} initialising stores (init=on, the default) and refs = {refs} make more than {} references; give a smaller table or refs=, or init=off",
                a.spec(),
                init - init_next,
                super::MAX_REFS
            )));
        }
        Ok(Gups {
            spec: a.spec().to_string(),
            base,
            mask: words - 1,
            ran: hpcc_starts(seed as i64),
            init_next,
            init,
            init_first: init_next,
            done: 0,
            total: refs,
        })
    }
}

impl TraceSource for Gups {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        if self.init_next < self.init {
            // Table[i] = i: the initialisation, in its own batches.
            let n = (self.init - self.init_next).min(max as u64);
            let (base, first) = (self.base, self.init_next);
            buf.extend((first..first + n).map(|i| MemRef::new(base + i * 8, AccessKind::Store, 8)));
            self.init_next += n;
            return Ok(n as usize);
        }
        // Even references load (after advancing the LFSR), odd ones store the same word:
        // whole pairs are written in one loop; a batch that starts or ends inside a pair
        // writes its half on its own.
        let (base, mask) = (self.base, self.mask);
        let n = (self.total - self.done).min(max as u64);
        let word = |ran: u64| base + (ran & mask) * 8;
        let mut left = n;
        buf.reserve(n as usize);
        if left > 0 && self.done & 1 == 1 {
            buf.push(MemRef::new(word(self.ran), AccessKind::Store, 8));
            left -= 1;
        }
        // Pairs are written straight into the reserved capacity by a loop over locals:
        // `extend` over a closure kept the stream state in memory (loaded and stored on
        // every update; 24 instructions per pair), `push` tests the capacity each time.
        let mut ran = self.ran;
        let pairs = (left / 2) as usize;
        let filled = buf.len();
        for pair in buf.spare_capacity_mut()[..2 * pairs].chunks_exact_mut(2) {
            ran = hpcc_step(ran);
            let a = word(ran);
            pair[0].write(MemRef::new(a, AccessKind::Load, 8));
            pair[1].write(MemRef::new(a, AccessKind::Store, 8));
        }
        // SAFETY: the loop initialised the first 2 * pairs spare slots past `filled` (the
        // slice above is bounds-checked: `reserve(n)` left room for n, of which the
        // half pair took at most one, and 2 * pairs <= left).
        unsafe { buf.set_len(filled + 2 * pairs) };
        if left & 1 == 1 {
            ran = hpcc_step(ran);
            buf.push(MemRef::new(word(ran), AccessKind::Load, 8));
        }
        self.ran = ran;
        self.done += n;
        Ok(n as usize)
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((
            self.init_next - self.init_first + self.done,
            self.init - self.init_first + self.total,
        ))
    }
    fn warmup_refs(&self) -> u64 {
        self.init - self.init_first
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

    /// Any batch size (odd ones split a pair between batches) gives the HPCC stream:
    /// reference 2k loads word `ran_(k+1) & mask`, reference 2k+1 stores it.
    #[test]
    fn every_batch_size_gives_the_same_stream() {
        let (refs, mask, base) = (2001u64, (1u64 << 17) - 1, 0x7f00_0000_0000u64);
        let mut ran = hpcc_starts(0);
        let mut want = Vec::new();
        for k in 0..refs {
            if k % 2 == 0 {
                ran = hpcc_step(ran);
            }
            let kind = if k % 2 == 0 {
                AccessKind::Load
            } else {
                AccessKind::Store
            };
            want.push(MemRef::new(base + (ran & mask) * 8, kind, 8));
        }
        for batch in [1, 2, 3, 333, 1000, 8192] {
            let mut g = crate::workload::parse("gups:table=1M,refs=2001,init=off").unwrap();
            let mut b = crate::Batch::default();
            loop {
                let before = b.refs.len();
                let n = g.next_batch(&mut b, batch).unwrap();
                let got = &b.refs;
                assert_eq!(got.len() - before, n);
                assert!(n <= batch);
                if n == 0 {
                    break;
                }
            }
            assert_eq!(b.refs, want, "batch {batch}");
        }
    }

    #[test]
    fn pairs_load_then_store_same_word() {
        let mut g = crate::workload::parse("gups:table=1M,updates=1000,init=off").unwrap();
        let mut b = crate::Batch::default();
        while g.next_batch(&mut b, 333).unwrap() > 0 {}
        let buf = b.refs;
        assert_eq!(buf.len(), 2000);
        for p in buf.chunks(2) {
            assert_eq!(p[0].kind, AccessKind::Load);
            assert_eq!(p[1].kind, AccessKind::Store);
            assert_eq!(p[0].addr, p[1].addr);
            assert!(p[0].addr >= 0x7f00_0000_0000 && p[0].addr < 0x7f00_0000_0000 + (1 << 20));
        }
    }

    /// HPCC's order: Table[i] = i for every word (stores at base, base+8, …), then the
    /// updates. With table=64 (8 words) and refs=4: 8 initialising stores at offsets
    /// 0, 8, …, 56, then update 1: ran = step(HPCC_starts(0) = 1) = 2, word 2 & 7 = 2
    /// (offset 16), a load and a store; update 2: ran = 4, word 4 (offset 32).
    #[test]
    fn table_is_initialised_before_the_updates() {
        let mut g = crate::workload::parse("gups:table=64,refs=4,init=on").unwrap();
        assert_eq!(g.warmup_refs(), 8);
        let mut b = crate::Batch::default();
        while g.next_batch(&mut b, 3).unwrap() > 0 {}
        let got: Vec<(u64, AccessKind)> = b.refs.iter().map(|r| (r.addr - 0x7f00_0000_0000, r.kind)).collect();
        let mut want: Vec<(u64, AccessKind)> = (0..8).map(|i| (i * 8, AccessKind::Store)).collect();
        want.extend([
            (16, AccessKind::Load),
            (16, AccessKind::Store),
            (32, AccessKind::Load),
            (32, AccessKind::Store),
        ]);
        assert_eq!(got, want);
        let off = crate::workload::parse("gups:table=64,refs=4,init=off").unwrap();
        assert_eq!(off.warmup_refs(), 0);
        // On by default (#23: GUPS as HPCC runs it).
        let default = crate::workload::parse("gups:table=64,refs=4").unwrap();
        assert_eq!(default.warmup_refs(), 8);
    }
}
