//! The machine catalog: `machines/*.toml`, one file per core, embedded in the binary
//! (`include_str!`) so that `--machine cortex-a15` works wherever mmulab runs, and the
//! merge that lets a config name a machine and add only what differs.
//!
//! A config's `[machine] name = "cortex-a15"` (or a path to a machine TOML file, relative
//! to the config's directory) names a *base*. [`expand`] merges the base under the
//! config's own keys:
//!
//! * tables merge key by key, recursively; a key the config sets replaces the base's
//!   value (arrays of values such as `page_sizes` or `pwc_entries` are replaced whole);
//! * `[[tlb]]` levels merge **by name**: a level whose `name` matches a base level
//!   overrides only the keys it sets; a new name is appended after the base's levels; a
//!   level with `remove = true` (and its name) deletes the base's level of that name;
//! * the base may itself name a base (up to 8 deep; cycles are errors).
//!
//! Adding a core: write `machines/<name>.toml` (`machines/vm/<name>.toml` for a core in a
//! guest, with `[vm]`) (a `description`, the format, walk
//! caches and latencies, every `[[tlb]]` level, each number's source in a comment) and
//! add it to [`MACHINES`]; the catalog tests probe it and check the probe recovers it.

use crate::SimError;
use std::path::{Path, PathBuf};

/// Every catalog machine: (name, TOML text).
pub const MACHINES: &[(&str, &str)] = &[
    ("default", include_str!("../../../../machines/default.toml")),
    ("cortex-a5", include_str!("../../../../machines/cortex-a5.toml")),
    ("cortex-a7", include_str!("../../../../machines/cortex-a7.toml")),
    ("cortex-a8", include_str!("../../../../machines/cortex-a8.toml")),
    ("cortex-a9", include_str!("../../../../machines/cortex-a9.toml")),
    ("armada-xp", include_str!("../../../../machines/armada-xp.toml")),
    ("cortex-a15", include_str!("../../../../machines/cortex-a15.toml")),
    ("cortex-a17", include_str!("../../../../machines/cortex-a17.toml")),
    ("cortex-a53", include_str!("../../../../machines/cortex-a53.toml")),
    ("cortex-a57", include_str!("../../../../machines/cortex-a57.toml")),
    ("cortex-a72", include_str!("../../../../machines/cortex-a72.toml")),
    ("cortex-a73", include_str!("../../../../machines/cortex-a73.toml")),
    ("cortex-a76", include_str!("../../../../machines/cortex-a76.toml")),
    ("neoverse-n1", include_str!("../../../../machines/neoverse-n1.toml")),
    ("skylake", include_str!("../../../../machines/skylake.toml")),
    // Variants with data caches (docs/memory.md).
    (
        "cortex-a72-pi4",
        include_str!("../../../../machines/cortex-a72-pi4.toml"),
    ),
    (
        "cortex-a76-pi5",
        include_str!("../../../../machines/cortex-a76-pi5.toml"),
    ),
    (
        "neoverse-n1-caches",
        include_str!("../../../../machines/neoverse-n1-caches.toml"),
    ),
    (
        "skylake-caches",
        include_str!("../../../../machines/skylake-caches.toml"),
    ),
    // Virtualized cores: a catalog core (or this machine) in a KVM guest, `[vm]` set
    // (docs/virtualization.md). Their files live in machines/vm/.
    (
        "cortex-a53-kvm",
        include_str!("../../../../machines/vm/cortex-a53-kvm.toml"),
    ),
    (
        "cortex-a76-kvm",
        include_str!("../../../../machines/vm/cortex-a76-kvm.toml"),
    ),
    (
        "epyc-zen4-kvm",
        include_str!("../../../../machines/vm/epyc-zen4-kvm.toml"),
    ),
];

/// The TOML text of a catalog machine.
pub fn get(name: &str) -> Option<&'static str> {
    MACHINES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Catalog names, in catalog order.
