//! Scenario scripts: one operation per line, run natively by a child process
//! (native.rs) and replayed on the model (replay.rs). See docs/kernel-check.md.
//!
//! ```text
//! # a comment; the first comment lines are the scenario's description
//! set enabled madvise                  # /sys/kernel/mm/transparent_hugepage/<path> <value>
//! set hugepages-64kB/enabled always
//! map A 4M                             # anonymous read-write mmap; the kernel places it
//! map B 3M at 4K                       # placed 4 KiB above a 2 MiB boundary
//! madvise A 0 4M hugepage              # hugepage | nohugepage | dontneed | collapse
//! write A 0 2M                         # one store to every 4 KiB page of the range
//! read A 2M 4K                         # one load to every 4 KiB page
//! munmap A 1M 4K
//! mprotect A 1M 4K ro                  # ro | rw
//! mremap A 8M                          # grow in place (no MREMAP_MAYMOVE)
//! fork                                 # the lines up to `end` run in a forked child
//! write A 0 4K                         #   (write and read only)
//! end
//! mark                                 # compare the regions' smaps here
//! shrink                               # run the THP shrinker (drop_caches; root)
//! ```

/// 4 KiB, the unit of touches.
pub const PAGE: u64 = 4096;

/// A madvise advice of a script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adv {
    /// MADV_HUGEPAGE.
    Hugepage,
    /// MADV_NOHUGEPAGE.
    NoHugepage,
    /// MADV_DONTNEED.
    DontNeed,
    /// MADV_COLLAPSE.
    Collapse,
}

/// One operation; regions are indices into [`Script::regions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// mmap of region `r`, `len` bytes, at `at` above a 2 MiB boundary if given.
    Map { r: usize, len: u64, at: Option<u64> },
    /// madvise of `[off, off + len)` of region `r`.
    Madvise { r: usize, off: u64, len: u64, adv: Adv },
    /// A store (true) or load to every 4 KiB page of the range.
    Touch { r: usize, off: u64, len: u64, write: bool },
    /// munmap of the range.
    Munmap { r: usize, off: u64, len: u64 },
    /// mprotect of the range, writable or read-only.
    Mprotect {
        r: usize,
        off: u64,
        len: u64,
        writable: bool,
    },
    /// mremap of region `r` to `len` bytes, in place.
    Mremap { r: usize, len: u64 },
    /// fork: the ops up to [`Op::End`] run in the child, the parent waits for it.
    Fork,
    /// End of a fork block (the child exits).
    End,
    /// A marked point: the regions' smaps are compared here.
    Mark,
    /// The THP shrinker runs over every queued folio (`echo 2 >
    /// /proc/sys/vm/drop_caches`, which needs root).
    Shrink,
}

/// A parsed scenario.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// Its name (the file's stem).
    pub name: String,
    /// The leading comment lines.
    pub description: String,
    /// Settings: path under /sys/kernel/mm/transparent_hugepage, value.
    pub settings: Vec<(String, String)>,
    /// Region names, in order of first `map`.
    pub regions: Vec<String>,
    /// The operations.
    pub ops: Vec<Op>,
}

/// Parses a size: `4096`, `4K`, `2M`, `1G`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, mul) = match s.as_bytes().last() {
        Some(b'K' | b'k') => (&s[..s.len() - 1], 1 << 10),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G' | b'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .map(|n| n * mul)
        .map_err(|_| format!("\"{s}\" is not a size (4096, 4K, 2M, 1G)"))
}

