//! DRAM request streams in DRAMsim3's trace format (`0xADDR READ|WRITE cycle`, one
//! request a line, cycles in DRAM clock cycles): reading, writing, a few synthetic
//! generators, and running a stream through the model.

use super::{Dram, DramSpec};
use crate::error::ModelError;
use std::io::{BufRead, Write};

/// One request of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamReq {
    /// Physical byte address.
    pub pa: u64,
    /// WRITE (true) or READ.
    pub write: bool,
    /// Arrival, DRAM clock cycles.
    pub at: u64,
}

/// Reads a DRAMsim3 trace; `origin` names the input in errors. Blank lines and lines
/// starting with `#` are skipped. Cycles must not decrease (DRAMsim3 issues in order).
pub fn read(r: impl BufRead, origin: &str) -> Result<Vec<StreamReq>, ModelError> {
    requests(r, origin).collect()
}

/// The requests of a DRAMsim3 trace one at a time, as [`read`] reads them (the same
/// rules and errors), without holding the stream in memory.
pub fn requests<R: BufRead>(r: R, origin: &str) -> Requests<R> {
    Requests {
        lines: r.lines(),
        origin: origin.to_string(),
        n: 0,
        last: 0,
    }
}

/// The iterator of [`requests`].
pub struct Requests<R> {
    lines: std::io::Lines<R>,
    origin: String,
    n: usize,
    last: u64,
}

impl<R: BufRead> Iterator for Requests<R> {
    type Item = Result<StreamReq, ModelError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let line = self.lines.next()?;
            self.n += 1;
            let (origin, n) = (&self.origin, self.n);
            let line = match line {
                Ok(l) => l,
                Err(e) => return Some(Err(ModelError::Input(format!("cannot read {origin} line {n}: {e}")))),
            };
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            return Some(self.parse(l));
        }
    }
}

impl<R> Requests<R> {
    fn parse(&mut self, l: &str) -> Result<StreamReq, ModelError> {
        let (origin, n) = (&self.origin, self.n);
        let bad = |what: &str| {
            ModelError::Input(format!(
                "{origin} line {n}: {what} in \"{l}\"; expected `0xADDR READ|WRITE cycle` (DRAMsim3's trace format)"
            ))
        };
        let mut f = l.split_whitespace();
        let (a, k, c) = match (f.next(), f.next(), f.next(), f.next()) {
            (Some(a), Some(k), Some(c), None) => (a, k, c),
            _ => return Err(bad("not three fields")),
        };
        let hex = a
            .strip_prefix("0x")
            .or_else(|| a.strip_prefix("0X"))
            .ok_or_else(|| bad("address without 0x"))?;
        let pa = u64::from_str_radix(hex, 16).map_err(|_| bad("bad hexadecimal address"))?;
        let write = match k {
            "READ" => false,
            "WRITE" => true,
            _ => return Err(bad("kind is not READ or WRITE")),
        };
        let at: u64 = c.parse().map_err(|_| bad("bad cycle"))?;
        if at > MAX_ARRIVAL {
            return Err(bad(&format!(
                "cycle {at} is past 2^62, the latest arrival the model takes (its times are shifted by 2^40 and must not overflow)"
            )));
        }
        if at < self.last {
            return Err(bad(&format!("cycle {at} is before the previous line's {}", self.last)));
        }
        self.last = at;
        Ok(StreamReq { pa, write, at })
    }
}

/// The latest arrival cycle a stream may have: the model shifts times by 2^40 (`ORIGIN`)
/// and adds latencies, which must not overflow u64 (a line with cycle 2^64 − 1 panicked
/// in a debug build and wrapped in a release one).
pub const MAX_ARRIVAL: u64 = 1 << 62;

/// Runs a DRAMsim3 trace through a fresh model of `spec` as it reads it (the stream is
/// never held whole), asking `stop` every 65,536 requests whether to end early (Ctrl-C);
/// the writes still buffered are drained either way. Returns the model and whether
/// `stop` ended the replay.
pub fn replay(
    r: impl BufRead,
    origin: &str,
    spec: &DramSpec,
    stop: &dyn Fn() -> bool,
) -> Result<(Dram, bool), ModelError> {
    let mut d = Dram::new(spec.clone(), spec.clock_mhz);
    let mut stopped = false;
    for (i, req) in requests(r, origin).enumerate() {
        let r = req?;
        d.access_dram(r.pa, r.write, r.at);
        if (i + 1) % 65_536 == 0 && stop() {
            stopped = true;
            break;
        }
    }
    d.drain_all();
    Ok((d, stopped))
}

