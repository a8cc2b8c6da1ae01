//! TLB sizes the CPU reports about itself (CPUID on x86-64), shown beside the measured
//! values labelled "reported" and never substituted for them. Under a hypervisor CPUID
//! may describe the host, or nothing.

use serde::Serialize;

/// One reported figure.
#[derive(Clone, Debug, Serialize)]
pub struct Reported {
    /// What it describes (`"L1 DTLB 4K entries"`).
    pub what: String,
    /// Its value as reported.
    pub value: String,
    /// Where it came from (`"cpuid 0x80000005"`).
    pub source: String,
}

/// Reported TLB figures of this CPU, if it offers any we can decode.
pub fn reported() -> Vec<Reported> {
    imp()
}

#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // __cpuid became safe in newer Rust
fn imp() -> Vec<Reported> {
    use std::arch::x86_64::__cpuid;
    let mut v = Vec::new();
    // SAFETY: CPUID exists on every x86-64 CPU.
    let ext_max = unsafe { __cpuid(0x8000_0000) }.eax;
    let vendor = {
        // SAFETY: as above.
        let r = unsafe { __cpuid(0) };
        let mut b = Vec::new();
        for w in [r.ebx, r.edx, r.ecx] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        String::from_utf8_lossy(&b).to_string()
    };
    if vendor != "AuthenticAMD" && vendor != "HygonGenuine" {
        v.push(Reported {
            what: "TLB descriptors".into(),
            value: format!("not decoded for {vendor} (leaf 2 / 0x18)"),
            source: "cpuid".into(),
        });
        return v;
    }
    let mut push = |what: &str, value: u32, src: &str| {
        if value > 0 {
            v.push(Reported {
                what: what.into(),
                value: value.to_string(),
                source: src.into(),
            });
        }
    };
    if ext_max >= 0x8000_0005 {
        // SAFETY: leaf below the reported maximum.
        let r = unsafe { __cpuid(0x8000_0005) };
        push("L1 DTLB 4K entries", (r.ebx >> 16) & 0xff, "cpuid 0x80000005 EBX");
        push("L1 DTLB 2M entries", (r.eax >> 16) & 0xff, "cpuid 0x80000005 EAX");
    }
    if ext_max >= 0x8000_0006 {
        // SAFETY: as above.
        let r = unsafe { __cpuid(0x8000_0006) };
        push("L2 DTLB 4K entries", (r.ebx >> 16) & 0xfff, "cpuid 0x80000006 EBX");
        push("L2 DTLB 2M entries", (r.eax >> 16) & 0xfff, "cpuid 0x80000006 EAX");
    }
    if ext_max >= 0x8000_0019 {
        // SAFETY: as above.
        let r = unsafe { __cpuid(0x8000_0019) };
        push("L1 DTLB 1G entries", (r.eax >> 16) & 0xfff, "cpuid 0x80000019 EAX");
        push("L2 DTLB 1G entries", (r.ebx >> 16) & 0xfff, "cpuid 0x80000019 EBX");
    }
    v
}

#[cfg(not(target_arch = "x86_64"))]
fn imp() -> Vec<Reported> {
    Vec::new()
}
