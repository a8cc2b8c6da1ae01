//! Page sizes by granule: which huge page sizes the kernels that mmulab's policies are
//! named after offer on each page-table format, and which policies they do not offer at
//! all on a format (a clear error at configuration time, not a crash deep in a fault).
//!
//! * Linux THP (`thp`, `khugepaged`) maps PMD-sized pages, `HPAGE_PMD_SIZE`: one entry
//!   of the level above the last. That is 2 MiB on x86-64, on arm64 with 4 KiB pages and
//!   on 32-bit Arm with LPAE; 32 MiB on arm64 with 16 KiB pages; 512 MiB with 64 KiB pages
//!   (`include/linux/huge_mm.h`: `HPAGE_PMD_SHIFT` is `PMD_SHIFT`; arm64
//!   `asm/pgtable-hwdef.h`: `PMD_SHIFT = ARM64_HW_PGTABLE_LEVEL_SHIFT(2)`).
//!   `HPAGE_PMD_NR` base pages make one, and khugepaged's defaults follow it:
//!   `khugepaged_max_ptes_none = HPAGE_PMD_NR - 1`, `khugepaged_pages_to_scan =
//!   HPAGE_PMD_NR * 8` (`mm/khugepaged.c`: `khugepaged_init`).
//! * 32-bit Arm without LPAE has no THP: `arch/arm/Kconfig` selects
//!   `HAVE_ARCH_TRANSPARENT_HUGEPAGE if ARM_LPAE`. mTHP needs THP too.
//! * Anonymous mTHP orders run from 2 to `PMD_ORDER` of the base page
//!   (`include/linux/huge_mm.h`: `THP_ORDERS_ALL_ANON = BIT(PMD_ORDER + 1) - 4`, orders
//!   0 and 1 excluded).
//! * FreeBSD's reservations (`vm_reserv.c`) exist for the page sizes its pmaps have:
//!   arm64 `machine/vmparam.h` defines reservation levels for `PAGE_SIZE_4K` (64 KiB,
//!   2 MiB) and `PAGE_SIZE_16K` (2 MiB, 32 MiB) and stops with "Unsupported page size"
//!   for anything else, so there are no FreeBSD reservations with a 64 KiB granule.
//!   mmulab models the 4 KiB case; a 16 KiB granule is refused as not modelled (say so,
//!   not silently 4 KiB numbers).

use crate::addr::{FolioSize, PageSize};
use crate::pt::Format;

/// Linux's `HPAGE_PMD_SIZE` on `fmt`, or why Linux has no THP there.
pub fn linux_pmd_size(fmt: Format) -> Result<PageSize, String> {
    if fmt == Format::Armv7 {
        return Err(format!(
            "Linux offers transparent huge pages on 32-bit Arm only with LPAE (arch/arm/Kconfig: \
             HAVE_ARCH_TRANSPARENT_HUGEPAGE if ARM_LPAE); {} page tables have none: use arch = \"armv7-lpae\" \
             or another os.policy",
            fmt.arch_name()
        ));
    }
    let levels = fmt.levels();
    let pmd = levels.len().checked_sub(2).map(|l| (l, levels[l]));
    match pmd {
        Some((l, g)) if g.leaf => Ok(fmt.leaf_size(l)),
        _ => Err(format!(
            "{} page tables have no PMD-level leaf for THP",
            fmt.arch_name()
        )),
    }
}

/// `HPAGE_PMD_NR`: base pages in one PMD-sized page of `pmd` on `fmt`.
pub fn pmd_nr(fmt: Format, pmd: PageSize) -> u64 {
    pmd.bytes() / fmt.base_page().bytes()
}

/// Why `size` is not an anonymous mTHP size on `fmt` (orders 2 ..= `PMD_ORDER` of the
/// base page), or `Ok`. Every order in that range is one (32K, 128K, 256K, 512K on a
/// 4 KiB granule too: `hugepages-32kB` …), whether or not a page table maps it as one unit.
pub fn check_mthp_size(fmt: Format, size: FolioSize) -> Result<(), String> {
    let pmd = linux_pmd_size(fmt)?;
    let base = fmt.base_page();
    if size.bytes() < base.bytes() << 2 || size.bytes() > pmd.bytes() {
        return Err(format!(
            "\"{size}\" is not an anonymous mTHP size on {} page tables: folios run from 4 base pages \
             ({}) to the PMD size ({pmd})",
            fmt.arch_name(),
            PageSize::from_shift(base.shift() + 2)
                .map_or_else(|| format!("{} KiB", base.bytes() >> 8), |p| p.to_string())
        ));
    }
    Ok(())
}

