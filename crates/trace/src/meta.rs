//! What a trace says about itself besides its references: markers (page size, cache-line
//! size, …), the threads and processes it saw, and metadata sections such as the VMAs that
//! `mmulab record` captures.
//!
//! Contract: metadata is small and bounded (it never grows with the number of
//! references), so a reader may keep it all; it is reported as far as the reader has read
//! (a drmemtrace page-size marker is known once its record has been decoded).

use std::collections::BTreeMap;

/// Well-known marker names (keys of [`TraceMeta::markers`]).
pub mod marker {
    /// The traced machine's base page size in bytes.
    pub const PAGE_SIZE: &str = "page_size";
    /// The traced machine's cache-line size in bytes.
    pub const CACHE_LINE_SIZE: &str = "cache_line_size";
    /// The trace format's own version number.
    pub const VERSION: &str = "version";
    /// References at the trace's start that are its workload's own warm-up (GUPS's
    /// `Table[i] = i`), as [`crate::TraceSource::warmup_refs`] says of the workload;
    /// written by `mmulab convert --workload` so that `sim --warmup auto` simulates the
    /// trace as it simulates the workload.
    pub const WARMUP_REFS: &str = "warmup_refs";
    /// Non-zero when the trace carries its VMA changes as vma and unmap events in place
    /// (an exact ptrace recording): its first VMA sample is the address space at the
    /// start, and the events bring the rest when they happened
    /// ([`super::TraceMeta::vmas_at_start`]).
    pub const VMA_EVENTS: &str = "vma_events";
}

/// Facts a trace states about itself, as far as it has been read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceMeta {
    /// Marker values by name (e.g. `page_size` → 4096). For markers that repeat, the last
    /// value seen.
    pub markers: BTreeMap<String, u64>,
    /// How many times each kind of marker or non-reference record was seen (e.g.
    /// `timestamp`, `cpu_id`, `encoding`, `instr_no_fetch`).
    pub counts: BTreeMap<String, u64>,
    /// Number of distinct threads, when the format names threads.
    pub threads: Option<u64>,
    /// Number of distinct processes (address spaces), when the format names them.
    pub processes: Option<u64>,
    /// Named metadata sections, in file order (e.g. `vmas`, `source`, `markers`).
    pub sections: Vec<(String, Vec<u8>)>,
}

impl TraceMeta {
    /// Adds one to the count named `what`.
    pub fn count(&mut self, what: &str) {
        // Counted per record of a trace: no allocation once the name is known.
        match self.counts.get_mut(what) {
            Some(n) => *n += 1,
            None => {
                self.counts.insert(what.to_string(), 1);
            }
        }
    }

