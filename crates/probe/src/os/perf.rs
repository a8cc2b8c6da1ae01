//! Hardware event counters through `perf_event_open(2)`, counting this thread in user mode.
//!
//! The probe asks for TLB events in this order and keeps what opens:
//! - per-vendor raw events where known (AMD family ≥ 17h: PMCx045 `ls_l1_d_tlb_miss.all`
//!   = L1 DTLB misses, and `ls_l1_d_tlb_miss.all_l2_miss` = L2 DTLB misses, i.e. walks);
//! - the generic cache events `dTLB-loads` and `dTLB-load-misses` otherwise.
//!
//! In many virtual machines no hardware PMU is exposed; then nothing opens and the caller
//! falls back to timing, with the error text as the reason.

use crate::error::{ProbeError, Result};

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_HW_CACHE: u32 = 3;
const PERF_TYPE_RAW: u32 = 4;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;

/// `struct perf_event_attr`, first published layout (PERF_ATTR_SIZE_VER0 = 64 bytes).
#[repr(C)]
#[derive(Default)]
struct Attr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// What to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// Display name.
    pub name: &'static str,
    /// perf type (hardware, cache, raw, software).
    pub type_: u32,
    /// perf config.
    pub config: u64,
}

impl EventSpec {
    /// Generic `dTLB-loads` (on AMD Zen: L1 DTLB misses that look up the L2 DTLB).
    pub const DTLB_LOADS: EventSpec = EventSpec {
        name: "dTLB-loads",
        type_: PERF_TYPE_HW_CACHE,
        config: 3,
    };
    /// Generic `dTLB-load-misses` (on AMD Zen: L2 DTLB misses; on Intel: completed walks).
    pub const DTLB_LOAD_MISSES: EventSpec = EventSpec {
        name: "dTLB-load-misses",
        type_: PERF_TYPE_HW_CACHE,
        config: 3 | (1 << 16),
    };
    /// AMD PMCx045 umask 0xFF: `ls_l1_d_tlb_miss.all`.
    pub const AMD_L1_DTLB_MISS: EventSpec = EventSpec {
        name: "ls_l1_d_tlb_miss.all",
        type_: PERF_TYPE_RAW,
        config: 0xFF45,
    };
    /// AMD PMCx045 umask 0xF0: `ls_l1_d_tlb_miss.all_l2_miss`.
    pub const AMD_L2_DTLB_MISS: EventSpec = EventSpec {
        name: "ls_l1_d_tlb_miss.all_l2_miss",
        type_: PERF_TYPE_RAW,
        config: 0xF045,
    };
    /// Software page-fault counter (always available; used to test this module).
    pub const PAGE_FAULTS: EventSpec = EventSpec {
        name: "page-faults",
        type_: PERF_TYPE_SOFTWARE,
        config: 2,
    };
    /// Hardware cycles.
    pub const CYCLES: EventSpec = EventSpec {
        name: "cycles",
        type_: PERF_TYPE_HARDWARE,
        config: 0,
    };
}

/// One open counter for this thread.
pub struct Counter {
    fd: libc::c_int,
    /// What it counts.
    pub spec: EventSpec,
}