pub fn names() -> Vec<&'static str> {
    MACHINES.iter().map(|(n, _)| *n).collect()
}

/// True if catalog machine `name` runs its cores in a guest (its file sets `[vm]`).
pub fn is_vm(name: &str) -> bool {
    get(name).is_some_and(|t| {
        toml::from_str::<toml::Table>(t)
            .ok()
            .and_then(|t| {
                t.get("vm")
                    .map(|v| v.get("enabled").and_then(|e| e.as_bool()) != Some(false))
            })
            .unwrap_or(false)
    })
}

/// The `[machine] description` of a catalog entry (empty if it has none).
pub fn description(text: &str) -> String {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get("machine")?.get("description")?.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Reads a machine by catalog name or path: (TOML text, where it came from, the file's
/// path if it is a file). A relative path is taken relative to `dir` when given.
pub fn read(name_or_path: &str, dir: Option<&Path>) -> Result<(String, String, Option<PathBuf>), SimError> {
    if let Some(t) = get(name_or_path) {
        return Ok((t.to_string(), format!("catalog machine '{name_or_path}'"), None));
    }
    let p = Path::new(name_or_path);
    let p = match dir {
        Some(d) if p.is_relative() => d.join(p),
        _ => p.to_path_buf(),
    };
    match std::fs::read_to_string(&p) {
        Ok(t) => Ok((t, p.display().to_string(), Some(p))),
        Err(e) => Err(SimError::Config(format!(
            "machine '{name_or_path}' is neither a catalog machine ({}) nor a readable file ({}: {e})",
            names().join(", "),
            p.display()
        ))),
    }
}

/// Merges the machine named by `table`'s `[machine] name` (recursively) under `table`;
/// `path` is the config's file (relative machine paths start from its directory).
pub fn expand(table: toml::Table, path: Option<&Path>) -> Result<toml::Table, SimError> {
    expand_depth(table, path, &mut Vec::new())
}

fn expand_depth(mut table: toml::Table, path: Option<&Path>, seen: &mut Vec<String>) -> Result<toml::Table, SimError> {
    let name = match table.get("machine").and_then(|m| m.get("name")) {
        None => return Ok(table),
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(SimError::Config(format!(
                "{}: machine.name must be a string",
                origin(path)
            )))
        }
    };
    if seen.contains(&name) || seen.len() >= 8 {
        return Err(SimError::Config(format!(
            "machine.name: the chain {} → {name} repeats or is too deep",
            seen.join(" → ")
        )));
    }
    seen.push(name.clone());
    let (text, src, file) = read(&name, path.and_then(Path::parent))?;
    let mut base: toml::Table =
        toml::from_str(&text).map_err(|e| SimError::Config(format!("{src}: {}", e.to_string().trim_end())))?;
    // A catalog file does not name itself; any other base is expanded first.
    let self_named = base.get("machine").and_then(|m| m.get("name")).and_then(|v| v.as_str()) == Some(name.as_str());
    if self_named {
        if let Some(toml::Value::Table(m)) = base.get_mut("machine") {
            m.remove("name");
        }
    }
    let mut base = expand_depth(base, file.as_deref(), seen)?;
    merge(&mut base, std::mem::take(&mut table)).map_err(|e| SimError::Config(format!("{}: {e}", origin(path))))?;
    Ok(base)
}

fn origin(path: Option<&Path>) -> String {
    path.map_or("--machine".to_string(), |p| p.display().to_string())
}

/// Lays `over` on `base` (the rule in the module documentation).
pub fn merge(base: &mut toml::Table, over: toml::Table) -> Result<(), String> {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o)?,
            (Some(toml::Value::Array(b)), toml::Value::Array(o)) if k == "tlb" => merge_levels(b, o)?,
            (_, v) => {
                if k == "tlb" {
                    if let toml::Value::Array(o) = &v {
                        if o.iter().any(|l| l.get("remove").is_some()) {
                            return Err("tlb: `remove` needs a base machine with that level".into());
                        }
                    }
                }
                base.insert(k, v);
            }
        }
    }
    Ok(())
}

