//! Is the probe running in a virtual machine? Evidence from whichever sources exist:
//! CPUID (leaf 1 ECX bit 31 "hypervisor present", and the vendor signature of leaf
//! 0x40000000), `/sys/hypervisor/type`, and DMI (`/sys/class/dmi/id/sys_vendor`,
//! `product_name`). A missing source is skipped, never an error.
//!
//! Why it matters for `caches_2m`: a guest's 2 MiB page is backed by host pages of a size
//! the guest cannot see. A TLB entry for a guest address is no larger than the smaller of
//! the guest page and the host page behind it, so over 4 KiB host pages the guest's 2 MiB
//! page is cached as 4 KiB pieces — while the guest's part of the walk is still one level
//! shorter. "caches 2M" measured in a guest therefore says whether the guest's 2 MiB
//! mapping shortened or avoided the walk, not whether the TLB holds 2 MiB entries.

use serde::Serialize;

/// What the probe found out about a hypervisor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Hypervisor {
    /// Some source says this is a guest.
    pub present: bool,
    /// The hypervisor's name when a source names it (`"KVM"`, `"Xen"`, ...).
    pub vendor: Option<String>,
    /// What each available source said, one line each.
    pub evidence: Vec<String>,
    /// When present: what it means for `caches_2m` (see the module doc).
    pub caches_2m_note: Option<String>,
}

/// Raw readings of the sources; `None` where a source is unavailable.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    /// CPUID leaf 1 ECX bit 31 (x86-64 only).
    pub cpuid_bit: Option<bool>,
    /// CPUID leaf 0x40000000 signature (EBX, ECX, EDX as 12 bytes), when the bit is set.
    pub cpuid_signature: Option<String>,
    /// Contents of `/sys/hypervisor/type`.
    pub sys_type: Option<String>,
    /// Contents of `/sys/class/dmi/id/sys_vendor`.
    pub dmi_vendor: Option<String>,
    /// Contents of `/sys/class/dmi/id/product_name`.
    pub dmi_product: Option<String>,
}

/// The note shown beside `caches_2m` in a guest.
pub const CACHES_2M_NOTE: &str = "in a guest, a 2 MiB page is backed by host pages of unknown size: \
     \"caches 2M\" says whether the guest's 2 MiB mapping shortened the walk, not whether the TLB \
     holds 2 MiB entries (4 KiB host backing splinters them into 4 KiB pieces)";

/// The hypervisor named by a CPUID 0x40000000 signature.
pub fn signature_name(sig: &str) -> Option<&'static str> {
    let s = sig.trim_matches(|c: char| c == '\0' || c.is_whitespace());
    Some(match s {
        "KVMKVMKVM" => "KVM",
        "Linux KVM Hv" => "KVM (Hyper-V enlightenments)",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "VBoxVBoxVBox" => "VirtualBox",
        "bhyve bhyve" => "bhyve",
        "ACRNACRNACRN" => "ACRN",
        "QNXQVMBSQG" => "QNX hypervisor",
        "lrpepyh  vr" | "prl hyperv" => "Parallels",
        "EVMMEVMMEVMM" => "Intel KGT",
        _ => return None,
    })
}

/// The hypervisor (or cloud) named by DMI strings, when they name a virtual machine.
pub fn dmi_name(vendor: &str, product: &str) -> Option<&'static str> {
    let (v, p) = (vendor.trim(), product.trim());
    Some(match (v, p) {
        (_, "KVM") => "KVM",
        ("QEMU", _) => "QEMU",
        ("VMware, Inc.", _) => "VMware",
        ("innotek GmbH", _) | (_, "VirtualBox") => "VirtualBox",
        ("Xen", _) | (_, "HVM domU") => "Xen",
        ("Microsoft Corporation", "Virtual Machine") => "Hyper-V",
        ("Amazon EC2", _) => "Amazon EC2",
        ("Google", "Google Compute Engine") => "Google Compute Engine",
        ("OpenStack Foundation", _) | (_, "OpenStack Nova") => "OpenStack",
        ("Parallels Software International Inc.", _) | (_, "Parallels Virtual Platform") => "Parallels",
        ("BHYVE", _) => "bhyve",
        _ => return None,
    })
}

