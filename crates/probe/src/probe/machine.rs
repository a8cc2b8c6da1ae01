//! Write the TLB tree the probe found as a machine config for `mmulab sim --config`,
//! describing the probed machine: its architecture, the levels' sizes and the page sizes
//! they hold, and — when the target measures in cycles (a simulated core) — the latencies
//! it measured, so that probing the emitted file finds the same levels and costs.
//!
//! Only keys of the machine schema are written. What the probe cannot know is stated in
//! comments and marked assumed: associativity (written as fully associative, `ways =
//! entries`), replacement (`lru`), whether the levels also serve instruction fetches (the
//! probe only exercises the data path, so every level is `serves = "data"`), the first
//! level's own latency (the probe measures what a miss adds, not a hit), the walk's
//! shape, and the memory size.
//!
//! Latencies: the miss cost of level *i* is what a lookup that misses it adds, i.e. the
//! latency of level *i + 1*; the miss cost of the last level is the walk. The walk is
//! written as walk caches that cover the probe's footprint (so a walk starts at the leaf
//! level: one descriptor read) with `mem_latency = cost − pwc_latency`, which reproduces
//! the measured cost, not the machine's real walk depth. A target that measures
//! nanoseconds (real hardware) gets its costs as comments only: cycles need a clock rate
//! the probe does not know.

use std::fmt::Write as _;

use mmulab_model::pt::Format;

use super::ProbeReport;
use crate::target::sim::huge_size_of;

/// Entries of each upper-level walk cache written for the walk (assumed: covers the
/// probe's footprint, a few thousand pages at most).
const PWC_ENTRIES: usize = 64;

/// The page-table format for an architecture name as targets report it (the config
/// spelling, or Rust's `std::env::consts::ARCH`; `arm` is taken as ARMv7 without LPAE).
fn format_of(arch: &str) -> Option<(Format, &'static str)> {
    match arch {
        "arm" => Some((
            Format::Armv7,
            "  # assumed: a 32-bit Arm core, short descriptors (LPAE not detected)",
        )),
        a => Format::from_arch_name(a).map(|f| (f, "")),
    }
}

/// The machine config text.
pub fn machine_toml(r: &ProbeReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# TLB tree measured by `mmulab probe` on {}", r.target.name);
    let _ = writeln!(s, "# method: {}; entries are for 4 KiB pages.", r.method);
    let _ = writeln!(
        s,
        "# Associativity is unknown to the probe: ways = entries (fully associative)."
    );
    let _ = writeln!(s, "# Replacement is unknown to the probe: lru is assumed.");
    let _ = writeln!(s);
    let _ = writeln!(s, "[machine]");
    let format = format_of(&r.target.arch);
    match format {
        Some((f, note)) => {
            let _ = writeln!(s, "arch = \"{}\"{note}", f.arch_name());
        }
        // Not a format mmulab models: written as reported, so loading the file says so
        // instead of simulating another architecture.
        None => {
            let _ = writeln!(s, "arch = \"{}\"  # not an architecture mmulab models", r.target.arch);
        }
    }
    let format = format.map(|(f, _)| f);
    let huge = format
        .and_then(huge_size_of)
        .map_or("2M".to_string(), |p| p.to_string());
    let cycles = r.target.unit == crate::target::TimeUnit::Cycles;
    if let Some(f) = format {
        // 16 GiB or what the format addresses (4 GiB on ARMv7 short descriptors).
        let gib = (f.max_pa() >> 30).min(16);
        let _ = writeln!(s);
        let _ = writeln!(s, "[memory]");
        let _ = writeln!(s, "size = \"{gib}GiB\"  # assumed: the probe does not measure memory");
    }
    if let (Some(f), Some(last)) = (format, r.levels.last()) {
        let cost = last.miss_cost.round().max(1.0) as u64;
        let _ = writeln!(s);
        let _ = writeln!(s, "[walk]");
        if cycles {
            let _ = writeln!(
                s,
                "# measured: a miss of the last level costs {} cycles; modelled as one descriptor read after a walk-cache hit (assumed shape)",
                last.miss_cost
            );
            let pwc = vec![PWC_ENTRIES.to_string(); f.levels().len() - 1];
            let _ = writeln!(s, "pwc_entries = [{}]", pwc.join(", "));
            let _ = writeln!(s, "pwc_latency = 1");
            let _ = writeln!(s, "mem_latency = {}", cost.saturating_sub(1));
        } else {
            let _ = writeln!(
                s,
                "# measured: a miss of the last level costs {:.2} {}; not converted to cycles (clock rate unknown): default latencies (assumed)",
                last.miss_cost, last.unit
            );
        }
    }
    let names: Vec<String> = r
        .levels
        .iter()
        .map(|l| {
            if l.level == 1 {
                "l1d".to_string()
            } else {
                format!("l{}", l.level)
            }
        })
        .collect();
    for (i, l) in r.levels.iter().enumerate() {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# L{}: {} ({})",
            l.level,
            l.method,
            l.caches_2m_how.replace('\n', " ")
        );
        let _ = writeln!(s, "[[tlb]]");
        let _ = writeln!(s, "name = \"{}\"", names[i]);
        let _ = writeln!(s, "serves = \"data\"");
        let _ = writeln!(s, "entries = {}", l.entries.max(1));
        let _ = writeln!(s, "ways = {}  # unknown: fully associative", l.entries.max(1));
        let sizes = if l.caches_2m == Some(true) {
            format!("[\"4K\", \"{huge}\"]")
        } else {
            "[\"4K\"]".to_string()
        };
        let _ = writeln!(s, "page_sizes = {sizes}");
        let _ = writeln!(s, "replacement = \"lru\"  # unknown: assumed");
        match (i, cycles) {
            (0, _) => {
                let _ = writeln!(
                    s,
                    "latency = 1  # assumed: the probe measures what a miss adds, not a hit"
                );
            }
            (_, true) => {
                let prev = &r.levels[i - 1];
                let _ = writeln!(
                    s,
                    "latency = {}  # measured: the miss cost of L{}",
                    prev.miss_cost.round().max(0.0) as u64,
                    prev.level
                );
            }
            (_, false) => {
                let prev = &r.levels[i - 1];
                let _ = writeln!(
                    s,
                    "# measured: a miss of L{} costs {:.2} {}; latency left at its default (assumed)",
                    prev.level, prev.miss_cost, prev.unit
                );
            }
        }
        if let Some(n) = names.get(i + 1) {
            let _ = writeln!(s, "next = \"{n}\"");
        }
        let uns = match (l.caches_2m, l.splinters_2m) {
            (Some(false), Some(false)) => "bypass",
            _ => "splinter",
        };
        let note = match l.caches_2m {
            Some(true) => "",
            Some(false) => "  # measured",
            None => "  # huge-page behaviour not determined",
        };
        let _ = writeln!(s, "unsupported = \"{uns}\"{note}");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "[os]");
    let _ = writeln!(s, "policy = \"base\"");
    s
}
