//! What a physical reference costs below the caches: the seam between the data-cache
//! hierarchy and main memory. [`Flat`] is today's model (every reference costs one
//! fixed latency); a DRAM model (channels, ranks, banks, rows, timings) implements the
//! same trait, chosen once from config.
//!
//! Contract of a backend ([`MemoryBackend`]):
//! * [`MemoryBackend::access`] serves one request that missed every cache level (a line
//!   fill, or a write-back of a dirty line) and returns its latency in cycles of the
//!   requesting core's clock, counted from `req.at`. Requests of one core arrive in
//!   non-decreasing `at`; requests of different cores interleave, and a backend that
//!   models contention (banks busy, a shared bus) orders them by `at`.
//! * A backend counts; it never prints. Its counters are read by the simulator's
//!   statistics layer.
//! * A backend is deterministic: the same requests give the same latencies.

/// One request to main memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemReq {
    /// Physical byte address (line-aligned by the caches above).
    pub pa: u64,
    /// A write-back (true) or a fill (false).
    pub write: bool,
    /// The requesting core (or device) index.
    pub core: u16,
    /// Issue time in cycles on the requesting core's clock.
    pub at: u64,
}

/// Main memory as the caches see it (see the module contract).
pub trait MemoryBackend {
    /// Serves `req`; returns its latency in cycles.
    fn access(&mut self, req: &MemReq) -> u64;
    /// The backend itself, for the statistics layer to read a concrete model's counters
    /// (a DRAM model's rows and ranks) without this trait knowing them.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Every request costs the same latency: the model before caches and DRAM existed
/// (`cost.mem_latency`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flat {
    /// Cycles per request.
    pub latency: u32,
    /// Fills served.
    pub reads: u64,
    /// Write-backs served.
    pub writes: u64,
}

impl Flat {
    /// A flat memory of `latency` cycles per request.
    pub fn new(latency: u32) -> Self {
        Flat {
            latency,
            ..Flat::default()
        }
    }
}

impl MemoryBackend for Flat {
    fn access(&mut self, req: &MemReq) -> u64 {
        if req.write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
        self.latency as u64
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_costs_its_latency_and_counts_by_direction() {
        let mut m = Flat::new(30);
        let r = MemReq {
            pa: 0x1000,
            write: false,
            core: 0,
            at: 5,
        };
        assert_eq!(m.access(&r), 30);
        assert_eq!(m.access(&MemReq { write: true, ..r }), 30);
        assert_eq!(m.access(&r), 30);
        assert_eq!((m.reads, m.writes), (2, 1));
    }
}
