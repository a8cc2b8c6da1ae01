//! Synthetic workloads, written as specs `NAME:key=value,key=value`.
//!
//! | spec | what it generates |
//! |---|---|
//! | `gups:table=1GiB[,updates=N][,refs=N]` | HPCC RandomAccess: each update loads and stores one 8-byte word of the table, indexed by the 64-bit LFSR (POLY 0x7). Default updates = 4 × table words, as HPCC. |
//! | `lat_mem_rd:size=64MiB[,stride=64][,order=backward]` | LMbench's lat_mem_rd: a dependent chase over `size` bytes, one 8-byte pointer every `stride` bytes, backward (default), forward, or in random order (`order=random`, lat_mem_rd `-t`). |
//! | `chase:pages=N,refs=M` | a dependent pointer chase over N pages in one random cycle, one 64-byte line per page (the line rotates with the page's position so lines do not share a cache set). |
//! | `stride:pages=N,offset=16,refs=M` | the tlb_test pattern: load `base + i*4096 + i*offset`, `i` wrapping at N. |
//! | `seq:size=1GiB,refs=M[,stride=64]` | sequential loads every `stride` bytes, wrapping at `size`. |
//! | `stream:size=64MiB[,kernel=triad]` | McCalpin's STREAM kernels (copy, scale, add, triad) over three arrays of `size` bytes. |
//! | `build:procs=200,refs=200K[,jobs=2,small=64,large=2,large_size=4MiB,unmap=0]` | a build-like mix: many short-lived processes (one address space each, ended by an exit event) with small and large allocations; `unmap=N` frees N large arrays mid-life with unmap events ([`crate::event`]). |
//!
//! Every workload also takes `seed=` (default 0; gups uses HPCC_starts(seed)), `base=`
//! (virtual base address, hex or decimal, aligned to 1 GiB by default) and, where it is
//! not listed, `refs=` (default: one pass, or 4 × table words for gups).
//! Every workload but `build` also takes `copies=N` or `threads=N` (and `interleave=K`):
//! N parts on N cores ([`Multi`]).
//! Sizes take binary suffixes (`4K` = 4096); counts take decimal suffixes (`100M` = 10^8).
//!
//! Every workload implements [`Generator`] (its contract is there); the `workloads!` table
//! below generates [`NAMES`] and the one constructor that chooses among them.
//!
//! Adding a workload: a file here with a struct implementing [`Generator`] (and
//! `TraceSource`), its name in the `workloads!` table, and a line in the table above and
//! in docs/workloads.md.

mod build;
mod build_window;
mod chase;
mod gups;
mod latmem;
mod multi;
mod seq;
mod stream;
mod stride;

pub use build::Build;
pub use chase::Chase;
pub use gups::{hpcc_starts, hpcc_step, Gups};
pub use latmem::LatMemRd;
pub use multi::{Mode, Multi, MAX_PARTS};
pub use seq::Seq;
pub use stream::Stream;
pub use stride::Stride;

use crate::units::{parse_count, parse_size};
use crate::{TraceError, TraceSource};
use std::collections::BTreeMap;

/// A synthetic workload generator.
///
/// Contract:
/// - [`Generator::from_args`] takes every key it understands from the spec's [`Args`]
///   (a key left over is an error naming it), checks each value (sizes, counts, `refs`
///   within [`MAX_REFS`]), and places its addresses with [`Args::base`], so a workload
///   whose addresses would not fit the machine's virtual address space is refused before
///   it runs;
/// - the stream is deterministic: the same spec (and `seed=`) gives the same references
///   and events, on every host and release;
/// - as a [`TraceSource`], it streams in batches without materialising the trace, and
///   reports progress as (references done, references in all).
pub trait Generator: TraceSource + Send + Sized + 'static {
    /// The name a spec starts with (`gups` in `gups:table=1GiB`).
    const NAME: &'static str;
    /// Builds the generator from a spec's arguments.
    fn from_args(args: &mut Args) -> Result<Self, TraceError>;
}

/// The table of workloads: generates [`NAMES`] and the constructor [`parse_for`] uses,
/// which boxes the chosen generator's own type: each generator's batch loop is compiled
/// on its own (a per-batch call; the per-reference work is static inside it). Through one
/// enum whose dispatch inlined all five loops, the seq loop cost 7 more instructions per
/// reference (cachegrind: 79 → 87 per simulated reference).
macro_rules! workloads {
    ($($kind:ident),* $(,)?) => {
        /// The workload names [`parse`] accepts.
        pub const NAMES: &[&str] = &[$(<$kind as Generator>::NAME),*];

        /// The workload `name` built from `args`; `None` if no workload has that name.
        fn build(name: &str, args: &mut Args) -> Option<Result<Box<dyn TraceSource + Send>, TraceError>> {
            $(
                if name == <$kind as Generator>::NAME {
                    return Some(<$kind as Generator>::from_args(args).map(|w| Box::new(w) as Box<dyn TraceSource + Send>));
                }
            )*
            None
        }
    };
}

