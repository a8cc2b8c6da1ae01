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
        m => Err(format!("THP disabled ({THP}/enabled is '{m}'; echo madvise > {THP}/enabled as root)")),
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

/// Directory of the mTHP controls of one size (`hugepages-64kB`).
pub fn mthp_dir(kib: u64) -> PathBuf {
    PathBuf::from(format!("{THP}/hugepages-{kib}kB"))
}

/// Read one mTHP statistic counter (`stats/anon_fault_alloc`, ...), if present.
pub fn mthp_stat(kib: u64, name: &str) -> Option<u64> {
    std::fs::read_to_string(mthp_dir(kib).join("stats").join(name)).ok()?.trim().parse().ok()
}

/// While alive, an mTHP size is enabled for madvised memory; dropping restores the mode it
/// had. Created only when the size was off and its control is writable.
#[derive(Debug)]
pub struct MthpGuard {
    kib: u64,
    restore: Option<String>,
    /// What was done, for the report.
    pub note: String,
}

impl MthpGuard {
    /// Make `kib`-sized mTHP usable through madvise: use it if already enabled, switch it to
    /// `madvise` (restored on drop) if it is `never` and the control is writable, else the
    /// reason it is unavailable.
    pub fn enable(kib: u64) -> Result<MthpGuard, String> {
        let dir = mthp_dir(kib);
        let p = dir.join("enabled");
        let t = std::fs::read_to_string(&p).map_err(|e| {
            format!("mTHP size {kib} KiB not supported by this kernel ({}: {e}; mTHP needs Linux 6.8+ and a size the architecture offers)", p.display())
        })?;
        let mode = bracketed(&t).ok_or_else(|| format!("cannot parse {}: {t:?}", p.display()))?;
        match mode.as_str() {
            "always" | "madvise" => Ok(MthpGuard { kib, restore: None, note: format!("hugepages-{kib}kB already '{mode}'") }),
            "inherit" => match thp_usable() {
                Ok(()) => Ok(MthpGuard { kib, restore: None, note: format!("hugepages-{kib}kB 'inherit' from THP mode '{}'", thp_mode().unwrap_or_default()) }),
                Err(e) => Err(format!("hugepages-{kib}kB is 'inherit' but {e}")),
            },
            _ => match std::fs::write(&p, "madvise") {
                Ok(()) => Ok(MthpGuard {
                    kib,
                    restore: Some(mode.clone()),
                    note: format!("hugepages-{kib}kB was '{mode}': set to 'madvise' for this run, restored afterwards"),
                }),
                Err(e) => Err(format!(
                    "mTHP size {kib} KiB is '{mode}' and {} is not writable ({e}); as root: echo madvise > {}",
                    p.display(),
                    p.display()
                )),
            },
        }
    }
}

impl Drop for MthpGuard {
    fn drop(&mut self) {
        if let Some(m) = &self.restore {
            let _ = std::fs::write(mthp_dir(self.kib).join("enabled"), m);
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
