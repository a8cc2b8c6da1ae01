//! The per-machine cache of what advise needs about this machine: the probe's result (the
//! emitted machine config and whether a hypervisor was seen) and the calibrated runtime
//! model with its fit error. One JSON file per machine,
//! `$XDG_CACHE_HOME/mmulab/probe-<cpu-id>.json` (else `~/.cache/mmulab/`), reused until
//! `--reprobe` (probe) or `--calibrate` (model) rebuilds it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::RuntimeModel;
use mmulab_probe::error::{ProbeError, Result};

/// Version of the file's layout; a file of another version is rebuilt.
pub const VERSION: u32 = 1;

/// What is cached about this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineCache {
    /// [`VERSION`].
    pub version: u32,
    /// The machine's id (the file name's part).
    pub cpu_id: String,
    /// The probed machine as a `sim` config (TOML), without a `[vm]` section.
    pub machine_toml: String,
    /// A hypervisor was detected (a guest).
    pub hypervisor: bool,
    /// The hypervisor's name, when known.
    pub hypervisor_vendor: Option<String>,
    /// The probe's levels, as the probe reported them (JSON), for the output.
    pub probe_levels: serde_json::Value,
    /// Seconds since the epoch when the probe ran.
    pub probed_at: u64,
    /// The calibrated model, once built.
    pub model: Option<RuntimeModel>,
    /// The measured page-fault costs (`faults.rs`), once measured.
    #[serde(default)]
    pub fault_costs: Option<super::faults::FaultCosts>,
    /// The THP settings the fault costs and the model were measured under
    /// ([`thp_settings`]; `null` in a cache written before they were recorded).
    #[serde(default)]
    pub thp: Option<String>,
}

/// This system's THP settings that change what advise measures: `enabled` and `defrag`
/// (a THP fault's cost depends on whether it may compact), e.g. `enabled=madvise
/// defrag=madvise`; `None` without THP.
pub fn thp_settings() -> Option<String> {
    let h = mmulab_kernel_check::host::HostThp::read().ok()?;
    Some(format!("enabled={} defrag={}", h.enabled, h.defrag))
}

/// Why a cache entry does not belong to this machine as it is now, if it does not: made
/// for another CPU id (a file copied from elsewhere), or calibrated under other THP
/// settings (its fault costs and model pairs were measured with other page sizes).
pub fn mismatch(c: &MachineCache, path: &Path, cpu_id: &str, thp: Option<&str>) -> Option<String> {
    if c.cpu_id != cpu_id {
        return Some(format!(
            "{} was made on another machine ({}, this one is {cpu_id}); delete it or run `mmulab advise --reprobe --calibrate`",
            path.display(),
            c.cpu_id
        ));
    }
    match (c.thp.as_deref(), thp, c.model.is_some() || c.fault_costs.is_some()) {
        (Some(was), Some(now), true) if was != now => Some(format!(
            "{} was calibrated under THP {was}, and the system is now at {now}: its fault costs and model do not hold; run `mmulab advise --calibrate` (or restore the settings)",
            path.display()
        )),
        _ => None,
    }
}

/// Lower-case, `[a-z0-9-]` only.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// FNV-1a, for a short stable hash of the model name and host name.
fn fnv(s: &str) -> u64 {
    s.bytes()
        .fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// The machine id from /proc/cpuinfo text and the host name: vendor, family, model,
/// stepping, and a hash of the model name and host name (one cache per machine, not per
/// CPU model: two guests on the same CPU type can have different host backing).
pub fn cpu_id_of(cpuinfo: &str, host: &str) -> String {
    let field = |k: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(k))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let vendor = match field("vendor_id") {
        v if v.is_empty() => field("CPU implementer"),
        v => v,
    };
    let family = match field("cpu family") {
        f if f.is_empty() => field("CPU part"),
        f => f,
    };
    let parts = [vendor, family, field("model"), field("stepping")];
    let name = field("model name");
    let id = slug(&parts.join("-"));
    format!(
        "{}-{:08x}",
        if id.is_empty() { "unknown".into() } else { id },
        fnv(&format!("{name}\n{host}")) as u32
    )
}

/// This machine's id.
pub fn cpu_id() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    cpu_id_of(&info, host.trim())
}

/// The cache directory: `$XDG_CACHE_HOME/mmulab`, else `$HOME/.cache/mmulab`.
pub fn dir() -> Result<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return Ok(PathBuf::from(x).join("mmulab"));
    }
    match std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".cache").join("mmulab")),
        None => Err(ProbeError::Unavailable(
            "neither XDG_CACHE_HOME nor HOME is set: advise keeps this machine's probe there; set one".into(),
        )),
    }
}

/// The cache file of machine `id` in `dir`.
pub fn path_in(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("probe-{id}.json"))
}

/// Reads a cache file: `Ok(None)` when there is none or it is of another version; an
/// error (naming the file and what to do) when it exists but is damaged.
pub fn load(path: &Path) -> Result<Option<MachineCache>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ProbeError::io(format!("reading {}", path.display()), e)),
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        ProbeError::Invalid(format!(
            "{} is damaged ({e}); delete it or run `mmulab advise --reprobe`",
            path.display()
        ))
    })?;
    if v.get("version").and_then(|x| x.as_u64()) != Some(VERSION as u64) {
        return Ok(None);
    }
    serde_json::from_value(v).map(Some).map_err(|e| {
        ProbeError::Invalid(format!(
            "{} is damaged ({e}); delete it or run `mmulab advise --reprobe`",
            path.display()
        ))
    })
}

