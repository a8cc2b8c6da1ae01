//! Page-table formats: the geometry of each radix level and the bit encoding of its
//! descriptors. Tables live in simulated physical frames ([`crate::mem::PtMem`]); the
//! walker ([`crate::walk`]) reads them entry by entry.
//!
//! Leaves larger than one entry: an ARMv8 contiguous-bit group (every entry of an aligned
//! group carries [`Attrs::CONTIG`] and its own output address) and an ARMv7 large page or
//! supersection (16 identical entries) are *groups*: [`Format::contig`] gives their entry
//! count and size per level, [`Format::leaf_sizes`] every size a level can map, and
//! [`Format::repeated`] which of the two layouts a format uses. The walker reports a whole
//! valid group as one translation of the group's size; the TLB decides whether it can
//! hold that size.
//!
//! Contract: [`PageTableFormat`], implemented by one unit type per format in its file
//! (x86_64.rs; armv8.rs: the three granules; armv7.rs: short descriptors and LPAE).
//!
//! Adding a format: a unit type implementing [`PageTableFormat`] in a file here; a row in
//! the `formats!` table below (which generates the config-chosen closed set [`Format`],
//! its list [`Format::ALL`] and the static dispatch of every trait item to the format's
//! type); walker tests of its reference counts (`tests/it/walker.rs`) and its row in
//! `tests/it/pt_formats.rs`; its `machine.arch` name in docs/config.md.

mod aarch64_s2;
mod armv7;
mod armv8;
mod ept;
mod x86_64;

pub use aarch64_s2::{Aarch64S2_16K, Aarch64S2_4K, Aarch64S2_64K};
pub use armv7::{Armv7, Armv7Lpae};
pub use armv8::{Armv8_16K, Armv8_4K, Armv8_64K};
pub use ept::Ept;
pub use x86_64::X86_64;

use crate::addr::PageSize;
use crate::translation::Attrs;

/// One level of a radix page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelGeom {
    /// Shift of the address bits this level indexes (the span of one entry).
    pub shift: u32,
    /// Width of the index (the table has 2^bits entries).
    pub bits: u32,
    /// True if a leaf (page or block) may sit at this level.
    pub leaf: bool,
}

impl LevelGeom {
    /// Bytes one entry of this level maps.
    #[inline]
    pub const fn span(&self) -> u64 {
        1 << self.shift
    }
    /// Entries in a table of this level.
    #[inline]
    pub const fn entries(&self) -> usize {
        1 << self.bits
    }
    /// The index `va` selects at this level.
    #[inline]
    pub const fn index(&self, va: u64) -> usize {
        ((va >> self.shift) & ((1 << self.bits) - 1)) as usize
    }
}

/// A decoded descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pte {
    /// Not valid: a walk that reaches it faults.
    Invalid,
    /// Points to the next-level table at this physical address.
    Table(u64),
    /// Maps a page or block at this physical address.
    Leaf {
        /// Physical base.
        pa: u64,
        /// Permission and state bits.
        attrs: Attrs,
    },
}

/// Most levels a format has.
pub const MAX_LEVELS: usize = 4;

