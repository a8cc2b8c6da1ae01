//! Limits that hold: ranges of numeric keys the machine structures depend on, and the
//! host memory a configuration needs, checked before anything is allocated.
//!
//! The structures that scale with a configuration are the physical-memory bookkeeping
//! (two 8-byte words per simulated 4 KiB frame: the page-table store's frame index and
//! the reverse map), each core's TLB arrays and page-walk caches, and with
//! `memory.age` a transient list of every frame. [`host_need`] adds them up;
//! [`check_host`] refuses a configuration whose need exceeds the host's available
//! memory (`MemAvailable` of /proc/meminfo, or `MMULAB_HOST_MEMORY`), naming the figure.
//! Page tables and OS state grow with the trace's footprint, not with the config, and
//! are not in the estimate.

use super::{Config, MachineSpec};
use crate::SimError;
use mmulab_model::pt::Format;
use mmulab_trace::units::parse_size;

/// Most entries of one page-walk-cache level (real walk caches hold tens; the bound keeps
/// the cache's 32-bit links and its host memory in range).
pub const MAX_PWC_ENTRIES: usize = 1 << 20;

/// Most cycles of one latency key (`walk.mem_latency`, `walk.pwc_latency`,
/// `tlb.*.latency`, `os.fault_latency`): a bound far above any real latency that keeps
/// 64-bit cycle counts of long runs from overflowing.
pub const MAX_LATENCY: u32 = 1_000_000;

/// Most cycles of one OS cost key (`os.thp.*_cycles*`, `os.khugepaged.copy_cycles_per_page`,
/// `os.mthp.zero_cycles_per_page`, `os.reclaim.swap_*_cycles*`): 10^7, 10 ms at 1 GHz,
/// far above the defaults (at most 200,000) and any real per-event cost, so the OS cycle
/// totals of long runs stay in 64 bits.
pub const MAX_OS_CYCLES: u64 = 10_000_000;

/// Host bytes per simulated 4 KiB frame: page-table store index + reverse map.
const BYTES_PER_FRAME: u64 = 16;
/// Host bytes per frame while `memory.age` pins frames (a list of every frame + a flag).
const AGE_BYTES_PER_FRAME: u64 = 9;
/// Fixed cost of the program and its buffers (assumed: a generous round figure).
const BASE_BYTES: u64 = 32 << 20;

/// True for a `--set` assignment of `machine.name` (applied before the named machine is
/// merged, config::from_table).
pub(crate) fn sets_machine_name(assignment: &str) -> bool {
    assignment
        .split_once('=')
        .is_some_and(|(k, _)| k.trim() == "machine.name")
}

/// Checks the numeric keys whose range the structures depend on (config resolution) and
/// returns `memory.size` in bytes.
pub(crate) fn check_config(config: &Config, format: Format) -> Result<u64, String> {
    let memory_bytes = parse_size(&config.memory.size).map_err(|e| format!("memory.size: {e}"))?;
    if memory_bytes < 1 << 20 || memory_bytes % 4096 != 0 || memory_bytes > 1 << 44 {
        return Err(format!(
            "memory.size = \"{}\" must be a multiple of 4 KiB between 1 MiB and 16 TiB",
            config.memory.size
        ));
    }
    if memory_bytes > format.max_pa() {
        return Err(format!(
            "memory.size = \"{}\" is more than {} page tables can address ({} GiB)",
            config.memory.size,
            format.arch_name(),
            format.max_pa() >> 30
        ));
    }
    for (i, &e) in config.walk.pwc_entries.iter().enumerate() {
        if e > MAX_PWC_ENTRIES {
            return Err(format!(
                "walk.pwc_entries[{i}] = {e} is out of range: each page-walk-cache level holds 0 to {MAX_PWC_ENTRIES} entries ({} has {} upper levels)",
                format.arch_name(),
                format.levels().len() - 1
            ));
        }
    }
    let mut latencies = vec![
        ("walk.mem_latency".to_string(), config.walk.mem_latency),
        ("walk.pwc_latency".to_string(), config.walk.pwc_latency),
        ("os.fault_latency".to_string(), config.os.fault_latency),
    ];
    for t in &config.tlb {
        latencies.push((format!("tlb[{}].latency", t.name), t.latency));
    }
    for (key, v) in latencies {
        if v > MAX_LATENCY {
            return Err(format!("{key} = {v} is out of range: 0 to {MAX_LATENCY} cycles"));
        }
    }
    let cycles = config.os.policy.cycle_keys();
    for (key, v) in cycles {
        if v > MAX_OS_CYCLES {
            return Err(format!("{key} = {v} is out of range: 0 to {MAX_OS_CYCLES} cycles"));
        }
    }
    Ok(memory_bytes)
}

/// What a machine needs of host memory, by part ([`mmulab_base::host_memory::Need`]).
pub type HostNeed = mmulab_base::host_memory::Need;

