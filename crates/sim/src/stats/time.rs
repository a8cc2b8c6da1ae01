//! Simulated time and the kernel thread (#23 item 5). A machine with a clock
//! (`machine.clock_mhz`) turns the cycles the model derives into seconds, and runs
//! background kernel work on that clock: khugepaged wakes every `scan_sleep_millisecs`
//! of simulated time (model os/thp.rs). Background work (what a policy's `tick` does:
//! khugepaged's scans and collapses, FreeBSD's reservation breaking under pressure) is
//! charged to a kernel thread and reported apart (`kernel` in the JSON), not in the
//! application's `os.os_cycles`, unless `os.background_charge = "application"`.
//!
//! The application's cycles are those the model derives: TLB lookups and walks, the
//! fault latency of page faults (and of software accessed/dirty faults), and OS work in
//! faults (`os.os_cycles`: zeroing, copies, compaction, swap). Work outside address
//! translation and the OS (the instructions themselves) is not modelled, so the seconds
//! are the time spent translating and in the kernel, a lower bound of a run's time.
//!
//! The machine still polls background work every `os.tick_interval` references; a
//! wake-up due at time T runs at the first tick at or after T (with `tick_interval = 1`,
//! at the first reference at or after T).

use super::Stats;
use mmulab_model::os::{OsEvent, OsStats};
use serde_json::{json, Value};

/// Background work charged to the kernel thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelWork {
    /// Cycles of background work (the policy's `os_cycles` during ticks).
    pub cycles: u64,
    /// khugepaged wake-ups.
    pub wakeups: u64,
    /// Base pages' worth of PMD ranges khugepaged scanned.
    pub pages_scanned: u64,
    /// Huge pages khugepaged collapsed (Linux's `khugepaged/pages_collapsed`).
    pub pages_collapsed: u64,
}

/// The counters of `os` that background work moves, before a tick.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Before {
    cycles: u64,
    wakeups: u64,
    ranges: u64,
    collapses: u64,
}

impl Before {
    pub(crate) fn of(os: &OsStats) -> Before {
        Before {
            cycles: os.os_cycles,
            wakeups: os.count(OsEvent::KhugepagedWakeups),
            ranges: os.count(OsEvent::KhugepagedRangesScanned),
            collapses: os.collapses,
        }
    }
}

impl KernelWork {
    /// Adds what one tick did (`os` after it, `b` before; `pmd_nr` base pages a range).
    pub(crate) fn add(&mut self, b: Before, os: &OsStats, pmd_nr: u64) {
        self.cycles += os.os_cycles - b.cycles;
        self.wakeups += os.count(OsEvent::KhugepagedWakeups) - b.wakeups;
        self.pages_scanned += (os.count(OsEvent::KhugepagedRangesScanned) - b.ranges) * pmd_nr;
        self.pages_collapsed += os.collapses - b.collapses;
    }
}

/// Time figures of a run on a machine with a clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeStats {
    /// The clock (MHz).
    pub clock_mhz: f64,
    /// The kernel thread's work.
    pub kernel: KernelWork,
    /// True if background work is charged to the application (`os.background_charge`).
    pub charge_app: bool,
}

/// Nanoseconds of `cycles` at `clock_mhz`.
pub fn ns_of(cycles: u64, clock_mhz: f64) -> u64 {
    (cycles as f64 * 1000.0 / clock_mhz) as u64
}

impl TimeStats {
    /// The application's cycles in `s` (its `os.os_cycles` already without the kernel
    /// thread's unless charged to the application). With data caches, the slowest core's
    /// clock (`caches.elapsed_cycles`: its references, translation and data latency)
    /// stands for the translation cycles summed over the cores.
    pub fn app_cycles(s: &Stats) -> u64 {
        let cores = s.caches.as_ref().map(|c| c.elapsed_cycles()).filter(|&n| n > 0);
        cores.unwrap_or_else(|| s.translation_cycles()) + s.counters.fault_cycles + s.os.os_cycles
    }

    /// Adds `time` and `kernel` to the JSON report `v` of `s` (docs/output.md).
    pub(crate) fn add_json(&self, s: &Stats, v: &mut Value) {
        let app = TimeStats::app_cycles(s);
        let secs = |c: u64| c as f64 / (self.clock_mhz * 1e6);
        v["time"] = json!({
            "clock_mhz": self.clock_mhz,
            "app_cycles": app,
            "app_seconds": secs(app),
            "background_charged_to": if self.charge_app { "application" } else { "kernel" },
        });
        let k = &self.kernel;
        v["kernel"] = json!({
            "cycles": k.cycles,
            "seconds": secs(k.cycles),
            "khugepaged_wakeups": k.wakeups,
            "pages_scanned": k.pages_scanned,
            "pages_collapsed": k.pages_collapsed,
        });
    }
}