/// Decide from the readings: present if the CPUID bit is set, `/sys/hypervisor/type` names
/// something, or DMI names a virtual machine; the vendor from the CPUID signature, else
/// `/sys/hypervisor/type`, else DMI.
pub fn from_sources(s: &Sources) -> Hypervisor {
    let mut h = Hypervisor::default();
    let mut vendors: Vec<String> = Vec::new();
    match s.cpuid_bit {
        Some(true) => {
            h.present = true;
            h.evidence
                .push("cpuid leaf 1 ECX bit 31 (hypervisor present) is set".into());
        }
        Some(false) => h
            .evidence
            .push("cpuid leaf 1 ECX bit 31 (hypervisor present) is clear".into()),
        None => {}
    }
    if let Some(sig) = &s.cpuid_signature {
        let shown = sig.trim_matches('\0');
        match signature_name(sig) {
            Some(n) => {
                h.evidence.push(format!("cpuid 0x40000000 signature {shown:?}: {n}"));
                vendors.push(n.into());
            }
            None => h
                .evidence
                .push(format!("cpuid 0x40000000 signature {shown:?} (not recognised)")),
        }
    }
    if let Some(t) = s.sys_type.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        h.present = true;
        h.evidence.push(format!("/sys/hypervisor/type: {t}"));
        vendors.push(t.into());
    }
    if s.dmi_vendor.is_some() || s.dmi_product.is_some() {
        let (v, p) = (
            s.dmi_vendor.as_deref().unwrap_or("").trim(),
            s.dmi_product.as_deref().unwrap_or("").trim(),
        );
        match dmi_name(v, p) {
            Some(n) => {
                h.present = true;
                h.evidence
                    .push(format!("DMI sys_vendor {v:?}, product_name {p:?}: {n}"));
                vendors.push(n.into());
            }
            None => h.evidence.push(format!(
                "DMI sys_vendor {v:?}, product_name {p:?} (no virtual machine named)"
            )),
        }
    }
    if h.evidence.is_empty() {
        h.evidence
            .push("no source available (no CPUID bit, /sys/hypervisor or DMI)".into());
    }
    h.vendor = vendors.into_iter().next();
    if h.present {
        h.caches_2m_note = Some(CACHES_2M_NOTE.into());
    }
    h
}

/// Read whichever sources this machine has.
pub fn detect() -> Hypervisor {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let (cpuid_bit, cpuid_signature) = cpuid();
    from_sources(&Sources {
        cpuid_bit,
        cpuid_signature,
        sys_type: read("/sys/hypervisor/type"),
        dmi_vendor: read("/sys/class/dmi/id/sys_vendor"),
        dmi_product: read("/sys/class/dmi/id/product_name"),
    })
}

#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // __cpuid became safe in newer Rust
fn cpuid() -> (Option<bool>, Option<String>) {
    use std::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 CPU; leaf 1 always exists.
    let bit = unsafe { __cpuid(1) }.ecx & (1 << 31) != 0;
    if !bit {
        return (Some(false), None);
    }
    // SAFETY: with the hypervisor bit set, leaves 0x40000000.. are the hypervisor's
    // (reading an absent leaf returns data, never faults).
    let r = unsafe { __cpuid(0x4000_0000) };
    let mut b = Vec::new();
    for w in [r.ebx, r.ecx, r.edx] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    (Some(true), Some(String::from_utf8_lossy(&b).to_string()))
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid() -> (Option<bool>, Option<String>) {
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_guest_by_cpuid() {
        let h = from_sources(&Sources {
            cpuid_bit: Some(true),
            cpuid_signature: Some("KVMKVMKVM\0\0\0".into()),
            ..Default::default()
        });
        assert!(h.present);
        assert_eq!(h.vendor.as_deref(), Some("KVM"));
        assert_eq!(h.evidence.len(), 2, "{:?}", h.evidence);
        assert!(h.evidence[1].contains("\"KVMKVMKVM\""), "{:?}", h.evidence);
        assert!(h.caches_2m_note.is_some());
    }

    #[test]
    fn bare_metal_with_dmi() {
        let h = from_sources(&Sources {
            cpuid_bit: Some(false),
            dmi_vendor: Some("Dell Inc.\n".into()),
            dmi_product: Some("PowerEdge R740\n".into()),
            ..Default::default()
        });
        assert!(!h.present);
        assert_eq!(h.vendor, None);
        assert_eq!(h.caches_2m_note, None);
        assert!(h.evidence[0].ends_with("is clear"));
        assert!(h.evidence[1].contains("\"Dell Inc.\""), "{:?}", h.evidence);
    }

    #[test]
    fn xen_by_sysfs_and_qemu_by_dmi_without_cpuid() {
        let h = from_sources(&Sources {
            sys_type: Some("xen\n".into()),
            ..Default::default()
        });
        assert!(h.present);
        assert_eq!(h.vendor.as_deref(), Some("xen"));
        let h = from_sources(&Sources {
            dmi_vendor: Some("QEMU\n".into()),
            dmi_product: Some("Standard PC (Q35 + ICH9, 2009)\n".into()),
            ..Default::default()
        });
        assert!(h.present);
        assert_eq!(h.vendor.as_deref(), Some("QEMU"));
        // The CPUID signature wins over DMI for the name.
        let h = from_sources(&Sources {
            cpuid_bit: Some(true),
            cpuid_signature: Some("Microsoft Hv".into()),
            dmi_vendor: Some("Microsoft Corporation".into()),
            dmi_product: Some("Virtual Machine".into()),
            ..Default::default()
        });
        assert_eq!(h.vendor.as_deref(), Some("Hyper-V"));
        assert_eq!(h.evidence.len(), 3);
    }

    #[test]
    fn nothing_available_and_unknown_signature() {
        let h = from_sources(&Sources::default());
        assert!(!h.present);
        assert_eq!(h.evidence.len(), 1);
        let h = from_sources(&Sources {
            cpuid_bit: Some(true),
            cpuid_signature: Some("SomethingNew".into()),
            ..Default::default()
        });
        assert!(h.present);
        assert_eq!(h.vendor, None);
        assert!(h.evidence[1].contains("not recognised"));
        assert_eq!(signature_name("XenVMMXenVMM"), Some("Xen"));
        assert_eq!(dmi_name("innotek GmbH", "VirtualBox"), Some("VirtualBox"));
        assert_eq!(dmi_name("LENOVO", "20XW"), None);
    }
}
