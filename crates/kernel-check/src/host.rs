//! The live kernel's side: its THP settings under /sys/kernel/mm/transparent_hugepage
//! (read, set as root and restored), its counters (`/proc/vmstat`'s `thp_*`, the per-size
//! mTHP `stats/`) and a process's smaps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The THP directory.
pub const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// The selected value of a sysfs choice file (`always [madvise] never` → `madvise`) or the
/// file's trimmed text.
pub fn selected(text: &str) -> String {
    match (text.find('['), text.find(']')) {
        (Some(a), Some(b)) if a < b => text[a + 1..b].to_string(),
        _ => text.trim().to_string(),
    }
}

/// Reads setting `rel` (a path under [`THP`]), its selected value.
pub fn read_setting(rel: &str) -> Result<String, String> {
    let p = Path::new(THP).join(rel);
    std::fs::read_to_string(&p)
        .map(|t| selected(&t))
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// Settings changed for a scenario, restored when dropped (also when the run fails or
/// is interrupted: the caller turns SIGINT into an error, native.rs).
#[derive(Debug, Default)]
pub struct Settings {
    saved: Vec<(PathBuf, String)>,
}

impl Settings {
    /// Sets each `(rel, value)` whose current value differs, saving the old value first.
    /// An error (no such file: the kernel lacks it; no permission: not root) restores
    /// what was set so far.
    pub fn apply(want: &[(String, String)]) -> Result<Settings, String> {
        let mut s = Settings::default();
        for (rel, value) in want {
            let p = Path::new(THP).join(rel);
            let now = read_setting(rel).map_err(|e| format!("the kernel lacks {rel} ({e})"))?;
            if &now == value {
                continue;
            }
            std::fs::write(&p, value).map_err(|e| format!("cannot set {rel} = {value} ({e}; needs root)"))?;
            s.saved.push((p, now));
        }
        Ok(s)
    }

    /// Restores every saved value, in reverse order; the first error, after trying all.
    pub fn restore(&mut self) -> Result<(), String> {
        let mut err = None;
        while let Some((p, v)) = self.saved.pop() {
            if let Err(e) = std::fs::write(&p, &v) {
                err.get_or_insert(format!("could not restore {} = {v}: {e}", p.display()));
            }
        }
        err.map_or(Ok(()), Err)
    }
}

impl Drop for Settings {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            // Never a panic in a drop, also with stderr full.
            let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("mmulab check-kernel: {e}\n"));
        }
    }
}

/// The per-size mTHP directories (`hugepages-64kB` …) and their sizes in bytes.
pub fn mthp_sizes() -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(THP)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let kb: u64 = n.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()?;
            Some((n, kb << 10))
        })
        .collect();
    v.sort_by_key(|x| x.1);
    v
}

/// The mTHP stats compared (per size).
pub const MTHP_STATS: [&str; 4] = ["anon_fault_alloc", "anon_fault_fallback", "split_deferred", "split"];

/// A snapshot of the kernel's counters: `thp_*` of /proc/vmstat and
/// `hugepages-<size>kB/<stat>` for [`MTHP_STATS`].
pub fn counters() -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    if let Ok(t) = std::fs::read_to_string("/proc/vmstat") {
        for l in t.lines().filter(|l| l.starts_with("thp_")) {
            let mut w = l.split_whitespace();
            if let (Some(k), Some(Ok(v))) = (w.next(), w.next().map(str::parse)) {
                m.insert(k.to_string(), v);
            }
        }
    }
    for (d, _) in mthp_sizes() {
        for s in MTHP_STATS {
            if let Ok(t) = std::fs::read_to_string(Path::new(THP).join(&d).join("stats").join(s)) {
                if let Ok(v) = t.trim().parse() {
                    m.insert(format!("{d}/{s}"), v);
                }
            }
        }
    }
    m
}

/// One VMA of smaps: range, `Rss` and `AnonHugePages` in kB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmapsVma {
    /// First byte.
    pub start: u64,
    /// One past the last.
    pub end: u64,
    /// `Rss:` kB.
    pub rss_kb: u64,
    /// `AnonHugePages:` kB.
    pub anon_huge_kb: u64,
}

/// The VMAs of `/proc/PID/smaps`.
pub fn smaps(pid: i32) -> Result<Vec<SmapsVma>, String> {
    let p = format!("/proc/{pid}/smaps");
    let t = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
    let mut v: Vec<SmapsVma> = Vec::new();
    for l in t.lines() {
        let first = l.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                v.push(SmapsVma {
                    start,
                    end,
                    rss_kb: 0,
                    anon_huge_kb: 0,
                });
                continue;
            }
        }
        let kb = || l.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
        if let Some(last) = v.last_mut() {
            if l.starts_with("Rss:") {
                last.rss_kb = kb();
            } else if l.starts_with("AnonHugePages:") {
                last.anon_huge_kb = kb();
            }
        }
    }
    Ok(v)
}

