//! `[os]`: parsed from the merged config table into the chosen policy's own variant
//! ([`OsSpec`], holding the model's config types), and validated; also `[memory.age]`
//! (kept apart from config.rs so the machine and TLB parts and the OS parts can change
//! independently).
//!
//! Which keys `[os]` accepts depends on `os.policy`, so it is parsed by hand rather than
//! by serde's internally tagged enums (which lose the key path of errors and do not
//! combine with `deny_unknown_fields`): a section of another policy is refused by name,
//! and each section of the chosen policy is deserialized straight into the model's type
//! (`ThpConfig`, `MthpConfig`, …; serde defaults from its `Default`, unknown keys
//! refused), under its full path so that errors name the key (`in os.thp.enabled`).

use super::Config;
use mmulab_model::addr::PageSize;
use mmulab_model::os::granule;
use mmulab_model::os::{
    Base, Fixed, KhugepagedConfig, Mthp, MthpConfig, Os, ReclaimConfig, Reservation, ReservationConfig, Thp, ThpConfig,
};
use mmulab_model::pt::Format;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[os]`, parsed: the keys every policy shares and the chosen policy with its sections.
#[derive(Clone, Debug, PartialEq)]
pub struct OsSection {
    /// `os.policy` and that policy's own sections.
    pub policy: OsSpec,
    /// Cycles the OS spends per fault (reported apart from translation cycles).
    pub fault_latency: u32,
    /// References between calls of the policy's background work (`Os::tick`) and
    /// time-series samples' granularity floor.
    pub tick_interval: u64,
    /// Linux's zero pages (`os.zero_page`; model os/zero.rs). On by default, as in Linux
    /// (`do_anonymous_page` maps the zero page for every read fault unless
    /// `mm_forbids_zeropage`); `false` gives the older behaviour, a page allocated at a
    /// read fault. No effect on `fixed` and `reservation` (FreeBSD allocates a zeroed page).
    pub zero_page: bool,
    /// Background work charged to the application instead of a kernel thread
    /// (`os.background_charge = "application"`; stats/time.rs).
    pub charge_app: bool,
}

impl Default for OsSection {
    fn default() -> Self {
        OsSection {
            policy: OsSpec::Base {
                reclaim: ReclaimConfig::default(),
            },
            fault_latency: 1000,
            tick_interval: 100_000,
            zero_page: true,
            charge_app: false,
        }
    }
}

/// The OS policy (`os.policy`) with its own sections, as the model's config types.
#[derive(Clone, Debug, PartialEq)]
pub enum OsSpec {
    /// Every page 4 KiB.
    Base {
        /// `[os.reclaim]`.
        reclaim: ReclaimConfig,
    },
    /// Every page of one size (`os.page_size`).
    Fixed(PageSize),
    /// FreeBSD reservations (`[os.reservation]`).
    Reservation(ReservationConfig),
    /// Linux THP at fault (with khugepaged if `khugepaged.enabled`).
    Thp {
        /// `[os.thp]`.
        thp: ThpConfig,
        /// `[os.khugepaged]`.
        khugepaged: KhugepagedConfig,
        /// `[os.reclaim]`.
        reclaim: ReclaimConfig,
    },
    /// khugepaged alone (4 KiB at fault; the scanner always runs).
    Khugepaged {
        /// `[os.khugepaged]`.
        khugepaged: KhugepagedConfig,
        /// `[os.reclaim]`.
        reclaim: ReclaimConfig,
    },
    /// Linux multi-size THP.
    Mthp {
        /// `[os.mthp]`.
        mthp: MthpConfig,
        /// `[os.reclaim]`.
        reclaim: ReclaimConfig,
    },
}

impl OsSpec {
    /// The policy's config name (`os.policy`).
    pub fn name(&self) -> &'static str {
        match self {
            OsSpec::Base { .. } => "base",
            OsSpec::Fixed(_) => "fixed",
            OsSpec::Reservation(_) => "reservation",
            OsSpec::Thp { .. } => "thp",
            OsSpec::Khugepaged { .. } => "khugepaged",
            OsSpec::Mthp { .. } => "mthp",
        }
    }

    /// The reclaim settings (`[os.reclaim]`; the default, reclaim off, for `fixed` and
    /// `reservation`, which take none).
    pub fn reclaim(&self) -> ReclaimConfig {
        match self {
            OsSpec::Base { reclaim }
            | OsSpec::Thp { reclaim, .. }
            | OsSpec::Khugepaged { reclaim, .. }
            | OsSpec::Mthp { reclaim, .. } => *reclaim,
            OsSpec::Fixed(_) | OsSpec::Reservation(_) => ReclaimConfig::default(),
        }
    }

    /// The model's policy for this spec on `format` (reclaim set), built once per machine.
    pub fn build(&self, format: Format) -> Result<Os, String> {
        let mut os = match self {
            OsSpec::Base { .. } => Os::Base(Base::default()),
            OsSpec::Fixed(size) => Os::Fixed(Fixed::new(*size)),
            OsSpec::Reservation(c) => Os::Reservation(Reservation::new(c.clone(), format)?),
            OsSpec::Thp { thp, khugepaged, .. } => Os::Thp(Thp::new(thp.clone(), khugepaged.clone())),
            OsSpec::Khugepaged { khugepaged, .. } => Os::Thp(Thp::khugepaged_only(khugepaged.clone())),
            OsSpec::Mthp { mthp, .. } => Os::Mthp(Mthp::new(mthp.clone())),
        };
        os.set_reclaim(self.reclaim())?;
        Ok(os)
    }

    /// The policy's `…_cycles…` keys and values (reclaim's included), for the range check
    /// every cycle key gets (config/limits.rs).
    pub fn cycle_keys(&self) -> Vec<(&'static str, u64)> {
        let mut cycles = match self {
            OsSpec::Thp { thp, khugepaged, .. } => vec![
                ("os.thp.compaction_cycles", thp.compaction_cycles),
                ("os.thp.migrate_cycles_per_page", thp.migrate_cycles_per_page),
                ("os.thp.zero_cycles_per_page", thp.zero_cycles_per_page),
                ("os.khugepaged.copy_cycles_per_page", khugepaged.copy_cycles_per_page),
            ],
            OsSpec::Khugepaged { khugepaged, .. } => {
                vec![("os.khugepaged.copy_cycles_per_page", khugepaged.copy_cycles_per_page)]
            }
            OsSpec::Mthp { mthp, .. } => vec![("os.mthp.zero_cycles_per_page", mthp.zero_cycles_per_page)],
            OsSpec::Base { .. } | OsSpec::Fixed(_) | OsSpec::Reservation(_) => Vec::new(),
        };
        let reclaim = self.reclaim();
        cycles.push(("os.reclaim.swap_in_cycles", reclaim.swap_in_cycles));
        cycles.push(("os.reclaim.swap_out_cycles_per_page", reclaim.swap_out_cycles_per_page));
        cycles
    }
}

/// The policies `os.policy` accepts.
pub const POLICIES: [&str; 6] = ["base", "fixed", "reservation", "thp", "khugepaged", "mthp"];

/// Every key of `[os]` and the policies it applies to (`None`: all).
const KEYS: [(&str, Option<&[&str]>); 11] = [
    ("policy", None),
    ("fault_latency", None),
    ("tick_interval", None),
    ("background_charge", None),
    ("page_size", Some(&["fixed"])),
    ("reservation", Some(&["reservation"])),
    ("thp", Some(&["thp"])),
    ("khugepaged", Some(&["thp", "khugepaged"])),
    ("mthp", Some(&["mthp"])),
    ("reclaim", Some(&["base", "thp", "khugepaged", "mthp"])),
    ("zero_page", Some(&["base", "thp", "khugepaged", "mthp"])),
];

/// The policies a config key (`os.mthp.sizes`, `os.page_size`) applies to, or `None`
/// for a key every policy takes and any key outside `[os]`.
pub fn key_policies(key: &str) -> Option<&'static [&'static str]> {
    let mut parts = key.trim().split('.');
    if parts.next() != Some("os") {
        return None;
    }
    let section = parts.next()?;
    KEYS.iter().find(|(k, _)| *k == section).and_then(|(_, p)| *p)
}

/// `"thp"`, `"thp" and "khugepaged"`, …: for messages.
fn list(policies: &[&str]) -> String {
    let q: Vec<String> = policies.iter().map(|p| format!("\"{p}\"")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("policies {} and {last}", rest.join(", ")),
        _ => format!("policy {}", q.join("")),
    }
}

/// Deserializes `os.KEY` into `T` (`None` if absent), under its full path so that serde's
/// errors name it (`in os.thp.enabled`).
fn get<T: DeserializeOwned>(os: &toml::Table, key: &str) -> Result<Option<T>, String> {
    let Some(v) = os.get(key) else { return Ok(None) };
    let inner = toml::Table::from_iter([(key.to_string(), v.clone())]);
    let outer = toml::Table::from_iter([("os".to_string(), toml::Value::Table(inner))]);
    let mut m = BTreeMap::<String, BTreeMap<String, T>>::deserialize(toml::Value::Table(outer))
        .map_err(|e| e.to_string().trim_end().to_string())?;
    Ok(m.remove("os").and_then(|mut s| s.remove(key)))
}

/// Takes `[os]` out of a merged config table and parses it: `os.policy` chooses the
/// variant; a key of another policy is an error naming it; the chosen policy's
/// sections become the model's config types (defaults where absent).
pub(crate) fn take(table: &mut toml::Table) -> Result<OsSection, String> {
    let os = match table.remove("os") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(v) => return Err(format!("os must be a table ([os]), found a {} value", v.type_str())),
    };
    let policy: String = get(&os, "policy")?.unwrap_or_else(|| "base".into());
    let Some(&policy) = POLICIES.iter().find(|p| **p == policy) else {
        return Err(format!(
            "os.policy = \"{policy}\" is not known; use one of {}",
            POLICIES.join(", ")
        ));
    };
    for (k, v) in &os {
        let Some((_, applies)) = KEYS.iter().find(|(name, _)| name == k) else {
            let names: Vec<&str> = KEYS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "os.{k} is not a key of [os]; use one of {} (docs/config.md)",
                names.join(", ")
            ));
        };
        match applies {
            Some(ps) if !ps.contains(&policy) => {
                let (key, what) = match v {
                    toml::Value::Table(t) => (
                        t.keys().next().map_or(format!("os.{k}"), |f| format!("os.{k}.{f}")),
                        format!("[os.{k}]"),
                    ),
                    _ => (format!("os.{k}"), format!("os.{k}")),
                };
                return Err(format!(
                    "{key} is set, but os.policy = \"{policy}\": {what} applies only to {} (remove it or change os.policy)",
                    list(ps)
                ));
            }
            _ => {}
        }
    }
    let spec = match policy {
        "base" => OsSpec::Base {
            reclaim: get(&os, "reclaim")?.unwrap_or_default(),
        },
        "fixed" => {
            OsSpec::Fixed(get(&os, "page_size")?.ok_or("os.policy = \"fixed\" needs os.page_size (e.g. \"2M\")")?)
        }
        "reservation" => OsSpec::Reservation(get(&os, "reservation")?.unwrap_or_default()),
        "thp" => OsSpec::Thp {
            thp: get(&os, "thp")?.unwrap_or_default(),
            khugepaged: get(&os, "khugepaged")?.unwrap_or_default(),
            reclaim: get(&os, "reclaim")?.unwrap_or_default(),
        },
        "khugepaged" => OsSpec::Khugepaged {
            khugepaged: get(&os, "khugepaged")?.unwrap_or_default(),
            reclaim: get(&os, "reclaim")?.unwrap_or_default(),
        },
        "mthp" => OsSpec::Mthp {
            mthp: get(&os, "mthp")?.unwrap_or_default(),
            reclaim: get(&os, "reclaim")?.unwrap_or_default(),
        },
        other => {
            return Err(format!(
                "os.policy = \"{other}\" is in POLICIES but has no section parser (a bug)"
            ))
        }
    };
    let d = OsSection::default();
    Ok(OsSection {
        policy: spec,
        fault_latency: get(&os, "fault_latency")?.unwrap_or(d.fault_latency),
        tick_interval: get(&os, "tick_interval")?.unwrap_or(d.tick_interval),
        zero_page: get(&os, "zero_page")?.unwrap_or(d.zero_page),
        charge_app: match get::<String>(&os, "background_charge")?.as_deref() {
            None | Some("kernel") => false,
            Some("application") => true,
            Some(other) => {
                return Err(format!(
                    "os.background_charge = \"{other}\" is not known; use \"kernel\" (a kernel thread, reported apart) or \"application\""
                ))
            }
        },
    })
}

/// `[os]` for `os` with every default written out (the resolved configuration,
/// config/resolved.rs); the reservation policy's section is copied from `written` (the
/// merged config's `[os]`), since its default `mid_size` has no spelling.
pub(crate) fn to_table(os: &OsSection, written: &toml::Table) -> toml::Table {
    fn put<T: serde::Serialize>(t: &mut toml::Table, key: &str, v: &T) {
        if let Ok(v) = toml::Value::try_from(v) {
            t.insert(key.into(), v);
        }
    }
    let mut t = toml::Table::new();
    put(&mut t, "policy", &os.policy.name());
    put(&mut t, "fault_latency", &os.fault_latency);
    put(&mut t, "tick_interval", &os.tick_interval);
    put(
        &mut t,
        "background_charge",
        &if os.charge_app { "application" } else { "kernel" },
    );
    let takes_zero_page = key_policies("os.zero_page").is_some_and(|ps| ps.contains(&os.policy.name()));
    if takes_zero_page {
        put(&mut t, "zero_page", &os.zero_page);
    }
    match &os.policy {
        OsSpec::Base { reclaim } => put(&mut t, "reclaim", reclaim),
        OsSpec::Fixed(size) => put(&mut t, "page_size", size),
        OsSpec::Reservation(_) => {
            if let Some(r) = written.get("reservation") {
                t.insert("reservation".into(), r.clone());
            }
        }
        OsSpec::Thp {
            thp,
            khugepaged,
            reclaim,
        } => {
            put(&mut t, "thp", thp);
            put(&mut t, "khugepaged", khugepaged);
            put(&mut t, "reclaim", reclaim);
        }
        OsSpec::Khugepaged { khugepaged, reclaim } => {
            put(&mut t, "khugepaged", khugepaged);
            put(&mut t, "reclaim", reclaim);
        }
        OsSpec::Mthp { mthp, reclaim } => {
            put(&mut t, "mthp", mthp);
            put(&mut t, "reclaim", reclaim);
        }
    }
    t
}

/// Checks the ranges of the reclaim settings (`[os.reclaim]`).
/// `HPAGE_PMD_NR` on `format` (base pages per THP), 512 where Linux has no THP.
fn pmd_nr(format: Format) -> u64 {
    granule::linux_pmd_size(format).map_or(512, |p| granule::pmd_nr(format, p))
}

fn check_reclaim(r: &ReclaimConfig) -> Result<(), String> {
    if r.batch_pages == 0 {
        return Err("os.reclaim.batch_pages must be positive (frames one reclaim run tries to free)".into());
    }
    Ok(())
}

fn check_khugepaged(k: &KhugepagedConfig, format: Format) -> Result<(), String> {
    let most = pmd_nr(format) - 1;
    if let Some(n) = k.max_ptes_none.filter(|&n| n > most) {
        return Err(format!(
            "os.khugepaged.max_ptes_none = {n} must be between 0 and {most} (HPAGE_PMD_NR - 1 on {})",
            format.arch_name()
        ));
    }
    if k.scan_period == 0 || k.pages_to_scan == Some(0) {
        return Err("os.khugepaged.scan_period and pages_to_scan must be positive".into());
    }
    Ok(())
}

/// Checks the policy's settings against the format and memory.
pub(crate) fn check_policy(os: &OsSpec, format: Format, memory_bytes: u64) -> Result<(), String> {
    let huge_ok = || {
        granule::linux_pmd_size(format)
            .map(|_| ())
            .map_err(|e| format!("os.policy = \"{}\": {e}", os.name()))
    };
    check_reclaim(&os.reclaim())?;
    match os {
        OsSpec::Base { .. } => {}
        OsSpec::Fixed(size) => {
            if format.leaf_level(*size).is_none() {
                let sizes: Vec<String> = format.page_sizes().iter().map(|p| p.to_string()).collect();
                return Err(format!(
                    "os.page_size = \"{size}\": {} page tables map {} leaves only",
                    format.arch_name(),
                    sizes.join(", ")
                ));
            }
            if size.bytes() > memory_bytes {
                return Err(format!("os.page_size = \"{size}\" is larger than memory.size"));
            }
        }
        OsSpec::Reservation(r) => {
            r.sizes(format)?;
            if !(0.0..0.5).contains(&r.low_watermark) {
                return Err(format!(
                    "os.reservation.low_watermark = {} must be in [0, 0.5)",
                    r.low_watermark
                ));
            }
        }
        OsSpec::Thp { thp, khugepaged, .. } => {
            huge_ok()?;
            check_khugepaged(khugepaged, format)?;
            // hugepages-<size>kB exists for anonymous orders 2 ..= PMD only.
            for &p in thp.sizes.keys() {
                granule::check_mthp_size(format, p).map_err(|e| format!("os.thp.sizes: {e}"))?;
            }
        }
        OsSpec::Khugepaged { khugepaged, .. } => {
            huge_ok()?;
            check_khugepaged(khugepaged, format)?;
        }
        OsSpec::Mthp { mthp, .. } => {
            huge_ok()?;
            let sizes = mthp.sizes.as_deref().unwrap_or_default();
            for &p in sizes {
                granule::check_mthp_size(format, p).map_err(|e| format!("os.mthp.sizes: {e}"))?;
            }
            if mthp.sizes.is_some() && sizes.is_empty() {
                return Err("os.mthp.sizes is empty; list at least one size, e.g. [\"64K\"], or leave the key out for the format's default".into());
            }
        }
    }
    Ok(())
}

/// Checks keys shared by all policies and `[memory.age]`.
pub(crate) fn check_common(config: &Config) -> Result<(), String> {
    if config.os.tick_interval == 0 {
        return Err("os.tick_interval must be positive (references between background-work calls)".into());
    }
    if let Some(a) = &config.memory.age {
        if !(0.0..=0.95).contains(&a.used) {
            return Err(format!("memory.age.used = {} must be between 0 and 0.95", a.used));
        }
        if !(0.0..=1.0).contains(&a.target_free_2m_share) {
            return Err(format!(
                "memory.age.target_free_2m_share = {} must be between 0 and 1",
                a.target_free_2m_share
            ));
        }
        if !(0.0..=1.0).contains(&a.movable) {
            return Err(format!(
                "memory.age.movable = {} must be between 0 and 1 (share of pinned frames compaction may move)",
                a.movable
            ));
        }
    }
    Ok(())
}
