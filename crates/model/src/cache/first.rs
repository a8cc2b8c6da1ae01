//! The first level apart from the rest ([`Caches::split`]): a [`FirstLevel`] that
//! takes every access's first-level lookup (and on a miss its fill there), and the
//! [`Caches`] left behind, which takes the rest of each access that missed
//! ([`Caches::access_below`]). What lets the run loop put the two on two threads
//! (crates/sim/src/pipeline.rs).
//!
//! Why the split is exact: under the hierarchy's rules (`cache/mod.rs`), the first
//! level's sets change only by its own lookups and fills, in the order of the accesses;
//! nothing below ever reads or changes them (write-backs go down, fills from below are
//! the access's own fill). So the first level can take every access in order on its
//! own; for an access that missed it, what the levels below need from it is the line
//! and the dirty line its fill displaced (written down after their fills, where the
//! one-piece path writes it too: three.rs's `run`, general.rs). A hit costs the first
//! level's latency and nothing else, so it needs no clock.
//!
//! [`Caches::access`] is made of the same pieces (three.rs's `run`: [`probe`], then the
//! levels below with [`fill`] called between their fills and the victim's write-back,
//! where the rules place it; general.rs's `general`: the two halves back to back), so
//! both ways share every line of the model; the split is checked against the one-piece
//! path and the reference model in `crates/model/tests/it/cache_differential.rs`.

use super::general;
use super::sets::{Fixed, Sets, Store};
use super::three::Req;
use super::{Caches, Meta, Mru, Tiers};

/// [`FirstLevel::access`]'s victim of a fill that displaced no dirty line (no line
/// number is this large: physical addresses are far below 2^64 bytes).
pub const NO_VICTIM: u64 = u64::MAX;

/// A hierarchy's first level, taken out of its [`Caches`] by [`Caches::split`] (see the
/// module documentation); [`Caches::join`] puts it back.
pub struct FirstLevel {
    meta: Meta,
    sets: Sets,
    mru: Vec<Mru>,
    mru_step: usize,
    core_limit: usize,
    line_shift: u32,
    pa_max: u64,
}

impl std::fmt::Debug for FirstLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirstLevel").field("kind", &self.sets.kind()).finish()
    }
}

/// [`general::first`] on a store whose type is known: fixed `u32` sets (a power of two
/// of them, as every `u32` store has), so no operation dispatches over [`Sets`]. The
/// lookup ([`probe`]), and on a miss the fill ([`fill`]).
///
/// # Safety
/// `core` is below the `Caches`' `core_limit` (the store index is then in bounds:
/// `Meta::locate_pow2`).
#[inline(always)]
pub(super) unsafe fn look<S: Store>(
    m: &mut Meta,
    s: &mut S,
    mru: &mut Mru,
    line: u64,
    core: usize,
    write: bool,
    walk: bool,
) -> Option<u64> {
    // SAFETY: this function's contract is `probe`'s.
    let (set, sa, ka) = unsafe { probe(m, s, mru, line, core, write, walk) }?;
    Some(fill::<S>(m, set, sa, ka, write))
}

/// The first level's lookup of line number `line` for core `core` in the store `s`
/// (see [`look`]): `None` on a hit (counted; the line most recently used, dirty if
/// `write`); on a miss (counted) the set, the set within the copy and the tag word,
/// for [`fill`]. `mru` is the copy's most recent line; it becomes `line`.
///
/// # Safety
/// As [`look`]'s.
#[inline(always)]
pub(super) unsafe fn probe<'s, S: Store>(
    m: &mut Meta,
    s: &'s mut S,
    mru: &mut Mru,
    line: u64,
    core: usize,
    write: bool,
    walk: bool,
) -> Option<(&'s mut S::Set, usize, u64)> {
    let kind = (walk as usize) << 1;
    if line == mru.line {
        // The first level's most recent line (see `Mru`).
        // SAFETY: `mru.set` is a store index `Meta::locate_pow2` gave (in bounds).
        S::mark_first(unsafe { s.set(mru.set) }, write);
        m.counts[kind] += 1;
        return None;
    }
    let (sa, ga, ka) = m.locate_pow2(line, core);
    *mru = Mru { line, set: ga };
    // SAFETY: `core` is below the limit (this function's contract), so the store
    // index `Meta::locate_pow2` gives is in bounds.
    let set = unsafe { s.set(ga) };
    if S::lookup(set, ka, write) {
        m.counts[kind] += 1;
        return None;
    }
    m.counts[kind | 1] += 1;
    Some((set, sa, ka))
}

/// The first level's fill after a [`probe`] that missed (`set`, `sa`, `ka` as it gave
/// them; dirty if `write`): the line number of the dirty line it displaced, or
/// [`NO_VICTIM`].
#[inline(always)]
pub(super) fn fill<S: Store>(m: &mut Meta, set: &mut S::Set, sa: usize, ka: u64, write: bool) -> u64 {
    let w = S::fill(set, ka, write);
    if w & 1 == 0 {
        return NO_VICTIM;
    }
    m.writebacks += 1;
    m.geom.line_of_pow2(w, sa)
}