fn merge_levels(base: &mut Vec<toml::Value>, over: Vec<toml::Value>) -> Result<(), String> {
    for (i, mut level) in over.into_iter().enumerate() {
        let toml::Value::Table(t) = &mut level else {
            return Err(format!("tlb[{i}] must be a table"));
        };
        let name = t
            .get("name")
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("tlb[{i}] needs a name to merge with the base machine"))?
            .to_string();
        let remove = match t.remove("remove") {
            None => false,
            Some(toml::Value::Boolean(b)) => b,
            Some(_) => return Err(format!("tlb[{name}].remove must be true or false")),
        };
        let at = base
            .iter()
            .position(|l| l.get("name").and_then(|n| n.as_str()) == Some(name.as_str()));
        match (at, remove) {
            (Some(j), true) => {
                base.remove(j);
            }
            (None, true) => {
                return Err(format!(
                    "tlb[{name}].remove: the base machine has no level named '{name}'"
                ))
            }
            (Some(j), false) => {
                if let toml::Value::Table(b) = &mut base[j] {
                    let over = std::mem::take(t);
                    merge(b, over)?;
                }
            }
            (None, false) => base.push(level),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_machine_file_is_in_the_catalog_and_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines");
        let mut files: Vec<String> = [dir.clone(), dir.join("vm")]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).unwrap())
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .filter_map(|p| p.file_stem()?.to_str().map(str::to_string))
            .collect();
        files.sort();
        let mut known: Vec<String> = names().iter().map(|s| s.to_string()).collect();
        known.sort();
        assert_eq!(files, known, "machines/*.toml and catalog::MACHINES differ");
        for (name, text) in MACHINES {
            let spec =
                crate::config::from_toml(text, Some(Path::new(name)), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!spec.tlbs.is_empty());
            if *name != "default" {
                assert!(!description(text).is_empty(), "{name} has no description");
            }
            // The files in machines/vm/ (and only they) are virtualized cores.
            assert_eq!(spec.vm.is_some(), name.ends_with("-kvm"), "{name}");
            assert_eq!(is_vm(name), spec.vm.is_some(), "{name}");
        }
    }

    #[test]
    fn a_config_naming_a_machine_adds_only_what_differs() {
        let text = r#"
            [machine]
            name = "cortex-a15"
            [[tlb]]
            name = "l2"
            entries = 1024
            [[tlb]]
            name = "l1i"
            remove = true
            [os]
            policy = "fixed"
            page_size = "2M"
        "#;
        let spec = crate::config::from_toml(text, None, &[]).unwrap();
        let a15 = crate::config::from_toml(get("cortex-a15").unwrap(), None, &[]).unwrap();
        assert_eq!(spec.format, a15.format);
        let l2 = spec.tlbs.iter().find(|t| t.name == "l2").unwrap();
        let l2_base = a15.tlbs.iter().find(|t| t.name == "l2").unwrap();
        assert_eq!(
            (l2.entries, l2.ways, &l2.page_sizes),
            (1024, l2_base.ways, &l2_base.page_sizes)
        );
        assert!(spec.tlbs.iter().all(|t| t.name != "l1i"));
        assert_eq!(spec.tlbs.len(), a15.tlbs.len() - 1);
        assert_eq!(spec.cost.mem_latency, a15.cost.mem_latency);
        // Unknown machines and removals of missing levels are errors naming the problem.
        let e = crate::config::from_toml("[machine]\nname = \"cortex-z9\"\n", None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cortex-z9") && e.contains("cortex-a15"), "{e}");
        let e = crate::config::from_toml(
            "[machine]\nname = \"cortex-a15\"\n[[tlb]]\nname = \"l9\"\nremove = true\n",
            None,
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("l9"), "{e}");
    }
}
