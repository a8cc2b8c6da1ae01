//! The fully resolved configuration of a machine: the config after its named machine
//! was merged in, `--set` applied and every default filled, as a TOML table that can be
//! fed back (`mmulab sim --config FILE`, no `--machine`) to build the same machine.
//! `mmulab sim --print-config` prints it, `sim --json` and sweeps report it
//! (docs/config.md, "The resolved configuration").
//!
//! Contract: [`Resolved::config`] given back as a config file resolves to the same
//! [`MachineSpec`]. It is built from the parsed [`Config`] (so every serde default is
//! written out) and the parsed `[os]` ([`OsSection`], its policy's defaults written out);
//! `machine.name` is dropped, since the named machine is already merged in (naming it
//! again would merge it a second time: a level removed with `remove = true` would come
//! back). Where a section's typed form does not read back to the same value (the
//! reservation policy's `mid_size`, whose default "the format's" has no spelling), that
//! section is written as the merged config had it, which reads back by construction.

use super::os::OsSection;
use super::{Config, MachineSpec};

/// A machine resolved from its config: the resolved configuration and the machine.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The resolved configuration (see the module documentation).
    pub config: toml::Table,
    /// The validated machine built from it.
    pub spec: MachineSpec,
}

impl Resolved {
    /// The resolved configuration as JSON (keys in sorted order; see [`canonical_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        canonical_json(&self.config)
    }

    /// The resolved configuration as TOML text, with a header comment saying what it is.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(&self.config).unwrap_or_else(|e| format!("# not representable as TOML: {e}\n"));
        format!("# mmulab: the fully resolved machine configuration (docs/config.md); give it back with --config FILE\n{body}")
    }

    /// [`config_hash`] of the resolved configuration.
    pub fn hash(&self) -> String {
        config_hash(&self.to_json())
    }
}

/// A TOML table as JSON with every object's keys sorted, recursively: the canonical form
/// that [`config_hash`] hashes, whatever order the table kept its keys in.
pub fn canonical_json(table: &toml::Table) -> serde_json::Value {
    fn sort(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut entries: Vec<(String, serde_json::Value)> = m.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sort(v))).collect())
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.into_iter().map(sort).collect()),
            v => v,
        }
    }
    sort(serde_json::to_value(table).unwrap_or(serde_json::Value::Null))
}

/// The hash of a resolved configuration: FNV-1a 64 (offset basis 0xcbf29ce484222325,
/// prime 0x100000001b3) over the compact JSON text of [`canonical_json`], as 16 lower-case
/// hex digits. Stable across runs, hosts and mmulab versions as long as the resolved
/// configuration is the same; it names a configuration, it is not a security hash.
pub fn config_hash(canonical: &serde_json::Value) -> String {
    format!("{:016x}", fnv1a64(canonical.to_string().as_bytes()))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The resolved configuration of `config` (parsed from `merged`, the config table after
/// merging and `--set`; see the module documentation).
pub(super) fn table(config: &Config, merged: &toml::Table) -> Result<toml::Table, String> {
    let mut c = config.clone();
    c.machine.name = None;
    let mut out = toml::Table::try_from(&c).map_err(|e| format!("the resolved configuration: {e}"))?;
    // The typed form only where it reads back to the same config; else as merged.
    let reads_back = super::parse(out.clone())
        .ok()
        .and_then(|back| {
            let mut b = back;
            b.machine.name = None;
            toml::Table::try_from(&b).ok()
        })
        .is_some_and(|again| {
            let mut o = out.clone();
            o.remove("os");
            let mut a = again;
            a.remove("os");
            a == o
        });
    if !reads_back {
        out = merged.clone();
        out.remove("os");
        if let Some(toml::Value::Table(m)) = out.get_mut("machine") {
            m.remove("name");
        }
    }
    out.insert("os".into(), toml::Value::Table(os_table(&config.os, merged)));
    Ok(out)
}

/// `[os]` with every default written out, or as `merged` had it where that typed form
/// would not read back to `os`.
fn os_table(os: &OsSection, merged: &toml::Table) -> toml::Table {
    let written = match merged.get("os") {
        Some(toml::Value::Table(t)) => t.clone(),
        _ => toml::Table::new(),
    };
    let typed = super::os::to_table(os, &written);
    let mut probe = toml::Table::new();
    probe.insert("os".into(), toml::Value::Table(typed.clone()));
    match super::os::take(&mut probe) {
        Ok(back) if &back == os => typed,
        _ => written,
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{catalog, resolve, resolve_toml};

    /// The resolved configuration of every catalog machine, under every OS policy and
    /// with `[numa]`, reads back to the same machine and is a fixed point (resolving it
    /// again gives it back), with no `machine.name` left to merge twice.
    #[test]
    fn resolved_config_reads_back_to_the_same_machine() {
        let mut cases: Vec<(String, Vec<String>)> = Vec::new();
        for name in catalog::names() {
            cases.push((name.to_string(), vec![]));
            for policy in ["thp", "reservation", "mthp", "khugepaged"] {
                cases.push((name.to_string(), vec![format!("os.policy={policy}")]));
            }
        }
        cases.push((
            "cortex-a76-pi5".into(),
            vec!["numa.fake=2".into(), "machine.cores=2".into()],
        ));
        cases.push(("cortex-a15".into(), vec!["tlb.l2.entries=1024".into()]));
        let mut tried = 0;
        for (name, sets) in cases {
            // Some policies do not apply to some formats: those are not configs.
            let Ok(r) = resolve(Some(&name), None, &sets) else {
                continue;
            };
            tried += 1;
            assert!(
                r.config.get("machine").and_then(|m| m.get("name")).is_none(),
                "{name} {sets:?}"
            );
            let text = r.to_toml();
            let back = resolve_toml(&text, None, &[]).unwrap_or_else(|e| panic!("{name} {sets:?}: {e}\n{text}"));
            assert_eq!(
                format!("{:?}", back.spec),
                format!("{:?}", r.spec),
                "{name} {sets:?}\n{text}"
            );
            assert_eq!(back.config, r.config, "{name} {sets:?}: not a fixed point");
            assert_eq!(back.hash(), r.hash());
        }
        assert!(tried > 60, "only {tried} configs resolved");
    }

    /// A level removed from the named machine stays removed in the resolved
    /// configuration (it would come back if `machine.name` were kept).
    #[test]
    fn a_removed_level_stays_removed() {
        let text = "[machine]\nname = \"cortex-a15\"\n[[tlb]]\nname = \"l1i\"\nremove = true\n";
        let r = resolve_toml(text, None, &[]).unwrap();
        let back = resolve_toml(&r.to_toml(), None, &[]).unwrap();
        assert!(back.spec.tlbs.iter().all(|t| t.name != "l1i"));
        assert_eq!(back.spec.tlbs.len(), r.spec.tlbs.len());
    }

    #[test]
    fn hash_is_fnv1a_64_of_the_canonical_text() {
        // The published test vectors of FNV-1a 64.
        assert_eq!(super::fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(
            super::config_hash(&serde_json::json!(1)),
            format!("{:016x}", super::fnv1a64(b"1"))
        );
        let mut t = toml::Table::new();
        t.insert("b".into(), 1.into());
        t.insert("a".into(), 2.into());
        assert_eq!(super::canonical_json(&t).to_string(), r#"{"a":2,"b":1}"#);
    }
}