/// Writes `reqs` (a slice, or [`generate`]'s stream) in DRAMsim3's trace format.
pub fn write<R: std::borrow::Borrow<StreamReq>>(
    mut w: impl Write,
    reqs: impl IntoIterator<Item = R>,
) -> std::io::Result<()> {
    for r in reqs {
        let r = r.borrow();
        let k = if r.write { "WRITE" } else { "READ" };
        writeln!(w, "0x{:x} {k} {}", r.pa, r.at)?;
    }
    Ok(())
}

/// Synthetic streams `generate` knows.
pub const GENERATORS: [&str; 3] = ["seq", "random", "two-rank"];

/// A synthetic stream of `n` requests for `spec`, one every `gap` DRAM cycles, every
/// `write_every`-th a write (0: none). `seq`: consecutive bursts from address 0;
/// `random`: uniform bursts over the capacity (xorshift, `seed`); `two-rank`: two
/// sequential streams, one in each half of memory (with the top bit as rank: one per
/// rank), taken in turn. Generated as it is read (a stream of 10^12 requests takes no
/// memory); an unknown kind, or a last arrival past 2^62 cycles ([`MAX_ARRIVAL`]), is an error up front.
pub fn generate(
    kind: &str,
    spec: &DramSpec,
    n: u64,
    gap: u64,
    write_every: u64,
    seed: u64,
) -> Result<impl Iterator<Item = StreamReq>, ModelError> {
    #[derive(Clone, Copy)]
    enum Kind {
        Seq,
        Random,
        TwoRank,
    }
    let k = match kind {
        "seq" => Kind::Seq,
        "random" => Kind::Random,
        "two-rank" => Kind::TwoRank,
        _ => {
            return Err(ModelError::Input(format!(
                "--generate {kind}: unknown stream generator; known: {}",
                GENERATORS.join(", ")
            )))
        }
    };
    if n.saturating_sub(1)
        .checked_mul(gap)
        .is_none_or(|last| last > MAX_ARRIVAL)
    {
        return Err(ModelError::Input(format!(
            "{n} requests {gap} cycles apart end past 2^62 DRAM cycles (the latest arrival the model takes); lower the requests or the gap"
        )));
    }
    let bb = spec.burst_bytes;
    let lines = spec.capacity / bb;
    let mut x = seed | 1;
    Ok((0..n).map(move |i| {
        let line = match k {
            Kind::Seq => i % lines,
            Kind::Random => {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % lines
            }
            Kind::TwoRank => (i / 2) % (lines / 2).max(1) + (i % 2) * (lines / 2),
        };
        StreamReq {
            pa: line * bb,
            write: write_every > 0 && (i + 1) % write_every == 0,
            at: i * gap,
        }
    }))
}

/// Runs `reqs` through a fresh model of `spec` (DRAM cycles throughout); the writes
/// still buffered at the end are drained after the last arrival.
pub fn run(spec: &DramSpec, reqs: &[StreamReq]) -> Dram {
    let mut d = Dram::new(spec.clone(), spec.clock_mhz);
    for r in reqs {
        d.access_dram(r.pa, r.write, r.at);
    }
    d.drain_all();
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_past_the_models_time_range_is_an_error_naming_its_line() {
        let ok = format!("0x40 READ 5\n0x80 WRITE {MAX_ARRIVAL}\n");
        assert_eq!(read(ok.as_bytes(), "s").unwrap().len(), 2);
        // The fuzzer's case: cycle 2^64 - 1 overflowed the model's shifted time.
        let e = read("0x40 READ 5\n0x80 READ 18446744073709551615\n".as_bytes(), "s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("s line 2") && e.contains("2^62"), "{e}");
        let e = read(format!("0x80 READ {}\n", MAX_ARRIVAL + 1).as_bytes(), "s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
