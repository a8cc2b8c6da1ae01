//! mmulab-probe: measure a machine's TLBs from behaviour, and what huge pages buy.
//!
//! - [`probe`]: the TLB probe — one algorithm over the [`target::Target`] trait (the real
//!   machine now, a simulated core later): randomized dependent pointer chases, one line
//!   per page, dense baseline subtracted, knees found automatically ([`knee`]).
//! - [`bench`](mod@bench): native benchmarks (GUPS, lat_mem_rd-style latency, bandwidth) under 4 KiB
//!   pages, THP, mTHP and hugetlbfs, each verifying the page size it got.
//! - [`os`]: the Linux facilities both use (regions, smaps, sysfs, perf counters).
//!
//! `mmulab advise`, the application over the probe, the recorders and the simulator, is
//! the `mmulab-advise` crate; the seed's tlb_test experiment is in `mmulab-experiments`.

#[cfg(target_os = "linux")]
pub mod bench;
pub mod error;
pub mod knee;
#[cfg(target_os = "linux")]
pub mod os;
pub mod probe;
pub mod rng;
pub mod target;

pub use error::{ProbeError, Result};
