//! The hierarchy's path for the common shapes: three levels whose tag stores are fixed
//! `u32` sets of 4, 8 and 16 ways (the Pi 5, Neoverse N1) or 8, 4 and 16 ways
//! (Skylake). Chosen once, at construction ([`Shape::of`]); every other hierarchy takes
//! the general loop of [`super::Caches::access`].
//!
//! Same rules, same order of effects as the general loop (the module documentation of
//! `cache/mod.rs`; `crates/model/tests/cache_differential.rs` runs both against the
//! reference model): lookups down the levels until a hit, the fill from memory, the
//! fills deepest first, each dirty victim written down the levels at once. Written out
//! for three levels with each store's type known, so no operation goes through the
//! `Sets` dispatch or a level's bounds check (it was ~10 dispatches per GUPS reference),
//! and every set count is a power of two (`u32` stores need it), so no set index is a
//! division.

use super::sets::{Sets, Store, EMPTY};
use super::{Level, Mem, Meta};
use crate::mem::backend::MemReq;

/// A shape with a path here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// `u32` sets of 4, 8 and 16 ways.
    W4W8W16,
    /// `u32` sets of 8, 4 and 16 ways.
    W8W4W16,
}

impl Shape {
    /// The shape of `levels`, if it has a path here.
    pub(super) fn of(levels: &[Level]) -> Option<Shape> {
        let [a, b, c] = levels else { return None };
        match (&a.sets, &b.sets, &c.sets) {
            (Sets::N4(_), Sets::N8(_), Sets::N16(_)) => Some(Shape::W4W8W16),
            (Sets::N8(_), Sets::N4(_), Sets::N16(_)) => Some(Shape::W8W4W16),
            _ => None,
        }
    }
}

/// [`super::Caches::access`] of line number `line` on levels of shape `shape`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn access(
    shape: Shape,
    levels: &mut [Level],
    mem: &mut Mem,
    line_shift: u32,
    core: usize,
    line: u64,
    write: bool,
    walk: bool,
    now: impl FnOnce() -> u64,
) -> u64 {
    let [a, b, c] = levels else {
        unreachable!("Shape::of checked three levels")
    };
    let r = Req {
        mem,
        line_shift,
        core,
        line,
        write,
        walk,
    };
    match (shape, &mut a.sets, &mut b.sets, &mut c.sets) {
        (Shape::W4W8W16, Sets::N4(x), Sets::N8(y), Sets::N16(z)) => {
            run(r, (&mut a.meta, x), (&mut b.meta, y), (&mut c.meta, z), now)
        }
        (Shape::W8W4W16, Sets::N8(x), Sets::N4(y), Sets::N16(z)) => {
            run(r, (&mut a.meta, x), (&mut b.meta, y), (&mut c.meta, z), now)
        }
        _ => unreachable!("Shape::of checked the stores"),
    }
}

/// One reference's request and the memory below.
struct Req<'a> {
    mem: &'a mut Mem,
    line_shift: u32,
    core: usize,
    line: u64,
    write: bool,
    walk: bool,
}

/// True if tag word `w` (what a fill displaced) is a dirty line.
#[inline(always)]
fn dirty(w: u64) -> bool {
    w != EMPTY && w & 1 != 0
}

/// Writes dirty line number `line` of core `core` into the level `(m, s)`: the line
/// number of the dirty line that displaced, if any.
#[inline(always)]
fn write_back<S: Store>(m: &mut Meta, s: &mut S, line: u64, core: usize) -> Option<u64> {
    let (set, g, key) = m.locate_pow2(line, core);
    match s.write_back(g, key) {
        Some(w) if dirty(w) => {
            m.writebacks += 1;
            Some(m.geom.line_of_pow2(w, set))
        }
        _ => None,
    }
}

/// The three levels `a`, `b`, `c` (see the module documentation).
#[inline(always)]
fn run<A: Store, B: Store, C: Store>(
    r: Req<'_>,
    (ma, a): (&mut Meta, &mut A),
    (mb, b): (&mut Meta, &mut B),
    (mc, c): (&mut Meta, &mut C),
    now: impl FnOnce() -> u64,
) -> u64 {
    let Req {
        mem,
        line_shift,
        core,
        line,
        write,
        walk,
    } = r;
    let kind = (walk as usize) << 1;
    let mut lat = ma.latency;
    let (sa, ga, ka) = ma.locate_pow2(line, core);
    if a.lookup(ga, ka, write) {
        ma.counts[kind] += 1;
        return lat;
    }
    ma.counts[kind | 1] += 1;
    lat += mb.latency;
    let (sb, gb, kb) = mb.locate_pow2(line, core);
    let hit_b = b.lookup(gb, kb, false);
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
        let hit_c = c.lookup(gc, kc, false);
        mc.counts[kind | !hit_c as usize] += 1;
        if !hit_c {
            let t = clock(lat);
            lat += mem.request(req(line, false, t));
            let w = c.fill(gc, kc, false);
            if dirty(w) {
                mc.writebacks += 1;
                let t = clock(lat);
                mem.request(req(mc.geom.line_of_pow2(w, sc), true, t));
            }
        }
        let w = b.fill(gb, kb, false);
        if dirty(w) {
            mb.writebacks += 1;
            if let Some(v) = write_back(mc, c, mb.geom.line_of_pow2(w, sb), core) {
                let t = clock(lat);
                mem.request(req(v, true, t));
            }
        }
    }
    let w = a.fill(ga, ka, write);
    if dirty(w) {
        ma.writebacks += 1;
        if let Some(v) = write_back(mb, b, ma.geom.line_of_pow2(w, sa), core) {
            if let Some(v) = write_back(mc, c, v, core) {
                let t = clock(lat);
                mem.request(req(v, true, t));
            }
        }
    }
    lat
}