    /// The first section called `name`.
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.sections.iter().find(|(n, _)| n == name).map(|(_, b)| b.as_slice())
    }

    /// The warm-up the trace declares ([`marker::WARMUP_REFS`]): from its markers, or
    /// from a `markers` section not parsed yet (metadata read up front, as
    /// `mmulab_sim::trace_file_meta` reads it).
    pub fn warmup_refs(&self) -> Option<u64> {
        self.marker_value(marker::WARMUP_REFS)
    }

    /// Marker `name`: from the markers read, or from a `markers` section not parsed yet.
    fn marker_value(&self, name: &str) -> Option<u64> {
        if let Some(n) = self.markers.get(name) {
            return Some(*n);
        }
        // The last value of the last `markers` section that has one, as the reader's
        // markers keep the last value seen.
        let mut found = None;
        for (_, body) in self.sections.iter().filter(|(n, _)| n == "markers") {
            for line in String::from_utf8_lossy(body).lines() {
                if let Some((k, v)) = line.split_once(' ') {
                    if k == name {
                        found = v.trim().parse().ok().or(found);
                    }
                }
            }
        }
        found
    }

    /// Whether the trace carries its VMA changes as events ([`marker::VMA_EVENTS`]).
    pub fn vma_events(&self) -> bool {
        self.marker_value(marker::VMA_EVENTS).is_some_and(|n| n != 0)
    }

    /// The VMAs a simulation installs before the first reference: the first sample when
    /// the trace carries its VMA changes as events (they bring the rest in place), else
    /// [`TraceMeta::vmas_union`].
    pub fn vmas_at_start(&self) -> Vec<Vma> {
        if !self.vma_events() {
            return self.vmas_union();
        }
        self.section("vmas")
            .and_then(|b| parse_vma_samples(b).into_iter().next())
            .unwrap_or_default()
    }

    /// The VMAs of the last sample in the `vmas` section, if any (see [`parse_vma_samples`]).
    pub fn vmas(&self) -> Vec<Vma> {
        self.section("vmas")
            .map(|b| parse_vma_samples(b).pop().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Every address range that any sample of the `vmas` section held ([`vma_union`]): what
    /// the simulated OS installs. The last sample alone misses the mappings a program
    /// removed before its end: numpy's and node's 1 GiB arrays, madvised huge
    /// (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), are freed before they exit, and the
    /// references to them then fell in no VMA of the trace (no `hg` flag: no THP under
    /// `madvise`; the simulated THP run held 0–4 MiB of huge pages where the real one
    /// held 512–1086 MiB).
    pub fn vmas_union(&self) -> Vec<Vma> {
        self.section("vmas")
            .map(|b| vma_union(&parse_vma_samples(b)))
            .unwrap_or_default()
    }

    /// The allocations of the `allocations` section (mmtrace's record of each writable
    /// mapping the program made, [`allocation_section`]), `[start, end)` in the order
    /// made; lines that do not parse are skipped (the section is advisory: it only splits
    /// advise's regions).
    pub fn allocations(&self) -> Vec<(u64, u64)> {
        let Some(b) = self.section("allocations") else {
            return Vec::new();
        };
        let hex = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok();
        String::from_utf8_lossy(b)
            .lines()
            .filter_map(|l| {
                let (a, e) = l.trim().split_once(' ')?;
                let (a, e) = (hex(a)?, hex(e.trim())?);
                (a < e).then_some((a, e))
            })
            .collect()
    }
}

/// The `allocations` section's text: a line `START END` (hexadecimal, `0x…`) for each
/// `[start, end)`, in the order given.
pub fn allocation_section(allocations: &[(u64, u64)]) -> Vec<u8> {
    allocations
        .iter()
        .map(|(a, e)| format!("{a:#x} {e:#x}\n"))
        .collect::<String>()
        .into_bytes()
}

/// The union of `samples` (oldest first) as non-overlapping VMAs in address order: where
/// two samples' VMAs overlap, the later one's (its range, permissions, name and flags)
/// wins over the part it covers; what only earlier samples held is kept.
pub fn vma_union(samples: &[Vec<Vma>]) -> Vec<Vma> {
    let mut map: std::collections::BTreeMap<u64, Vma> = std::collections::BTreeMap::new();
    for sample in samples {
        for v in sample.iter().filter(|v| v.start < v.end) {
            // Entries that overlap [v.start, v.end): the one starting before it, and those
            // starting inside it.
            let mut hit: Vec<u64> = map.range(..v.start).next_back().map(|(&k, _)| k).into_iter().collect();
            hit.extend(map.range(v.start..v.end).map(|(&k, _)| k));
            for k in hit {
                let old = map.remove(&k).expect("listed above");
                if old.end <= v.start || old.start >= v.end {
                    map.insert(old.start, old);
                    continue;
                }
                if old.start < v.start {
                    let mut left = old.clone();
                    left.end = v.start;
                    map.insert(left.start, left);
                }
                if old.end > v.end {
                    let mut right = old;
                    // The file offset moves with the start, as a VMA split moves it.
                    right.offset += v.end - right.start;
                    right.start = v.end;
                    map.insert(right.start, right);
                }
            }
            map.insert(v.start, v.clone());
        }
    }
    map.into_values().collect()
}

/// One virtual memory area, as a line of `/proc/PID/maps` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Permissions, e.g. `rw-p`.
    pub perms: String,
    /// File offset of the mapping.
    pub offset: u64,
    /// The mapped file or pseudo-name (`[heap]`, `[stack]`), empty for anonymous memory.
    pub name: String,
    /// The VMA's flags as `/proc/PID/smaps` writes them on its `VmFlags:` line (`rd wr mr
    /// mw me ac hg`), when the sample has that line (empty otherwise). `hg` is
    /// `MADV_HUGEPAGE`, `nh` `MADV_NOHUGEPAGE` (Linux `show_smap_vma_flags`).
    pub flags: Vec<String>,
}