/// What the model needs of the live settings, read from [`THP`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostThp {
    /// `enabled`.
    pub enabled: String,
    /// `defrag`.
    pub defrag: String,
    /// `use_zero_page` (1/0).
    pub use_zero_page: bool,
    /// `shrink_underused` (6.12+; on where the file is missing, as older kernels have
    /// no such queueing to turn off).
    pub shrink_underused: bool,
    /// `khugepaged/max_ptes_none`.
    pub max_ptes_none: Option<u64>,
    /// `khugepaged/pages_to_scan`.
    pub pages_to_scan: Option<u64>,
    /// `khugepaged/scan_sleep_millisecs`.
    pub scan_sleep_millisecs: Option<u64>,
    /// `khugepaged/defrag`.
    pub khugepaged_defrag: bool,
    /// `hugepages-<size>kB/enabled` by size in bytes.
    pub sizes: Vec<(u64, String)>,
}

impl HostThp {
    /// Reads the live settings; an error if the kernel has no THP.
    pub fn read() -> Result<HostThp, String> {
        let num = |rel: &str| read_setting(rel).ok().and_then(|v| v.parse::<u64>().ok());
        Ok(HostThp {
            enabled: read_setting("enabled").map_err(|e| format!("this kernel has no THP ({e})"))?,
            defrag: read_setting("defrag").unwrap_or_else(|_| "madvise".into()),
            use_zero_page: num("use_zero_page") != Some(0),
            shrink_underused: num("shrink_underused") != Some(0),
            max_ptes_none: num("khugepaged/max_ptes_none"),
            pages_to_scan: num("khugepaged/pages_to_scan"),
            scan_sleep_millisecs: num("khugepaged/scan_sleep_millisecs"),
            khugepaged_defrag: num("khugepaged/defrag") != Some(0),
            sizes: mthp_sizes()
                .into_iter()
                .filter_map(|(d, b)| Some((b, read_setting(&format!("{d}/enabled")).ok()?)))
                .collect(),
        })
    }

    /// The `[os]` section of an mmulab config that models these settings (policy `thp`
    /// with its per-size modes; khugepaged on when PMD-sized THP is not `never`, as the
    /// kernel starts it). Usable by any `mmulab sim --config` (docs/config.md).
    pub fn os_toml(&self) -> String {
        let mut t = String::from("[os]\npolicy = \"thp\"\nzero_page = true\n\n[os.thp]\n");
        t += &format!("enabled = \"{}\"\n", self.enabled);
        t += &format!("defrag = \"{}\"\n", self.defrag);
        t += &format!("use_zero_page = {}\n", self.use_zero_page);
        t += &format!("shrink_underused = {}\n", self.shrink_underused);
        let sizes: Vec<String> = self
            .sizes
            .iter()
            // Order 1 (8K) has no anonymous `enabled` file; every other size is one
            // mmulab models (32K, 128K, 256K, 512K included).
            .filter(|(b, _)| *b >= 16 << 10)
            .map(|(b, m)| format!("\"{}\" = \"{m}\"", size_name(*b)))
            .collect();
        t += &format!("sizes = {{ {} }}\n\n[os.khugepaged]\n", sizes.join(", "));
        let pmd = self
            .sizes
            .iter()
            .find(|(b, _)| *b == 2 << 20)
            .map_or("inherit", |(_, m)| m.as_str());
        let on = match pmd {
            "inherit" => self.enabled != "never",
            m => m != "never",
        };
        t += &format!("enabled = {on}\n");
        if let Some(n) = self.max_ptes_none {
            t += &format!("max_ptes_none = {n}\n");
        }
        if let Some(n) = self.pages_to_scan {
            t += &format!("pages_to_scan = {n}\n");
        }
        if let Some(n) = self.scan_sleep_millisecs {
            t += &format!("scan_sleep_millisecs = {n}\n");
        }
        t += &format!("defrag = {}\n", self.khugepaged_defrag);
        t
    }
}

/// `64K`, `2M`: a size as mmulab's config writes it.
pub fn size_name(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{}M", b >> 20)
    } else {
        format!("{}K", b >> 10)
    }
}

/// Every setting a scenario may change, with its value now (for checking that a run
/// restored them): the top-level choices, khugepaged's numbers, each size's `enabled`.
pub fn snapshot() -> BTreeMap<String, String> {
    let mut rels: Vec<String> = ["enabled", "defrag", "use_zero_page", "shrink_underused"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if let Ok(rd) = std::fs::read_dir(Path::new(THP).join("khugepaged")) {
        rels.extend(
            rd.flatten()
                .map(|e| format!("khugepaged/{}", e.file_name().to_string_lossy())),
        );
    }
    rels.extend(mthp_sizes().into_iter().map(|(d, _)| format!("{d}/enabled")));
    rels.into_iter()
        .filter(|r| !r.ends_with("full_scans") && !r.ends_with("pages_collapsed"))
        .filter_map(|r| Some((r.clone(), read_setting(&r).ok()?)))
        .collect()
}
