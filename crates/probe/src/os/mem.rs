//! Anonymous memory regions of a chosen page size, written before use and verified.
//!
//! Each region is surrounded by inaccessible guard pages so the kernel never merges it
//! with a neighbouring VMA: smaps then describes exactly this region.

use crate::error::{ProbeError, Result};
use crate::os::{smaps, sysfs};
use crate::rng::Rng;

const PAGE: usize = 4096;
const HUGE: usize = 2 << 20;
const GIGA: usize = 1 << 30;

/// Page size requested for a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    /// 4 KiB pages (MADV_NOHUGEPAGE).
    Base,
    /// 2 MiB THP (MADV_HUGEPAGE on 2 MiB-aligned memory).
    Thp,
    /// 2 MiB hugetlbfs pages (MAP_HUGETLB | MAP_HUGE_2MB).
    Hugetlb,
    /// 1 GiB hugetlbfs pages (MAP_HUGETLB | MAP_HUGE_1GB), from the 1 GiB pool.
    Hugetlb1G,
    /// Multi-size THP of this many KiB (MADV_HUGEPAGE on memory aligned to it); the caller
    /// must have enabled the size (see [`sysfs::MthpGuard`]).
    Mthp(u64),
}

impl PageKind {
    /// The page size asked for, in bytes.
    pub fn bytes(self) -> usize {
        match self {
            PageKind::Base => PAGE,
            PageKind::Thp | PageKind::Hugetlb => HUGE,
            PageKind::Hugetlb1G => GIGA,
            PageKind::Mthp(k) => k as usize * 1024,
        }
    }
}

/// What a region turned out to be backed by.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Backed {
    /// smaps KernelPageSize, bytes.
    pub kernel_page_bytes: u64,
    /// Fraction of the region in pages of the requested size.
    pub fraction: f64,
    /// Backed as requested.
    pub ok: bool,
    /// How this was established.
    pub how: String,
}

/// An anonymous read-write region of `len` bytes.
pub struct Region {
    map: *mut u8,
    map_len: usize,
    ptr: *mut u8,
    len: usize,
    kind: PageKind,
    mthp_allocs_before: Option<u64>,
}

// The region is plain memory owned by this value.
unsafe impl Send for Region {}