impl Vma {
    /// Parses one `/proc/PID/maps` line: `start-end perms offset dev inode [name]`.
    pub fn parse(line: &str) -> Option<Vma> {
        let mut it = line.split_whitespace();
        let (s, e) = it.next()?.split_once('-')?;
        let perms = it.next()?.to_string();
        let offset = u64::from_str_radix(it.next()?, 16).ok()?;
        let _dev = it.next()?;
        let _inode = it.next()?;
        let name = it.collect::<Vec<_>>().join(" ");
        let start = u64::from_str_radix(s, 16).ok()?;
        let end = u64::from_str_radix(e, 16).ok()?;
        (start <= end).then_some(Vma {
            start,
            end,
            perms,
            offset,
            name,
            flags: Vec::new(),
        })
    }

    /// Whether the VMA was madvised `MADV_HUGEPAGE` (`hg`).
    pub fn huge_advised(&self) -> bool {
        self.flags.iter().any(|f| f == "hg")
    }

    /// Whether the VMA was madvised `MADV_NOHUGEPAGE` (`nh`).
    pub fn no_huge(&self) -> bool {
        self.flags.iter().any(|f| f == "nh")
    }
}

/// `/proc/PID/smaps` text condensed to what a `vmas` sample keeps: each VMA's header line
/// (the `/proc/PID/maps` line) followed by its `VmFlags:` line, the per-page counts left
/// out. Text without `VmFlags:` lines (`/proc/PID/maps`) passes through as it is.
pub fn condense_smaps(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 8);
    for line in text.lines() {
        if line.starts_with("VmFlags:") || Vma::parse(line).is_some() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Parses the `vmas` section text: samples that each start with a line `# sample N ...`
/// followed by `/proc/PID/maps` lines, each optionally followed by its smaps `VmFlags:`
/// line ([`condense_smaps`]). Returns one list of VMAs per sample, in order; lines that
/// do not parse are skipped.
pub fn parse_vma_samples(text: &[u8]) -> Vec<Vec<Vma>> {
    let text = String::from_utf8_lossy(text);
    let mut out: Vec<Vec<Vma>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("# sample") {
            out.push(Vec::new());
        } else if let Some(flags) = line.strip_prefix("VmFlags:") {
            if let Some(v) = out.last_mut().and_then(|s| s.last_mut()) {
                v.flags = flags.split_whitespace().map(str::to_string).collect();
            }
        } else if let Some(v) = Vma::parse(line) {
            if out.is_empty() {
                out.push(Vec::new());
            }
            out.last_mut().expect("pushed above").push(v);
        }
    }
    out
}

