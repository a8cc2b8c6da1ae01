//! `mmulab machines`: the machine catalog (machines/*.toml, built into the binary).

use anyhow::Result;
use mmulab_model::tlb::Serves;
use mmulab_sim::catalog;
use mmulab_sim::config::{self, MachineSpec};

/// List the catalog machines usable with `--machine NAME` (sim, probe).
#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON array instead of the table.
    #[arg(long)]
    json: bool,
}

/// "entries[/ways]" of a level and its same-cycle parts (levels with latency 0 that
/// follow it), e.g. "4 + 128" for the Cortex-A9's L2.
pub fn level_size(spec: &MachineSpec, first: usize) -> String {
    let mut parts = vec![spec.tlbs[first].entries.to_string()];
    let mut cur = spec.tlbs[first].next;
    while let Some(i) = cur {
        if spec.tlbs[i].latency != 0 {
            break;
        }
        parts.push(spec.tlbs[i].entries.to_string());
        cur = spec.tlbs[i].next;
    }
    parts.join(" + ")
}

pub fn run(a: Args) -> Result<()> {
    let mut rows = Vec::new();
    for name in catalog::names() {
        let text = catalog::get(name).expect("listed");
        let spec = config::from_toml(text, Some(std::path::Path::new(name)), &[])?;
        let l1 = spec.data_entry;
        // The data path's next level with a latency (the L2), past same-cycle parts.
        let mut l2 = spec.tlbs[l1].next;
        while let Some(i) = l2 {
            if spec.tlbs[i].latency != 0 {
                break;
            }
            l2 = spec.tlbs[i].next;
        }
        let instr = spec.tlbs.iter().position(|t| t.serves == Serves::Instr);
        rows.push((
            name,
            spec.format.arch_name(),
            level_size(&spec, l1),
            instr.map_or("-".into(), |i| level_size(&spec, i)),
            l2.map_or("-".into(), |i| level_size(&spec, i)),
            catalog::description(text),
            spec.vm.as_ref().map(|v| v.stage2.arch_name()),
        ));
    }
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|r| serde_json::json!({"name": r.0, "arch": r.1, "l1d": r.2, "l1i": r.3, "l2": r.4, "description": r.5, "stage2": r.6}))
            .collect();
        // One object, as every command's --json (docs/output.md): {"machines": [...]}.
        outln!("{}", serde_json::to_string(&serde_json::json!({ "machines": v }))?);
        return Ok(());
    }
    outln!(
        "{:<14} {:<11} {:>13} {:>7} {:>11}  description",
        "name",
        "arch",
        "L1 data",
        "L1 inst",
        "L2"
    );
    for r in &rows {
        outln!("{:<14} {:<11} {:>13} {:>7} {:>11}  {}", r.0, r.1, r.2, r.3, r.4, r.5);
    }
    outln!(
        "\nuse: mmulab sim --machine NAME ... | mmulab probe --machine NAME | [machine] name = \"NAME\" in a config"
    );
    Ok(())
}
