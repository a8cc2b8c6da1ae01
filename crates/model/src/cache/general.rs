//! The hierarchy's general loop, for any levels ([`super::Caches::access`] of a
//! hierarchy three.rs has no path for): the first level ([`first`]: its lookup, and on a
//! miss its fill), then the levels below and memory ([`below`]). Same rules, same order
//! of effects as three.rs's path (the module documentation of `cache/mod.rs`;
//! `crates/model/tests/it/cache_differential.rs` runs both against the reference model).

use super::first::NO_VICTIM;
use super::sets::{Sets, EMPTY};
use super::{Level, Mem, Meta, Mru, MAX_LEVELS};
use crate::mem::backend::MemReq;

/// [`super::Caches::general`]'s loop: `(core, line, write, walk)` as for three.rs's
/// `Req`. The first level's fill comes before the levels below are looked up (as in
/// three.rs's `run`, and for the same reason: nothing below touches the first level).
#[inline(always)]
pub(super) fn general(
    levels: &mut [Level],
    mem: &mut Mem,
    line_shift: u32,
    (core, line, write, walk): (usize, u64, bool, bool),
    mru: &mut Mru,
    now: impl FnOnce() -> u64,
) -> u64 {
    let (l0, rest) = levels.split_first_mut().expect("a hierarchy has a first level");
    match first(&mut l0.meta, &mut l0.sets, mru, (core, line, write, walk)) {
        None => l0.meta.latency,
        Some(victim) => below(rest, mem, line_shift, (core, line, walk), victim, l0.meta.latency, now),
    }
}

/// The first level `(m, sets)` for line number `line` of core `core` (`mru` its copy's
/// most recent line): `None` on a hit (the line is most recently used, dirty if
/// `write`); on a miss the line filled there and `Some` of the dirty line that fill
/// displaced, or of [`NO_VICTIM`]. Counted in `m`.
#[inline(always)]
pub(super) fn first(
    m: &mut Meta,
    sets: &mut Sets,
    mru: &mut Mru,
    (core, line, write, walk): (usize, u64, bool, bool),
) -> Option<u64> {
    let kind = (walk as usize) << 1;
    if line == mru.line {
        // The first level's most recent line (see `Mru`).
        sets.mark_first(mru.set, write);
        m.counts[kind] += 1;
        return None;
    }
    let (s, g, key) = m.locate(line, core);
    *mru = Mru { line, set: g };
    if sets.lookup(g, key, write) {
        m.counts[kind] += 1;
        return None;
    }
    m.counts[kind | 1] += 1;
    let old = sets.fill(g, key, write);
    if old == EMPTY || old & 1 == 0 {
        return Some(NO_VICTIM);
    }
    m.writebacks += 1;
    Some(m.geom.line_of(old, s))
}

/// `levels` (every level below the first) and memory for line number `line` of core
/// `core`, which missed the first level (latency `lat0`) and displaced the dirty line
/// `victim` there ([`NO_VICTIM`]: none): one pass down the levels until a hit (each
/// set located once and kept for the fills), the fill from memory, the fills deepest
/// first, each dirty victim written down the levels at once, the first level's last.
/// Its latency, `lat0` included.
#[inline(always)]
pub(super) fn below(
    levels: &mut [Level],
    mem: &mut Mem,
    line_shift: u32,
    (core, line, walk): (usize, u64, bool),
    victim: u64,
    lat0: u64,
    now: impl FnOnce() -> u64,
) -> u64 {
    let kind = (walk as usize) << 1;
    let n = levels.len();
    let mut lat = lat0;
    let mut hit_at = n;
    // Per level that missed: the set within its copy, the store's set, the tag word.
    let mut at_level = [(0usize, 0usize, 0u64); MAX_LEVELS];
    for (i, (l, slot)) in levels.iter_mut().zip(at_level.iter_mut()).enumerate() {
        lat += l.meta.latency;
        let (s, g, key) = l.meta.locate(line, core);
        let hit = l.sets.lookup(g, key, false);
        l.meta.counts[kind | !hit as usize] += 1;
        if hit {
            hit_at = i;
            break;
        }
        *slot = (s, g, key);
    }
    // The time a request leaves for memory: the core's clock plus the lookups so far
    // (asked of the core once, only if some request goes to memory).
    let mut now = Some(now);
    let mut at = None;
    let mut clock = |lat: u64| -> u64 { *at.get_or_insert_with(|| now.take().map_or(0, |f| f()) + lat) };
    if hit_at == n {
        let t = clock(lat);
        lat += mem.request(MemReq {
            pa: line << line_shift,
            write: false,
            core: core as u16,
            at: t,
        });
    }
    // Fill every level that missed, deepest first; a dirty victim goes down the
    // levels below until it lands in one (marked dirty there, or allocated dirty
    // and displacing a line, which may be dirty in turn) or reaches memory.
    for i in (0..hit_at).rev() {
        let (s, g, key) = at_level[i];
        let l = &mut levels[i];
        let old = l.sets.fill(g, key, false);
        if old == EMPTY || old & 1 == 0 {
            continue;
        }
        l.meta.writebacks += 1;
        let victim = l.meta.geom.line_of(old, s);
        sink(&mut levels[i + 1..], mem, line_shift, core, victim, || clock(lat));
    }
    if victim != NO_VICTIM {
        sink(levels, mem, line_shift, core, victim, || clock(lat));
    }
    lat
}

/// Writes dirty line number `victim` of core `core` down `levels` until it lands in
/// one (marked dirty there, or allocated dirty and displacing a line, which may be
/// dirty in turn) or reaches memory, at the time `at` gives.
#[inline(always)]
fn sink(levels: &mut [Level], mem: &mut Mem, line_shift: u32, core: usize, victim: u64, at: impl FnOnce() -> u64) {
    let mut victim = victim;
    for l in levels {
        let (s, g, key) = l.meta.locate(victim, core);
        match l.sets.write_back(g, key) {
            Some(w) if w != EMPTY && w & 1 != 0 => {
                l.meta.writebacks += 1;
                victim = l.meta.geom.line_of(w, s);
            }
            _ => return,
        }
    }
    mem.request(MemReq {
        pa: victim << line_shift,
        write: true,
        core: core as u16,
        at: at(),
    });
}
