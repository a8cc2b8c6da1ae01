//! Work the machine does between references rather than per reference: the OS
//! policy's background tick (khugepaged, reservation breaking), time-series samples,
//! and, when asked, tracking of touched pages for the bloat metric.
//!
//! Hot-path contract: per reference the machine only compares the reference count with
//! [`Background::next_tick`] (and tests one bool for touched-page tracking, which is off
//! unless a time series or a reproduction asks for bloat). `tick` runs every
//! `os.tick_interval` references and at every sample point.

use crate::config::MachineSpec;
use crate::stats::Stats;
use crate::SimError;
use mmulab_model::addr::PageSize;
use mmulab_model::mem::Memory;
use mmulab_trace::MemRef;
use serde::Serialize;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;

/// A multiplicative hasher for page numbers (SipHash per reference would dominate).
#[derive(Default)]
pub(crate) struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// One time-series sample (a JSON line; docs/output.md).
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// References simulated.
    pub refs: u64,
    /// Resident bytes.
    pub resident_bytes: u64,
    /// Resident bytes by leaf size (`"4K"`, `"64K"`, `"2M"`, …); sizes with none omitted.
    pub resident_by_size: std::collections::BTreeMap<String, u64>,
    /// Share of resident memory in pages larger than 4 KiB.
    pub huge_coverage: f64,
    /// Distinct 4 KiB pages touched (live address spaces), in bytes.
    pub touched_bytes: u64,
    /// Resident minus touched bytes.
    pub bloat_bytes: i64,
    /// Promotions (all sizes).
    pub promotions: u64,
    /// Demotions (all sizes).
    pub demotions: u64,
    /// khugepaged collapses.
    pub collapses: u64,
    /// Page faults.
    pub faults: u64,
    /// Last-level TLB misses.
    pub tlb_misses: u64,
    /// Walk cycles.
    pub walk_cycles: u64,
    /// Share of free memory in free 2 MiB blocks.
    pub free_2m_share: f64,
}

impl Sample {
    /// A sample of `s` at `refs`.
    pub fn of(refs: u64, s: &Stats, touched_bytes: u64, free_2m: f64) -> Sample {
        let os = &s.os;
        let huge: u64 = PageSize::ALL
            .iter()
            .filter(|p| **p > PageSize::K4)
            .map(|p| os.resident_by_size[p.index()])
            .sum();
        Sample {
            refs,
            resident_bytes: os.resident_bytes,
            resident_by_size: PageSize::ALL
                .iter()
                .filter(|p| os.resident_by_size[p.index()] > 0)
                .map(|p| (p.to_string(), os.resident_by_size[p.index()]))
                .collect(),
            huge_coverage: if os.resident_bytes > 0 {
                huge as f64 / os.resident_bytes as f64
            } else {
                0.0
            },
            touched_bytes,
            bloat_bytes: os.resident_bytes as i64 - touched_bytes as i64,
            promotions: os.promotions.iter().sum(),
            demotions: os.demotions.iter().sum(),
            collapses: os.collapses,
            faults: s.counters.faults,
            tlb_misses: s.stlb_misses(),
            walk_cycles: s.counters.walk_cycles,
            free_2m_share: free_2m,
        }
    }
}

struct Series {
    interval: u64,
    next: u64,
    out: std::io::BufWriter<Box<dyn Write + Send>>,
    error: Option<std::io::Error>,
}

/// Background state of a machine.
pub struct Background {
    tick_interval: u64,
    /// [`Background::set_os_ticks`].
    os_ticks: bool,
    series: Option<Series>,
    /// Samples taken so far (for plots).
    pub samples: Vec<Sample>,
    /// Track touched pages (bloat).
    pub track_touched: bool,
    touched: HashSet<u64, BuildHasherDefault<PageHasher>>,
    last_page: u64,
    /// The largest resident − touched bytes seen after a fault or a tick (bloat only
    /// grows when memory is made resident, which happens at faults and in background
    /// work; touches only shrink it), when tracked.
    peak_bloat: i64,
    /// The largest resident bytes seen after a fault or a tick, when tracked.
    peak_resident: u64,
    /// Frames pinned by `memory.age`.
    pub pinned_frames: u64,
    /// True once the run loop has looked for trace VMAs and found some.
    pub trace_vmas_seen: bool,
    /// The clock background work runs on (`machine.clock_mhz`), if any.
    pub clock_mhz: Option<f64>,
    /// Background work charged to the application (`os.background_charge`).
    pub charge_app: bool,
    /// Work of the kernel thread so far (stats/time.rs).
    pub kernel: crate::stats::time::KernelWork,
    /// Base pages of a PMD range on the machine's format (pages scanned per range).
    pub pmd_nr: u64,
}

impl Background {
    /// From the spec; ages `mem` if `[memory.age]` asks.
    pub fn new(spec: &MachineSpec, mem: &mut Memory) -> Background {
        let pinned_frames = match &spec.age {
            // In the kernel's own pages: a 16 or 64 KiB granule's memory never
            // fragments below its base page.
            Some(a) => mem.age_pages(
                a.used,
                a.target_free_2m_share,
                a.seed,
                a.movable,
                spec.format.base_page().bytes() / mmulab_model::addr::FRAME_SIZE,
            ),
            None => 0,
        };
        Background {
            tick_interval: spec.tick_interval.max(1),
            os_ticks: true,
            series: None,
            samples: Vec::new(),
            track_touched: false,
            touched: HashSet::default(),
            last_page: u64::MAX,
            peak_bloat: 0,
            peak_resident: 0,
            pinned_frames,
            trace_vmas_seen: false,
            clock_mhz: spec.clock_mhz,
            charge_app: spec.charge_app,
            kernel: Default::default(),
            pmd_nr: mmulab_model::os::granule::linux_pmd_size(spec.format)
                .map_or(512, |p| mmulab_model::os::granule::pmd_nr(spec.format, p)),
        }
    }

