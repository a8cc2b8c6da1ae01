//! Reading `/proc/self/smaps` to learn what page size backs a mapping.

use crate::error::{ProbeError, Result};

/// The smaps fields of one VMA that tell its page size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VmaPages {
    /// VMA start address.
    pub start: usize,
    /// VMA end address (exclusive).
    pub end: usize,
    /// `Rss`, bytes.
    pub rss: u64,
    /// `AnonHugePages` (PMD-mapped THP), bytes.
    pub anon_huge: u64,
    /// `KernelPageSize`, bytes.
    pub kernel_page: u64,
    /// `Private_Hugetlb` + `Shared_Hugetlb`, bytes.
    pub hugetlb: u64,
}

/// Parse smaps text and return the VMA containing `addr`.
pub fn parse_vma(text: &str, addr: usize) -> Option<VmaPages> {
    let mut cur: Option<VmaPages> = None;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(s), Ok(e)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                if let Some(v) = cur.take() {
                    return Some(v);
                }
                if s <= addr && addr < e {
                    cur = Some(VmaPages {
                        start: s,
                        end: e,
                        ..Default::default()
                    });
                }
                continue;
            }
        }
        if let Some(v) = cur.as_mut() {
            let mut it = line.split_whitespace();
            let key = it.next().unwrap_or("");
            let kb: u64 = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
            match key {
                "Rss:" => v.rss = kb * 1024,
                "AnonHugePages:" => v.anon_huge = kb * 1024,
                "KernelPageSize:" => v.kernel_page = kb * 1024,
                "Private_Hugetlb:" | "Shared_Hugetlb:" => v.hugetlb += kb * 1024,
                _ => {}
            }
        }
    }
    cur
}

/// The VMA of this process containing `addr`.
pub fn vma_of(addr: usize) -> Result<VmaPages> {
    let text =
        std::fs::read_to_string("/proc/self/smaps").map_err(|e| ProbeError::io("reading /proc/self/smaps", e))?;
    parse_vma(&text, addr)
        .ok_or_else(|| ProbeError::Unavailable(format!("no VMA in /proc/self/smaps contains {addr:#x}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
7f0000000000-7f0000200000 rw-p 00000000 00:00 0 
Size:               2048 kB
KernelPageSize:        4 kB
Rss:                2048 kB
AnonHugePages:      2048 kB
Private_Hugetlb:       0 kB
7f0000200000-7f0000400000 rw-p 00000000 00:00 0 
Size:               2048 kB
KernelPageSize:     2048 kB
Rss:                   0 kB
AnonHugePages:         0 kB
Private_Hugetlb:    2048 kB
";

    #[test]
    fn finds_the_right_vma() {
        let a = parse_vma(SAMPLE, 0x7f0000000100).unwrap();
        assert_eq!((a.rss, a.anon_huge, a.kernel_page), (2 << 20, 2 << 20, 4096));
        let b = parse_vma(SAMPLE, 0x7f0000300000).unwrap();
        assert_eq!((b.kernel_page, b.hugetlb), (2 << 20, 2 << 20));
        assert!(parse_vma(SAMPLE, 0x1000).is_none());
    }
}
