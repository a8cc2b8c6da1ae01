//! KVM/arm64 dirty logging with eager stage-2 page splitting (issue #20 items 4 and 5).
//!
//! A VM's guest-physical memory is a set of [`Memslot`]s ([`memslot`]); its stage-2 table
//! ([`Stage2`], `stage2.rs`) is populated per host backing ([`Backing`]: 4 KiB pages, THP,
//! hugetlb) and granule ([`Granule`]). Enabling dirty logging on a slot
//! ([`Stage2::enable_dirty_logging`]) write-protects it and splits every block of it at once;
//! `KVM_CLEAR_DIRTY_LOG` with manual protect ([`Stage2::clear_dirty_log`]) write-protects
//! and splits 64 pages at a time. Splitting runs the kernel's split walker
//! (`stage2_split_walker` in `arch/arm64/kvm/hyp/pgtable.c`) over mmulab's visitor walker
//! ([`crate::walk::walk`]) in three [`Variant`]s: today's kernel, the RFC's
//! `KVM_PGTABLE_WALK_SKIP_LEVEL3`, and skip-levels plus skip-children. Everything is
//! counted ([`SplitCounts`]); [`cost::SplitCost`] turns the counts into time. The
//! operations are a [`Splitter`] over any stage-2 table's memory and root: the
//! standalone [`Stage2`] here, and the nested machine's host tables (the simulator's
//! `[vm.dirty_log]`), so the two features share one stage 2.
//!
//! [`measure`] runs one scenario on one slot, by a real walk of the slot or, for large
//! slots, of its first three 1 GiB pieces extrapolated (`run.rs`; exact because every
//! walk restarts at the root and all chunk sizes divide 1 GiB — a test checks the
//! extrapolation against the full walk).

pub mod cost;
pub mod memslot;
mod run;
mod stage2;

pub use cost::SplitCost;
pub use memslot::{Memslot, Memslots};
pub use run::{measure, measure_walked, Case};
pub use stage2::{SplitCounts, Splitter, Stage2, WalkTally};

use crate::addr::PageSize;
use crate::pt::Format;

/// A stage-2 translation granule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Granule {
    /// 4 KiB: levels 1..3 (40-bit IPA), blocks of 1 GiB (level 1) and 2 MiB (level 2).
    K4,
    /// 16 KiB: levels 2..3 (40-bit IPA), blocks of 32 MiB (level 2) only.
    K16,
    /// 64 KiB: levels 2..3 (40-bit IPA), blocks of 512 MiB (level 2) only.
    K64,
}

impl Granule {
    /// Every granule.
    pub const ALL: [Granule; 3] = [Granule::K4, Granule::K16, Granule::K64];

    /// The name used in tables and JSON (`4K`, `16K`, `64K`).
    pub fn name(self) -> &'static str {
        match self {
            Granule::K4 => "4K",
            Granule::K16 => "16K",
            Granule::K64 => "64K",
        }
    }

    /// The page size of a last-level entry.
    pub fn page(self) -> PageSize {
        match self {
            Granule::K4 => PageSize::K4,
            Granule::K16 => PageSize::K16,
            Granule::K64 => PageSize::K64,
        }
    }

    /// The block sizes this granule's stage-2 tables can map, largest first (what
    /// `KVM_CAP_ARM_SUPPORTED_BLOCK_SIZES` reports; 16K level-1 and 64K level-1 blocks need
    /// FEAT_LPA2 / 52-bit PAs and are not modelled).
    pub fn block_sizes(self) -> &'static [PageSize] {
        match self {
            Granule::K4 => &[PageSize::G1, PageSize::M2],
            Granule::K16 => &[PageSize::M32],
            Granule::K64 => &[PageSize::M512],
        }
    }

    /// The kernel's level number of model level `index` (the tables start at level 1 for
    /// 4K, level 2 for 16K and 64K).
    pub fn kernel_level(self, index: usize) -> usize {
        index + 4 - s2_format(self).levels().len()
    }
}

/// The stage-2 format of granule `g`: the same tables the nested translator walks
/// (`vm.stage2`, docs/virtualization.md), so both features describe one host — ARMv8-A
/// stage-2 descriptors (S2AP, MemAttr, DBM; Arm ARM D8.3) sized for KVM's default 40-bit
/// IPA with its concatenated start level (Linux `stage2_pgtable_levels(40)`: 4K from
/// level 1 with 2 concatenated tables, 16K from level 2 with 16, 64K from level 2).
/// Every split walk therefore starts at level 1 (4K) or level 2 (16K, 64K): compared with
/// a 48-bit, 4-level layout, one read fewer per walk at 4K (no level 0), two fewer at 16K
/// (no levels 0 and 1) and one fewer at 64K (no level 1); docs/kvm-split.md.
pub fn s2_format(g: Granule) -> Format {
    match g {
        Granule::K4 => Format::Aarch64S2_4K,
        Granule::K16 => Format::Aarch64S2_16K,
        Granule::K64 => Format::Aarch64S2_64K,
    }
}