impl Counter {
    /// Open a disabled user-mode counter on the calling thread.
    pub fn open(spec: EventSpec) -> Result<Counter> {
        let attr = Attr {
            type_: spec.type_,
            size: std::mem::size_of::<Attr>() as u32,
            config: spec.config,
            // disabled | exclude_kernel | exclude_hv
            flags: 1 | (1 << 5) | (1 << 6),
            ..Default::default()
        };
        // SAFETY: attr is a valid VER0 perf_event_attr; pid 0 / cpu -1 = this thread.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                0 as libc::c_ulong,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            let hint = match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
                    " (no such event: no hardware PMU exposed, common in VMs)"
                }
                Some(libc::EACCES) | Some(libc::EPERM) => " (not permitted: see /proc/sys/kernel/perf_event_paranoid)",
                _ => "",
            };
            return Err(ProbeError::io(format!("perf_event_open({}){hint}", spec.name), e));
        }
        Ok(Counter {
            fd: fd as libc::c_int,
            spec,
        })
    }
    /// Zero and start counting.
    pub fn start(&self) {
        // SAFETY: ioctls on our own perf fd.
        unsafe {
            libc::ioctl(self.fd, IOC_RESET, 0);
            libc::ioctl(self.fd, IOC_ENABLE, 0);
        }
    }
    /// Stop counting and return the count.
    pub fn stop(&self) -> u64 {
        let mut v: u64 = 0;
        // SAFETY: ioctl and an 8-byte read on our own perf fd.
        unsafe {
            libc::ioctl(self.fd, IOC_DISABLE, 0);
            libc::read(self.fd, &mut v as *mut u64 as *mut libc::c_void, 8);
        }
        v
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: closing our own fd.
        unsafe { libc::close(self.fd) };
    }
}

/// CPU vendor string from /proc/cpuinfo (`AuthenticAMD`, `GenuineIntel`, ...), if any.
pub fn cpu_vendor() -> Option<String> {
    let t = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    t.lines()
        .find(|l| l.starts_with("vendor_id"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
}

/// A set of TLB counters: `[l1_misses, l2_misses]` (either may be missing).
pub struct TlbCounters {
    /// Open counters, in order.
    pub counters: Vec<Counter>,
}

impl TlbCounters {
    /// Open the best TLB counters this machine offers, or say why none open.
    pub fn open() -> std::result::Result<TlbCounters, String> {
        let amd = cpu_vendor().as_deref() == Some("AuthenticAMD");
        let candidates: Vec<[EventSpec; 2]> = if amd {
            vec![
                [EventSpec::AMD_L1_DTLB_MISS, EventSpec::AMD_L2_DTLB_MISS],
                [EventSpec::DTLB_LOADS, EventSpec::DTLB_LOAD_MISSES],
            ]
        } else {
            vec![[EventSpec::DTLB_LOADS, EventSpec::DTLB_LOAD_MISSES]]
        };
        let mut tried = Vec::new();
        let mut last = String::new();
        for pair in candidates {
            let mut ok = Vec::new();
            for s in pair {
                match Counter::open(s) {
                    Ok(c) => ok.push(c),
                    Err(e) => {
                        tried.push(s.name);
                        last = e.to_string();
                    }
                }
            }
            if !ok.is_empty() {
                return Ok(TlbCounters { counters: ok });
            }
        }
        Err(format!(
            "no TLB counter opened (tried {}); last error: {last}",
            tried.join(", ")
        ))
    }
    /// Names of the open counters.
    pub fn names(&self) -> Vec<String> {
        self.counters.iter().map(|c| c.spec.name.to_string()).collect()
    }
    /// Start all.
    pub fn start(&self) {
        self.counters.iter().for_each(Counter::start);
    }
    /// Stop all and return counts.
    pub fn stop(&self) -> Vec<u64> {
        self.counters.iter().map(Counter::stop).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_counter_counts_page_faults() {
        // Software events exist without a PMU; skip only if perf is forbidden entirely.
        let c = match Counter::open(EventSpec::PAGE_FAULTS) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipping: {e}");
                return;
            }
        };
        c.start();
        let mut r = crate::os::mem::Region::new(64 * 4096, crate::os::mem::PageKind::Base).unwrap();
        r.touch(None);
        let n = c.stop();
        assert!(n >= 32, "expected ≥ 32 page faults for 64 fresh pages, got {n}");
    }

    #[test]
    fn tlb_counters_open_or_explain() {
        match TlbCounters::open() {
            Ok(t) => assert!(!t.names().is_empty()),
            Err(why) => assert!(why.contains("perf_event_open"), "{why}"),
        }
    }
}
