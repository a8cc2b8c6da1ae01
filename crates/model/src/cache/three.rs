//! The hierarchy's path for the common shapes: three levels whose tag stores are fixed
//! `u32` sets of 4, 8 and 16 ways (the Pi 5, Neoverse N1) or 8, 4 and 16 ways
//! (Skylake). Chosen once, at construction ([`tiers`]); every other hierarchy takes
//! the general loop of [`super::Caches::access`].
//!
//! Same rules, same order of effects as the general loop (the module documentation of
//! `cache/mod.rs`; `crates/model/tests/it/cache_differential.rs` runs both against the
//! reference model): lookups down the levels until a hit, the fill from memory, the
//! fills deepest first, each dirty victim written down the levels at once. Written out
//! for three levels with each store's type known, so no operation goes through the
//! `Sets` dispatch or a level's bounds check (it was ~10 dispatches per GUPS reference),
//! and every set count is a power of two (`u32` stores need it), so no set index is a
//! division. The whole path is one function per shape ([`Three::access`]), chosen by one
//! match per access.

use super::first::{self, NO_VICTIM};
use super::sets::{Sets, Store};
use super::{Level, Mem, Meta, Mru, Tiers};
use crate::mem::backend::MemReq;

/// Three levels whose stores have the types `A`, `B`, `C`, nearest first.
pub(super) struct Three<A, B, C> {
    ma: Meta,
    a: A,
    mb: Meta,
    b: B,
    mc: Meta,
    c: C,
    /// The stores' names (sets.rs).
    kinds: [&'static str; 3],
}

/// The tag stores of `levels`: a [`Three`] when three.rs has a path for their shape,
/// else the general loop's.
pub(super) fn tiers(levels: Vec<Level>) -> Tiers {
    let levels: [Level; 3] = match levels.try_into() {
        Ok(l) => l,
        Err(levels) => return Tiers::General(levels),
    };
    let kinds = [levels[0].sets.kind(), levels[1].sets.kind(), levels[2].sets.kind()];
    let [Level { meta: ma, sets: a }, Level { meta: mb, sets: b }, Level { meta: mc, sets: c }] = levels;
    match (a, b, c) {
        (Sets::N4(a), Sets::N8(b), Sets::N16(c)) => Tiers::W4W8W16(Three {
            ma,
            a,
            mb,
            b,
            mc,
            c,
            kinds,
        }),
        (Sets::N8(a), Sets::N4(b), Sets::N16(c)) => Tiers::W8W4W16(Three {
            ma,
            a,
            mb,
            b,
            mc,
            c,
            kinds,
        }),
        (a, b, c) => Tiers::General(vec![
            Level { meta: ma, sets: a },
            Level { meta: mb, sets: b },
            Level { meta: mc, sets: c },
        ]),
    }
}

impl<A: Store, B: Store, C: Store> Three<A, B, C> {
    /// A data reference to the first level's most recent line, in store set `set` (the
    /// first branch of [`run`]): marked, counted, its latency.
    #[inline(always)]
    pub(super) fn repeat(&mut self, set: usize, write: bool) -> u64 {
        // SAFETY: `set` is the `Mru`'s, a store index `Meta::locate_pow2` gave.
        A::mark_first(unsafe { self.a.set(set) }, write);
        self.ma.counts[0] += 1;
        self.ma.latency
    }

    /// The levels' state besides their stores.
    pub(super) fn metas(&self) -> Vec<&Meta> {
        vec![&self.ma, &self.mb, &self.mc]
    }

    /// The stores' names.
    pub(super) fn kinds(&self) -> Vec<&'static str> {
        self.kinds.to_vec()
    }

    /// [`super::Caches::access`] on these levels (see the module documentation).
    ///
    /// # Safety
    /// `r.core` is below the `Caches`' `core_limit` (every store index this computes
    /// is then in bounds: `Meta::locate_pow2`).
    #[inline(always)]
    pub(super) unsafe fn access(&mut self, r: Req<'_>, mru: &mut Mru, now: impl FnOnce() -> u64) -> u64 {
        let levels = (
            (&mut self.ma, &mut self.a),
            (&mut self.mb, &mut self.b),
            (&mut self.mc, &mut self.c),
        );
        // SAFETY: the caller's contract is `run`'s.
        unsafe { run(r, mru, levels.0, levels.1, levels.2, now) }
    }

    /// [`below`] on these levels: the rest of an access that missed the first level
    /// (first.rs), whose fill there displaced the dirty line `victim`.
    ///
    /// # Safety
    /// As [`Three::access`]'s.
    #[inline(always)]
    pub(super) unsafe fn access_below(&mut self, r: Req<'_>, victim: u64, now: impl FnOnce() -> u64) -> u64 {
        let lat0 = self.ma.latency;
        // SAFETY: the caller's contract is `below`'s.
        unsafe {
            below(
                r,
                lat0,
                (&mut self.mb, &mut self.b),
                (&mut self.mc, &mut self.c),
                || victim,
                now,
            )
        }
    }

    /// The first level's state and store, taken out (first.rs); an empty store and
    /// the state (latency, geometry) stay.
    pub(super) fn take_first(&mut self) -> (Meta, A)
    where
        A: Default,
    {
        (self.ma.clone(), std::mem::take(&mut self.a))
    }

    /// Puts back what [`Three::take_first`] took.
    pub(super) fn put_first(&mut self, meta: Meta, a: A) {
        self.ma = meta;
        self.a = a;
    }
}

/// One reference's request and the memory below.
pub(super) struct Req<'a> {
    pub(super) mem: &'a mut Mem,
    pub(super) line_shift: u32,
    pub(super) core: usize,
    pub(super) line: u64,
    pub(super) write: bool,
    pub(super) walk: bool,
}