/// One page-table format: its level geometry and descriptor encoding.
///
/// Contract (`tests/it/pt_formats.rs` checks every format against it):
/// * [`LEVELS`](Self::LEVELS), root first, at most [`MAX_LEVELS`]: the levels tile the
///   virtual address (each level's `shift` is the next one's `shift + bits`), the last
///   level is a leaf level, and every leaf level's span is a [`PageSize`]. The top
///   level's `shift + bits` is the width of the virtual addresses the format translates
///   ([`Format::va_bits`]).
/// * [`decode`](Self::decode) of a raw descriptor read at `level`: 0 is
///   [`Pte::Invalid`] at every level; a table pointer only above the last level; a leaf
///   only at a leaf level. It is the walk's hot path: no allocation, no panics.
/// * [`encode_table`](Self::encode_table) and [`encode_leaf`](Self::encode_leaf) are its
///   inverses: `decode(l, encode_table(l, pa)) == Table(pa)` for a table-aligned `pa`
///   below [`MAX_PA`](Self::MAX_PA) (ARMv7 short descriptors: below 4 GiB), and
///   `decode(l, encode_leaf(l, pa, a)) == Leaf { pa, attrs: a }` at every leaf level for
///   an aligned `pa` below `MAX_PA` and attributes of [`Attrs::USER`],
///   [`Attrs::WRITABLE`], [`Attrs::ACCESSED`], [`Attrs::DIRTY`] (dirty only with
///   writable), and [`Attrs::CONTIG`] at a level with a group. With `CONTIG` the leaf is
///   one entry of a group: its own address ([`REPEATED`](Self::REPEATED) false), or the
///   group's base (true).
/// * [`contig`](Self::contig): the group a leaf at `level` may belong to, (entries,
///   group size), with entries a power of two. Default: no groups.
/// * [`ARCH_NAME`](Self::ARCH_NAME) and [`ALIASES`](Self::ALIASES): the `machine.arch`
///   names, unique across formats (default: no aliases).
///
/// Every item is an associated constant or function without `self`: the trait cannot
/// be a `dyn` object, so every use is monomorphised. The config chooses a [`Format`];
/// [`Format::with`] runs a generic operation (the hardware walk) with its type.
pub trait PageTableFormat {
    /// The name configs give `machine.arch`.
    const ARCH_NAME: &'static str;
    /// Other names `machine.arch` accepts for this format. Default: none.
    const ALIASES: &'static [&'static str] = &[];
    /// The levels, root first.
    const LEVELS: &'static [LevelGeom];
    /// Largest physical address + 1 the descriptors can hold for every leaf kind.
    const MAX_PA: u64;
    /// True if every entry of a group holds the group's base address (ARMv7 large pages
    /// and supersections); false if each holds its own (ARMv8 contiguous bit). Default:
    /// false.
    const REPEATED: bool = false;
    /// True for a stage-2 format (a hypervisor's guest-physical → host-physical tables:
    /// ARMv8-A stage 2, Intel EPT), which `vm.stage2` chooses and `machine.arch` refuses.
    /// Default: false.
    const STAGE2_ONLY: bool = false;
    /// Per level, the page size of one entry if it is a [`PageSize`] (derived from
    /// `LEVELS`; a table lookup on the walk path instead of a search by shift). Not to be
    /// overridden.
    const LEVEL_SIZES: [Option<PageSize>; MAX_LEVELS] = level_sizes(Self::LEVELS);

    /// Decodes a descriptor read at `level`.
    fn decode(level: usize, raw: u64) -> Pte;
    /// Encodes a pointer to the next-level table at `pa`.
    fn encode_table(level: usize, pa: u64) -> u64;
    /// Encodes a leaf at `level` mapping `pa` with `attrs` (see the contract for
    /// [`Attrs::CONTIG`]).
    fn encode_leaf(level: usize, pa: u64, attrs: Attrs) -> u64;
    /// The group a leaf at `level` may belong to: (entries, group size). Default: none.
    #[inline]
    fn contig(_level: usize) -> Option<(usize, PageSize)> {
        None
    }
    /// The page size of one entry's leaf at `level` (its span). Not to be overridden.
    #[inline]
    fn leaf_size(level: usize) -> PageSize {
        Self::LEVEL_SIZES[level].expect("format leaf levels have known sizes")
    }
}

/// An operation generic over the page-table format, run by [`Format::with`] with the
/// configured format's type: one monomorphised copy per format, chosen by one `match`.
pub trait WithFormat {
    /// What the operation returns.
    type Output;
    /// Runs the operation for format `F`.
    fn run<F: PageTableFormat>(self) -> Self::Output;
}

