/// True LRU. Two representations with one behaviour (the differential test drives both):
///
/// * up to [`RANK_WAYS`] ways: each way's rank in its set's recency order (0 = most
///   recent) as one byte, a set's ranks in one host cache line; a touch ages every way
///   more recent than the touched one with a few 16-lane vector steps, the victim is
///   the way of rank `ways - 1`. Compact state matters more than O(1) here: a fill of a
///   random set costs host cache misses, not instructions;
/// * more ways: an intrusive doubly linked list per set (most recent at the head), O(1)
///   per touch — large fully associative levels would otherwise pay one step per way.
#[derive(Clone, Debug)]
pub struct Lru {
    ways: usize,
    /// Per set, `stride` rank bytes (`ways` rounded up to 16; padding lanes hold 0xff
    /// and never take part). Empty when the list representation is used.
    ranks: Vec<u8>,
    stride: usize,
    /// Per slot: previous / next way in its set's list (`NIL` at the ends).
    links: Vec<Link>,
    /// Per set: most and least recently used way.
    ends: Vec<Link>,
}

/// Sets of at most this many ways keep ranks; larger ones keep linked lists.
pub const RANK_WAYS: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Link {
    a: u32,
    b: u32,
}

const NIL: u32 = u32::MAX;

impl Lru {
    /// State for `sets` × `ways`; initially way 0 is least recently used.
    pub fn new(sets: usize, ways: usize) -> Lru {
        if ways <= RANK_WAYS {
            let stride = ways.div_ceil(16) * 16;
            let mut ranks = vec![0xff; sets * stride];
            for s in 0..sets {
                for w in 0..ways {
                    ranks[s * stride + w] = (ways - 1 - w) as u8;
                }
            }
            return Lru { ways, ranks, stride, links: Vec::new(), ends: Vec::new() };
        }
        let mut l = Lru {
            ways,
            ranks: Vec::new(),
            stride: 0,
            links: vec![Link { a: NIL, b: NIL }; sets * ways],
            ends: vec![Link { a: NIL, b: NIL }; sets],
        };
        for s in 0..sets {
            for w in 0..ways {
                l.push_front(s, w as u32);
            }
        }
        l
    }

    /// The link of (set, way).
    ///
    /// The replacement state is touched on every TLB fill and hit, so the indexing here
    /// is unchecked: `touch` checks `set` and `way` once, `new` passes valid ones, and
    /// every other way comes from the lists (always < ways); `debug_assert`s check it
    /// in test builds.
    #[inline(always)]
    fn link(&mut self, set: usize, way: u32) -> &mut Link {
        let i = set * self.ways + way as usize;
        debug_assert!(i < self.links.len());
        // SAFETY: i < sets * ways == links.len() (see above).
        unsafe { self.links.get_unchecked_mut(i) }
    }

    #[inline(always)]
    fn ends(&mut self, set: usize) -> &mut Link {
        debug_assert!(set < self.ends.len());
        // SAFETY: set < sets == ends.len() (see `link`).
        unsafe { self.ends.get_unchecked_mut(set) }
    }

    #[inline(always)]
    fn push_front(&mut self, set: usize, way: u32) {
        let old = self.ends(set).a;
        *self.link(set, way) = Link { a: NIL, b: old };
        if old != NIL {
            self.link(set, old).a = way;
        } else {
            self.ends(set).b = way;
        }
        self.ends(set).a = way;
    }

    /// Marks (set, way) most recently used. Always inlined: each call site (a hit, a
    /// fill) then has its own branch history for the already-most-recent test.
    #[inline(always)]
    pub fn touch(&mut self, set: usize, way: usize) {
        if self.stride != 0 {
            let ranks = &mut self.ranks[set * self.stride..(set + 1) * self.stride];
            let r = ranks[way];
            if r != 0 {
                age_below(ranks, r);
                ranks[way] = 0;
            }
            return;
        }
        // The two checks that make the unchecked indexing below sound for any caller:
        // every other index comes from the lists themselves (always < ways).
        assert!(way < self.ways && set < self.ends.len(), "(set {set}, way {way}) out of range");
        let way = way as u32;
        if self.ends(set).a == way {
            return;
        }
        let Link { a: p, b: n } = *self.link(set, way);
        // Not the head, so p != NIL.
        self.link(set, p).b = n;
        if n != NIL {
            self.link(set, n).a = p;
        } else {
            self.ends(set).b = p;
        }
        self.push_front(set, way);
    }

    /// The least recently used way of `set`.
    #[inline]
    pub fn victim(&self, set: usize) -> usize {
        if self.stride != 0 {
            let ranks = &self.ranks[set * self.stride..(set + 1) * self.stride];
            return find_rank(ranks, (self.ways - 1) as u8).expect("ranks are a permutation");
        }
        self.ends[set].b as usize
    }
}

/// Adds one to every rank below `r` (padding lanes hold 0xff and are never below).
#[inline(always)]
fn age_below(ranks: &mut [u8], r: u8) {
    for chunk in ranks.chunks_exact_mut(16) {
        let c: &mut [u8; 16] = chunk.try_into().expect("a chunk of 16");
        age_chunk(c, r);
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn age_chunk(c: &mut [u8; 16], r: u8) {
    use core::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load and store touch
    // exactly the 16 bytes `c` refers to. Ranks are < 64 or 0xff: unsigned `v < r` is
    // computed as `min(v, r - 1) == v` (r > 0 here).
    unsafe {
        let p = c.as_mut_ptr() as *mut __m128i;
        let v = _mm_loadu_si128(p);
        let below = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8((r - 1) as i8)), v);
        // below lanes are -1: subtracting adds one.
        _mm_storeu_si128(p, _mm_sub_epi8(v, below));
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn age_chunk(c: &mut [u8; 16], r: u8) {
    for v in c.iter_mut() {
        if *v < r {
            *v += 1;
        }
    }
}

/// The way whose rank is `r`.
#[inline(always)]
fn find_rank(ranks: &[u8], r: u8) -> Option<usize> {
    ranks.iter().position(|&v| v == r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_follows_touches() {
        let mut l = Lru::new(2, 4);
        for w in [2, 0, 3, 1] {
            l.touch(1, w);
        }
        assert_eq!(l.victim(1), 2);
        l.touch(1, 2);
        assert_eq!(l.victim(1), 0);
        l.touch(1, 1);
        assert_eq!(l.victim(1), 0);
        // Set 0 untouched: way 0 was pushed first, so it is least recent.
        assert_eq!(l.victim(0), 0);
    }
}