impl FirstLevel {
    /// The first level's lookup latency (a hit's whole cost).
    #[inline(always)]
    pub fn latency(&self) -> u64 {
        self.meta.latency
    }

    /// The first-level half of [`Caches::access`] (same arguments, no clock): `None` on
    /// a hit; on a miss, the line filled here and `Some((line, victim))`: the line
    /// number and the dirty line the fill displaced ([`NO_VICTIM`]: none), for
    /// [`Caches::access_below`].
    #[inline(always)]
    pub fn access(&mut self, core: usize, pa: u64, write: bool, walk: bool) -> Option<(u64, u64)> {
        assert!(
            pa <= self.pa_max,
            "physical address {pa:#x} above the {:#x} the caches were built for (a model bug)",
            self.pa_max
        );
        assert!(core < self.core_limit, "core {core} has no cache copies");
        let line = pa >> self.line_shift;
        // SAFETY: as in `Caches::access`: one entry per core below `core_limit` (first
        // level private) or one (shared, `mru_step` 0).
        let mru = unsafe { self.mru.get_unchecked_mut(core * self.mru_step) };
        let m = &mut self.meta;
        let v = match &mut self.sets {
            // SAFETY (both): `core` was checked against `core_limit` above.
            Sets::N4(s) => unsafe { look::<Fixed<u32, 4>>(m, s, mru, line, core, write, walk) },
            Sets::N8(s) => unsafe { look::<Fixed<u32, 8>>(m, s, mru, line, core, write, walk) },
            sets => general::first(m, sets, mru, (core, line, write, walk)),
        };
        v.map(|victim| (line, victim))
    }
}

impl Caches {
    /// Takes the first level out (its sets, counts and most recent lines) to run apart
    /// (see the module documentation). Until [`Caches::join`] puts it back, only
    /// [`Caches::access_below`] may be called: [`Caches::access`] panics (and
    /// [`Caches::access_repeat`] declines), and the first level's counts in
    /// [`Caches::stats`] are those at the split.
    pub fn split(&mut self) -> FirstLevel {
        assert!(self.below_limit == 0, "the first level is split off already");
        let (meta, sets) = match &mut self.tiers {
            Tiers::W4W8W16(t) => {
                let (m, a) = t.take_first();
                (m, Sets::N4(a))
            }
            Tiers::W8W4W16(t) => {
                let (m, a) = t.take_first();
                (m, Sets::N8(a))
            }
            Tiers::General(v) => (v[0].meta.clone(), std::mem::replace(&mut v[0].sets, Sets::none())),
        };
        self.below_limit = self.core_limit;
        self.core_limit = 0;
        FirstLevel {
            meta,
            sets,
            mru: std::mem::take(&mut self.mru),
            mru_step: self.mru_step,
            core_limit: self.below_limit,
            line_shift: self.line_shift,
            pa_max: self.pa_max,
        }
    }

    /// Puts back the first level [`Caches::split`] took, with what it did since.
    pub fn join(&mut self, f: FirstLevel) {
        assert!(self.below_limit != 0, "no first level is split off");
        match (&mut self.tiers, f.sets) {
            (Tiers::W4W8W16(t), Sets::N4(a)) => t.put_first(f.meta, a),
            (Tiers::W8W4W16(t), Sets::N8(a)) => t.put_first(f.meta, a),
            (Tiers::General(v), sets) => {
                v[0].meta = f.meta;
                v[0].sets = sets;
            }
            _ => panic!("a first level joined to a hierarchy it was not split from"),
        }
        self.mru = f.mru;
        self.core_limit = self.below_limit;
        self.below_limit = 0;
    }

    /// The rest of an access of core `core` to line number `line` (a page-walk read
    /// if `walk`) that missed the split-off first level, whose fill there displaced
    /// the dirty line `victim` ([`NO_VICTIM`]: none), as [`FirstLevel::access`] gave
    /// them: its latency, the first level's included, and every effect below the first
    /// level that [`Caches::access`] has. `now` as for [`Caches::access`].
    #[inline]
    pub fn access_below(&mut self, core: usize, line: u64, walk: bool, victim: u64, now: impl FnOnce() -> u64) -> u64 {
        assert!(
            core < self.below_limit,
            "core {core} has no cache copies, or the first level is not split off"
        );
        let r = Req {
            mem: &mut self.mem,
            line_shift: self.line_shift,
            core,
            line,
            write: false,
            walk,
        };
        match &mut self.tiers {
            // SAFETY (both): `core` was checked against the limit above.
            Tiers::W4W8W16(t) => unsafe { t.access_below(r, victim, now) },
            Tiers::W8W4W16(t) => unsafe { t.access_below(r, victim, now) },
            Tiers::General(v) => {
                let lat0 = v[0].meta.latency;
                general::below(&mut v[1..], r.mem, r.line_shift, (core, line, walk), victim, lat0, now)
            }
        }
    }
}
