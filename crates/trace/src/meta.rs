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
        if let Some(n) = self.markers.get(marker::WARMUP_REFS) {
            return Some(*n);
        }
        // The last value of the last `markers` section that has one, as the reader's
        // markers keep the last value seen.
        let mut found = None;
        for (_, body) in self.sections.iter().filter(|(n, _)| n == "markers") {
            for line in String::from_utf8_lossy(body).lines() {
                if let Some((k, v)) = line.split_once(' ') {
                    if k == marker::WARMUP_REFS {
                        found = v.trim().parse().ok().or(found);
                    }
                }
            }
        }
        found
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
}