/// One table defines the closed set of formats: the enum [`Format`] a config chooses,
/// [`Format::ALL`], and the static dispatch of every [`PageTableFormat`] item to the
/// format's type (so no hand-written `match` can forget a format).
macro_rules! formats {
    ($($(#[doc = $doc:literal])* $variant:ident,)*) => {
        /// A page-table format (closed set chosen from config; static dispatch).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Format {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Format {
            /// Every format, in the order `mmulab` lists them.
            pub const ALL: [Format; [$(Format::$variant,)*].len()] = [$(Format::$variant,)*];

            /// Runs `op` with this format's type ([`WithFormat`]).
            #[inline(always)]
            pub fn with<W: WithFormat>(self, op: W) -> W::Output {
                match self {
                    $(Format::$variant => op.run::<$variant>(),)*
                }
            }

            /// Name as configs spell the architecture.
            pub fn arch_name(self) -> &'static str {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::ARCH_NAME,)*
                }
            }

            /// Other names configs may use for it.
            pub fn aliases(self) -> &'static [&'static str] {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::ALIASES,)*
                }
            }

            /// Largest physical address + 1 the format's descriptors can hold for every
            /// leaf kind (ARMv7 short descriptors: 4 GiB).
            pub fn max_pa(self) -> u64 {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::MAX_PA,)*
                }
            }

            /// The levels, root first.
            #[inline]
            pub fn levels(self) -> &'static [LevelGeom] {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::LEVELS,)*
                }
            }

            /// Decodes a descriptor read at `level`.
            #[inline]
            pub fn decode(self, level: usize, raw: u64) -> Pte {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::decode(level, raw),)*
                }
            }

            /// Encodes a pointer to the next-level table at `pa`.
            pub fn encode_table(self, level: usize, pa: u64) -> u64 {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::encode_table(level, pa),)*
                }
            }

            /// Encodes a leaf at `level` mapping `pa` with `attrs`. With [`Attrs::CONTIG`]
            /// it is one entry of a group ([`Format::contig`]): ARMv8 sets the contiguous
            /// bit (and `pa` is this entry's own address); ARMv7 writes a large page or
            /// supersection (and `pa` is the group's base).
            pub fn encode_leaf(self, level: usize, pa: u64, attrs: Attrs) -> u64 {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::encode_leaf(level, pa, attrs),)*
                }
            }

            /// The group a leaf at `level` may belong to: (entries, group size). ARMv8
            /// contiguous bit (4K granule: 16 → 64K at L3, 16 → 32M at L2; 16K: 128 → 2M,
            /// 32 → 1G; 64K: 32 → 2M at L3 — the 16 GiB L2 group has no [`PageSize`]);
            /// ARMv7 large pages (16 → 64K) and supersections (16 → 16M); LPAE contiguous
            /// 16 → 64K and 16 → 32M.
            pub fn contig(self, level: usize) -> Option<(usize, PageSize)> {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::contig(level),)*
                }
            }

            /// True if every entry of a group holds the group's base address (ARMv7 large
            /// pages and supersections); false if each holds its own (ARMv8 contiguous
            /// bit).
            pub fn repeated(self) -> bool {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::REPEATED,)*
                }
            }

            /// True for a stage-2-only format ([`PageTableFormat::STAGE2_ONLY`]).
            pub fn stage2_only(self) -> bool {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::STAGE2_ONLY,)*
                }
            }

            /// The page size of one entry's leaf at `level` (its span).
            #[inline]
            pub fn leaf_size(self, level: usize) -> PageSize {
                match self {
                    $(Format::$variant => <$variant as PageTableFormat>::leaf_size(level),)*
                }
            }
        }
    };
}

