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
//! Adding a format: a file here with `LEVELS`, `decode`, `encode_table` and
//! `encode_leaf`; a variant of [`Format`] dispatching to it (with its `contig` groups);
//! the arch name in [`Format::from_arch_name`]; walker tests of its reference counts.

mod armv7;
mod armv8;
mod x86_64;

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

/// A page-table format (closed set; static dispatch on the walk path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
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
}

impl Format {
    /// Every format, in the order `mmulab` lists them.
    pub const ALL: [Format; 6] = [
        Format::X86_64,
        Format::Armv8_4K,
        Format::Armv8_16K,
        Format::Armv8_64K,
        Format::Armv7,
        Format::Armv7Lpae,
    ];

    /// Name as configs spell the architecture.
    pub fn arch_name(self) -> &'static str {
        match self {
            Format::X86_64 => "x86_64",
            Format::Armv8_4K => "aarch64",
            Format::Armv8_16K => "aarch64-16k",
            Format::Armv8_64K => "aarch64-64k",
            Format::Armv7 => "armv7",
            Format::Armv7Lpae => "armv7-lpae",
        }
    }

    /// The format a config's `machine.arch` names (`armv8` and `aarch64-4k` are aliases
    /// of `aarch64`).
    pub fn from_arch_name(name: &str) -> Option<Format> {
        match name {
            "armv8" | "aarch64-4k" => Some(Format::Armv8_4K),
            _ => Format::ALL.into_iter().find(|f| f.arch_name() == name),
        }
    }

    /// Width of the virtual addresses the tables translate (48, or 32 for ARMv7).
    pub fn va_bits(self) -> u32 {
        let top = self.levels()[0];
        top.shift + top.bits
    }

    /// Largest physical address + 1 the format's descriptors can hold for every leaf
    /// kind (ARMv7 short descriptors: 4 GiB).
    pub fn max_pa(self) -> u64 {
        match self {
            Format::Armv7 => 1 << 32,
            Format::Armv7Lpae => 1 << 40,
            _ => 1 << 48,
        }
    }

    /// The levels, root first.
    #[inline]
    pub fn levels(self) -> &'static [LevelGeom] {
        match self {
            Format::X86_64 => &x86_64::LEVELS,
            Format::Armv8_4K => &armv8::LEVELS_4K,
            Format::Armv8_16K => &armv8::LEVELS_16K,
            Format::Armv8_64K => &armv8::LEVELS_64K,
            Format::Armv7 => &armv7::LEVELS,
            Format::Armv7Lpae => &armv8::LEVELS_LPAE,
        }
    }

    /// Decodes a descriptor read at `level`.
    #[inline]
    pub fn decode(self, level: usize, raw: u64) -> Pte {
        match self {
            Format::X86_64 => x86_64::decode(level, raw),
            Format::Armv7 => armv7::decode(level, raw),
            f => armv8::decode(level, raw, f.levels()),
        }
    }

    /// Encodes a pointer to the next-level table at `pa`.
    pub fn encode_table(self, level: usize, pa: u64) -> u64 {
        match self {
            Format::X86_64 => x86_64::encode_table(level, pa),
            Format::Armv7 => armv7::encode_table(level, pa),
            _ => armv8::encode_table(level, pa),
        }
    }

    /// Encodes a leaf at `level` mapping `pa` with `attrs`. With [`Attrs::CONTIG`] it is
    /// one entry of a group ([`Format::contig`]): ARMv8 sets the contiguous bit (and `pa`
    /// is this entry's own address); ARMv7 writes a large page or supersection (and `pa`
    /// is the group's base).
    pub fn encode_leaf(self, level: usize, pa: u64, attrs: Attrs) -> u64 {
        match self {
            Format::X86_64 => x86_64::encode_leaf(level, pa, attrs),
            Format::Armv7 => armv7::encode_leaf(level, pa, attrs),
            f => armv8::encode_leaf(level, pa, attrs, f.levels()),
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

    /// The group a leaf at `level` may belong to: (entries, group size). ARMv8 contiguous
    /// bit (4K granule: 16 → 64K at L3, 16 → 32M at L2; 16K: 128 → 2M, 32 → 1G; 64K: 32 →
    /// 2M at L3 — the 16 GiB L2 group has no [`PageSize`]); ARMv7 large pages (16 → 64K)
    /// and supersections (16 → 16M); LPAE contiguous 16 → 64K and 16 → 32M.
    pub fn contig(self, level: usize) -> Option<(usize, PageSize)> {
        use PageSize::*;
        match (self, level) {
            (Format::Armv8_4K, 3) => Some((16, K64)),
            (Format::Armv8_4K, 2) => Some((16, M32)),
            (Format::Armv8_16K, 3) => Some((128, M2)),
            (Format::Armv8_16K, 2) => Some((32, G1)),
            (Format::Armv8_64K, 2) => Some((32, M2)),
            (Format::Armv7, 1) => Some((16, K64)),
            (Format::Armv7, 0) => Some((16, M16)),
            (Format::Armv7Lpae, 2) => Some((16, K64)),
            (Format::Armv7Lpae, 1) => Some((16, M32)),
            _ => None,
        }
    }

    /// True if every entry of a group holds the group's base address (ARMv7 large pages
    /// and supersections); false if each holds its own (ARMv8 contiguous bit).
    pub fn repeated(self) -> bool {
        self == Format::Armv7
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

    /// The page size of one entry's leaf at `level` (its span).
    #[inline]
    pub fn leaf_size(self, level: usize) -> PageSize {
        LEVEL_SIZES[self as usize][level].expect("format leaf levels have known sizes")
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

/// Most levels a format has.
const MAX_LEVELS: usize = 4;

/// Per format (indexed by `Format as usize`) and level: the page size of one entry, if
/// it is a [`PageSize`] (a table lookup on the walk path instead of a search by shift).
static LEVEL_SIZES: [[Option<PageSize>; MAX_LEVELS]; 6] = [
    level_sizes(&x86_64::LEVELS),
    level_sizes(&armv8::LEVELS_4K),
    level_sizes(&armv8::LEVELS_16K),
    level_sizes(&armv8::LEVELS_64K),
    level_sizes(&armv7::LEVELS),
    level_sizes(&armv8::LEVELS_LPAE),
];

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
        for (i, f) in Format::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, i);
            assert!(f.levels().len() <= MAX_LEVELS);
            for (l, g) in f.levels().iter().enumerate() {
                assert_eq!(LEVEL_SIZES[i][l], PageSize::from_shift(g.shift), "{f:?} level {l}");
            }
        }
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