    /// Whether the OS policy has background work ([`OsPolicy::has_tick`]); without it
    /// ticks run only for time-series samples.
    ///
    /// [`OsPolicy::has_tick`]: mmulab_model::os::OsPolicy::has_tick
    pub fn set_os_ticks(&mut self, on: bool) {
        self.os_ticks = on;
    }

    /// The reference count at which the next tick runs: every `os.tick_interval`
    /// references if the OS has background work, and at every sample point.
    pub fn next_tick(&self, now: u64) -> u64 {
        let t = if self.os_ticks {
            (now / self.tick_interval + 1) * self.tick_interval
        } else {
            u64::MAX
        };
        match &self.series {
            Some(s) => t.min(s.next),
            None => t,
        }
    }

    /// Notes a reference's page as touched.
    #[inline]
    pub fn touch(&mut self, r: &MemRef) {
        let key = ((r.asid as u64) << 48) | (r.addr >> 12);
        if key != self.last_page {
            self.last_page = key;
            self.touched.insert(key);
        }
    }

    /// Forgets the touched pages of an exited address space.
    pub fn forget(&mut self, asid: u16) {
        if self.track_touched {
            self.touched.retain(|k| (k >> 48) as u16 != asid);
            self.last_page = u64::MAX;
        }
    }

    /// Forgets the touched pages of `[start, end)` of `asid` (an unmap), and the page of
    /// the marker references themselves.
    pub fn forget_range(&mut self, asid: u16, start: u64, end: u64) {
        if self.track_touched {
            let (lo, hi) = (start >> 12, end.div_ceil(4096));
            // A marker's key has the tag's bits 59..48 (0xffe) in key bits 47..36, which
            // no address below 2^48 reaches.
            self.touched.retain(|k| {
                let (a, page) = ((k >> 48) as u16, k & ((1 << 48) - 1));
                !(a == asid && page >= lo && page < hi) && (k >> 36) & 0xfff != 0xffe
            });
            self.last_page = u64::MAX;
        }
    }

    /// Notes the bloat after a fault or a tick, `resident` bytes being resident now.
    pub fn note_bloat(&mut self, resident: u64) {
        if self.track_touched {
            self.peak_bloat = self.peak_bloat.max(resident as i64 - self.touched_bytes() as i64);
            self.peak_resident = self.peak_resident.max(resident);
        }
    }

    /// The distinct touched 4 KiB pages' numbers (address >> 12), of every address
    /// space (the marker references' pages left out).
    pub(crate) fn touched_pages(&self) -> impl Iterator<Item = u64> + '_ {
        self.touched
            .iter()
            .filter(|&&k| (k >> 36) & 0xfff != 0xffe)
            .map(|&k| k & ((1 << 48) - 1))
    }

    /// Bytes of distinct touched 4 KiB pages.
    pub fn touched_bytes(&self) -> u64 {
        self.touched.len() as u64 * 4096
    }

    pub(crate) fn set_series(&mut self, interval: u64, out: Box<dyn Write + Send>) {
        let interval = interval.max(1);
        self.series = Some(Series {
            interval,
            next: interval,
            out: std::io::BufWriter::new(out),
            error: None,
        });
        self.track_touched = true;
    }

    pub(crate) fn series_on(&self) -> bool {
        self.series.is_some()
    }

    pub(crate) fn sample_due(&self, now: u64) -> bool {
        self.series.as_ref().is_some_and(|s| now >= s.next)
    }

    pub(crate) fn sample(&mut self, now: u64, stats: &Stats) {
        let free = stats.free_2m_share;
        let smp = Sample::of(now, stats, self.touched_bytes(), free);
        if let Some(s) = &mut self.series {
            if s.error.is_none() {
                let line = serde_json::to_string(&smp).expect("serializable");
                if let Err(e) = writeln!(s.out, "{line}") {
                    s.error = Some(e);
                }
            }
            s.next = (now / s.interval + 1) * s.interval;
        }
        self.samples.push(smp);
    }

    pub(crate) fn finish(&mut self) -> Result<(), SimError> {
        if let Some(s) = &mut self.series {
            if let Some(e) = s.error.take() {
                return Err(SimError::Config(format!("cannot write the time series: {e}")));
            }
            s.out
                .flush()
                .map_err(|e| SimError::Config(format!("cannot write the time series: {e}")))?;
        }
        Ok(())
    }
}

impl crate::stats::Report for Background {
    /// Touched bytes (when tracked) and the frames `memory.age` pinned.
    fn report(&self, s: &mut Stats) {
        s.touched_bytes = self.track_touched.then(|| self.touched_bytes());
        // The end state counts too (`s.resident_bytes` is reported before this).
        s.peak_bloat_bytes = self.track_touched.then(|| {
            self.peak_bloat
                .max(s.resident_bytes as i64 - self.touched_bytes() as i64)
        });
        s.peak_resident_bytes = self.track_touched.then(|| self.peak_resident.max(s.resident_bytes));
        s.pinned_frames = self.pinned_frames;
        // On a machine with a clock, background work is the kernel thread's (reported
        // apart) unless charged to the application (stats/time.rs).
        if let Some(clock_mhz) = self.clock_mhz {
            if !self.charge_app {
                s.os.os_cycles -= self.kernel.cycles;
            }
            s.time = Some(crate::stats::time::TimeStats {
                clock_mhz,
                kernel: self.kernel,
                charge_app: self.charge_app,
            });
        }
    }
}
