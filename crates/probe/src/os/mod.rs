//! Linux facilities: memory regions of a chosen page size, their verification through
//! smaps, the THP/mTHP/hugetlbfs controls in sysfs, and perf counters.

pub mod mem;
pub mod perf;
pub mod smaps;
pub mod sysfs;
