//! The kernel's huge-page controls: THP mode, mTHP per-size modes, the hugetlbfs pool.

use std::path::PathBuf;

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// The bracketed choice of a sysfs mode file (`always [madvise] never` → `madvise`).
pub fn bracketed(text: &str) -> Option<String> {
    let s = text.find('[')?;
    let e = text[s..].find(']')? + s;
    Some(text[s + 1..e].to_string())
}

/// Current THP mode (`always`, `madvise`, `never`), or why it cannot be read.
pub fn thp_mode() -> Result<String, String> {
    let p = format!("{THP}/enabled");
    let t = std::fs::read_to_string(&p).map_err(|e| format!("THP not available ({p}: {e})"))?;
    bracketed(&t).ok_or_else(|| format!("cannot parse {p}: {t:?}"))
}

/// `Ok(())` if madvise(MADV_HUGEPAGE) can give 2 MiB THP, else the reason.
pub fn thp_usable() -> Result<(), String> {
    match thp_mode()?.as_str() {
        "always" | "madvise" => Ok(()),
        m => Err(format!(
            "THP disabled ({THP}/enabled is '{m}'; echo madvise > {THP}/enabled as root)"
        )),
    }
}

/// Free 2 MiB hugetlbfs pages.
pub fn hugetlb_free_2m() -> u64 {
    std::fs::read_to_string("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// `Ok(())` if a 2 MiB hugetlbfs pool with at least `pages` free pages exists, else the
/// reason and how to reserve one.
pub fn hugetlb_usable(pages: u64) -> Result<(), String> {
    let free = hugetlb_free_2m();
    if free == 0 {
        let total = std::fs::read_to_string("/proc/sys/vm/nr_hugepages").unwrap_or_default();
        return Err(format!(
            "no hugetlb pool (/proc/sys/vm/nr_hugepages = {}, 0 free 2 MiB pages); reserve one as root with `echo N > /proc/sys/vm/nr_hugepages`",
            total.trim()
        ));
    }
    if free < pages {
        return Err(format!(
            "hugetlb pool too small: {free} free 2 MiB pages, {pages} needed; enlarge it with `echo N > /proc/sys/vm/nr_hugepages`"
        ));
    }
    Ok(())
}

/// `Ok(())` if the 1 GiB hugetlbfs pool has at least `pages` free pages, else the reason
/// and how to reserve them (a guest's CPU must offer `pdpe1gb`; the kernel may fail to
/// find 1 GiB of contiguous memory after boot).
pub fn hugetlb_1g_usable(pages: u64) -> Result<(), String> {
    let dir = "/sys/kernel/mm/hugepages/hugepages-1048576kB";
    if !std::path::Path::new(dir).exists() {
        return Err(format!(
            "no 1 GiB hugetlb pages on this system ({dir} does not exist: no pdpe1gb, or not x86-64)"
        ));
    }
    let read = |f: &str| {
        std::fs::read_to_string(format!("{dir}/{f}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let free = read("free_hugepages");
    if free < pages {
        return Err(format!(
            "1 GiB hugetlb pool: {free} free pages, {pages} needed (nr_hugepages = {}); reserve them as root with `echo {pages} > {dir}/nr_hugepages` (it may fail when no contiguous GiB is free)",
            read("nr_hugepages")
        ));
    }
    Ok(())
}

/// Directory of the mTHP controls of one size (`hugepages-64kB`).
pub fn mthp_dir(kib: u64) -> PathBuf {
    PathBuf::from(format!("{THP}/hugepages-{kib}kB"))
}

/// Read one mTHP statistic counter (`stats/anon_fault_alloc`, ...), if present.
pub fn mthp_stat(kib: u64, name: &str) -> Option<u64> {
    std::fs::read_to_string(mthp_dir(kib).join("stats").join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// While alive, an mTHP size is enabled for madvised memory and every LARGER size is off
/// (the kernel takes the largest enabled order whose range fits, so with 2 MiB THP on, a
/// madvised region would get 2 MiB folios, not the size asked for); dropping restores
/// every mode it changed.
#[derive(Debug)]
pub struct MthpGuard {
    restore: Vec<(u64, String)>,
    /// What was done, for the report.
    pub note: String,
}

/// mTHP sizes (KiB) this kernel offers.
fn mthp_sizes() -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir("/sys/kernel/mm/transparent_hugepage")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.strip_prefix("hugepages-")?.strip_suffix("kB")?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

impl MthpGuard {
    /// Make `kib`-sized mTHP usable through madvise: use it if already enabled, switch it to
    /// `madvise` if it is `never`; switch larger enabled sizes to `never`. Every change is
    /// restored on drop. Fails with the reason when a needed control is not writable.
    pub fn enable(kib: u64) -> Result<MthpGuard, String> {
        let dir = mthp_dir(kib);
        let p = dir.join("enabled");
        let t = std::fs::read_to_string(&p).map_err(|e| {
            format!("mTHP size {kib} KiB not supported by this kernel ({}: {e}; mTHP needs Linux 6.8+ and a size the architecture offers)", p.display())
        })?;
        let mode = bracketed(&t).ok_or_else(|| format!("cannot parse {}: {t:?}", p.display()))?;
        let mut g = MthpGuard {
            restore: Vec::new(),
            note: String::new(),
        };
        let mut notes = Vec::new();
        match mode.as_str() {
            "always" | "madvise" => notes.push(format!("hugepages-{kib}kB already '{mode}'")),
            "inherit" => match thp_usable() {
                Ok(()) => notes.push(format!(
                    "hugepages-{kib}kB 'inherit' from THP mode '{}'",
                    thp_mode().unwrap_or_default()
                )),
                Err(e) => return Err(format!("hugepages-{kib}kB is 'inherit' but {e}")),
            },
            _ => g.set(kib, "madvise", &mode, &mut notes)?,
        }
        for larger in mthp_sizes().into_iter().filter(|&k| k > kib) {
            let lp = mthp_dir(larger).join("enabled");
            let lm = std::fs::read_to_string(&lp)
                .ok()
                .and_then(|t| bracketed(&t))
                .unwrap_or_default();
            if lm != "never" && !lm.is_empty() {
                g.set(larger, "never", &lm, &mut notes)?;
            }
        }
        g.note = notes.join("; ");
        Ok(g)
    }

    fn set(&mut self, kib: u64, to: &str, was: &str, notes: &mut Vec<String>) -> Result<(), String> {
        let p = mthp_dir(kib).join("enabled");
        std::fs::write(&p, to).map_err(|e| {
            format!(
                "mTHP size {kib} KiB is '{was}' and {} is not writable ({e}); as root: echo {to} > {}",
                p.display(),
                p.display()
            )
        })?;
        self.restore.push((kib, was.to_string()));
        notes.push(format!(
            "hugepages-{kib}kB was '{was}': set to '{to}' for this run, restored afterwards"
        ));
        Ok(())
    }
}

impl Drop for MthpGuard {
    fn drop(&mut self) {
        for (kib, m) in self.restore.iter().rev() {
            let _ = std::fs::write(mthp_dir(*kib).join("enabled"), m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn reads_bracketed_choice() {
        assert_eq!(bracketed("always [madvise] never\n").as_deref(), Some("madvise"));
        assert_eq!(bracketed("always madvise never"), None);
    }
}