impl Region {
    /// Map `len` bytes (rounded up to the page size) of the given kind. Nothing is touched yet.
    pub fn new(len: usize, kind: PageKind) -> Result<Region> {
        if len == 0 {
            return Err(ProbeError::Invalid("region of 0 bytes".into()));
        }
        let psz = kind.bytes();
        let len = len.div_ceil(psz) * psz;
        if kind == PageKind::Hugetlb || kind == PageKind::Hugetlb1G {
            let usable = if kind == PageKind::Hugetlb {
                sysfs::hugetlb_usable((len / HUGE) as u64)
            } else {
                sysfs::hugetlb_1g_usable((len / GIGA) as u64)
            };
            if let Err(e) = usable {
                return Err(ProbeError::Unavailable(e));
            }
            let shift = if kind == PageKind::Hugetlb { 21 } else { 30 };
            // SAFETY: anonymous mapping, no address hint; result checked.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB | (shift << libc::MAP_HUGE_SHIFT),
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                let e = std::io::Error::last_os_error();
                return Err(ProbeError::Unavailable(format!(
                    "mmap(MAP_HUGETLB, {} MiB, {} pages) failed: {e}; reserve pages with `echo N > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`",
                    len >> 20,
                    if shift == 21 { "2 MiB" } else { "1 GiB" },
                    (1usize << shift) >> 10
                )));
            }
            return Ok(Region {
                map: p as *mut u8,
                map_len: len,
                ptr: p as *mut u8,
                len,
                kind,
                mthp_allocs_before: None,
            });
        }
        let align = psz.max(PAGE);
        let map_len = len + align + 2 * PAGE;
        // SAFETY: anonymous PROT_NONE reservation; result checked.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(ProbeError::last_os(format!("mmap of {} MiB", map_len >> 20)));
        }
        let map = map as *mut u8;
        let start = (map as usize + PAGE).next_multiple_of(align);
        let ptr = start as *mut u8;
        let mut r = Region {
            map,
            map_len,
            ptr,
            len,
            kind,
            mthp_allocs_before: None,
        };
        // SAFETY: [ptr, ptr+len) lies inside the reservation, with a guard page each side.
        if unsafe { libc::mprotect(ptr as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            return Err(ProbeError::last_os("mprotect"));
        }
        let advice = match kind {
            PageKind::Base => libc::MADV_NOHUGEPAGE,
            _ => libc::MADV_HUGEPAGE,
        };
        // SAFETY: advising our own mapping.
        if unsafe { libc::madvise(ptr as *mut libc::c_void, len, advice) } != 0 {
            let e = std::io::Error::last_os_error();
            if kind != PageKind::Base {
                return Err(ProbeError::Unavailable(format!("madvise(MADV_HUGEPAGE) failed: {e}")));
            }
        }
        if let PageKind::Mthp(k) = kind {
            r.mthp_allocs_before = sysfs::mthp_stat(k, "anon_fault_alloc");
        }
        Ok(r)
    }

    /// Start of the usable memory.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Usable length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true (regions have at least one page); for clippy's sake.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The requested kind.
    pub fn kind(&self) -> PageKind {
        self.kind
    }

    /// Write every 4 KiB page once, in random page order when `seed` is given (random
    /// first-touch order scatters physical frames, which defeats PTE coalescing of
    /// physically contiguous 4 KiB pages). Huge pages are touched in address order.
    pub fn touch(&mut self, seed: Option<u64>) {
        let pages = self.len / PAGE;
        let write = |i: usize| {
            // SAFETY: i < pages, so the byte lies inside the region.
            unsafe { std::ptr::write_volatile(self.ptr.add(i * PAGE + 8), 1u8) }
        };
        match (seed, self.kind) {
            (Some(s), PageKind::Base) => {
                let mut order: Vec<usize> = (0..pages).collect();
                Rng::new(s).shuffle(&mut order);
                order.into_iter().for_each(write);
            }
            _ => (0..pages).for_each(write),
        }
    }

    /// Ask the kernel to collapse the region into 2 MiB pages now (MADV_COLLAPSE, Linux 6.1+);
    /// used when THP faults fell back to 4 KiB. Errors are ignored: verification decides.
    pub fn collapse(&mut self) {
        const MADV_COLLAPSE: libc::c_int = 25;
        // SAFETY: advising our own mapping.
        unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.len, MADV_COLLAPSE) };
    }

    /// Verify the page size backing the (touched) region through smaps (and, for mTHP, the
    /// per-size fault counters).
    pub fn verify(&self) -> Result<Backed> {
        let v = smaps::vma_of(self.ptr as usize)?;
        let rss = v.rss.max(1) as f64;
        Ok(match self.kind {
            PageKind::Base => {
                let ok = v.anon_huge == 0 && v.kernel_page == PAGE as u64;
                Backed {
                    kernel_page_bytes: v.kernel_page,
                    fraction: 1.0 - v.anon_huge as f64 / rss,
                    ok,
                    how: format!(
                        "smaps: KernelPageSize {} kB, AnonHugePages {} kB",
                        v.kernel_page / 1024,
                        v.anon_huge / 1024
                    ),
                }
            }
            PageKind::Thp => {
                let f = v.anon_huge as f64 / self.len as f64;
                Backed {
                    kernel_page_bytes: v.kernel_page,
                    fraction: f,
                    ok: f >= 0.95,
                    how: format!("smaps: AnonHugePages {} of {} kB", v.anon_huge / 1024, self.len / 1024),
                }
            }
            PageKind::Hugetlb | PageKind::Hugetlb1G => Backed {
                kernel_page_bytes: v.kernel_page,
                fraction: if v.kernel_page == self.kind.bytes() as u64 {
                    1.0
                } else {
                    0.0
                },
                ok: v.kernel_page == self.kind.bytes() as u64,
                how: format!(
                    "smaps: KernelPageSize {} kB, hugetlb {} kB",
                    v.kernel_page / 1024,
                    v.hugetlb / 1024
                ),
            },
            PageKind::Mthp(k) => {
                let after = sysfs::mthp_stat(k, "anon_fault_alloc");
                match (self.mthp_allocs_before, after) {
                    (Some(b), Some(a)) => {
                        let want = (self.len / (k as usize * 1024)) as f64;
                        let f = ((a.saturating_sub(b)) as f64 / want).min(1.0);
                        Backed {
                            kernel_page_bytes: v.kernel_page,
                            fraction: f,
                            ok: f >= 0.95,
                            how: format!(
                                "hugepages-{k}kB/stats/anon_fault_alloc grew by {} for {} folios wanted (system-wide counter)",
                                a.saturating_sub(b),
                                want
                            ),
                        }
                    }
                    _ => Backed {
                        kernel_page_bytes: v.kernel_page,
                        fraction: f64::NAN,
                        ok: false,
                        how: format!("cannot verify: no hugepages-{k}kB/stats/anon_fault_alloc counter"),
                    },
                }
            }
        })
    }

    /// Map, touch, and for THP retry with MADV_COLLAPSE if the faults fell back; return the
    /// region with its verification.
    pub fn prepared(len: usize, kind: PageKind, seed: u64) -> Result<(Region, Backed)> {
        let mut r = Region::new(len, kind)?;
        r.touch(Some(seed));
        let mut b = r.verify()?;
        if kind == PageKind::Thp && !b.ok {
            r.collapse();
            let b2 = r.verify()?;
            b = Backed {
                how: format!("{} after MADV_COLLAPSE", b2.how),
                ..b2
            };
        }
        Ok((r, b))
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what was mapped.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_region_is_4k_backed() {
        let (r, b) = Region::prepared(8 << 20, PageKind::Base, 1).unwrap();
        assert_eq!(r.len(), 8 << 20);
        assert!(b.ok, "{b:?}");
        assert_eq!(b.kernel_page_bytes, 4096);
    }

    #[test]
    fn thp_region_is_verified_or_reason_given() {
        match sysfs::thp_usable() {
            Ok(()) => {
                let (r, b) = Region::prepared(8 << 20, PageKind::Thp, 1).unwrap();
                assert_eq!(r.as_ptr() as usize % HUGE, 0);
                assert!(b.fraction >= 0.0 && b.fraction <= 1.0);
                assert!(!b.how.is_empty());
            }
            Err(reason) => assert!(reason.contains("THP")),
        }
    }

    #[test]
    fn hugetlb_without_pool_is_a_clear_error() {
        if sysfs::hugetlb_free_2m() == 0 {
            let e = Region::new(4 << 20, PageKind::Hugetlb).err().unwrap().to_string();
            assert!(e.contains("nr_hugepages"), "{e}");
        }
    }
}
