//! `[numa]`: NUMA emulation (`numa=fake=N`) and the memory policy (docs/numa.md),
//! checked and resolved into the model's [`NumaConfig`]. Every error names its key.

use mmulab_model::mem::numa::{fake_split, Mode, NumaConfig, MAX_NUMNODES};
use serde::{Deserialize, Serialize};

/// `[numa]` as written.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NumaSection {
    /// `numa=fake=N`: the number of equal fake nodes (capped at 16, arm64's
    /// `MAX_NUMNODES`). Required: an `Option` only so that a section without it gets
    /// an error that says what the key is for (serde's own names the field alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fake: Option<usize>,
    /// `local` (default), `bind`, `preferred`, `interleave` or `weighted-interleave`.
    #[serde(default = "local")]
    pub policy: String,
    /// The policy's nodes (default: every node; `preferred` uses the lowest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<usize>>,
    /// Weighted interleave's weight of each node, 1..=255, one per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights: Option<Vec<u64>>,
    /// The node of each core, one per core (default: every core on node 0, as arm64
    /// maps CPUs without a device-tree node id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
}

fn local() -> String {
    "local".into()
}

/// Checks `[numa]` against the machine (`cores`, `memory_bytes`) and resolves it.
/// `page_bytes` is the kernel's base page (node boundaries are multiples of it).
pub(crate) fn resolve(s: &NumaSection, cores: usize, memory_bytes: u64, page_bytes: u64) -> Result<NumaConfig, String> {
    let fake = s.fake.ok_or(
        "[numa] needs numa.fake = N, the number of nodes memory is split into (numa=fake=N); \
         the policy and the other numa keys apply to those nodes: add e.g. --set numa.fake=8 (docs/numa.md)",
    )?;
    let mode = Mode::parse(&s.policy).ok_or_else(|| {
        let names: Vec<String> = Mode::NAMES.iter().map(|n| format!("\"{n}\"")).collect();
        format!(
            "numa.policy = \"{}\" is not known; use one of {}",
            s.policy,
            names.join(", ")
        )
    })?;
    let n = fake_split(0, memory_bytes, fake, page_bytes)
        .map_err(|e| match e {
            mmulab_model::ModelError::Config(m) => m,
            e => e.to_string(),
        })?
        .len();
    let node = |key: &str, i: usize, v: usize| {
        if v < n {
            Ok(v)
        } else {
            Err(format!(
                "{key}[{i}] = {v}: no such node; numa.fake = {} makes nodes 0..{}",
                fake.min(MAX_NUMNODES),
                n - 1
            ))
        }
    };
    let nodes = match &s.nodes {
        None => Vec::new(),
        Some(v) if v.is_empty() => {
            return Err(format!(
                "numa.nodes = []: policy \"{}\" needs at least one node (leave the key out for every node)",
                s.policy
            ))
        }
        Some(v) => {
            if mode == Mode::Local {
                return Err(
                    "numa.nodes: policy \"local\" takes no nodes (MPOL_LOCAL with a nodemask is EINVAL); \
                            use \"bind\" or \"preferred\""
                        .into(),
                );
            }
            let mut out = v
                .iter()
                .enumerate()
                .map(|(i, &x)| node("numa.nodes", i, x))
                .collect::<Result<Vec<_>, _>>()?;
            out.sort_unstable();
            out.dedup();
            out
        }
    };
    if mode == Mode::Preferred && nodes.is_empty() {
        return Err("numa.policy = \"preferred\" needs numa.nodes (the lowest node listed is preferred)".into());
    }
    let weights = match &s.weights {
        None => Vec::new(),
        Some(_) if mode != Mode::WeightedInterleave => {
            return Err(format!(
                "numa.weights applies only to policy \"weighted-interleave\" (policy is \"{}\")",
                s.policy
            ))
        }
        Some(w) if w.len() != n => return Err(format!("numa.weights has {} values; give one per node ({n})", w.len())),
        Some(w) => w
            .iter()
            .enumerate()
            .map(|(i, &x)| match u8::try_from(x) {
                Ok(b) if b >= 1 => Ok(b),
                _ => Err(format!("numa.weights[{i}] = {x}: a weight is 1 to 255")),
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    let cpus = match &s.cpus {
        None => Vec::new(),
        Some(c) if c.len() != cores => {
            return Err(format!(
                "numa.cpus has {} values; give the node of each of the {cores} cores (machine.cores)",
                c.len()
            ))
        }
        Some(c) => c
            .iter()
            .enumerate()
            .map(|(i, &x)| node("numa.cpus", i, x))
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(NumaConfig {
        fake,
        mode,
        nodes,
        weights,
        cpus,
        page_bytes,
    })
}