/// mmulab's default mTHP sizes on `fmt` (an assumption, not Linux's default, which
/// enables only the PMD size): order 2 where it is a [`PageSize`], the contiguous-bit
/// (contpte) size, and the PMD size — 16K, 64K, 2M with 4 KiB pages (x86-64 too, where
/// 64K has no contiguous bit); 64K, 2M, 32M with 16 KiB; 2M, 512M with 64 KiB. (The set
/// predates folio sizes that are not page sizes and is kept so that defaults do not move.)
pub fn default_mthp_sizes(fmt: Format) -> Vec<FolioSize> {
    let Ok(pmd) = linux_pmd_size(fmt) else {
        return Vec::new();
    };
    let mut v: Vec<PageSize> = PageSize::from_shift(fmt.base_page().shift() + 2).into_iter().collect();
    let last = fmt.levels().len() - 1;
    v.extend(fmt.contig(last).map(|c| c.1));
    if fmt.base_page() == PageSize::K4 {
        // The 4 KiB formats keep mmulab's earlier default, 16K, 64K, 2M, on x86-64 too.
        v.push(PageSize::K64);
    }
    v.push(pmd);
    v.sort();
    v.dedup();
    let mut v: Vec<FolioSize> = v.into_iter().map(FolioSize::from).collect();
    v.retain(|&s| check_mthp_size(fmt, s).is_ok());
    v
}

/// Why FreeBSD's reservations are not available (or not modelled) on `fmt`, or `Ok`.
pub fn check_freebsd(fmt: Format) -> Result<(), String> {
    match fmt.base_page() {
        PageSize::K4 => Ok(()),
        PageSize::K16 => Err(format!(
            "os.policy = \"reservation\" on {}: FreeBSD's arm64 pmap has 16 KiB pages with 2M and 32M \
             reservation levels (machine/vmparam.h), which mmulab does not model yet (its reservations \
             are the 4 KiB-page ones); use a 4 KiB granule (arch = \"aarch64\")",
            fmt.arch_name()
        )),
        _ => Err(format!(
            "os.policy = \"reservation\" on {}: FreeBSD has no 64 KiB-page arm64 kernel (machine/vmparam.h: \
             \"Unsupported page size\"); use a 4 KiB granule (arch = \"aarch64\")",
            fmt.arch_name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmd_sizes_follow_the_granule() {
        assert_eq!(linux_pmd_size(Format::X86_64), Ok(PageSize::M2));
        assert_eq!(linux_pmd_size(Format::Armv8_4K), Ok(PageSize::M2));
        assert_eq!(linux_pmd_size(Format::Armv8_16K), Ok(PageSize::M32));
        assert_eq!(linux_pmd_size(Format::Armv8_64K), Ok(PageSize::M512));
        assert_eq!(linux_pmd_size(Format::Armv7Lpae), Ok(PageSize::M2));
        assert!(linux_pmd_size(Format::Armv7).unwrap_err().contains("LPAE"));
        // HPAGE_PMD_NR: 512, 2048, 8192.
        assert_eq!(pmd_nr(Format::Armv8_4K, PageSize::M2), 512);
        assert_eq!(pmd_nr(Format::Armv8_16K, PageSize::M32), 2048);
        assert_eq!(pmd_nr(Format::Armv8_64K, PageSize::M512), 8192);
    }

    #[test]
    fn mthp_orders_follow_the_granule() {
        let f = |s: &str| FolioSize::parse(s).unwrap();
        let fs = |v: &[&str]| v.iter().map(|s| f(s)).collect::<Vec<_>>();
        assert!(check_mthp_size(Format::Armv8_4K, f("16K")).is_ok());
        // Orders 3, 5, 6, 7 of 4 KiB pages: no page table maps them as one unit, but
        // they are mTHP sizes (hugepages-32kB …).
        for s in ["32K", "128K", "256K", "512K"] {
            assert!(check_mthp_size(Format::X86_64, f(s)).is_ok(), "{s}");
        }
        // Order 1 (8K) is not an anonymous order (THP_ORDERS_ALL_ANON).
        assert!(check_mthp_size(Format::X86_64, f("8K")).is_err());
        assert!(check_mthp_size(Format::X86_64, f("4M")).is_err());
        assert!(check_mthp_size(Format::Armv8_16K, f("32K")).is_err());
        assert!(check_mthp_size(Format::Armv8_16K, f("64K")).is_ok());
        assert!(check_mthp_size(Format::Armv8_16K, f("32M")).is_ok());
        assert!(check_mthp_size(Format::Armv8_64K, f("64K")).is_err());
        // 1M is order 4 of 64K pages: an mTHP size.
        assert!(check_mthp_size(Format::Armv8_64K, f("1M")).is_ok());
        assert!(check_mthp_size(Format::Armv8_64K, f("2M")).is_ok());
        assert!(check_mthp_size(Format::X86_64, f("1G")).is_err());
        assert_eq!(default_mthp_sizes(Format::Armv8_4K), fs(&["16K", "64K", "2M"]));
        assert_eq!(default_mthp_sizes(Format::X86_64), fs(&["16K", "64K", "2M"]));
        assert_eq!(default_mthp_sizes(Format::Armv8_16K), fs(&["64K", "2M", "32M"]));
        assert_eq!(default_mthp_sizes(Format::Armv8_64K), fs(&["2M", "512M"]));
        assert!(default_mthp_sizes(Format::Armv7).is_empty());
    }

    #[test]
    fn freebsd_reservations_need_4k_pages() {
        assert!(check_freebsd(Format::Armv8_4K).is_ok());
        assert!(check_freebsd(Format::Armv7).is_ok());
        assert!(check_freebsd(Format::Armv8_16K).unwrap_err().contains("does not model"));
        assert!(check_freebsd(Format::Armv8_64K)
            .unwrap_err()
            .contains("Unsupported page size"));
    }
}
