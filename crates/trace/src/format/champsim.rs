//! ChampSim instruction traces: fixed-size little-endian records, usually `.xz` or `.gz`.
//!
//! `input_instr` (64 bytes): `u64 ip` @0, `u8 is_branch` @8, `u8 branch_taken` @9,
//! `u8 dst_regs[2]` @10, `u8 src_regs[4]` @12, `u64 dst_mem[2]` @16, `u64 src_mem[4]` @32.
//! `cloudsuite_instr` (96 bytes): ip @0, branch bytes @8/@9, `u8 dst_regs[4]` @10,
//! `u8 src_regs[4]` @14, `u64 dst_mem[4]` @24, `u64 src_mem[4]` @56, `u8 asid[2]` @88
//! (then padding to 96).
//!
//! Each instruction yields, in this order: its instruction fetch at `ip`, then one load per
//! non-zero source-memory slot (slot order), then one store per non-zero destination-memory
//! slot (slot order) — the order in which an in-order core would issue them. Zero slots are
//! unused; duplicate addresses are kept (ChampSim keeps them too). ChampSim records no access
//! sizes, so every size is 0. All references are on core 0; the address space is 0 for
//! `input_instr` and `asid[0]` for cloudsuite (the instruction's address space; `asid[1]` is
//! ignored).

use crate::{AccessKind, MemRef, TraceError, TraceSource};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Which ChampSim record layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `input_instr`, 64 bytes.
    Standard,
    /// `cloudsuite_instr`, 96 bytes, with ASIDs.
    Cloudsuite,
}

impl Variant {
    /// Bytes per record.
    pub fn record_size(self) -> usize {
        match self {
            Variant::Standard => 64,
            Variant::Cloudsuite => 96,
        }
    }
    /// (dst_mem offset, dst slots, src_mem offset, src slots)
    fn layout(self) -> (usize, usize, usize, usize) {
        match self {
            Variant::Standard => (16, 2, 32, 4),
            Variant::Cloudsuite => (24, 4, 56, 4),
        }
    }
}

/// Streaming ChampSim reader over a decompressed byte stream.
pub struct ChampSimReader {
    src: Box<dyn Read + Send>,
    path: PathBuf,
    variant: Variant,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    offset: u64,
    eof: bool,
    delivered: u64,
    /// References of the current instruction not yet handed out (at most 9).
    pending: Vec<MemRef>,
    taken: usize,
}

impl ChampSimReader {
    /// Reads `variant` records from `src` (already decompressed); `path` names it in errors.
    pub fn new(src: Box<dyn Read + Send>, path: &Path, variant: Variant) -> ChampSimReader {
        ChampSimReader {
            src,
            path: path.to_path_buf(),
            variant,
            buf: vec![0u8; variant.record_size() * 4096],
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
            delivered: 0,
            pending: Vec::with_capacity(9),
            taken: 0,
        }
    }

    fn refill(&mut self, refs_before: u64) -> Result<bool, TraceError> {
        let rs = self.variant.record_size();
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        while !self.eof && self.end < rs {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(TraceError::Corrupt {
                        path: self.path.clone(),
                        offset: self.offset + self.end as u64,
                        line: None,
                        what: format!("cannot decompress: {e} (truncated or damaged file)"),
                        refs_before,
                    })
                }
            }
        }
        if self.end >= rs {
            return Ok(true);
        }
        if self.end > 0 {
            return Err(TraceError::Corrupt {
                path: self.path.clone(),
                offset: self.offset,
                line: None,
                what: format!(
                    "the trace ends inside a record: {} trailing bytes (ChampSim {:?} records are {rs} bytes; truncated, or the other variant?)",
                    self.end, self.variant
                ),
                refs_before,
            });
        }
        Ok(false)
    }
}

impl TraceSource for ChampSimReader {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let rs = self.variant.record_size();
        let (dst_at, dsts, src_at, srcs) = self.variant.layout();
        let first = buf.len();
        loop {
            let room = max - (buf.len() - first);
            let k = room.min(self.pending.len() - self.taken);
            buf.extend_from_slice(&self.pending[self.taken..self.taken + k]);
            self.taken += k;
            if buf.len() - first == max {
                break;
            }
            if self.end - self.start < rs && !self.refill(self.delivered + (buf.len() - first) as u64)? {
                break;
            }
            let r = &self.buf[self.start..self.start + rs];
            let u64at = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes"));
            let asid = if self.variant == Variant::Cloudsuite {
                r[88] as u16
            } else {
                0
            };
            let mk = |addr, kind| MemRef {
                addr,
                size: 0,
                kind,
                core: 0,
                asid,
            };
            self.pending.clear();
            self.taken = 0;
            self.pending.push(mk(u64at(0), AccessKind::IFetch));
            for s in 0..srcs {
                let a = u64at(src_at + 8 * s);
                if a != 0 {
                    self.pending.push(mk(a, AccessKind::Load));
                }
            }
            for d in 0..dsts {
                let a = u64at(dst_at + 8 * d);
                if a != 0 {
                    self.pending.push(mk(a, AccessKind::Store));
                }
            }
            self.start += rs;
            self.offset += rs as u64;
        }
        let n = buf.len() - first;
        self.delivered += n as u64;
        Ok(n)
    }
    fn describe(&self) -> String {
        format!("{} (champsim {:?})", self.path.display(), self.variant)
    }
}

/// Guesses the variant of a headerless ChampSim stream from its first bytes: the branch
/// flags at offsets 8 and 9 of every record are 0 or 1 and every ip is a non-zero user
/// address (top byte zero). Returns the variant whose record
/// stride is consistent over the sample when exactly one is; `None` when unsure.
pub fn guess_variant(head: &[u8]) -> Option<Variant> {
    let fits = |v: Variant| {
        let rs = v.record_size();
        let n = head.len() / rs;
        n >= 2
            && (0..n).all(|i| {
                let r = &head[i * rs..];
                let ip = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
                ip != 0 && ip >> 56 == 0 && r[8] <= 1 && r[9] <= 1
            })
    };
    match (fits(Variant::Standard), fits(Variant::Cloudsuite)) {
        (true, false) => Some(Variant::Standard),
        (false, true) => Some(Variant::Cloudsuite),
        _ => None,
    }
}