workloads!(Gups, Chase, LatMemRd, Stride, Seq, Stream, Build);

/// Most references a workload may generate (`refs`, given or by default): 10^11, which
/// a run finishes in tens of minutes; above it a spec is refused up front rather than
/// accepted and never finished.
pub const MAX_REFS: u64 = 100_000_000_000;

/// The default base on a machine whose address space is 32 bits wide (1 GiB: above the
/// low code and heap of a 32-bit process, room for 3 GiB).
pub const BASE_32: u64 = 0x4000_0000;

/// A workload's references and the defaults chosen for the user that they should know
/// of (a base moved to fit the address space, `bits` following the architecture), one
/// sentence each, for the front end to print ([`parse_for`]).
pub type Parsed = (Box<dyn TraceSource + Send>, Vec<String>);

/// Parses a workload spec for a 48-bit address space (x86-64, AArch64) and returns its
/// reference stream ([`parse_for`] for other widths and the notes).
pub fn parse(spec: &str) -> Result<Box<dyn TraceSource + Send>, TraceError> {
    parse_for(spec, 48).map(|(src, _)| src)
}

/// Parses a workload spec for a machine whose virtual addresses are `va_bits` wide:
/// every address the workload generates must fit (a `base` that wraps around or ends
/// beyond the space is an error); on a 32-bit space a default base that does not fit
/// is replaced by [`BASE_32`] and `build` defaults to `bits=32`, each with a note.
pub fn parse_for(spec: &str, va_bits: u32) -> Result<Parsed, TraceError> {
    let mut args = Args::parse(spec)?;
    args.va_bits = va_bits;
    let name = args.name.clone();
    if let Some((mode, n, interleave)) = multi::take(&mut args)? {
        let mut parts = Vec::with_capacity(n as usize);
        let mut notes = Vec::new();
        let mut bound = Some(0);
        for i in 0..n {
            let mut a = args.clone();
            a.part = (i, n, Some(mode));
            let src = match build(&name, &mut a) {
                Some(w) => w?,
                None => return Err(unknown(&name, spec)),
            };
            if i == 0 {
                notes = std::mem::take(&mut a.notes);
            }
            bound = bound.and_then(|b| Some(b.max(a.addr_end?)));
            a.finish()?;
            parts.push(src);
        }
        let multi: Box<dyn TraceSource + Send> = Box::new(Multi::new(spec, mode, parts, interleave));
        return Ok((Bounded::wrap(multi, bound), notes));
    }
    let src = match build(&name, &mut args) {
        Some(w) => w?,
        None => return Err(unknown(&name, spec)),
    };
    let notes = std::mem::take(&mut args.notes);
    let end = args.addr_end;
    args.finish()?;
    Ok((Bounded::wrap(src, end), notes))
}

/// A workload whose addresses stay under `end` ([`TraceSource::addr_end`]).
struct Bounded {
    inner: Box<dyn TraceSource + Send>,
    end: u64,
}

impl Bounded {
    /// `src`, saying its bound if there is one.
    fn wrap(src: Box<dyn TraceSource + Send>, end: Option<u64>) -> Box<dyn TraceSource + Send> {
        match end {
            Some(end) => Box::new(Bounded { inner: src, end }),
            None => src,
        }
    }
}

impl TraceSource for Bounded {
    fn next_batch(&mut self, buf: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        self.inner.next_batch(buf, max)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.inner.progress()
    }
    fn meta(&self) -> Option<crate::TraceMeta> {
        self.inner.meta()
    }
    fn warmup_refs(&self) -> u64 {
        self.inner.warmup_refs()
    }
    fn addr_end(&self) -> Option<u64> {
        Some(self.end)
    }
}

fn unknown(name: &str, spec: &str) -> TraceError {
    TraceError::Spec(format!(
        "unknown workload '{name}' in '{spec}'; known: {}",
        NAMES.join(", ")
    ))
}

