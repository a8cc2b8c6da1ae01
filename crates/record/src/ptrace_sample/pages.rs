//! Pages the program touched between windows, for the ptrace sampler: at each window the
//! program's writable private mappings (`/proc/PID/maps`) are read from
//! `/proc/PID/pagemap`, and every page present that was not before becomes a touch
//! (`mmulab_trace::Event::Touch`): a first write when the page is mapped exclusively (bit
//! 56, `PM_MMAP_EXCLUSIVE`: an anonymous page the program wrote, or a private copy), else a
//! first read (the shared zero page, a page cache page). A page seen read and later
//! exclusive gives a second, write touch. The flags need no privilege (only the frame
//! numbers do, and they are not used). Documented in Linux's
//! Documentation/admin-guide/mm/pagemap.rst; filled by `pagemap_pmd_range` and
//! `pte_to_pagemap_entry` (fs/proc/task_mmu.c).
//!
//! What it cannot see: a page touched and freed between two windows, and which of a THP's
//! 512 pages the program touched (all are present): under THP every page of a huge page
//! becomes a write touch, so the simulated 4 KiB run may fault pages the real 4 KiB run
//! never touched (its fault count; the TLB sees no touch).
//!
//! Written here: reading two procfs files is the whole job.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

const PRESENT: u64 = 1 << 63;
const EXCLUSIVE: u64 = 1 << 56;
/// Pagemap entries read per system call (512 KiB of entries, 256 MiB of address space).
const CHUNK: usize = 1 << 16;

/// The pages seen present so far (page number → 1 read, 3 written).
#[derive(Default)]
pub(super) struct Pages {
    seen: HashMap<u64, u8>,
    /// Bytes of pagemap read in all (what the scans cost).
    pub(super) pagemap_bytes: u64,
    /// Wall seconds the scans took, in all.
    pub(super) seconds: f64,
}

/// Writable private mappings in `maps` (the text of /proc/PID/maps), `[start, end)`.
fn writable_private(maps: &str) -> Vec<(u64, u64)> {
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, perms) = (f.next()?, f.next()?);
            let p = perms.as_bytes();
            if p.len() < 4 || p[1] != b'w' || p[3] != b'p' {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            let (a, b) = (u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?);
            (a < b && b <= 1 << 48).then_some((a, b))
        })
        .collect()
}

impl Pages {
    /// Scans process `pid` and appends to `out` a (page address, write) touch for each
    /// page newly present or newly exclusive since the last scan. A process gone or a
    /// file that cannot be read gives nothing (the recording goes on without touches).
    pub(super) fn scan(&mut self, pid: i32, out: &mut Vec<(u64, bool)>) {
        let t0 = std::time::Instant::now();
        self.scan_maps(pid, out);
        self.seconds += t0.elapsed().as_secs_f64();
    }

    fn scan_maps(&mut self, pid: i32, out: &mut Vec<(u64, bool)>) {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        let Ok(mut pm) = std::fs::File::open(format!("/proc/{pid}/pagemap")) else {
            return;
        };
        let mut raw = vec![0u8; CHUNK * 8];
        for (start, end) in writable_private(&maps) {
            let mut page = start >> 12;
            let last = end >> 12;
            while page < last {
                let n = ((last - page) as usize).min(CHUNK);
                if pm.seek(SeekFrom::Start(page * 8)).is_err() || pm.read_exact(&mut raw[..n * 8]).is_err() {
                    break;
                }
                self.pagemap_bytes += n as u64 * 8;
                for (i, e) in raw[..n * 8].chunks_exact(8).enumerate() {
                    let e = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                    if e & PRESENT == 0 {
                        continue;
                    }
                    let now = if e & EXCLUSIVE != 0 { 3 } else { 1 };
                    let p = page + i as u64;
                    let had = self.seen.entry(p).or_insert(0);
                    if *had & now != now {
                        *had |= now;
                        out.push((p << 12, now == 3));
                    }
                }
                page += n as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_writable_private_mappings_are_scanned() {
        let maps = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/prog\n\
                    00651000-00652000 rw-p 00051000 08:02 173521 /usr/bin/prog\n\
                    7f0000000000-7f0000200000 rw-s 00000000 00:01 1 /dev/shm/x\n\
                    7f0000200000-7f0000600000 rw-p 00000000 00:00 0\n\
                    7ffff7ff0000-7ffff7ff1000 ---p 00000000 00:00 0\n";
        assert_eq!(
            writable_private(maps),
            vec![(0x651000, 0x652000), (0x7f00_0020_0000, 0x7f00_0060_0000)]
        );
    }

    /// This process's own pages: a buffer written after a first scan shows up as write
    /// touches in the second, each page once, and a third scan adds nothing.
    #[test]
    fn pages_written_between_scans_become_write_touches_once() {
        let pid = std::process::id() as i32;
        let mut pages = Pages::default();
        let mut out = Vec::new();
        let layout = std::alloc::Layout::from_size_align(64 << 12, 4096).unwrap();
        // SAFETY: a non-zero size; freed below.
        let p = unsafe { std::alloc::alloc(layout) };
        assert!(!p.is_null());
        pages.scan(pid, &mut out);
        for i in 0..64 {
            // SAFETY: inside the allocation.
            unsafe { std::ptr::write_volatile(p.add(i << 12), 1u8) };
        }
        out.clear();
        pages.scan(pid, &mut out);
        let base = p as u64;
        let ours: Vec<_> = out
            .iter()
            .filter(|(a, _)| (base..base + (64 << 12)).contains(a))
            .collect();
        // Pages the allocator had already touched (its header) were seen by the first scan.
        assert!(ours.len() >= 62, "{} of 64 pages", ours.len());
        assert!(ours.iter().all(|&&(_, w)| w), "written pages are exclusive");
        out.clear();
        pages.scan(pid, &mut out);
        assert!(out.iter().all(|(a, _)| !(base..base + (64 << 12)).contains(a)));
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(p, layout) };
    }
}
