//! The tag store behind a cache level ([`super::Cache`], [`super::Caches`]): one
//! implementation chosen once, at construction, from the level's shape.
//!
//! Every implementation keeps the same state, per set: its lines' tag words in recency
//! order (most recently used first, empty ways last), a tag word being `tag << 1 |
//! dirty`, or for an empty way all ones (`u64` words) or all ones but the dirty bit
//! (`u32` words: an empty way then reads as clean, so a fill's victim is dirty exactly
//! when its low bit is set, one test on three.rs's path). What differs is how a set is
//! stored:
//!
//! * [`Fixed`] (2, 4, 8 or 16 ways, the shapes of every catalog machine): a set is an
//!   array of known length, so finding a line is a fixed compare over every way that
//!   builds a bit mask (no early exit, no library call; the compiler unrolls or
//!   vectorises it), and the shift of a fill is a fixed-size move. Its words are `u32`
//!   when every tag of the memory the level serves fits in 30 bits (halving the bytes a
//!   scan reads), else `u64`.
//! * [`AnyWays`] (any other number of ways): one `u64` slice per set, scanned linearly.
//!
//! Those are LRU's stores (the policy's own fast path, `cache/mod.rs`). A level under
//! any other replacement policy gets [`ByWay`] (ways.rs): lines stay in their ways and
//! the policy of `replacement/` chooses victims.
//!
//! A tag is the line number without its set bits (sets a power of two) or the whole
//! line number (other set counts); [`super::array::Geom`] converts. An empty way never
//! matches: a tag word with every bit set would need a tag of all ones, which no line
//! number of lines of at least 2 bytes has (`u64`), and `u32` words are only used for
//! tags below 2^30 (an empty `u32` way matches only the tag 2^31 − 1).
//!
//! Written here rather than taken from a crate: these sets are the model itself (LRU,
//! write-back and the victim's dirty bit, checked against the plain reference model of
//! `crates/model/tests/it/cache_differential.rs`).

use super::ways::ByWay;
use crate::replacement::Policy;

/// The tag word of an empty way, as a `u64`.
pub(super) const EMPTY: u64 = u64::MAX;

/// One bit per way of `set` whose word equals `key | 1` once its dirty bit is set:
/// the plain loop (the SSE2 version below is the same function, checked by
/// `crates/model/tests/it/cache_differential.rs` through every tag store).
#[inline(always)]
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn matches_plain<T: Word>(set: &[T], key: T) -> u32 {
    let k = key | T::ONE;
    let mut m = 0u32;
    for (i, &t) in set.iter().enumerate() {
        m |= (((t | T::ONE) == k) as u32) << i;
    }
    m
}

// Why SSE2 intrinsics (and `unsafe`): the compiler turns `(t | 1) == k` into an
// unsigned range test and builds the mask way by way, which was ~130 instructions per
// GUPS reference (callgrind); four ways per `pcmpeqd` and one `movmskps` are ~5
// instructions per four `u32` ways. SSE2 is part of the x86-64 baseline, so these are
// always available; every load below reads 16 bytes inside `set` (W is a multiple of 4
// resp. 2, asserted by the callers' types: only the fixed stores of 4 to 16 ways call
// these with their arrays). Sets of 8 and 16 ways narrow their compares' lanes (all
// ones or zero) to bytes with saturating packs (which keep both values) and take one
// byte mask: 4 instructions for 16 ways where a `movmskps` per 4 ways, shifted and
// or-ed together, was 10.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn matches_u32(set: &[u32], key: u32) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_castsi128_ps, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_movemask_ps, _mm_or_si128,
        _mm_packs_epi16, _mm_packs_epi32, _mm_set1_epi32, _mm_setzero_si128,
    };
    if set.len() % 4 != 0 {
        return matches_plain(set, key);
    }
    let p = set.as_ptr();
    // SAFETY: SSE2 is in the x86-64 baseline; every load is of `set[i..i + 4]` for an
    // `i` that is a multiple of 4 below `set.len()` (a multiple of 4), so in bounds.
    unsafe {
        let one = _mm_set1_epi32(1);
        let k = _mm_set1_epi32((key | 1) as i32);
        // All ones in the lanes of `set[i..i + 4]` that match.
        let eq = |i: usize| -> __m128i { _mm_cmpeq_epi32(_mm_or_si128(_mm_loadu_si128(p.add(i).cast()), one), k) };
        match set.len() {
            16 => {
                let lo = _mm_packs_epi32(eq(0), eq(4));
                let hi = _mm_packs_epi32(eq(8), eq(12));
                _mm_movemask_epi8(_mm_packs_epi16(lo, hi)) as u32
            }
            8 => {
                let w = _mm_packs_epi32(eq(0), eq(4));
                _mm_movemask_epi8(_mm_packs_epi16(w, _mm_setzero_si128())) as u32
            }
            n => {
                let mut m = 0u32;
                for c in 0..n / 4 {
                    m |= (_mm_movemask_ps(_mm_castsi128_ps(eq(4 * c))) as u32) << (4 * c);
                }
                m
            }
        }
    }
}