/// Writes a cache file (a temporary file renamed over it).
pub fn store(path: &Path, c: &MachineCache) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| ProbeError::io(format!("creating {}", d.display()), e))?;
    }
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    let text = serde_json::to_string_pretty(c).map_err(|e| ProbeError::Invalid(e.to_string()))?;
    std::fs::write(&tmp, text).map_err(|e| ProbeError::io(format!("writing {}", tmp.display()), e))?;
    std::fs::rename(&tmp, path).map_err(|e| ProbeError::io(format!("renaming onto {}", path.display()), e))
}

/// The cached machine, or a new one from `probe` (called only when there is no usable
/// cache or `reprobe` is set), stored before it is returned. Also says whether it came
/// from the cache.
pub fn load_or_probe(
    path: &Path,
    reprobe: bool,
    probe: impl FnOnce() -> Result<MachineCache>,
) -> Result<(MachineCache, bool)> {
    if !reprobe {
        if let Some(c) = load(path)? {
            return Ok((c, true));
        }
    }
    let c = probe()?;
    store(path, &c)?;
    Ok((c, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9R14\nstepping\t: 1\n";

    fn sample(id: &str) -> MachineCache {
        MachineCache {
            version: VERSION,
            cpu_id: id.into(),
            machine_toml: "[machine]\narch = \"x86_64\"\n".into(),
            hypervisor: true,
            hypervisor_vendor: Some("KVM".into()),
            probe_levels: serde_json::json!([]),
            probed_at: 1,
            model: None,
            fault_costs: None,
            thp: None,
        }
    }

    #[test]
    fn the_id_names_the_cpu_and_differs_by_host() {
        let a = cpu_id_of(INFO, "host-a");
        assert!(a.starts_with("authenticamd-25-17-1-"), "{a}");
        assert_ne!(a, cpu_id_of(INFO, "host-b"));
        assert_eq!(a, cpu_id_of(INFO, "host-a"));
    }

    #[test]
    fn a_cached_probe_is_reused_and_reprobe_replaces_it() {
        let dir = std::env::temp_dir().join(format!("mmulab-advise-cache-{}", std::process::id()));
        let path = path_in(&dir, "m");
        let _ = std::fs::remove_file(&path);
        let mut probes = 0;
        // No file: probes once and stores.
        let (c, cached) = load_or_probe(&path, false, || {
            probes += 1;
            Ok(sample("m"))
        })
        .unwrap();
        assert!(!cached && probes == 1 && c.cpu_id == "m");
        // The file is reused: the probe is not called again.
        let (c2, cached) = load_or_probe(&path, false, || {
            probes += 1;
            Ok(sample("other"))
        })
        .unwrap();
        assert!(cached && probes == 1 && c2 == c);
        // --reprobe: probed again and stored.
        let (c3, cached) = load_or_probe(&path, true, || {
            probes += 1;
            Ok(sample("new"))
        })
        .unwrap();
        assert!(!cached && probes == 2 && c3.cpu_id == "new");
        assert_eq!(load(&path).unwrap().unwrap().cpu_id, "new");
        // Another version is ignored (rebuilt), a damaged file is an error naming it.
        std::fs::write(&path, "{\"version\": 999}").unwrap();
        assert!(load(&path).unwrap().is_none());
        std::fs::write(&path, "{not json").unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert!(e.contains("probe-m.json") && e.contains("--reprobe"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cache_from_another_machine_or_thp_setting_is_named_and_refused() {
        let p = Path::new("/tmp/x.json");
        let mut c = sample("amd-25-17-1-abc");
        c.thp = Some("enabled=madvise defrag=madvise".into());
        assert_eq!(
            mismatch(&c, p, "amd-25-17-1-abc", Some("enabled=madvise defrag=madvise")),
            None
        );
        let other = mismatch(&c, p, "intel-6-207-1-def", Some("enabled=madvise defrag=madvise")).unwrap();
        assert!(
            other.contains("another machine") && other.contains("/tmp/x.json"),
            "{other}"
        );
        // Nothing measured yet: the settings do not matter.
        assert_eq!(
            mismatch(&c, p, "amd-25-17-1-abc", Some("enabled=always defrag=madvise")),
            None
        );
        c.fault_costs = Some(crate::faults::FaultCosts {
            ns_per_4k: 1640.0,
            ns_per_2m: 177_000.0,
            thp_verified: true,
            p99_ns_4k: None,
            p99_ns_2m: None,
        });
        let thp = mismatch(&c, p, "amd-25-17-1-abc", Some("enabled=always defrag=madvise")).unwrap();
        assert!(thp.contains("enabled=always") && thp.contains("--calibrate"), "{thp}");
        // A cache written before the settings were recorded is not refused.
        c.thp = None;
        assert_eq!(
            mismatch(&c, p, "amd-25-17-1-abc", Some("enabled=always defrag=madvise")),
            None
        );
    }
}