/// How the host backs a slot's memory, which decides the stage-2 leaves it starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backing {
    /// Base pages: last-level entries only (nothing to split).
    Pages,
    /// Transparent huge pages: blocks of the granule's PMD size (2M, 32M, 512M).
    Thp,
    /// hugetlbfs 1 GiB pages: 1 GiB blocks at 4K; at 16K and 64K, whose largest stage-2
    /// block is the level-2 one (32M, 512M), KVM maps a 1 GiB hugetlb page with blocks of
    /// that size (`user_mem_abort` clamps a contiguous-PMD hugetlb page to `PMD_SHIFT`),
    /// so there it equals [`Backing::Thp`].
    Hugetlb1G,
}

impl Backing {
    /// Every backing.
    pub const ALL: [Backing; 3] = [Backing::Pages, Backing::Thp, Backing::Hugetlb1G];

    /// The name used in tables and JSON (`4K`, `THP`, `hugetlb-1G`).
    pub fn name(self) -> &'static str {
        match self {
            Backing::Pages => "4K",
            Backing::Thp => "THP",
            Backing::Hugetlb1G => "hugetlb-1G",
        }
    }

    /// The leaf size the stage-2 table maps this backing with under granule `g`.
    pub fn leaf(self, g: Granule) -> PageSize {
        match self {
            Backing::Pages => g.page(),
            Backing::Thp => *g.block_sizes().last().expect("every granule has a block size"),
            Backing::Hugetlb1G => g.block_sizes()[0],
        }
    }
}

/// The split walker's variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// Today's kernel: `KVM_PGTABLE_WALK_LEAF` only; every entry of the range is visited.
    Vanilla,
    /// The RFC's (a): `KVM_PGTABLE_WALK_LEAF | KVM_PGTABLE_WALK_SKIP_LEVEL3`; the walk never
    /// descends into last-level tables.
    SkipLevel3,
    /// The RFC's (b): skip level 3, and after a split that built a complete subtree the
    /// callback tells the walker to skip the new table's children.
    SkipChildren,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 3] = [Variant::Vanilla, Variant::SkipLevel3, Variant::SkipChildren];

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Vanilla => "vanilla",
            Variant::SkipLevel3 => "skip-level3",
            Variant::SkipChildren => "skip-children",
        }
    }
}

/// What user space does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// `KVM_SET_USER_MEMORY_REGION2` with `KVM_MEM_LOG_DIRTY_PAGES`, no manual protect:
    /// `kvm_arch_commit_memory_region` write-protects the slot
    /// (`kvm_mmu_wp_memory_region`) and splits it whole (`kvm_mmu_split_memory_region`).
    Enable,
    /// Manual protect with initially-all-set: one `KVM_CLEAR_DIRTY_LOG` over the whole
    /// slot; per 64-page word of the bitmap `kvm_arch_mmu_enable_log_dirty_pt_masked`
    /// write-protects the word's pages and splits them (`kvm_mmu_split_huge_pages`).
    ClearDirtyLog,
}

impl Scenario {
    /// Both scenarios.
    pub const ALL: [Scenario; 2] = [Scenario::Enable, Scenario::ClearDirtyLog];

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Enable => "enable",
            Scenario::ClearDirtyLog => "clear-dirty-log",
        }
    }
}

/// The kernel's walk flags (`enum kvm_pgtable_walk_flags`, `asm/kvm_pgtable.h`), kept as
/// the kernel's bits so the split code reads like the kernel's; [`walk_flags`] turns the
/// ones the walker acts on into [`crate::walk::WalkFlags`].
pub mod flags {
    /// Visit leaf entries, including invalid ones.
    pub const LEAF: u32 = 1 << 0;
    /// Visit table entries before their children.
    pub const TABLE_PRE: u32 = 1 << 1;
    /// Visit table entries after their children.
    pub const TABLE_POST: u32 = 1 << 2;
    /// Concurrent software walkers (atomics; not modelled beyond the name).
    pub const SHARED: u32 = 1 << 3;
    /// Handle faults (earlier IGNORE_EAGAIN).
    pub const HANDLE_FAULT: u32 = 1 << 4;
    /// No break-before-make TLB invalidation: the subtree is not reachable by hardware.
    pub const SKIP_BBM_TLBI: u32 = 1 << 5;
    /// No cache maintenance.
    pub const SKIP_CMO: u32 = 1 << 6;
    /// The RFC's flag: never descend into level-3 tables (bit assumed; the RFC adds it
    /// after the existing ones).
    pub const SKIP_LEVEL3: u32 = 1 << 7;
}

/// The walker flags for kernel flags `f` on tables of format `fmt` (SKIP_LEVEL3 skips the
/// last level, which is level 3 in every granule).
pub fn walk_flags(f: u32, fmt: Format) -> crate::walk::WalkFlags {
    use crate::walk::WalkFlags;
    let mut w = WalkFlags::default();
    if f & flags::LEAF != 0 {
        w = w.union(WalkFlags::LEAF);
    }
    if f & flags::TABLE_PRE != 0 {
        w = w.union(WalkFlags::TABLE_PRE);
    }
    if f & flags::TABLE_POST != 0 {
        w = w.union(WalkFlags::TABLE_POST);
    }
    if f & flags::SKIP_LEVEL3 != 0 {
        w = w.skip_level(fmt.levels().len() - 1);
    }
    w
}