impl Script {
    /// Parses `text`, the script named `name`; errors name the line.
    pub fn parse(name: &str, text: &str) -> Result<Script, String> {
        let mut s = Script {
            name: name.to_string(),
            ..Default::default()
        };
        let mut in_fork = false;
        let mut header = true;
        for (i, raw) in text.lines().enumerate() {
            let at = |e: String| format!("{name}, line {}: {e}", i + 1);
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                if header && raw.trim_start().starts_with('#') {
                    let d = raw.trim_start().trim_start_matches('#').trim();
                    if !s.description.is_empty() {
                        s.description.push(' ');
                    }
                    s.description.push_str(d);
                }
                continue;
            }
            header = false;
            let w: Vec<&str> = line.split_whitespace().collect();
            let region = |s: &mut Script, n: &str, new: bool| -> Result<usize, String> {
                match s.regions.iter().position(|r| r == n) {
                    Some(i) if !new => Ok(i),
                    Some(_) => Err(format!("region {n} is mapped twice")),
                    None if new => {
                        s.regions.push(n.to_string());
                        Ok(s.regions.len() - 1)
                    }
                    None => Err(format!("region {n} is not mapped yet")),
                }
            };
            let range = |s: &mut Script, w: &[&str]| -> Result<(usize, u64, u64), String> {
                if w.len() < 4 {
                    return Err(format!("{} needs REGION OFFSET LENGTH", w[0]));
                }
                let (off, len) = (parse_size(w[2])?, parse_size(w[3])?);
                if off % PAGE != 0 || len % PAGE != 0 || len == 0 {
                    return Err("offset and length must be non-zero multiples of 4K".into());
                }
                Ok((region(s, w[1], false)?, off, len))
            };
            let op = match w[0] {
                "set" if w.len() == 3 && !in_fork => {
                    if w[1].contains("..") || w[1].starts_with('/') {
                        return Err(at(format!("set {}: a path under the THP directory, please", w[1])));
                    }
                    s.settings.push((w[1].to_string(), w[2].to_string()));
                    continue;
                }
                "map" if (w.len() == 3 || (w.len() == 5 && w[3] == "at")) && !in_fork => {
                    let len = parse_size(w[2]).map_err(at)?;
                    let place = if w.len() == 5 {
                        let a = parse_size(w[4]).map_err(at)?;
                        if a % PAGE != 0 || a >= 2 << 20 {
                            return Err(at("at OFFSET must be a multiple of 4K below 2M".into()));
                        }
                        Some(a)
                    } else {
                        None
                    };
                    if len % PAGE != 0 || len == 0 {
                        return Err(at("the length must be a non-zero multiple of 4K".into()));
                    }
                    Op::Map {
                        r: region(&mut s, w[1], true).map_err(at)?,
                        len,
                        at: place,
                    }
                }
                "madvise" if w.len() == 5 && !in_fork => {
                    let (r, off, len) = range(&mut s, &w).map_err(at)?;
                    let adv = match w[4] {
                        "hugepage" => Adv::Hugepage,
                        "nohugepage" => Adv::NoHugepage,
                        "dontneed" => Adv::DontNeed,
                        "collapse" => Adv::Collapse,
                        o => return Err(at(format!("madvise {o}: use hugepage, nohugepage, dontneed or collapse"))),
                    };
                    Op::Madvise { r, off, len, adv }
                }
                "write" | "read" if w.len() == 4 => {
                    let (r, off, len) = range(&mut s, &w).map_err(at)?;
                    Op::Touch {
                        r,
                        off,
                        len,
                        write: w[0] == "write",
                    }
                }
                "munmap" if w.len() == 4 && !in_fork => {
                    let (r, off, len) = range(&mut s, &w).map_err(at)?;
                    Op::Munmap { r, off, len }
                }
                "mprotect" if w.len() == 5 && !in_fork => {
                    let (r, off, len) = range(&mut s, &w).map_err(at)?;
                    let writable = match w[4] {
                        "rw" => true,
                        "ro" => false,
                        o => return Err(at(format!("mprotect {o}: use ro or rw"))),
                    };
                    Op::Mprotect { r, off, len, writable }
                }
                "mremap" if w.len() == 3 && !in_fork => Op::Mremap {
                    r: region(&mut s, w[1], false).map_err(at)?,
                    len: parse_size(w[2]).map_err(at)?,
                },
                "fork" if w.len() == 1 && !in_fork => {
                    in_fork = true;
                    Op::Fork
                }
                "end" if w.len() == 1 && in_fork => {
                    in_fork = false;
                    Op::End
                }
                "mark" if w.len() == 1 && !in_fork => Op::Mark,
                "shrink" if w.len() == 1 && !in_fork => Op::Shrink,
                _ => {
                    return Err(at(format!(
                        "\"{line}\" is not an operation here (set, map, madvise, write, read, munmap, mprotect, mremap, fork … end, mark, shrink; only write and read inside fork)"
                    )))
                }
            };
            s.ops.push(op);
        }
        if in_fork {
            return Err(format!("{name}: a fork block has no end"));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_operation_and_refuses_bad_lines() {
        let s = Script::parse(
            "t",
            "# desc\nset enabled always\nmap A 4M\nmap B 3M at 4K\nmadvise A 0 4M hugepage\nwrite A 0 8K\nfork\nread A 0 4K\nend\nmark\n",
        )
        .unwrap();
        assert_eq!(s.description, "desc");
        assert_eq!(s.settings, vec![("enabled".to_string(), "always".to_string())]);
        assert_eq!(s.regions, vec!["A", "B"]);
        assert_eq!(s.ops.len(), 8);
        assert!(Script::parse("t", "write A 0 4K").unwrap_err().contains("line 1"));
        assert!(Script::parse("t", "map A 4M\nfork\nmunmap A 0 4K\nend").is_err());
        assert!(Script::parse("t", "map A 5000").is_err());
        assert!(Script::parse("t", "set ../../x 1").is_err());
        assert_eq!(Script::parse("t", "shrink").unwrap().ops, vec![Op::Shrink]);
        assert!(Script::parse("t", "map A 4M\nfork\nshrink\nend").is_err());
    }
}
