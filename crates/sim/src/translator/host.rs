//! Host-side speed helpers of the run loop: state that makes the simulation faster and
//! never changes a result. Nothing here is simulated state: dropping any of it (an
//! empty root cache, an empty walk memo, the general miss path) gives the same
//! statistics, byte for byte.

use mmulab_model::addr::Asid;
use mmulab_model::pt::Format;
use mmulab_trace::MemRef;

/// Entries of the walk memo.
const MEMO_ENTRIES: usize = 4096;
/// Host bytes of one translator's walk memo (the host-memory estimate counts it).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const MEMO_BYTES: u64 = (MEMO_ENTRIES * std::mem::size_of::<MemoSlot>()) as u64;

/// The root cache when empty.
pub(crate) const NO_ROOT: (u32, u64) = (u32::MAX, 0);

/// One entry of the walk memo: region tag (`va >> memo_shift`, asid in the top bits;
/// `u64::MAX` when empty), the host address of its leaf table's descriptors, and the
/// leaf level's index shift and mask.
#[derive(Clone, Copy, Debug)]
struct WalkMemo {
    tag: u64,
    base: usize,
    shift: u32,
    mask: u32,
}

/// A walk memo entry as stored: `[!tag, base, shift | mask << 32]`. The tag is stored
/// inverted so an empty entry (tag `u64::MAX`) is all zero bits: the 96 KiB memo is then
/// a zeroed allocation that the host maps lazily, page by page as entries are written,
/// instead of 24 pages written at start-up (and copied from the stack) for a run that
/// may walk a handful of times (docs/benchmarks-log.md, "Start-up").
type MemoSlot = [u64; 3];

impl WalkMemo {
    #[inline(always)]
    fn load(s: &MemoSlot) -> WalkMemo {
        WalkMemo {
            tag: !s[0],
            base: s[1] as usize,
            shift: s[2] as u32,
            mask: (s[2] >> 32) as u32,
        }
    }

    #[inline(always)]
    fn store(&self) -> MemoSlot {
        [
            !self.tag,
            self.base as u64,
            self.shift as u64 | (self.mask as u64) << 32,
        ]
    }
}

#[inline]
fn memo_tag(va: u64, asid: Asid, shift: u32) -> u64 {
    (va >> shift) ^ ((asid as u64) << 48)
}

/// The host-side helpers of one translator.
#[derive(Clone, Debug)]
pub(crate) struct Host {
    /// The root table of the address space walked last: (asid, root), or asid
    /// `u32::MAX` for none. The machine clears it wherever address spaces can change
    /// (creation, exit, OS faults, unmaps and background work), so it never outlives
    /// its space.
    pub(crate) root_cache: (u32, u64),
    /// Where the leaf table of a recent walk lives in host memory, per region of
    /// `memo_shift` bits of address (direct-mapped by region), so [`Host::prefetch`] can
    /// prefetch a coming walk's leaf descriptor with no load but the memo entry's. A
    /// stale entry (the table was freed or replaced) only prefetches a useless line: it
    /// is never read for a result.
    walk_memo: Vec<MemoSlot>,
    memo_shift: u32,
    /// Per page-table level (index masked with 7): the shift and mask of its descriptor
    /// index, as the walk memo stores them (no format dispatch per walk).
    level_index: [(u32, u32); 8],
}

impl Host {
    /// Helpers for a machine of page-table format `fmt`.
    pub(crate) fn new(fmt: Format) -> Host {
        let l = fmt.levels();
        let mut level_index = [(0, 0); 8];
        for (i, g) in l.iter().enumerate().take(8) {
            level_index[i] = (g.shift, (1u32 << g.bits) - 1);
        }
        Host {
            root_cache: NO_ROOT,
            // All zero: every entry empty (`MemoSlot`); `vec!` of zeros allocates zeroed
            // memory without writing it.
            walk_memo: vec![[0u64; 3]; MEMO_ENTRIES],
            memo_shift: l[l.len().saturating_sub(2)].shift,
            level_index,
        }
    }

    /// Remembers that the leaf of `r`'s walk is entry index(`r`) of the table at host
    /// address `base`, at page-table level `level`.
    #[inline(always)]
    pub(crate) fn remember_leaf(&mut self, r: &MemRef, base: usize, level: usize) {
        let tag = memo_tag(r.addr, r.asid, self.memo_shift);
        let (shift, mask) = self.level_index[level & 7];
        self.walk_memo[tag as usize % MEMO_ENTRIES] = WalkMemo { tag, base, shift, mask }.store();
    }

    /// Prefetches into the host cache what a walk of `r` would read (no simulated
    /// effect): the leaf descriptor, if the walk memo knows the leaf table of `r`'s region.
    #[inline]
    pub(crate) fn prefetch(&self, r: &MemRef) {
        let tag = memo_tag(r.addr, r.asid, self.memo_shift);
        let m = WalkMemo::load(&self.walk_memo[tag as usize % MEMO_ENTRIES]);
        if m.tag == tag {
            let index = (r.addr >> m.shift) as usize & m.mask as usize;
            mmulab_model::hint::prefetch(m.base.wrapping_add(index * 8));
        }
    }
}

#[cfg(test)]
mod tests {
    /// The host-memory check (config/limits.rs) counts each core's memo at its size.
    #[test]
    fn memo_size_is_the_one_the_host_check_counts() {
        assert_eq!(super::MEMO_BYTES, crate::config::limits::WALK_MEMO_BYTES);
    }
}