/// [`matches_u32`] for `u64` words: a way matches when both its halves do.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn matches_u64(set: &[u64], key: u64) -> u32 {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_castsi128_pd, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_pd, _mm_or_si128,
        _mm_set1_epi64x, _mm_shuffle_epi32,
    };
    if set.len() % 2 != 0 {
        return matches_plain(set, key);
    }
    let mut m = 0u32;
    // SAFETY: SSE2 is in the x86-64 baseline; chunk `c` is `set[2c..2c + 2]`, in bounds.
    unsafe {
        let one = _mm_set1_epi64x(1);
        let k = _mm_set1_epi64x((key | 1) as i64);
        for c in 0..set.len() / 2 {
            let v = _mm_loadu_si128(set.as_ptr().add(2 * c).cast());
            let e = _mm_cmpeq_epi32(_mm_or_si128(v, one), k);
            // Each 64-bit lane: its low and high halves both equal.
            let both = _mm_and_si128(e, _mm_shuffle_epi32::<0b1011_0001>(e));
            m |= (_mm_movemask_pd(_mm_castsi128_pd(both)) as u32) << (2 * c);
        }
    }
    m
}

/// A tag word type: `u32` or `u64`.
pub(super) trait Word: Copy + Eq + std::ops::BitOr<Output = Self> + std::fmt::Debug {
    /// One bit per way of `set` holding `key`'s line (dirty bits ignored).
    fn matches(set: &[Self], key: Self) -> u32;
    /// An empty way.
    const EMPTY: Self;
    /// The word a fill displaced as a `u64` for three.rs's path: its low bit set
    /// exactly when it is a dirty line (an empty way: some clean word).
    fn displaced(self) -> u64;
    /// The dirty bit.
    const ONE: Self;
    /// `x` as a word (`x` fits: checked at construction).
    fn from64(x: u64) -> Self;
    /// The word as a `u64`, an empty way as [`EMPTY`].
    fn to64(self) -> u64;
}

impl Word for u32 {
    #[inline(always)]
    fn matches(set: &[u32], key: u32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        return matches_u32(set, key);
        #[cfg(not(target_arch = "x86_64"))]
        return matches_plain(set, key);
    }
    const EMPTY: u32 = u32::MAX - 1;
    #[inline(always)]
    fn displaced(self) -> u64 {
        // EMPTY's dirty bit is clear.
        self as u64
    }
    const ONE: u32 = 1;
    #[inline(always)]
    fn from64(x: u64) -> u32 {
        x as u32
    }
    #[inline(always)]
    fn to64(self) -> u64 {
        if self == Self::EMPTY {
            EMPTY
        } else {
            self as u64
        }
    }
}