/// True if word `w` (what a fill displaced, as [`Store::fill`] returns it) is a dirty
/// line.
#[inline(always)]
fn dirty(w: u64) -> bool {
    w & 1 != 0
}

/// Writes dirty line number `line` of core `core` into the level `(m, s)`: the line
/// number of the dirty line that displaced, if any.
///
/// # Safety
/// As [`Three::access`]'s: `core` is below the `Caches`' `core_limit`.
#[inline(always)]
unsafe fn write_back<S: Store>(m: &mut Meta, s: &mut S, line: u64, core: usize) -> Option<u64> {
    let (set, g, key) = m.locate_pow2(line, core);
    // SAFETY: `g` is in bounds for a `core` below the limit (`Meta::locate_pow2`).
    match S::write_back(unsafe { s.set(g) }, key) {
        Some(w) if dirty(w) => {
            m.writebacks += 1;
            Some(m.geom.line_of_pow2(w, set))
        }
        _ => None,
    }
}

/// The three levels `a`, `b`, `c` (see the module documentation): the first level's
/// lookup ([`first::probe`]), then on a miss the levels below ([`below`]), with the
/// first level's fill ([`first::fill`]) after their fills, where the rules place it.
/// (Filling it before the levels below are looked up changes no result — nothing below
/// touches the first level, which is what lets it run apart: first.rs — but measured
/// 3–4 % slower on one thread, GUPS with caches, `sim_throughput --sliced`.)
///
/// # Safety
/// As [`Three::access`]'s: `r.core` is below the `Caches`' `core_limit`.
#[inline(always)]
unsafe fn run<A: Store, B: Store, C: Store>(
    r: Req<'_>,
    mru: &mut Mru,
    (ma, a): (&mut Meta, &mut A),
    levels_b: (&mut Meta, &mut B),
    levels_c: (&mut Meta, &mut C),
    now: impl FnOnce() -> u64,
) -> u64 {
    let lat0 = ma.latency;
    let write = r.write;
    // SAFETY (both): `r.core` is below the limit (this function's contract).
    let Some((set, sa, ka)) = (unsafe { first::probe(ma, a, mru, r.line, r.core, write, r.walk) }) else {
        return lat0;
    };
    let fill = || first::fill::<A>(ma, set, sa, ka, write);
    unsafe { below(r, lat0, levels_b, levels_c, fill, now) }
}

/// The second and third levels `b`, `c` and memory for a reference that missed the
/// first level (whose latency is `lat0`): the lookups until a hit, the fill from
/// memory, the fills deepest first, then `first_fill` (the first level's fill, or what
/// it gave when the first level runs apart: the dirty line it displaced, [`NO_VICTIM`]
/// if none), and that victim written down. Its latency, `lat0` included.
///
/// # Safety
/// As [`Three::access`]'s: `r.core` is below the `Caches`' `core_limit`.
#[inline(always)]
pub(super) unsafe fn below<B: Store, C: Store>(
    r: Req<'_>,
    lat0: u64,
    (mb, b): (&mut Meta, &mut B),
    (mc, c): (&mut Meta, &mut C),
    first_fill: impl FnOnce() -> u64,
    now: impl FnOnce() -> u64,
) -> u64 {
    let Req {
        mem,
        line_shift,
        core,
        line,
        walk,
        ..
    } = r;
    let kind = (walk as usize) << 1;
    let mut lat = lat0 + mb.latency;
    let (sb, gb, kb) = mb.locate_pow2(line, core);
    // SAFETY (this and the set below): `core` is below the limit (this function's
    // contract), so the store indices `Meta::locate_pow2` gives are in bounds.
    let set_b = unsafe { b.set(gb) };
    let hit_b = B::lookup(set_b, kb, false);
    mb.counts[kind | !hit_b as usize] += 1;
    // The time a request leaves for memory: the core's clock plus the lookups so far,
    // asked of the core once (as in the general loop).
    let mut now = Some(now);
    let mut at = None;
    let mut clock = |lat: u64| -> u64 { *at.get_or_insert_with(|| now.take().map_or(0, |f| f()) + lat) };
    let req = |line: u64, write: bool, at: u64| MemReq {
        pa: line << line_shift,
        write,
        core: core as u16,
        at,
    };
    if !hit_b {
        lat += mc.latency;
        let (sc, gc, kc) = mc.locate_pow2(line, core);
        // SAFETY: as `set_b`'s.
        let set_c = unsafe { c.set(gc) };
        let hit_c = C::lookup(set_c, kc, false);
        mc.counts[kind | !hit_c as usize] += 1;
        if !hit_c {
            let t = clock(lat);
            lat += mem.request(req(line, false, t));
            let w = C::fill(set_c, kc, false);
            if dirty(w) {
                mc.writebacks += 1;
                let t = clock(lat);
                mem.request(req(mc.geom.line_of_pow2(w, sc), true, t));
            }
        }
        let w = B::fill(set_b, kb, false);
        if dirty(w) {
            mb.writebacks += 1;
            // SAFETY: `core` is below the limit (this function's contract).
            if let Some(v) = unsafe { write_back(mc, c, mb.geom.line_of_pow2(w, sb), core) } {
                let t = clock(lat);
                mem.request(req(v, true, t));
            }
        }
    }
    let victim = first_fill();
    if victim != NO_VICTIM {
        // SAFETY (both): `core` is below the limit (this function's contract).
        if let Some(v) = unsafe { write_back(mb, b, victim, core) } {
            if let Some(v) = unsafe { write_back(mc, c, v, core) } {
                let t = clock(lat);
                mem.request(req(v, true, t));
            }
        }
    }
    lat
}