formats! {
    /// x86-64 4-level paging: 4K pages, 2M and 1G leaves (PS bit).
    X86_64,
    /// ARMv8-A stage 1, 4 KiB granule, 48-bit VA: 4K pages, 2M and 1G blocks;
    /// contiguous 64K (16 × L3) and 32M (16 × L2).
    Armv8_4K,
    /// ARMv8-A stage 1, 16 KiB granule, 48-bit VA: 16K pages, 32M blocks; contiguous 2M
    /// (128 × L3) and 1G (32 × L2).
    Armv8_16K,
    /// ARMv8-A stage 1, 64 KiB granule, 48-bit VA (3 levels): 64K pages, 512M blocks;
    /// contiguous 2M (32 × L3).
    Armv8_64K,
    /// ARMv7 short descriptors (2 levels, 32-bit VA and PA; 40-bit PA for
    /// supersections): 4K small, 64K large, 1M section, 16M supersection.
    Armv7,
    /// ARMv7 LPAE long descriptors (3 levels, 32-bit VA): 4K, 2M, 1G; contiguous 64K and 32M.
    Armv7Lpae,
    /// ARMv8-A stage 2, 4 KiB granule, 40-bit IPA (3 levels, concatenated start): 4K
    /// pages, 2M and 1G blocks; contiguous 64K and 32M.
    Aarch64S2_4K,
    /// ARMv8-A stage 2, 16 KiB granule, 40-bit IPA (2 levels): 16K pages, 32M blocks;
    /// contiguous 2M and 1G.
    Aarch64S2_16K,
    /// ARMv8-A stage 2, 64 KiB granule, 40-bit IPA (2 levels): 64K pages, 512M blocks;
    /// contiguous 2M.
    Aarch64S2_64K,
    /// Intel EPT, 4 levels: 4K pages, 2M and 1G leaves.
    Ept,
}

