//! The `[caches]` section (docs/config.md, docs/memory.md): the data-cache hierarchy,
//! parsed and validated into the model's [`CacheSpec`]. Without the section a machine
//! has no data caches and every number is what it was before caches existed.

use mmulab_model::cache::{CacheSpec, LevelSpec};
use mmulab_model::replacement::Policy;
use mmulab_trace::units::parse_size;
use serde::{Deserialize, Serialize};

/// `[caches]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CachesSection {
    /// Cycles a reference takes on its core's clock besides its TLB lookups, walk and
    /// cache/memory latencies (assumed 1: one issue slot per reference).
    #[serde(default = "one")]
    pub base_cycles: u32,
    /// Data misses to memory a core keeps in flight at once (its miss slots; 1 to 64;
    /// default 1: the core waits for each miss before the next leaves). Assumed per
    /// machine (translator/mlp.rs, docs/memory.md).
    #[serde(default = "one")]
    pub mlp: u32,
    /// Cycles of a request to main memory below the last level (the flat memory).
    /// Default: `walk.mem_latency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_latency: Option<u32>,
    /// `[caches.l1d]`: the first level, one per core.
    pub l1d: LevelSection,
    /// `[caches.l2]`: optional second level (private unless `shared = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<LevelSection>,
    /// `[caches.l3]`: optional last level (shared unless `shared = false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l3: Option<LevelSection>,
}

/// One cache level.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LevelSection {
    /// Bytes, e.g. `"64KiB"` or `65536`.
    pub size: Size,
    /// Ways per set.
    pub ways: usize,
    /// Line bytes (a power of two; every level the same). Default 64.
    #[serde(default = "line64")]
    pub line: u32,
    /// Lookup latency in cycles.
    pub latency: u32,
    /// One copy for all cores. Default: false for `l1d` and `l2`, true for `l3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// Replacement policy: `lru` (default), `plru`, `fifo`, `random` (seeded by
    /// `machine.seed`), as for TLB levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<Policy>,
}

/// A byte count written as a number or with a unit (`"64KiB"`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Size {
    /// A plain number of bytes.
    Bytes(u64),
    /// A number with a unit.
    Text(String),
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Bytes(n) => write!(f, "{n}"),
            Size::Text(s) => write!(f, "\"{s}\""),
        }
    }
}

fn one() -> u32 {
    1
}

fn line64() -> u32 {
    64
}

/// Checks `[caches]` and resolves it into the model's spec; errors name the key. A
/// random policy of the level at index k (l1d 0, l2 1, l3 2) is seeded with `seed` +
/// 256 + k (TLB levels take `seed` + their index).
pub fn resolve(c: &CachesSection, walk_mem_latency: u32, seed: u64) -> Result<CacheSpec, String> {
    if c.mlp == 0 || c.mlp > 64 {
        return Err(format!(
            "caches.mlp = {} must be from 1 to 64 (data misses a core keeps in flight)",
            c.mlp
        ));
    }
    let mut levels = Vec::new();
    for (k, (name, l, shared_default)) in [
        ("l1d", Some(&c.l1d), false),
        ("l2", c.l2.as_ref(), false),
        ("l3", c.l3.as_ref(), true),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(l) = l else { continue };
        let key = |k: &str| format!("caches.{name}.{k}");
        let size = match &l.size {
            Size::Bytes(n) => *n,
            Size::Text(s) => parse_size(s).map_err(|e| format!("{}: {e}", key("size")))?,
        };
        if !l.line.is_power_of_two() || !(16..=4096).contains(&l.line) {
            return Err(format!(
                "{} = {} must be a power of two from 16 to 4096",
                key("line"),
                l.line
            ));
        }
        if l.ways == 0 || l.ways > 64 {
            return Err(format!("{} = {} must be from 1 to 64", key("ways"), l.ways));
        }
        let per_set = l.ways as u64 * l.line as u64;
        if size == 0 || size % per_set != 0 {
            return Err(format!(
                "{} = {} is not a positive multiple of ways × line = {per_set} bytes (sets must be whole)",
                key("size"),
                l.size
            ));
        }
        if size > 1 << 30 {
            return Err(format!(
                "{} = {} is implausibly large (limit 1GiB)",
                key("size"),
                l.size
            ));
        }
        if l.line != c.l1d.line {
            return Err(format!(
                "{} = {} differs from caches.l1d.line = {} (every level must use one line size)",
                key("line"),
                l.line,
                c.l1d.line
            ));
        }
        let shared = l.shared.unwrap_or(shared_default);
        if name == "l1d" && shared {
            return Err("caches.l1d.shared = true: the first level is per core; share l2 or l3".into());
        }
        levels.push(LevelSpec {
            name: name.to_string(),
            size,
            ways: l.ways,
            line: l.line,
            latency: l.latency,
            shared,
            replacement: l.replacement.unwrap_or(Policy::Lru),
            seed: seed.wrapping_add(256 + k as u64),
        });
    }
    Ok(CacheSpec {
        levels,
        base_cycles: c.base_cycles,
        memory_latency: c.memory_latency.unwrap_or(walk_mem_latency),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(size: &str, ways: usize) -> LevelSection {
        LevelSection {
            size: Size::Text(size.into()),
            ways,
            line: 64,
            latency: 4,
            shared: None,
            replacement: None,
        }
    }

    #[test]
    fn resolves_defaults_and_names_the_bad_key() {
        let mut c = CachesSection {
            base_cycles: 1,
            mlp: 1,
            memory_latency: None,
            l1d: level("64KiB", 4),
            l2: None,
            l3: Some(level("2MiB", 16)),
        };
        let s = resolve(&c, 30, 5).unwrap();
        assert_eq!(s.memory_latency, 30);
        assert_eq!(s.levels.len(), 2);
        assert_eq!(s.levels[0].replacement, Policy::Lru);
        assert_eq!((s.levels[0].seed, s.levels[1].seed), (5 + 256, 5 + 258));
        assert!(!s.levels[0].shared && s.levels[1].shared);
        assert_eq!(s.levels[0].size, 65536);
        c.l2 = Some(level("1000", 8));
        let e = resolve(&c, 30, 0).unwrap_err();
        assert!(
            e.starts_with("caches.l2.size = \"1000\" is not a positive multiple"),
            "{e}"
        );
        c.l2 = None;
        c.l1d.shared = Some(true);
        assert!(resolve(&c, 30, 0).unwrap_err().contains("caches.l1d.shared"));
        c.l1d.shared = None;
        c.mlp = 0;
        assert!(resolve(&c, 30, 0)
            .unwrap_err()
            .starts_with("caches.mlp = 0 must be from 1 to 64"));
    }

    #[test]
    fn a_level_names_its_replacement_policy() {
        let l: LevelSection =
            toml::from_str("size = \"32KiB\"\nways = 8\nlatency = 4\nreplacement = \"fifo\"").unwrap();
        assert_eq!(l.replacement, Some(Policy::Fifo));
        let c = CachesSection {
            base_cycles: 1,
            mlp: 1,
            memory_latency: None,
            l1d: l,
            l2: Some(level("1MiB", 16)),
            l3: None,
        };
        let s = resolve(&c, 30, 0).unwrap();
        assert_eq!(s.levels[0].replacement, Policy::Fifo);
        assert_eq!(s.levels[1].replacement, Policy::Lru);
        let bad = toml::from_str::<LevelSection>("size = 64\nways = 1\nlatency = 1\nreplacement = \"mru\"");
        assert!(bad.unwrap_err().to_string().contains("mru"));
    }
}
