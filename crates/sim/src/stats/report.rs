//! Human-readable reports: aligned text tables of [`Stats`].

use super::Stats;
use mmulab_model::addr::PageSize;
use std::fmt::Write;

/// An aligned text table: the first row is the header; numeric-looking cells align right.
#[derive(Default)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with this header.
    pub fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|s| s.to_string()).collect()],
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns and a rule under the header.
    pub fn render(&self) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for (i, r) in self.rows.iter().enumerate() {
            let mut line = String::new();
            for (c, cell) in r.iter().enumerate() {
                let numeric = i > 0 && cell.chars().next().is_some_and(|ch| ch.is_ascii_digit() || ch == '-') && c > 0;
                if c > 0 {
                    line.push_str("  ");
                }
                if numeric {
                    let _ = write!(line, "{cell:>w$}", w = width[c]);
                } else {
                    let _ = write!(line, "{cell:<w$}", w = width[c]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if i == 0 {
                out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * cols.saturating_sub(1)));
                out.push('\n');
            }
        }
        out
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A percentage with two decimals, `-` when the denominator is zero.
pub fn percent(num: u64, den: u64) -> String {
    if den == 0 {
        "-".into()
    } else {
        format!("{:.2}%", 100.0 * num as f64 / den as f64)
    }
}

/// The report of one run.
pub fn single(stats: &Stats, title: &str) -> String {
    let c = &stats.counters;
    let mut out = format!("{title}\n\n");
    let _ = writeln!(
        out,
        "references {} (loads {}, stores {}, ifetches {})",
        thousands(c.references),
        thousands(c.loads()),
        thousands(c.stores()),
        thousands(c.ifetches())
    );
    if c.ifetches_untranslated > 0 {
        let _ = writeln!(
            out,
            "note: {} instruction fetches not translated (no TLB level serves instr)",
            thousands(c.ifetches_untranslated)
        );
    }
    if let Some(d) = &stats.outside_user {
        let _ = write!(
            out,
            "note: {} references outside the user address space dropped (--outside-user drop), not simulated",
            thousands(d.count)
        );
        match d.first {
            Some((i, addr)) => {
                let _ = writeln!(out, "; the first is reference {i} (from 0), at {addr:#x}");
            }
            None => out.push('\n'),
        }
    }
    out.push('\n');
    let mut t = Table::new(&[
        "TLB level",
        "accesses",
        "hits",
        "misses",
        "miss rate",
        "splinters",
        "evictions",
    ]);
    for l in &stats.levels {
        let k = &l.counts;
        t.row(vec![
            format!("{}{}", l.name, if l.last_level { " (last)" } else { "" }),
            thousands(k.accesses),
            thousands(k.hits),
            thousands(k.misses),
            percent(k.misses, k.accesses),
            thousands(k.splinters),
            thousands(k.evictions),
        ]);
    }
    out.push_str(&t.render());
    out.push('\n');
    let mut t = Table::new(&["walks", "memory refs", "refs/walk", "PWC hits", "faults", "A/D updates"]);
    t.row(vec![
        thousands(c.walks),
        thousands(c.walk_reads),
        if c.walks > 0 {
            format!("{:.2}", c.walk_reads as f64 / c.walks as f64)
        } else {
            "-".into()
        },
        thousands(stats.pwc_hits.iter().sum()),
        thousands(c.faults),
        thousands(c.ad_updates),
    ]);
    out.push_str(&t.render());
    out.push('\n');
    if c.touches > 0 {
        let _ = writeln!(
            out,
            "touches {} (pages first touched between a sampled recording's windows: faulted in, not references; their faults are counted above)",
            thousands(c.touches)
        );
    }
    let per_ref = if c.references > 0 {
        stats.translation_cycles() as f64 / c.references as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "translation cycles {} ({per_ref:.2} per reference: TLB lookups {}, walks {})",
        thousands(stats.translation_cycles()),
        thousands(c.tlb_cycles),
        thousands(c.walk_cycles)
    );
    let _ = writeln!(
        out,
        "mosmodel inputs: walk cycles {}, STLB misses {}, STLB hits {}",
        thousands(c.walk_cycles),
        thousands(stats.stlb_misses()),
        thousands(stats.stlb_hits())
    );
    let pages: Vec<String> = PageSize::ALL
        .iter()
        .filter(|p| stats.mapped[p.index()] > 0)
        .map(|p| format!("{} x {p}", thousands(stats.mapped[p.index()])))
        .collect();
    let _ = writeln!(
        out,
        "memory ({}): {} MiB resident in {}; {} page-table pages",
        stats.policy,
        stats.resident_bytes >> 20,
        if pages.is_empty() {
            "no pages".to_string()
        } else {
            pages.join(", ")
        },
        stats.page_tables
    );
    if let (Some(t), Some(peak), Some(res)) = (stats.touched_bytes, stats.peak_bloat_bytes, stats.peak_resident_bytes) {
        let mib = |b: i64| b as f64 / (1 << 20) as f64;
        let end = stats.resident_bytes as i64 - t as i64;
        let _ = writeln!(
            out,
            "bloat: {:.1} MiB resident but never touched at the end ({:.1} MiB touched{}), {:.1} MiB at the peak; peak resident {:.1} MiB",
            mib(end.max(0)),
            mib(t as i64),
            if end < 0 {
                ", more than is resident: pages only read map the shared zero page"
            } else {
                ""
            },
            mib(peak),
            mib(res as i64)
        );
    }
    if let Some(r) = &stats.regions {
        out.push_str(&super::regions::text(r, stats.counters.walk_cycles));
    }
    if let Some(n) = &stats.nested {
        out.push_str(&super::nested::text(n));
    }
    if let Some(c) = &stats.caches {
        out.push_str(&c.text());
    }
    if let Some(n) = &stats.numa {
        out.push_str(&n.text());
    }
    // Superpage policies: what is resident now (by leaf size) and what the policy did.
    if !matches!(stats.policy.as_str(), "base" | "fixed") {
        let sizes = |a: &[u64; 9], bytes: bool| -> String {
            let v: Vec<String> = PageSize::ALL
                .iter()
                .filter(|p| a[p.index()] > 0)
                .map(|p| {
                    if bytes {
                        format!("{p} {:.1} MiB", a[p.index()] as f64 / 1048576.0)
                    } else {
                        format!("{p} {}", thousands(a[p.index()]))
                    }
                })
                .collect();
            if v.is_empty() {
                "none".into()
            } else {
                v.join(", ")
            }
        };
        let os = &stats.os;
        let _ = writeln!(
            out,
            "os: resident now {}; promotions {}; demotions {}; collapses {}; OS work {} cycles",
            sizes(&os.resident_by_size, true),
            sizes(&os.promotions, false),
            sizes(&os.demotions, false),
            os.collapses,
            thousands(os.os_cycles)
        );
        if !os.events.is_empty() {
            let ev: Vec<String> = os
                .events
                .iter()
                .map(|(e, v)| format!("{} {}", e.name(), thousands(v)))
                .collect();
            let _ = writeln!(out, "os events: {}", ev.join(", "));
        }
    }
    out
}
