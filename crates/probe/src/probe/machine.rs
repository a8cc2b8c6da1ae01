//! Write the TLB tree the probe found as a machine config for `mmulab sim --config`.
//!
//! Only keys of the machine schema are written. What the probe cannot know is stated in
//! comments: associativity (written as fully associative, `ways = entries`), replacement
//! (written as `lru`), and whether the levels also serve instruction fetches (the probe
//! only exercises the data path, so every level is written as `serves = "data"`).

use std::fmt::Write as _;

use super::ProbeReport;

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
    let arch = if r.target.arch == "aarch64" {
        "aarch64"
    } else {
        "x86_64"
    };
    let _ = writeln!(s, "arch = \"{arch}\"");
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
            "[\"4K\", \"2M\"]"
        } else {
            "[\"4K\"]"
        };
        let _ = writeln!(s, "page_sizes = {sizes}");
        let _ = writeln!(s, "replacement = \"lru\"  # unknown: assumed");
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
            None => "  # 2 MiB behaviour not determined",
        };
        let _ = writeln!(s, "unsupported = \"{uns}\"{note}");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "[os]");
    let _ = writeln!(s, "policy = \"base\"");
    s
}
