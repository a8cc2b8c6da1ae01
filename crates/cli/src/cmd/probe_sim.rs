//! `mmulab probe --machine NAME_OR_FILE|all`: the probe run against simulated cores
//! (`mmulab_probe::target::sim`), and the seed's table of recovered TLB geometry.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use mmulab_model::addr::PageSize;
use mmulab_probe::probe::{self, ProbeConfig, ProbeReport};
use mmulab_probe::target::sim::{expected, Expected, SimTarget};
use mmulab_sim::{catalog, config};

/// What `mmulab probe` passes on.
pub struct Options {
    pub cfg: ProbeConfig,
    pub json: bool,
    pub table: bool,
    pub plot: Option<PathBuf>,
    pub emit_machine: Option<PathBuf>,
}

/// One probed machine.
struct Probed {
    name: String,
    arch: String,
    huge: Option<PageSize>,
    expected: Vec<Expected>,
    report: ProbeReport,
}

fn probe_one(name: &str, o: &Options) -> Result<Probed> {
    let spec = config::load_machine(name, None, &[]).with_context(|| format!("machine '{name}'"))?;
    let label = std::path::Path::new(name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(name)
        .to_string();
    let exp = expected(&spec);
    let arch = spec.format.arch_name().to_string();
    let mut t = SimTarget::new(&label, spec);
    let huge = t.huge_size();
    let mut line = crate::progress::ProgressLine::new(&format!("probe {label}"));
    let report = probe::run(&mut t, &o.cfg, &mut |phase, f| line.phase(phase, Some(f)))
        .with_context(|| format!("probing simulated '{name}'"))?;
    line.finish();
    Ok(Probed {
        name: label,
        arch,
        huge,
        expected: exp,
        report,
    })
}

pub fn run(machine: &str, o: &Options) -> Result<()> {
    let names: Vec<String> = if machine == "all" {
        catalog::names()
            .into_iter()
            .filter(|n| *n != "default")
            .map(str::to_string)
            .collect()
    } else {
        vec![machine.to_string()]
    };
    if names.len() > 1 && (o.plot.is_some() || o.emit_machine.is_some()) {
        bail!("--plot and --emit-machine take one machine, not `all`");
    }
    if let Some(p) = &o.plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let mut probed = Vec::new();
    for n in &names {
        errln!("probe: simulated {n}");
        probed.push(probe_one(n, o)?);
    }
    if let (Some(p), Some(one)) = (&o.plot, probed.first()) {
        crate::output::write_with(p, |path| probe::plot::write_plot(&one.report, path))?;
    }
    if let (Some(p), Some(one)) = (&o.emit_machine, probed.first()) {
        crate::output::write(p, probe::machine::machine_toml(&one.report).as_bytes())?;
    }
    if o.table {
        out!("{}", table(&probed));
    } else if o.json {
        if probed.len() == 1 {
            outln!("{}", serde_json::to_string(&probed[0].report)?);
        } else {
            let v: Vec<_> = probed
                .iter()
                .map(|p| serde_json::json!({"machine": p.name, "report": p.report}))
                .collect();
            // One object, as every command's --json (docs/output.md).
            outln!("{}", serde_json::to_string(&serde_json::json!({ "machines": v }))?);
        }
    } else {
        for p in &probed {
            out!("{}", p.report.table());
        }
    }
    Ok(())
}

fn yn(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "Y",
        Some(false) => "N",
        None => "?",
    }
}

fn sizes(e: &Expected) -> String {
    if e.huge_sizes.is_empty() {
        "4K only".into()
    } else {
        e.huge_sizes
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The seed's second table: recovered value first, the configuration in brackets.
fn table(probed: &[Probed]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| System | huge page tested | L1 data TLB size | L1 data huge page support | L2 TLB size | L2 TLB huge page support | as configured |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for p in probed {
        let lv = &p.report.levels;
        let cell = |i: usize| -> (String, String) {
            let e = p.expected.get(i);
            let conf_size = e.map_or("N/A".into(), |e| {
                e.entries.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" + ")
            });
            let conf_huge = e.map_or("N/A".into(), |e| {
                format!("{} ({})", if e.holds_huge { "Y" } else { "N" }, sizes(e))
            });
            match lv.get(i) {
                Some(l) => (
                    format!("{} [{conf_size}]", l.entries),
                    format!("{} [{conf_huge}]", yn(l.caches_2m)),
                ),
                None => (format!("N/A [{conf_size}]"), format!("N/A [{conf_huge}]")),
            }
        };
        let ok = lv.len() == p.expected.len()
            && lv.iter().zip(&p.expected).all(|(l, e)| {
                e.entries_4k.0 <= l.entries && l.entries <= e.entries_4k.1 && l.caches_2m == Some(e.holds_huge)
            });
        let (l1, l1h) = cell(0);
        let (l2, l2h) = cell(1);
        let _ = writeln!(
            s,
            "| {} ({}) | {} | {l1} | {l1h} | {l2} | {l2h} | {} |",
            p.name,
            p.arch,
            p.huge.map_or("none".into(), |h| h.to_string()),
            if ok { "yes" } else { "NO" }
        );
    }
    let _ = writeln!(
        s,
        "\nEach cell: what the probe recovered [what the machine file configures]. Huge-page support = a 4 KiB-stride chase over the tested huge pages hits the level (it holds them or pieces larger than 4 KiB)."
    );
    s
}
