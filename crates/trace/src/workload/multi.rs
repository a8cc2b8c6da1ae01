//! Several cores at once: `copies=N` runs N copies of a workload, each its own process
//! (address space `i`) on core `i`; `threads=N` runs one program's work split over N
//! threads, one address space, thread `i` on core `i` (each workload says how it splits:
//! [`Args::thread`]). The parts' references interleave round-robin, `interleave`
//! references (default 1) from each in turn, as cores running side by side issue them;
//! a part that ends leaves the others to finish.
//!
//! `refs` stays per part: `gups:table=1GiB,refs=1M,threads=4` issues 4 M references.
//! The machine needs that many cores (`--set machine.cores=N`): a reference of core `i`
//! runs on core `i % machine.cores`.

use super::Args;
use crate::{Batch, MemRef, TraceError, TraceSource};

/// How the parts of a multi-core workload relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Separate processes running the same program (address space `i`).
    Copies,
    /// Threads of one process splitting its work (address space 0).
    Threads,
}

/// The most parts (cores) a workload may be split over (assumed limit: the machine's
/// own core limit is 4096; a part costs a buffer of 4,096 references).
pub const MAX_PARTS: u64 = 4096;

/// References fetched from a part at a time.
const CHUNK: usize = 4096;

/// Takes `copies=` / `threads=` / `interleave=` from `args`: `None` if neither part key is
/// given (then `interleave` is an error too), else the mode, the count and the
/// interleave.
pub(crate) fn take(args: &mut Args) -> Result<Option<(Mode, u64, u64)>, TraceError> {
    let copies = args.count_opt("copies")?;
    let threads = args.count_opt("threads")?;
    let interleave = args.count_opt("interleave")?;
    let (mode, n, key) = match (copies, threads) {
        (Some(_), Some(_)) => return Err(args.err("give copies= or threads=, not both".into())),
        (Some(n), None) => (Mode::Copies, n, "copies"),
        (None, Some(n)) => (Mode::Threads, n, "threads"),
        (None, None) => {
            return match interleave {
                Some(_) => Err(args.err("interleave= needs copies= or threads=".into())),
                None => Ok(None),
            }
        }
    };
    if n == 0 || n > MAX_PARTS {
        return Err(args.err(format!("{key} = {n} is out of range: 1 to {MAX_PARTS}")));
    }
    let interleave = interleave.unwrap_or(1);
    if interleave == 0 || interleave > CHUNK as u64 {
        return Err(args.err(format!(
            "interleave = {interleave} is out of range: 1 to {CHUNK} references"
        )));
    }
    Ok(Some((mode, n, interleave)))
}

/// N parts of a workload interleaved (see the module documentation).
pub struct Multi {
    spec: String,
    mode: Mode,
    parts: Vec<Part>,
    interleave: usize,
    /// The part whose turn it is, and how many of its `interleave` it has issued.
    turn: usize,
    issued: usize,
    live: usize,
}

struct Part {
    src: Box<dyn TraceSource + Send>,
    buf: Batch,
    pos: usize,
    done: bool,
}

impl Multi {
    /// The parts in core order; `mode` sets each reference's core and address space.
    pub(crate) fn new(spec: &str, mode: Mode, parts: Vec<Box<dyn TraceSource + Send>>, interleave: u64) -> Multi {
        let live = parts.len();
        Multi {
            spec: spec.to_string(),
            mode,
            parts: parts
                .into_iter()
                .map(|src| Part {
                    src,
                    buf: Batch::with_capacity(CHUNK),
                    pos: 0,
                    done: false,
                })
                .collect(),
            interleave: interleave as usize,
            turn: 0,
            issued: 0,
            live,
        }
    }

    /// The next reference of part `i`, refilling its buffer; `None` at its end.
    fn next_of(&mut self, i: usize) -> Result<Option<MemRef>, TraceError> {
        let p = &mut self.parts[i];
        if p.pos == p.buf.refs.len() {
            if p.done {
                return Ok(None);
            }
            p.buf.clear();
            p.pos = 0;
            let n = p.src.next_batch(&mut p.buf, CHUNK)?;
            if !p.buf.events.is_empty() {
                return Err(TraceError::Spec(format!(
                    "workload '{}': copies=/threads= cannot split a workload that emits events (processes, unmaps); use its own keys (build: jobs=)",
                    self.spec
                )));
            }
            if n == 0 {
                p.done = true;
                self.live -= 1;
                return Ok(None);
            }
        }
        let mut r = p.buf.refs[p.pos];
        p.pos += 1;
        r.core = i as u16;
        r.asid = match self.mode {
            Mode::Copies => i as u16,
            Mode::Threads => r.asid,
        };
        Ok(Some(r))
    }
}

impl TraceSource for Multi {
    fn next_batch(&mut self, batch: &mut Batch, max: usize) -> Result<usize, TraceError> {
        let mut n = 0;
        while n < max && self.live > 0 {
            match self.next_of(self.turn)? {
                Some(r) => {
                    batch.refs.push(r);
                    n += 1;
                    self.issued += 1;
                    if self.issued < self.interleave {
                        continue;
                    }
                }
                None if self.live == 0 => break,
                None => {}
            }
            self.issued = 0;
            self.turn = (self.turn + 1) % self.parts.len();
        }
        Ok(n)
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    /// The parts' warm-ups (GUPS's initialisation): as long as every part is still in
    /// its own, each round of `interleave` references per part is warm-up, so the first
    /// N × m references are (m: the smallest part's warm-up rounded down to a multiple of
    /// `interleave`); the few initialising references after that are measured.
    fn warmup_refs(&self) -> u64 {
        let k = self.interleave as u64;
        let m = self.parts.iter().map(|p| p.src.warmup_refs()).min().unwrap_or(0) / k * k;
        m * self.parts.len() as u64
    }
    fn progress(&self) -> Option<(u64, u64)> {
        let mut sum = (0, 0);
        for p in &self.parts {
            let (d, t) = p.src.progress()?;
            sum = (sum.0 + d, sum.1 + t);
        }
        Some(sum)
    }
}