impl Word for u64 {
    #[inline(always)]
    fn matches(set: &[u64], key: u64) -> u32 {
        #[cfg(target_arch = "x86_64")]
        return matches_u64(set, key);
        #[cfg(not(target_arch = "x86_64"))]
        return matches_plain(set, key);
    }
    const EMPTY: u64 = EMPTY;
    #[inline(always)]
    fn displaced(self) -> u64 {
        if self == EMPTY {
            0
        } else {
            self
        }
    }
    const ONE: u64 = 1;
    #[inline(always)]
    fn from64(x: u64) -> u64 {
        x
    }
    #[inline(always)]
    fn to64(self) -> u64 {
        self
    }
}

/// Sets of `W` ways of `T` words (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct Fixed<T, const W: usize> {
    sets: Vec<[T; W]>,
}

impl<T: Word, const W: usize> Fixed<T, W> {
    pub(super) fn new(n: usize) -> Self {
        Fixed {
            sets: vec![[T::EMPTY; W]; n],
        }
    }

    /// One bit per way whose tag is `key`'s (dirty bits ignored): at most one is set.
    #[inline(always)]
    fn matches(set: &[T; W], key: T) -> u32 {
        T::matches(set, key)
    }

    #[inline(always)]
    fn lookup(&mut self, s: usize, key: u64, write: bool) -> bool {
        Self::lookup_in(&mut self.sets[s], key, write)
    }

    #[inline(always)]
    fn lookup_in(set: &mut [T; W], key: u64, write: bool) -> bool {
        let m = Self::matches(set, T::from64(key));
        if m == 0 {
            return false;
        }
        let w = (m.trailing_zeros() as usize).min(W - 1);
        let t = set[w] | T::from64(write as u64);
        // The lines before it move down one (a hit at the front moves nothing).
        let mut i = w;
        while i > 0 {
            set[i] = set[i - 1];
            i -= 1;
        }
        set[0] = t;
        true
    }

    #[inline(always)]
    fn contains(&self, s: usize, key: u64) -> bool {
        Self::matches(&self.sets[s], T::from64(key)) != 0
    }

    #[inline(always)]
    fn mark_first(&mut self, s: usize, write: bool) {
        <Self as Store>::mark_first(&mut self.sets[s], write)
    }

    #[inline(always)]
    fn fill(&mut self, s: usize, key: u64, dirty: bool) -> u64 {
        Self::fill_in(&mut self.sets[s], key, dirty).to64()
    }

    /// Puts `key`'s line first in `set`; the word that fell off the end.
    #[inline(always)]
    fn fill_in(set: &mut [T; W], key: u64, dirty: bool) -> T {
        let old = set[W - 1];
        set.copy_within(0..W - 1, 1);
        set[0] = T::from64(key | dirty as u64);
        old
    }

    #[inline(always)]
    fn write_back(&mut self, s: usize, key: u64) -> Option<u64> {
        Self::write_back_in(&mut self.sets[s], key).map(T::to64)
    }

    /// [`Sets::write_back`] into `set`, the word that fell off as it was stored.
    #[inline(always)]
    fn write_back_in(set: &mut [T; W], key: u64) -> Option<T> {
        let m = Self::matches(set, T::from64(key));
        if m != 0 {
            let w = (m.trailing_zeros() as usize).min(W - 1);
            set[w] = set[w] | T::ONE;
            return None;
        }
        Some(Self::fill_in(set, key, true))
    }
}

impl<T: Word, const W: usize> Default for Fixed<T, W> {
    /// No sets (what a level keeps while its sets are elsewhere: first.rs).
    fn default() -> Self {
        Fixed::new(0)
    }
}

/// The operations of a tag store on one set, for code generic over the fixed stores
/// (three.rs): the set is taken once per level and access ([`Store::set`]), so its
/// lookup and its fill index the store once.
pub(super) trait Store {
    /// One set.
    type Set;
    /// Set `s`, with no bounds check.
    ///
    /// # Safety
    /// `s` is below the store's set count (three.rs's indices are: `Meta::locate_pow2`).
    unsafe fn set(&mut self, s: usize) -> &mut Self::Set;
    /// [`Sets::lookup`] in `set`.
    fn lookup(set: &mut Self::Set, key: u64, write: bool) -> bool;
    /// [`Sets::fill`] of `set`, the displaced word as [`Word::displaced`] gives it.
    fn fill(set: &mut Self::Set, key: u64, dirty: bool) -> u64;
    /// [`Sets::write_back`] into `set`, the displaced word as [`Word::displaced`]
    /// gives it.
    fn write_back(set: &mut Self::Set, key: u64) -> Option<u64>;
    /// [`Sets::mark_first`] in `set`.
    fn mark_first(set: &mut Self::Set, write: bool);
}