impl Format {
    /// The format a config's `machine.arch` names: its arch name or one of its aliases
    /// (`armv8` and `aarch64-4k` are aliases of `aarch64`).
    pub fn from_arch_name(name: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.arch_name() == name || f.aliases().contains(&name))
    }

    /// Width of the virtual addresses the tables translate (48, or 32 for ARMv7).
    pub fn va_bits(self) -> u32 {
        let top = self.levels()[0];
        top.shift + top.bits
    }

    /// One past the last address a user program can touch, and what to call that range
    /// in messages. A reference at or above it is a kernel or non-canonical address (the
    /// trace reader stops at it or drops it, `--outside-user`).
    ///
    /// * 64-bit formats (x86-64, ARMv8): 2^48. AArch64's user space (TTBR0, 48-bit VA)
    ///   ends there (`TASK_SIZE_64` is `1 << VA_BITS`, arch/arm64/include/asm/processor.h);
    ///   x86-64's ends lower, at 2^47 − 4 KiB (`TASK_SIZE_MAX`,
    ///   arch/x86/include/asm/page_64_types.h). A trace does not record its architecture,
    ///   and AArch64 traces are replayed on x86-64 machines (the shared drmemtraces), so
    ///   the bound is the wider one on every 64-bit machine: every kernel address of both
    ///   (`0xffff…`) and every other non-canonical one lies above it; an x86-64 trace's
    ///   reference in `[2^47, 2^48)` is not caught.
    /// * ARMv7: the user/kernel split is a kernel build option (`VMSPLIT_3G`, 2G, 1G),
    ///   not the architecture's, so the whole 32-bit space the tables map is taken.
    /// * Stage-2 formats translate guest-physical addresses: the whole input range.
    pub fn user_va_end(self) -> (u64, &'static str) {
        match self {
            Format::X86_64 | Format::Armv8_4K | Format::Armv8_16K | Format::Armv8_64K => (
                1 << 48,
                "user address space of a 64-bit trace (x86-64's lower half, AArch64's TTBR0)",
            ),
            Format::Armv7 | Format::Armv7Lpae => (1 << self.va_bits(), "32-bit virtual address space"),
            Format::Aarch64S2_4K | Format::Aarch64S2_16K | Format::Aarch64S2_64K | Format::Ept => {
                (1 << self.va_bits(), "stage-2 input address space")
            }
        }
    }

    /// The raw leaf descriptor `raw` of `level` with its permission and state bits
    /// replaced by `attrs` (address and group membership kept).
    pub fn with_attrs(self, level: usize, raw: u64, attrs: Attrs) -> u64 {
        match self.decode(level, raw) {
            Pte::Leaf { pa, attrs: old } => {
                let a = Attrs((attrs.0 & !Attrs::CONTIG) | (old.0 & Attrs::CONTIG));
                self.encode_leaf(level, pa, a)
            }
            _ => raw,
        }
    }

    /// Page sizes a leaf at `level` can map: the entry's span, and its group size.
    pub fn leaf_sizes(self, level: usize) -> Vec<PageSize> {
        let g = self.levels()[level];
        if !g.leaf {
            return Vec::new();
        }
        let mut v: Vec<PageSize> = PageSize::from_shift(g.shift).into_iter().collect();
        v.extend(self.contig(level).map(|c| c.1));
        v
    }

    /// Entries of `level` one leaf of `size` occupies (1, or the group's count).
    pub fn entries_for(self, level: usize, size: PageSize) -> Option<usize> {
        let g = self.levels().get(level)?;
        if g.leaf && g.span() == size.bytes() {
            return Some(1);
        }
        self.contig(level).filter(|c| c.1 == size).map(|c| c.0)
    }

    /// The size a leaf descriptor claims to map: its group size if it carries
    /// [`Attrs::CONTIG`] at a level with groups, else the entry's span. (The walker also
    /// checks the rest of an ARMv8 group before trusting it.)
    pub fn page_size_of(self, level: usize, raw: u64) -> Option<PageSize> {
        match self.decode(level, raw) {
            Pte::Leaf { attrs, .. } if attrs.has(Attrs::CONTIG) => {
                Some(self.contig(level).map_or(self.leaf_size(level), |c| c.1))
            }
            Pte::Leaf { .. } => Some(self.leaf_size(level)),
            _ => None,
        }
    }

    /// The level at which a leaf of `size` sits (one entry, or a group of entries), if
    /// the format has such leaves.
    pub fn leaf_level(self, size: PageSize) -> Option<usize> {
        (0..self.levels().len()).find(|&l| self.entries_for(l, size).is_some())
    }

    /// The base page: one entry of the last level (4 KiB; 16 or 64 KiB with those
    /// granules).
    pub fn base_page(self) -> PageSize {
        self.leaf_size(self.levels().len() - 1)
    }

    /// Every page size this format can map as a leaf, smallest first.
    pub fn page_sizes(self) -> Vec<PageSize> {
        let mut v: Vec<PageSize> = (0..self.levels().len()).flat_map(|l| self.leaf_sizes(l)).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Per level of `levels`, the page size of one entry if it is a [`PageSize`].
const fn level_sizes(levels: &[LevelGeom]) -> [Option<PageSize>; MAX_LEVELS] {
    let mut out = [None; MAX_LEVELS];
    let mut l = 0;
    while l < levels.len() {
        let mut i = 0;
        while i < PageSize::ALL.len() {
            if PageSize::ALL[i].shift() == levels[l].shift {
                out[l] = Some(PageSize::ALL[i]);
            }
            i += 1;
        }
        l += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_size_table_follows_the_levels() {
        for f in Format::ALL {
            assert!(f.levels().len() <= MAX_LEVELS);
            for (l, g) in f.levels().iter().enumerate() {
                if g.leaf {
                    assert_eq!(Some(f.leaf_size(l)), PageSize::from_shift(g.shift), "{f:?} level {l}");
                }
            }
        }
        assert_eq!(
            X86_64::LEVEL_SIZES,
            [None, Some(PageSize::G1), Some(PageSize::M2), Some(PageSize::K4)]
        );
    }

    #[test]
    fn encodings_round_trip() {
        for f in Format::ALL {
            let n = f.levels().len();
            for level in 0..n {
                if level + 1 < n {
                    assert_eq!(
                        f.decode(level, f.encode_table(level, 0x1234_5000)),
                        Pte::Table(0x1234_5000)
                    );
                }
                if f.levels()[level].leaf {
                    let pa = 0x4000_0000;
                    for attrs in [
                        Attrs::user_rw(),
                        Attrs(Attrs::USER),
                        Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED),
                    ] {
                        assert_eq!(
                            f.decode(level, f.encode_leaf(level, pa, attrs)),
                            Pte::Leaf { pa, attrs },
                            "{f:?} level {level}"
                        );
                        if f.contig(level).is_some() {
                            let a = attrs.with(Attrs::CONTIG);
                            let raw = f.encode_leaf(level, pa, a);
                            assert_eq!(
                                f.decode(level, raw),
                                Pte::Leaf { pa, attrs: a },
                                "{f:?} level {level} group"
                            );
                            assert_eq!(f.page_size_of(level, raw), f.contig(level).map(|c| c.1));
                        }
                    }
                }
                assert_eq!(f.decode(level, 0), Pte::Invalid);
            }
            assert_eq!(Format::from_arch_name(f.arch_name()), Some(f));
        }
        use PageSize::*;
        assert_eq!(Format::X86_64.page_sizes(), vec![K4, M2, G1]);
        assert_eq!(Format::Armv8_4K.page_sizes(), vec![K4, K64, M2, M32, G1]);
        assert_eq!(Format::Armv8_16K.page_sizes(), vec![K16, M2, M32, G1]);
        assert_eq!(Format::Armv8_64K.page_sizes(), vec![K64, M2, M512]);
        assert_eq!(Format::Armv7.page_sizes(), vec![K4, K64, M1, M16]);
        assert_eq!(Format::Armv7Lpae.page_sizes(), vec![K4, K64, M2, M32, G1]);
        assert_eq!(Format::Aarch64S2_4K.page_sizes(), vec![K4, K64, M2, M32, G1]);
        assert_eq!(Format::Aarch64S2_16K.page_sizes(), vec![K16, M2, M32, G1]);
        assert_eq!(Format::Aarch64S2_64K.page_sizes(), vec![K64, M2, M512]);
        assert_eq!(Format::Ept.page_sizes(), vec![K4, M2, G1]);
        // Stage-2 formats: 40-bit IPA for the Arm granules, 48 for EPT.
        for (f, bits) in [
            (Format::Aarch64S2_4K, 40),
            (Format::Aarch64S2_16K, 40),
            (Format::Aarch64S2_64K, 40),
            (Format::Ept, 48),
        ] {
            assert_eq!(f.va_bits(), bits, "{f:?}");
            assert!(f.stage2_only(), "{f:?}");
        }
        assert!(!Format::X86_64.stage2_only() && !Format::Armv8_4K.stage2_only());
        assert_eq!(Format::X86_64.leaf_level(M2), Some(2));
        assert_eq!(Format::Armv8_4K.leaf_level(K64), Some(3));
        assert_eq!(Format::Armv8_16K.leaf_level(M2), Some(3));
        assert_eq!(Format::Armv8_16K.entries_for(3, M2), Some(128));
        assert_eq!(Format::Armv8_64K.leaf_level(M2), Some(2));
        assert_eq!(Format::Armv7.leaf_level(M16), Some(0));
        assert_eq!(Format::Armv7.entries_for(0, M16), Some(16));
        // Table sizes: ARMv7 L1 4096 × 4 B entries (16 KiB), L2 256 (1 KiB); 16K granule
        // L0 has two entries.
        assert_eq!(Format::Armv7.levels()[0].entries(), 4096);
        assert_eq!(Format::Armv7.levels()[1].entries(), 256);
        assert_eq!(Format::Armv8_16K.levels()[0].entries(), 2);
        // VA bits covered: 48 for ARMv8, 32 for ARMv7.
        for (f, bits) in [
            (Format::Armv8_16K, 48),
            (Format::Armv8_64K, 48),
            (Format::Armv7, 32),
            (Format::Armv7Lpae, 32),
        ] {
            let g = f.levels()[0];
            assert_eq!(g.shift + g.bits, bits, "{f:?}");
        }
    }

    #[test]
    fn armv7_supersection_keeps_40_bit_addresses() {
        let pa = 0xAB_0100_0000;
        let raw = Format::Armv7.encode_leaf(0, pa, Attrs::user_rw().with(Attrs::CONTIG));
        assert_eq!(
            Format::Armv7.decode(0, raw),
            Pte::Leaf {
                pa,
                attrs: Attrs::user_rw().with(Attrs::CONTIG)
            }
        );
    }
}
