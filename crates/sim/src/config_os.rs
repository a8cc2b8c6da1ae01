//! Validation of the `[os]` policy sections and `[memory.age]` (kept apart from
//! config.rs so the machine and TLB parts and the OS parts can change independently).

use crate::config::{Config, OsSection, OsSpec};
use mmulab_model::addr::PageSize;
use mmulab_model::os::{Defrag, Enabled, KhugepagedConfig, MthpConfig, ReclaimConfig, ReservationConfig, ThpConfig};
use mmulab_model::pt::Format;

/// The validated reclaim settings of `[os.reclaim]`.
pub fn reclaim_config(os: &OsSection) -> Result<ReclaimConfig, String> {
    let r = &os.reclaim;
    if r.batch_pages == 0 {
        return Err("os.reclaim.batch_pages must be positive (frames one reclaim run tries to free)".into());
    }
    if !(1..=511).contains(&r.thp_underused_empty) {
        return Err(format!(
            "os.reclaim.thp_underused_empty = {} must be between 1 and 511",
            r.thp_underused_empty
        ));
    }
    Ok(*r)
}

/// The policies `os.policy` accepts.
pub const POLICIES: [&str; 6] = ["base", "fixed", "reservation", "thp", "khugepaged", "mthp"];

/// Resolves a policy other than `base`/`fixed`.
pub(crate) fn resolve_policy(name: &str, os: &OsSection, format: Format) -> Result<OsSpec, String> {
    if os.page_size.is_some() && name != "fixed" {
        return Err(format!(
            "os.page_size only applies to policy = \"fixed\" (policy is \"{name}\")"
        ));
    }
    let k = &os.khugepaged;
    let khuge = || -> Result<KhugepagedConfig, String> {
        if k.max_ptes_none > 511 {
            return Err(format!(
                "os.khugepaged.max_ptes_none = {} must be between 0 and 511",
                k.max_ptes_none
            ));
        }
        if k.scan_period == 0 || k.pages_to_scan == 0 {
            return Err("os.khugepaged.scan_period and pages_to_scan must be positive".into());
        }
        Ok(KhugepagedConfig {
            enabled: k.enabled,
            pages_to_scan: k.pages_to_scan,
            scan_period: k.scan_period,
            max_ptes_none: k.max_ptes_none,
            copy_cycles_per_page: k.copy_cycles_per_page,
            defrag: k.defrag,
        })
    };
    let huge_ok = |what: &str| {
        if format.leaf_level(PageSize::M2).is_none() {
            Err(format!(
                "os.policy = \"{what}\" needs 2M leaves, which {} page tables do not have",
                format.arch_name()
            ))
        } else {
            Ok(())
        }
    };
    Ok(match name {
        "reservation" => {
            let r = &os.reservation;
            let default = if format.leaf_level(PageSize::M2).is_some() {
                PageSize::M2
            } else {
                PageSize::M1
            };
            let size = match &r.size {
                Some(s) => PageSize::parse(s).map_err(|e| format!("os.reservation.size: {e}"))?,
                None => default,
            };
            if size == PageSize::K4 || format.leaf_level(size).is_none() {
                return Err(format!(
                    "os.reservation.size = \"{size}\": {} page tables have no {size} leaf above 4K",
                    format.arch_name()
                ));
            }
            let low = r.low_watermark.unwrap_or(0.01);
            if !(0.0..0.5).contains(&low) {
                return Err(format!("os.reservation.low_watermark = {low} must be in [0, 0.5)"));
            }
            let mid = match r.mid_size.as_deref() {
                None if format == Format::Armv8_4K && size == PageSize::M2 => Some(PageSize::K64),
                None | Some("none") => None,
                Some(s) => {
                    let m = PageSize::parse(s).map_err(|e| format!("os.reservation.mid_size: {e}"))?;
                    if m <= PageSize::K4 || m >= size || format.leaf_level(m).is_none() {
                        return Err(format!(
                            "os.reservation.mid_size = \"{s}\": must be a size {} maps, above 4K and below the reservation size {size}",
                            format.arch_name()
                        ));
                    }
                    Some(m)
                }
            };
            OsSpec::Reservation(ReservationConfig {
                size,
                mid,
                low_watermark: low,
                ..ReservationConfig::default()
            })
        }
        "thp" => {
            huge_ok("thp")?;
            let t = &os.thp;
            let enabled = match t.enabled.as_str() {
                "always" => Enabled::Always,
                "madvise" => Enabled::Madvise,
                "never" => Enabled::Never,
                o => {
                    return Err(format!(
                        "os.thp.enabled = \"{o}\": use \"always\", \"madvise\" or \"never\""
                    ))
                }
            };
            let defrag = match t.defrag.as_str() {
                "always" => Defrag::Always,
                "defer" => Defrag::Defer,
                "defer+madvise" => Defrag::DeferMadvise,
                "madvise" => Defrag::Madvise,
                "never" => Defrag::Never,
                o => {
                    return Err(format!(
                    "os.thp.defrag = \"{o}\": use \"always\", \"defer\", \"defer+madvise\", \"madvise\" or \"never\""
                ))
                }
            };
            OsSpec::Thp(
                ThpConfig {
                    enabled,
                    defrag,
                    compaction_cycles: t.compaction_cycles,
                    migrate_cycles_per_page: t.migrate_cycles_per_page,
                    zero_cycles_per_page: t.zero_cycles_per_page,
                },
                khuge()?,
            )
        }
        "khugepaged" => {
            huge_ok("khugepaged")?;
            OsSpec::Khugepaged(KhugepagedConfig {
                enabled: true,
                ..khuge()?
            })
        }
        "mthp" => {
            let mut sizes = Vec::new();
            for s in &os.mthp.sizes {
                let p = PageSize::parse(s).map_err(|e| format!("os.mthp.sizes: {e}"))?;
                if p == PageSize::K4 || p > PageSize::M2 {
                    return Err(format!(
                        "os.mthp.sizes: \"{s}\" is not an mTHP size (16K … 2M, above the 4K base page)"
                    ));
                }
                if p == PageSize::M2 && format.leaf_level(p).is_none() {
                    return Err(format!(
                        "os.mthp.sizes: {} page tables have no 2M leaf",
                        format.arch_name()
                    ));
                }
                sizes.push(p);
            }
            if sizes.is_empty() {
                return Err("os.mthp.sizes is empty; list at least one size, e.g. [\"64K\"]".into());
            }
            OsSpec::Mthp(MthpConfig {
                sizes,
                zero_cycles_per_page: os.mthp.zero_cycles_per_page,
            })
        }
        other => {
            return Err(format!(
                "os.policy = \"{other}\" is not known; use one of {}",
                POLICIES.join(", ")
            ))
        }
    })
}

/// Checks keys shared by all policies.
pub(crate) fn check_common(config: &Config, _memory_bytes: u64) -> Result<(), String> {
    if config.os.tick_interval == 0 {
        return Err("os.tick_interval must be positive (references between background-work calls)".into());
    }
    reclaim_config(&config.os)?;
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