impl<T: Word, const W: usize> Store for Fixed<T, W> {
    type Set = [T; W];
    #[inline(always)]
    unsafe fn set(&mut self, s: usize) -> &mut [T; W] {
        debug_assert!(s < self.sets.len());
        // SAFETY: the caller's contract, `s < self.sets.len()`.
        unsafe { self.sets.get_unchecked_mut(s) }
    }
    #[inline(always)]
    fn lookup(set: &mut [T; W], key: u64, write: bool) -> bool {
        Fixed::lookup_in(set, key, write)
    }
    #[inline(always)]
    fn fill(set: &mut [T; W], key: u64, dirty: bool) -> u64 {
        Fixed::fill_in(set, key, dirty).displaced()
    }
    #[inline(always)]
    fn write_back(set: &mut [T; W], key: u64) -> Option<u64> {
        Fixed::write_back_in(set, key).map(T::displaced)
    }
    #[inline(always)]
    fn mark_first(set: &mut [T; W], write: bool) {
        set[0] = set[0] | T::from64(write as u64);
    }
}

/// Sets of any number of ways, `u64` words (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct AnyWays {
    ways: usize,
    tags: Vec<u64>,
}

impl AnyWays {
    fn set(&mut self, s: usize) -> &mut [u64] {
        &mut self.tags[s * self.ways..(s + 1) * self.ways]
    }

    fn find(set: &[u64], key: u64) -> Option<usize> {
        set.iter().position(|&t| t | 1 == key | 1)
    }

    fn lookup(&mut self, s: usize, key: u64, write: bool) -> bool {
        let set = self.set(s);
        match Self::find(set, key) {
            Some(w) => {
                let t = set[w] | write as u64;
                set.copy_within(0..w, 1);
                set[0] = t;
                true
            }
            None => false,
        }
    }

    fn contains(&self, s: usize, key: u64) -> bool {
        Self::find(&self.tags[s * self.ways..(s + 1) * self.ways], key).is_some()
    }

    fn mark_first(&mut self, s: usize, write: bool) {
        self.tags[s * self.ways] |= write as u64;
    }

    fn fill(&mut self, s: usize, key: u64, dirty: bool) -> u64 {
        let ways = self.ways;
        let set = self.set(s);
        let old = set[ways - 1];
        set.copy_within(0..ways - 1, 1);
        set[0] = key | dirty as u64;
        old
    }

    fn write_back(&mut self, s: usize, key: u64) -> Option<u64> {
        let set = self.set(s);
        if let Some(w) = Self::find(set, key) {
            set[w] |= 1;
            return None;
        }
        Some(self.fill(s, key, true))
    }
}

/// A level's tag store, its implementation chosen once (see the module documentation).
#[derive(Clone, Debug)]
pub(super) enum Sets {
    N2(Fixed<u32, 2>),
    N4(Fixed<u32, 4>),
    N8(Fixed<u32, 8>),
    N16(Fixed<u32, 16>),
    W2(Fixed<u64, 2>),
    W4(Fixed<u64, 4>),
    W8(Fixed<u64, 8>),
    W16(Fixed<u64, 16>),
    Any(AnyWays),
    /// A policy other than LRU (ways.rs); boxed, so the enum stays the size of the LRU
    /// stores.
    ByWay(Box<ByWay>),
}

/// `$body` with `$s` bound to the implementation of `$sets`.
macro_rules! each {
    ($sets:expr, $s:ident => $body:expr) => {
        match $sets {
            Sets::N2($s) => $body,
            Sets::N4($s) => $body,
            Sets::N8($s) => $body,
            Sets::N16($s) => $body,
            Sets::W2($s) => $body,
            Sets::W4($s) => $body,
            Sets::W8($s) => $body,
            Sets::W16($s) => $body,
            Sets::Any($s) => $body,
            Sets::ByWay($s) => $body,
        }
    };
}