/// Key-value arguments of a spec; each key must be taken by the [`Generator`], else the
/// spec is refused naming the key.
#[derive(Clone)]
pub struct Args {
    spec: String,
    name: String,
    kv: BTreeMap<String, String>,
    /// Width of the machine's virtual addresses.
    pub(crate) va_bits: u32,
    /// Defaults chosen for the user ([`parse_for`]).
    pub(crate) notes: Vec<String>,
    /// This generator's part of a multi-core workload: (index, parts, mode); (0, 1,
    /// None) alone ([`Multi`]).
    part: (u64, u64, Option<Mode>),
    /// One past the last byte of every address range placed by [`Args::base`] so far
    /// (`None`: none placed; the workload's addresses are then not bounded here).
    addr_end: Option<u64>,
}

impl Args {
    fn parse(spec: &str) -> Result<Args, TraceError> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut kv = BTreeMap::new();
        for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| TraceError::Spec(format!("workload '{spec}': '{part}' is not key=value")))?;
            if kv.insert(k.trim().to_string(), v.trim().to_string()).is_some() {
                return Err(TraceError::Spec(format!("workload '{spec}': key '{k}' given twice")));
            }
        }
        Ok(Args {
            spec: spec.to_string(),
            name: name.trim().to_string(),
            kv,
            va_bits: 48,
            notes: Vec::new(),
            part: (0, 1, None),
            addr_end: None,
        })
    }

    fn err(&self, msg: String) -> TraceError {
        TraceError::Spec(format!("workload '{}': {msg}", self.spec))
    }

    /// A size (`4K`, `1GiB`: binary units) under `key`, else `default` (`None`: required).
    pub fn size(&mut self, key: &str, default: Option<u64>) -> Result<u64, TraceError> {
        match self.kv.remove(key) {
            Some(v) => parse_size(&v).map_err(|e| self.err(format!("{key}: {e}"))),
            None => default.ok_or_else(|| self.err(format!("missing required key '{key}'"))),
        }
    }

    /// A count (`100M`: decimal units) under `key`, else `default` (`None`: required).
    pub fn count(&mut self, key: &str, default: Option<u64>) -> Result<u64, TraceError> {
        match self.kv.remove(key) {
            Some(v) => parse_count(&v).map_err(|e| self.err(format!("{key}: {e}"))),
            None => default.ok_or_else(|| self.err(format!("missing required key '{key}'"))),
        }
    }

    /// A word under `key`, else `default`.
    pub fn text(&mut self, key: &str, default: &str) -> String {
        self.kv.remove(key).unwrap_or_else(|| default.to_string())
    }

    /// A count under `key` if given.
    fn count_opt(&mut self, key: &str) -> Result<Option<u64>, TraceError> {
        match self.kv.contains_key(key) {
            true => self.count(key, None).map(Some),
            false => Ok(None),
        }
    }

    /// `Some((i, n))` when this generator is thread `i` of `n` splitting one program's
    /// work (`threads=n`, [`Multi`]); a workload takes its share (a slice of its data,
    /// a segment of its random stream). `None` alone or as one of `copies=n`, which
    /// run the same program each.
    pub fn thread(&self) -> Option<(u64, u64)> {
        match self.part {
            (i, n, Some(Mode::Threads)) => Some((i, n)),
            _ => None,
        }
    }

    /// A switch under `key`: `on`/`off` (also `1`/`0`, `true`/`false`), else `default`.
    pub fn flag(&mut self, key: &str, default: bool) -> Result<bool, TraceError> {
        match self.kv.remove(key).as_deref() {
            None => Ok(default),
            Some("on" | "1" | "true" | "yes") => Ok(true),
            Some("off" | "0" | "false" | "no") => Ok(false),
            Some(v) => Err(self.err(format!("{key}: '{v}' is not on or off"))),
        }
    }

    /// A word under `key`, one of `choices`, else `default`.
    pub fn choice(
        &mut self,
        key: &str,
        choices: &[&'static str],
        default: &'static str,
    ) -> Result<&'static str, TraceError> {
        match self.kv.remove(key) {
            None => Ok(default),
            Some(v) => choices
                .iter()
                .copied()
                .find(|c| *c == v)
                .ok_or_else(|| self.err(format!("{key}: '{v}' is not one of {}", choices.join(", ")))),
        }
    }

    /// An address (hex with `0x`, or decimal) under `key`, else `default`.
    pub fn addr(&mut self, key: &str, default: u64) -> Result<u64, TraceError> {
        match self.kv.remove(key) {
            Some(v) => {
                let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                    Some(h) => u64::from_str_radix(h, 16),
                    None => v.parse(),
                };
                parsed.map_err(|_| self.err(format!("{key}: '{v}' is not an address")))
            }
            None => Ok(default),
        }
    }

    /// `refs` (or `default`, computed by the caller with saturating arithmetic), in
    /// 1..=[`MAX_REFS`].
    pub fn refs(&mut self, default: u64) -> Result<u64, TraceError> {
        let given = self.kv.contains_key("refs");
        let refs = self.count("refs", Some(default))?;
        self.positive("refs", refs)?;
        if refs > MAX_REFS {
            let how = if given { "" } else { " (the default for this spec)" };
            return Err(self.err(format!(
                "refs = {refs}{how} is out of range: 1 to {MAX_REFS} (100G) references; give a smaller refs="
            )));
        }
        Ok(refs)
    }

    /// The base address (`base=` or `default`) of a workload whose addresses span
    /// `extent` bytes from it: the span must end inside the `va_bits` address space
    /// without wrapping around. On a 32-bit space a default that does not fit becomes
    /// [`BASE_32`], with a note.
    pub fn base(&mut self, default: u64, extent: Option<u64>) -> Result<u64, TraceError> {
        let space = 1u128 << self.va_bits;
        let given = self.kv.contains_key("base");
        let fits = |b: u64| extent.is_some_and(|e| b as u128 + e as u128 <= space);
        let mut base = self.addr("base", default)?;
        if !given && !fits(base) && self.va_bits <= 32 && fits(BASE_32) {
            self.notes.push(format!(
                "workload '{}': base {BASE_32:#x} chosen: the default {default:#x} is beyond the {}-bit address space of this machine (give base= to choose)",
                self.spec, self.va_bits
            ));
            base = BASE_32;
        }
        let Some(extent) = extent else {
            return Err(self.err(format!(
                "the workload's addresses span more than 2^64 bytes, beyond any {}-bit address space",
                self.va_bits
            )));
        };
        if extent as u128 > space {
            return Err(self.err(format!(
                "the workload's addresses span {extent:#x} bytes, more than the {}-bit address space of the machine",
                self.va_bits
            )));
        }
        if !fits(base) {
            let end = base as u128 + extent as u128;
            let what = if end > u64::MAX as u128 {
                "wrap around past 2^64".to_string()
            } else {
                format!("end at {end:#x}")
            };
            return Err(self.err(format!(
                "base {base:#x} + {extent:#x} bytes of addresses {what}, beyond the {}-bit address space of the machine (top {:#x}){}; give a smaller size or a base of at most {:#x}",
                self.va_bits,
                space - 1,
                if given { "" } else { " with the default base" },
                space.saturating_sub(extent as u128)
            )));
        }
        // Fits: base + extent is at most 2^va_bits <= 2^64 (2^64 itself saturates, and
        // then bounds nothing below it).
        let end = base.saturating_add(extent);
        self.addr_end = Some(self.addr_end.map_or(end, |e| e.max(end)));
        Ok(base)
    }

    /// `v` if it is positive, else an error naming `key`.
    pub fn positive(&self, key: &str, v: u64) -> Result<u64, TraceError> {
        if v == 0 {
            Err(self.err(format!("'{key}' must be greater than 0")))
        } else {
            Ok(v)
        }
    }

    fn finish(self) -> Result<(), TraceError> {
        match self.kv.keys().next() {
            Some(k) => Err(self.err(format!("unknown key '{k}' for workload '{}'", self.name))),
            None => Ok(()),
        }
    }

    /// The whole spec, for messages.
    pub fn spec(&self) -> &str {
        &self.spec
    }
}

/// The project's one seeded generator, re-exported from `mmulab-base` at its old path.
pub use mmulab_base::SplitMix64;

/// Emits references `start..end` of a counted stream into `buf` through `f`.
#[inline]
pub(crate) fn emit(
    done: &mut u64,
    total: u64,
    buf: &mut Vec<crate::MemRef>,
    max: usize,
    mut f: impl FnMut(u64) -> crate::MemRef,
) -> usize {
    let n = (total - *done).min(max as u64);
    let start = *done;
    // A mapped range has an exact length, so `extend` reserves once and writes without
    // a capacity check per reference.
    buf.extend((start..start + n).map(&mut f));
    *done += n;
    n as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_and_name_are_errors() {
        let e = parse("gups:table=1M,colour=red").err().unwrap().to_string();
        assert!(e.contains("colour"), "{e}");
        let e = parse("gupz:table=1M").err().unwrap().to_string();
        assert!(e.contains("gupz") && e.contains("known"), "{e}");
        let e = parse("chase:refs=10").err().unwrap().to_string();
        assert!(e.contains("pages"), "{e}");
    }
}