/// Host bytes of one set-associative array of `entries` in sets of `ways` (entries,
/// per-set fingerprints padded to 16 lanes, LRU links, replacement state).
fn array_bytes(entries: u64, ways: u64) -> u64 {
    let sets = entries / ways.max(1);
    let stride = ways.div_ceil(16) * 16;
    entries
        .saturating_mul(16 + 8 + 8)
        .saturating_add(sets.saturating_mul(stride.saturating_mul(2) + 8 + 8))
        .saturating_add(4096 * 2)
}

/// Bytes of one core's walk memo (translator/host.rs: 4096 entries of 24 bytes; a test
/// there checks the two agree).
pub(crate) const WALK_MEMO_BYTES: u64 = 96 * 1024;

/// Estimates the host memory a machine built from `spec` needs before it runs: its
/// frames, TLBs, walk caches and memos × cores, data caches (each private level ×
/// cores), and DRAM model.
pub fn host_need(spec: &MachineSpec) -> HostNeed {
    let frames = spec.memory_bytes / 4096;
    let mut need = HostNeed::new();
    need.add(
        format!(
            "memory.size = {}: {frames} frames × {BYTES_PER_FRAME} bytes",
            spec.memory_size
        ),
        frames * BYTES_PER_FRAME,
    );
    if spec.age.is_some() {
        need.add(
            format!("memory.age: {frames} frames × {AGE_BYTES_PER_FRAME} bytes"),
            frames * AGE_BYTES_PER_FRAME,
        );
    }
    let cores = spec.cores as u64;
    let tlb: u64 = spec
        .tlbs
        .iter()
        .map(|t| array_bytes(t.entries as u64, t.ways as u64))
        .fold(0u64, u64::saturating_add);
    let entries: usize = spec.tlbs.iter().map(|t| t.entries).sum();
    need.add(
        format!("TLBs: {cores} core(s) × {entries} entries"),
        cores.saturating_mul(tlb),
    );
    let pwc: u64 = spec
        .pwc_entries
        .iter()
        .filter(|&&e| e > 0)
        .map(|&e| array_bytes(e as u64, e as u64) + 256 * 4)
        .fold(0u64, u64::saturating_add);
    if pwc > 0 {
        need.add(format!("page-walk caches: {cores} core(s)"), cores.saturating_mul(pwc));
    }
    // Each core's translator keeps a walk memo (host.rs: 4096 entries of 24 bytes).
    need.add(
        format!("walk memos: {cores} core(s) × 96 KiB"),
        cores.saturating_mul(WALK_MEMO_BYTES),
    );
    if let Some(c) = &spec.caches {
        for (name, copies, bytes) in c.host_bytes(spec.cores) {
            need.add(
                format!("caches.{name}: {copies} cop{}", if copies == 1 { "y" } else { "ies" }),
                bytes,
            );
        }
    }
    if let Some(d) = &spec.dram {
        need.add(
            format!(
                "dram profile {}: {} channel(s) × {} rank(s) × {} bank(s)",
                d.name,
                d.channels,
                d.ranks,
                d.bank_groups as u64 * d.banks_per_group as u64
            ),
            d.host_bytes(),
        );
        // The statistics list every bank's requests (stats/cache.rs).
        need.add(
            format!("dram profile {}: the per-bank counts of the statistics", d.name),
            d.report_bytes(std::mem::size_of::<serde_json::Value>()),
        );
    }
    need.add("program and buffers (assumed)", BASE_BYTES);
    need
}

/// Host memory a GPU's MMU of `mmu` needs: its TLB (an array like a CPU TLB's) and its
/// PTE cache (one 8-byte key a line, a vector of its ways a set).
pub fn gpu_need(profile: &str, mmu: &mmulab_model::gpu::mmu::MmuSpec) -> HostNeed {
    let mut need = HostNeed::new();
    need.add(
        format!("GPU profile {profile}: mmu.tlb_entries = {}", mmu.tlb_entries),
        array_bytes(mmu.tlb_entries as u64, mmu.tlb_ways as u64),
    );
    let sets = (mmu.ptec_lines / mmu.ptec_ways.max(1)).max(1) as u64;
    need.add(
        format!("GPU profile {profile}: mmu.ptec_lines = {}", mmu.ptec_lines),
        (mmu.ptec_lines as u64)
            .saturating_mul(8)
            .saturating_add(sets.saturating_mul(24)),
    );
    need
}

/// Refuses a machine whose estimated host memory ([`host_need`]) exceeds what the host
/// has, with both figures and the parts that scale.
pub fn check_host(spec: &MachineSpec) -> Result<(), SimError> {
    host_need(spec)
        .check(
            "this machine",
            "lower memory.size, machine.cores, the TLB/walk-cache entries or the data caches' sizes",
        )
        .map_err(SimError::Config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_bookkeeping_is_sixteen_bytes_a_frame() {
        let spec =
            crate::config::from_toml(crate::config::DEFAULT_TOML, None, &["memory.size=\"1TiB\"".into()]).unwrap();
        let need = host_need(&spec);
        // 1 TiB / 4 KiB = 2^28 frames × 16 bytes = 4 GiB.
        assert_eq!(need.parts[0].1, 4 << 30);
        assert!(
            need.total() > 4 << 30 && need.total() < (4 << 30) + (64 << 20),
            "{}",
            need.total()
        );
    }
}