impl Sets {
    /// `n` empty sets of `ways` ways under `policy` (`seed` for a random one): for LRU
    /// the fixed implementation of that many ways (`u32` words if `narrow`), else the
    /// general one (always if `general`); for any other policy [`ByWay`].
    pub(super) fn new(n: usize, ways: usize, narrow: bool, general: bool, policy: Policy, seed: u64) -> Sets {
        if policy != Policy::Lru {
            return Sets::by_way(n, ways, policy, seed);
        }
        match (general, narrow, ways) {
            (false, true, 2) => Sets::N2(Fixed::new(n)),
            (false, true, 4) => Sets::N4(Fixed::new(n)),
            (false, true, 8) => Sets::N8(Fixed::new(n)),
            (false, true, 16) => Sets::N16(Fixed::new(n)),
            (false, false, 2) => Sets::W2(Fixed::new(n)),
            (false, false, 4) => Sets::W4(Fixed::new(n)),
            (false, false, 8) => Sets::W8(Fixed::new(n)),
            (false, false, 16) => Sets::W16(Fixed::new(n)),
            _ => Sets::Any(AnyWays {
                ways,
                tags: vec![EMPTY; n * ways],
            }),
        }
    }

    /// `n` empty sets of `ways` ways in [`ByWay`] under `policy`, whatever the policy
    /// (LRU too: the differential tests compare it with the LRU stores).
    pub(super) fn by_way(n: usize, ways: usize, policy: Policy, seed: u64) -> Sets {
        Sets::ByWay(Box::new(ByWay::new(n, ways, policy, seed)))
    }

    /// A store of no sets (what a level keeps while its sets are elsewhere: first.rs).
    pub(super) fn none() -> Sets {
        Sets::Any(AnyWays {
            ways: 1,
            tags: Vec::new(),
        })
    }

    /// The implementation's name (`u32x4`, `u64x16`, `any`).
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Sets::N2(_) => "u32x2",
            Sets::N4(_) => "u32x4",
            Sets::N8(_) => "u32x8",
            Sets::N16(_) => "u32x16",
            Sets::W2(_) => "u64x2",
            Sets::W4(_) => "u64x4",
            Sets::W8(_) => "u64x8",
            Sets::W16(_) => "u64x16",
            Sets::Any(_) => "any",
            Sets::ByWay(_) => "byway",
        }
    }

    /// Looks tag word `key` (dirty bit clear) up in set `s`; on a hit the line becomes
    /// most recently used, dirty if `write`.
    #[inline(always)]
    pub(super) fn lookup(&mut self, s: usize, key: u64, write: bool) -> bool {
        each!(self, a => a.lookup(s, key, write))
    }

    /// True if set `s` holds `key`'s line.
    #[inline]
    pub(super) fn contains(&self, s: usize, key: u64) -> bool {
        each!(self, a => a.contains(s, key))
    }

    /// Puts `key`'s line (absent) first in set `s`; returns the word that fell off the
    /// end ([`EMPTY`] if the way was empty).
    #[inline(always)]
    pub(super) fn fill(&mut self, s: usize, key: u64, dirty: bool) -> u64 {
        each!(self, a => a.fill(s, key, dirty))
    }

    /// Marks the line in the first way of set `s` (its most recently used, present)
    /// dirty if `write`: a hit there, whose order stays as it is. ([`ByWay`]: the line
    /// the set's last lookup or fill took.)
    #[inline(always)]
    pub(super) fn mark_first(&mut self, s: usize, write: bool) {
        each!(self, a => a.mark_first(s, write))
    }

    /// Marks `key`'s line dirty in set `s` if present (None), else fills it dirty and
    /// returns the word that fell off.
    #[inline(always)]
    pub(super) fn write_back(&mut self, s: usize, key: u64) -> Option<u64> {
        each!(self, a => a.write_back(s, key))
    }
}