/// The events that take an address space from VMA list `old` to `new` (two samples of one
/// process, each sorted and non-overlapping): an unmap of every range `old` covered and
/// `new` does not (munmap, a mapping moved or shrunk), then a vma event for every VMA of
/// `new` that `old` did not hold with the same range and madvise flags (a new mapping,
/// one grown or merged, one madvised or split by mprotect). VMAs above 2^48 (x86-64's
/// `[vsyscall]`) are not the program's and are left out.
pub fn vma_changes(old: &[Vma], new: &[Vma], asid: u16) -> Vec<crate::Event> {
    let user = |v: &&Vma| v.start < v.end && v.end <= 1 << 48;
    let mut out = Vec::new();
    for o in old.iter().filter(user) {
        // The parts of `o` that no VMA of `new` covers.
        let mut at = o.start;
        for n in new.iter().filter(|n| n.end > o.start && n.start < o.end) {
            if n.start > at {
                out.push(crate::Event::Unmap {
                    asid,
                    start: at,
                    end: n.start,
                });
            }
            at = at.max(n.end);
        }
        if at < o.end {
            out.push(crate::Event::Unmap {
                asid,
                start: at,
                end: o.end,
            });
        }
    }
    let key = |v: &Vma| (v.start, v.end, v.huge_advised(), v.no_huge());
    for n in new.iter().filter(user) {
        if !old.iter().any(|o| key(o) == key(n)) {
            out.push(crate::Event::Vma {
                asid,
                start: n.start,
                end: n.end,
                hugepage: n.huge_advised(),
                nohugepage: n.no_huge(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vma(start: u64, end: u64, flags: &str) -> Vma {
        Vma {
            start,
            end,
            perms: "rw-p".into(),
            offset: 0,
            name: String::new(),
            flags: flags.split_whitespace().map(str::to_string).collect(),
        }
    }

    #[test]
    fn a_trace_with_vma_events_starts_from_its_first_sample_alone() {
        let text = "# sample 0 t_ms=0 pid=1\n1000-5000 rw-p 00000000 00:00 0\n\
                    # sample 1 t_ms=5 pid=1\n1000-5000 rw-p 00000000 00:00 0\n10000-50000 rw-p 00000000 00:00 0\n";
        let mut m = TraceMeta {
            sections: vec![("vmas".into(), text.as_bytes().to_vec())],
            ..Default::default()
        };
        assert!(!m.vma_events());
        assert_eq!(m.vmas_at_start().len(), 2, "without the marker: the union");
        m.sections
            .push(("markers".into(), b"page_size 4096\nvma_events 1\n".to_vec()));
        assert!(m.vma_events());
        let v = m.vmas_at_start();
        assert_eq!((v.len(), v[0].start, v[0].end), (1, 0x1000, 0x5000));
    }

    #[test]
    fn vma_changes_unmap_what_went_and_name_what_is_new_or_changed() {
        use crate::Event;
        // Before: a heap [0x1000, 0x5000), an array [0x10000, 0x50000), a mapping
        // [0x60000, 0x70000). After: the heap grew (merged to [0x1000, 0x8000)), the array
        // shrank to [0x10000, 0x30000) and was madvised, the third is gone, a new one at
        // [0x80000, 0x90000); [vsyscall] above 2^48 in both is ignored.
        let sys = vma(0xffff_ffff_ff60_0000, 0xffff_ffff_ff60_1000, "");
        let old = [
            vma(0x1000, 0x5000, ""),
            vma(0x10000, 0x50000, ""),
            vma(0x60000, 0x70000, ""),
            sys.clone(),
        ];
        let new = [
            vma(0x1000, 0x8000, ""),
            vma(0x10000, 0x30000, "rd wr hg"),
            vma(0x80000, 0x90000, "nh"),
            sys,
        ];
        let e = vma_changes(&old, &new, 3);
        let v = |start, end, hugepage, nohugepage| Event::Vma {
            asid: 3,
            start,
            end,
            hugepage,
            nohugepage,
        };
        assert_eq!(
            e,
            [
                Event::Unmap {
                    asid: 3,
                    start: 0x30000,
                    end: 0x50000
                },
                Event::Unmap {
                    asid: 3,
                    start: 0x60000,
                    end: 0x70000
                },
                v(0x1000, 0x8000, false, false),
                v(0x10000, 0x30000, true, false),
                v(0x80000, 0x90000, false, true),
            ]
        );
        // Nothing changed: no events; every event passes its own check.
        assert!(vma_changes(&new, &new, 3).is_empty());
        assert!(e.iter().all(|e| e.check().is_ok()));
    }

    #[test]
    fn the_union_keeps_what_earlier_samples_held_and_lets_later_ones_win_where_they_overlap() {
        // Sample 1: a heap [0x1000, 0x5000) and a madvised array [0x10000, 0x50000).
        // Sample 2: the array is gone; the heap grew to [0x1000, 0x8000) and part of the
        // array's old range [0x20000, 0x30000) is mapped again without `hg`.
        let s1 = vec![vma(0x1000, 0x5000, "rd wr"), vma(0x10000, 0x50000, "rd wr hg")];
        let s2 = vec![vma(0x1000, 0x8000, "rd wr"), vma(0x20000, 0x30000, "rd wr")];
        let u = vma_union(&[s1, s2]);
        let got: Vec<(u64, u64, bool)> = u.iter().map(|v| (v.start, v.end, v.huge_advised())).collect();
        assert_eq!(
            got,
            vec![
                (0x1000, 0x8000, false),
                (0x10000, 0x20000, true),
                (0x20000, 0x30000, false),
                (0x30000, 0x50000, true),
            ]
        );
    }

    #[test]
    fn parses_maps_lines_and_samples() {
        let t = b"# sample 0 t_ms=0\n00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus\n\
                  # sample 1 t_ms=200\n7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]\nbogus\n\
                  7f00-7f10 ---p 00000010 00:00 0\n";
        let s = parse_vma_samples(t);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0][0].start, 0x400000);
        assert_eq!(s[0][0].name, "/usr/bin/dbus");
        assert_eq!(s[1].len(), 2);
        assert_eq!(s[1][0].name, "[stack]");
        assert_eq!(s[1][1].offset, 0x10);
        let m = TraceMeta {
            sections: vec![("vmas".into(), t.to_vec())],
            ..Default::default()
        };
        assert_eq!(m.vmas().len(), 2);
        assert!(m.vmas().iter().all(|v| v.flags.is_empty() && !v.huge_advised()));
    }

    #[test]
    fn smaps_samples_keep_each_vmas_madvise_flags() {
        let smaps = "7f0000000000-7f0040000000 rw-p 00000000 00:00 0 \n\
                     Size:            1048576 kB\nAnonHugePages:   1046528 kB\n\
                     VmFlags: rd wr mr mw me ac hg \n\
                     7f0040000000-7f0040200000 rw-p 00000000 00:00 0 [heap]\n\
                     Size:               2048 kB\nVmFlags: rd wr mr mw me ac nh\n\
                     7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]\n";
        let c = condense_smaps(smaps);
        assert!(!c.contains("Size:") && !c.contains("AnonHugePages"), "{c}");
        let text = format!("# sample 0 t_ms=0\n{c}");
        let s = parse_vma_samples(text.as_bytes());
        assert_eq!(s[0].len(), 3);
        assert!(s[0][0].huge_advised() && !s[0][0].no_huge());
        assert!(s[0][1].no_huge() && !s[0][1].huge_advised());
        assert!(s[0][2].flags.is_empty());
        // maps text (no VmFlags lines) passes through unchanged.
        let maps = "00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/dbus\n";
        assert_eq!(condense_smaps(maps), maps);
    }

    #[test]
    fn allocations_round_trip_through_their_section_and_bad_lines_are_skipped() {
        let a = vec![(0x7f00_0000_0000, 0x7f00_0010_1000), (0x1000, 0x3000)];
        let mut m = TraceMeta::default();
        assert!(m.allocations().is_empty());
        let mut body = allocation_section(&a);
        assert_eq!(
            String::from_utf8_lossy(&body).lines().next(),
            Some("0x7f0000000000 0x7f0000101000")
        );
        body.extend_from_slice(b"junk\n0x5000 0x4000\n");
        m.sections.push(("allocations".into(), body));
        assert_eq!(m.allocations(), a);
    }
}
