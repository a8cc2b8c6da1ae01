//! Machine configuration: plain serde data parsed from TOML, with `--set` overrides
//! applied to the TOML tree, unknown keys rejected, then validated and resolved once
//! into a [`MachineSpec`] the machine is built from. docs/config.md documents every key.

pub mod cache;
pub mod catalog;
pub mod gpu;
pub mod limits;
pub(crate) mod numa;
pub(crate) mod os;
pub mod resolved;
pub mod vm;

use self::limits::sets_machine_name;
use crate::SimError;
use mmulab_model::addr::PageSize;
use mmulab_model::cost::WalkCost;
use mmulab_model::pt::Format;
use mmulab_model::replacement::Policy;
use mmulab_model::tlb::{Serves, TlbSpec, Unsupported};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub use self::os::{key_policies, OsSection, OsSpec, POLICIES};
pub use self::resolved::Resolved;

/// The built-in default machine (machines/default.toml).
pub const DEFAULT_TOML: &str = include_str!("../../../../machines/default.toml");

/// A config file as written.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[machine]`.
    pub machine: MachineSection,
    /// `[memory]`.
    #[serde(default)]
    pub memory: MemorySection,
    /// `[walk]`.
    #[serde(default)]
    pub walk: WalkSection,
    /// `[[tlb]]` levels.
    pub tlb: Vec<TlbSection>,
    /// `[os]`: parsed apart from the other sections (from the merged table, in
    /// [`from_table`]), since which keys it accepts depends on `os.policy`.
    #[serde(skip)]
    pub os: OsSection,
    /// `[vm]`: run the trace in a guest (docs/virtualization.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<self::vm::VmSection>,
    /// `[caches]`: data caches (docs/memory.md); none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caches: Option<self::cache::CachesSection>,
    /// `[numa]`: fake NUMA nodes and the memory policy (docs/numa.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<self::numa::NumaSection>,
    /// `[dram]`: a DRAM model as main memory below the caches (docs/memory.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramSection>,
}

/// `[dram]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DramSection {
    /// A built-in DRAM profile (`lpddr4x-4267-pi5`, `ddr4-3200`, `ddr5-4800`) or the path
    /// of a profile TOML file (docs/config.md, "DRAM profiles").
    pub profile: String,
}

/// `[machine]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSection {
    /// A catalog machine (`cortex-a15`) or the path of a machine TOML file this config is
    /// based on: its keys are merged under this file's (see [`self::catalog::merge`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One line describing the machine (catalog files; shown by `mmulab machines`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Page-table format: `x86_64`, `aarch64` (4 KiB granule), `aarch64-16k`,
    /// `aarch64-64k`, `armv7` (short descriptors) or `armv7-lpae`.
    pub arch: String,
    /// Cores, each with its own TLBs and walk caches.
    #[serde(default = "one")]
    pub cores: usize,
    /// Seed of every random choice (random replacement).
    #[serde(default)]
    pub seed: u64,
    /// Who sets accessed and dirty bits: `"hardware"` (the walker; the default) or
    /// `"software"` (a fault the OS handles; translator/ad.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ad: Option<AdUpdates>,
    /// The core clock in MHz: simulated seconds from cycles, and the clock background
    /// kernel work runs on (background.rs); none: no time is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<f64>,
}

/// `machine.ad`: who keeps the accessed and dirty bits of leaf descriptors.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AdUpdates {
    /// The walker sets them (x86-64; ARMv8.1 FEAT_HAFDBS).
    Hardware,
    /// A fault per update, handled by the OS (ARMv7; ARMv8.0).
    Software,
}

fn one() -> usize {
    1
}

/// `[memory]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    /// Physical memory size, e.g. `"16GiB"`.
    #[serde(default = "default_mem")]
    pub size: String,
    /// Reproducible fragmentation before the run (`{ used = 0.5, target_free_2m_share = 0.3,
    /// seed = 1 }`); none by default.
    #[serde(default)]
    pub age: Option<AgeSection>,
}

/// `[memory.age]`: pin `used` of memory in scattered frames so that about
/// `target_free_2m_share` of the free memory stays in free 2 MiB blocks.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgeSection {
    /// Share of memory pinned (0 ≤ used ≤ 0.95).
    #[serde(default = "half")]
    pub used: f64,
    /// Target share of free memory in free 2 MiB blocks (0 ≤ x ≤ 1).
    pub target_free_2m_share: f64,
    /// Seed of the aging.
    #[serde(default)]
    pub seed: u64,
    /// Share of the pinned frames that compaction may migrate (0 ≤ x ≤ 1; default 0:
    /// all pinned frames are unmovable, like kernel memory).
    #[serde(default)]
    pub movable: f64,
}

fn half() -> f64 {
    0.5
}

fn default_mem() -> String {
    "16GiB".into()
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection {
            size: default_mem(),
            age: None,
        }
    }
}

/// `[walk]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WalkSection {
    /// Page-walk-cache entries per upper level, root first; 0 = none.
    #[serde(default = "default_pwc")]
    pub pwc_entries: Vec<usize>,
    /// Cycles per page-table memory reference.
    #[serde(default = "default_mem_latency")]
    pub mem_latency: u32,
    /// Cycles of a page-walk-cache lookup.
    #[serde(default = "one_u32")]
    pub pwc_latency: u32,
}

fn default_pwc() -> Vec<usize> {
    vec![4, 8, 32]
}
fn default_mem_latency() -> u32 {
    30
}
fn one_u32() -> u32 {
    1
}

impl Default for WalkSection {
    fn default() -> Self {
        WalkSection {
            pwc_entries: default_pwc(),
            mem_latency: default_mem_latency(),
            pwc_latency: 1,
        }
    }
}

/// One `[[tlb]]` level.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlbSection {
    /// Unique name.
    pub name: String,
    /// `data`, `instr` or `unified`.
    pub serves: Serves,
    /// Total entries.
    pub entries: usize,
    /// Ways per set (= entries for fully associative).
    pub ways: usize,
    /// Page sizes held, e.g. `["4K", "2M"]`.
    pub page_sizes: Vec<String>,
    /// `lru`, `plru`, `fifo`, `random`.
    #[serde(default = "default_policy")]
    pub replacement: Policy,
    /// Name of the fallback level.
    #[serde(default)]
    pub next: Option<String>,
    /// `splinter` or `bypass`.
    #[serde(default)]
    pub unsupported: Unsupported,
    /// Lookup latency in cycles.
    #[serde(default = "one_u32")]
    pub latency: u32,
}

fn default_policy() -> Policy {
    Policy::Lru
}

/// A validated, resolved machine description.
#[derive(Clone, Debug)]
pub struct MachineSpec {
    /// Page-table format.
    pub format: Format,
    /// Number of cores.
    pub cores: usize,
    /// Physical memory bytes.
    pub memory_bytes: u64,
    /// TLB levels (with `next` resolved to indices).
    pub tlbs: Vec<TlbSpec>,
    /// Entry level of data references.
    pub data_entry: usize,
    /// Entry level of instruction fetches, if any level serves them.
    pub instr_entry: Option<usize>,
    /// Page-walk-cache entries per upper level.
    pub pwc_entries: Vec<usize>,
    /// Walk latencies.
    pub cost: WalkCost,
    /// OS policy with its settings (reclaim included: [`OsSpec::reclaim`]).
    pub os: OsSpec,
    /// References between calls of the policy's background work (`os.tick_interval`).
    pub tick_interval: u64,
    /// Linux's zero pages (`os.zero_page`).
    pub zero_page: bool,
    /// Accessed/dirty bits kept by software (`machine.ad = "software"`).
    pub ad_software: bool,
    /// The core clock in MHz (`machine.clock_mhz`), if known.
    pub clock_mhz: Option<f64>,
    /// Background work charged to the application (`os.background_charge`).
    pub charge_app: bool,
    /// `memory.size` as written (for messages).
    pub memory_size: String,
    /// Reproducible fragmentation before the run (`[memory.age]`), if any.
    pub age: Option<AgeSection>,
    /// The guest and its host (`[vm]`), if the trace runs in a virtual machine.
    pub vm: Option<self::vm::VmSpec>,
    /// The data caches (`[caches]`), if any.
    pub caches: Option<mmulab_model::cache::CacheSpec>,
    /// `caches.mlp`: data misses a core keeps in flight (1 without `[caches]`).
    pub cache_mlp: u32,
    /// Fake NUMA nodes and the memory policy (`[numa]`), if any.
    pub numa: Option<mmulab_model::mem::numa::NumaConfig>,
    /// The DRAM below the caches (`[dram]`), if any; else a flat memory.
    pub dram: Option<mmulab_model::dram::DramSpec>,
}

impl MachineSpec {
    /// Choices made for the user that a run should say on stderr (`mmulab: note: …`):
    /// today a `numa.fake` above `MAX_NUMNODES`, which the kernel reduces with a notice
    /// (`numa_emu_cmdline`, drivers/base/numa_emulation.c: "numa=fake=%u too large,
    /// reducing to %u").
    pub fn notes(&self) -> Vec<String> {
        use mmulab_model::mem::numa::MAX_NUMNODES;
        match &self.numa {
            Some(n) if n.fake > MAX_NUMNODES => vec![format!(
                "numa.fake = {}: more than MAX_NUMNODES ({MAX_NUMNODES}); reduced to {MAX_NUMNODES} nodes, as the kernel does",
                n.fake
            )],
            _ => Vec::new(),
        }
    }
}

/// Where a config came from, for error messages.
fn origin(path: Option<&Path>) -> String {
    path.map_or("built-in default config".to_string(), |p| p.display().to_string())
}

/// Parses a `key.path=value` override and applies it to a TOML tree. Array elements are
/// addressed by index or, for `[[tlb]]`, by name (`tlb.l2.entries=1024`). The value is
/// read as TOML (`1024`, `true`, `["4K"]`, `"x"`) or else taken as a bare string (`2M`).
pub fn apply_set(root: &mut toml::Table, assignment: &str) -> Result<(), SimError> {
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| SimError::Config(format!("--set '{assignment}': expected key.path=value")))?;
    let value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.trim().to_string()),
    };
    let keys: Vec<&str> = path.trim().split('.').collect();
    let bad = |msg: String| SimError::Config(format!("--set '{assignment}': {msg}"));
    let mut cur: &mut toml::Value = {
        let first = keys[0];
        if keys.len() == 1 {
            root.insert(first.to_string(), value);
            return Ok(());
        }
        root.entry(first.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
    };
    for (i, key) in keys.iter().enumerate().skip(1) {
        let last = i == keys.len() - 1;
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(key.to_string(), value);
                    return Ok(());
                }
                t.entry(key.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let idx = match key.parse::<usize>() {
                    Ok(n) => n,
                    Err(_) => a
                        .iter()
                        .position(|e| e.get("name").and_then(|n| n.as_str()) == Some(key))
                        .ok_or_else(|| bad(format!("no element named '{key}' in '{}'", keys[..i].join("."))))?,
                };
                let len = a.len();
                let el = a
                    .get_mut(idx)
                    .ok_or_else(|| bad(format!("index {idx} is out of range ({len} elements)")))?;
                if last {
                    *el = value;
                    return Ok(());
                }
                el
            }
            _ => return Err(bad(format!("'{}' is not a table", keys[..i].join(".")))),
        };
    }
    Ok(())
}

/// Loads a config from `path` (or the built-in default), applies `sets`, validates.
pub fn load(path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
    resolve(None, path, sets).map(|r| r.spec)
}

/// Loads a machine by catalog name or path (`--machine`), optionally with a config
/// file laid over it (`--config`; its own `[machine] name` is replaced), applies `sets`,
/// validates.
pub fn load_machine(machine: &str, path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
    resolve(Some(machine), path, sets).map(|r| r.spec)
}

/// [`load_machine`] when `machine` is given, else [`load`], keeping the resolved
/// configuration beside the machine ([`Resolved`]): what `mmulab sim --print-config`
/// prints and `sim --json` reports.
pub fn resolve(machine: Option<&str>, path: Option<&Path>, sets: &[String]) -> Result<Resolved, SimError> {
    let Some(machine) = machine else {
        let text = match path {
            Some(p) => std::fs::read_to_string(p)
                .map_err(|e| SimError::Config(format!("cannot read config {}: {e}", p.display())))?,
            // `--set machine.name=X` without a file: machine X, as `--machine X` (the
            // built-in default's keys laid over X would hide it).
            None if sets.iter().any(|s| sets_machine_name(s)) => {
                return resolve_table(toml::Table::new(), None, sets);
            }
            None => DEFAULT_TOML.to_string(),
        };
        return resolve_toml(&text, path, sets);
    };
    let mut table = match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| SimError::Config(format!("cannot read config {}: {e}", p.display())))?;
            toml::from_str::<toml::Table>(&text)
                .map_err(|e| SimError::Config(format!("{}: {}", p.display(), e.to_string().trim_end())))?
        }
        None => toml::Table::new(),
    };
    let m = table
        .entry("machine")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match m {
        toml::Value::Table(t) => {
            t.insert("name".into(), toml::Value::String(machine.into()));
        }
        _ => return Err(SimError::Config(format!("{}: `machine` must be a table", origin(path)))),
    }
    resolve_table(table, path, sets)
}

/// Parses config text (`path` only names it in errors), applies `sets`, validates.
pub fn from_toml(text: &str, path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
    resolve_toml(text, path, sets).map(|r| r.spec)
}

/// [`from_toml`], keeping the resolved configuration.
pub fn resolve_toml(text: &str, path: Option<&Path>, sets: &[String]) -> Result<Resolved, SimError> {
    let src = origin(path);
    let table: toml::Table =
        toml::from_str(text).map_err(|e| SimError::Config(format!("{src}: {}", e.to_string().trim_end())))?;
    resolve_table(table, path, sets)
}

/// Resolves a parsed config's `[machine] name` (merging the named machine under it),
/// applies `sets`, validates.
pub fn from_table(table: toml::Table, path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
    resolve_table(table, path, sets).map(|r| r.spec)
}

/// [`from_table`], keeping the resolved configuration.
pub fn resolve_table(table: toml::Table, path: Option<&Path>, sets: &[String]) -> Result<Resolved, SimError> {
    // `--set machine.name=…` chooses the machine to start from, so it applies before the
    // named machine is merged in (after, it would be a key nobody reads); the other
    // overrides apply to the merged result.
    let mut table = table;
    for s in sets.iter().filter(|s| sets_machine_name(s)) {
        apply_set(&mut table, s)?;
    }
    let named = table
        .get("machine")
        .and_then(|m| m.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string);
    let src = match (path, named) {
        (None, Some(n)) => format!("machine '{n}'"),
        _ => origin(path),
    };
    let mut table = self::catalog::expand(table, path)?;
    for s in sets.iter().filter(|s| !sets_machine_name(s)) {
        apply_set(&mut table, s)?;
    }
    let how = if sets.is_empty() {
        ""
    } else {
        " (after --set overrides)"
    };
    let config = parse(table.clone()).map_err(|e| SimError::Config(format!("{src}{how}: {e}")))?;
    let resolved = self::resolved::table(&config, &table).map_err(|e| SimError::Config(format!("{src}: {e}")))?;
    let spec = validate(config).map_err(|e| SimError::Config(format!("{src}: {e}")))?;
    Ok(Resolved { config: resolved, spec })
}

/// Parses a merged config table (its machine named, `--set` applied): `[os]` by
/// [`OsSection`]'s rules (only the chosen policy's keys), the rest by serde.
pub fn parse(mut table: toml::Table) -> Result<Config, String> {
    let os = self::os::take(&mut table)?;
    let mut config = Config::deserialize(toml::Value::Table(table)).map_err(|e| {
        let e = e.to_string().trim_end().to_string();
        // A number where a string belongs is most often a size without its unit (`--set
        // memory.size=0` parses 0 as an integer): say how to write one.
        if e.contains("invalid type: integer") && e.contains("expected a string") {
            format!("{e}\n(this key takes a string: give a size with its unit, e.g. `64MiB` or `0B`, or quote the value, `KEY = \"…\"` in TOML, `--set 'KEY=\"…\"'`)")
        } else {
            e
        }
    })?;
    config.os = os;
    Ok(config)
}

/// Checks a parsed config and resolves it.
pub fn validate(config: Config) -> Result<MachineSpec, String> {
    let format = Format::from_arch_name(&config.machine.arch).ok_or_else(|| {
        let names: Vec<String> = Format::ALL.iter().map(|f| format!("\"{}\"", f.arch_name())).collect();
        format!(
            "machine.arch = \"{}\" is not supported; use one of {}",
            config.machine.arch,
            names.join(", ")
        )
    })?;
    if format.stage2_only() {
        return Err(format!(
            "machine.arch = \"{}\" is a stage-2 format (a hypervisor's tables); give the guest's stage-1 format here and this one as vm.stage2 (docs/virtualization.md)",
            config.machine.arch
        ));
    }
    if config.machine.cores == 0 || config.machine.cores > 4096 {
        return Err(format!(
            "machine.cores = {} must be between 1 and 4096",
            config.machine.cores
        ));
    }
    let memory_bytes = self::limits::check_config(&config, format)?;
    if config.walk.pwc_entries.len() >= format.levels().len() {
        let upper = format.levels().len() - 1;
        let e = &config.walk.pwc_entries;
        let keep: Vec<String> = e[e.len() - upper..].iter().map(|v| v.to_string()).collect();
        return Err(format!(
            "walk.pwc_entries has {} values {e:?}; {} has {upper} upper levels: give one value per upper level, root first (e.g. --set walk.pwc_entries=[{}], the lowest levels'), or start from a catalog machine of that architecture (mmulab machines)",
            e.len(),
            format.arch_name(),
            keep.join(",")
        ));
    }
    let tlbs = resolve_tlbs(&config.tlb, config.machine.seed)?;
    let first = |f: &dyn Fn(Serves) -> bool| tlbs.iter().position(|t| f(t.serves));
    let data_entry =
        first(&|s| s != Serves::Instr).ok_or("no [[tlb]] level serves data (serves = \"data\" or \"unified\")")?;
    let instr_entry = first(&|s| s != Serves::Data);
    check_chain(&tlbs, data_entry, Serves::Instr)?;
    if let Some(i) = instr_entry {
        check_chain(&tlbs, i, Serves::Data)?;
    }
    for (i, t) in tlbs.iter().enumerate() {
        let reachable = [Some(data_entry), instr_entry]
            .iter()
            .flatten()
            .any(|&e| reaches(&tlbs, e, i));
        if !reachable {
            return Err(format!(
                "tlb[{}] is not reachable: no entry level leads to it through `next`",
                t.name
            ));
        }
    }
    self::os::check_policy(&config.os.policy, format, memory_bytes)?;
    self::os::check_common(&config)?;
    let vm = match &config.vm {
        Some(v) => self::vm::resolve(v, format, memory_bytes, config.machine.seed)?,
        None => None,
    };
    let caches = match &config.caches {
        Some(c) => Some(self::cache::resolve(c, config.walk.mem_latency, config.machine.seed)?),
        None => None,
    };
    let numa = match &config.numa {
        Some(_) if config.vm.is_some() => {
            return Err("[numa] with [vm]: NUMA emulation of a guest is not modelled; drop one of them".into())
        }
        Some(n) => Some(self::numa::resolve(
            n,
            config.machine.cores,
            memory_bytes,
            format.base_page().bytes(),
        )?),
        None => None,
    };
    let dram = match &config.dram {
        None => None,
        Some(_) if caches.is_none() => {
            return Err("[dram] needs [caches]: the DRAM serves the requests that miss the last cache level; add a [caches] section (docs/memory.md) or start from a machine that has one, e.g. -m cortex-a76-pi5".into())
        }
        Some(_) if config.machine.clock_mhz.is_none() => {
            return Err("[dram] needs machine.clock_mhz: DRAM timings are in nanoseconds of the DRAM clock and the caches count core cycles; give the core's clock, e.g. --set machine.clock_mhz=2400".into())
        }
        Some(d) => Some(mmulab_model::dram::profile::load(&d.profile).map_err(|e| format!("dram.profile: {e}"))?),
    };
    Ok(MachineSpec {
        cache_mlp: config.caches.as_ref().map_or(1, |c| c.mlp),
        dram,
        numa,
        vm,
        caches,
        format,
        cores: config.machine.cores,
        memory_bytes,
        tlbs,
        data_entry,
        instr_entry,
        pwc_entries: config.walk.pwc_entries.clone(),
        cost: WalkCost {
            mem_latency: config.walk.mem_latency,
            pwc_latency: config.walk.pwc_latency,
            fault_latency: config.os.fault_latency,
        },
        tick_interval: config.os.tick_interval,
        zero_page: config.os.zero_page,
        ad_software: config.machine.ad == Some(AdUpdates::Software),
        charge_app: config.os.charge_app,
        clock_mhz: match config.machine.clock_mhz {
            Some(c) if !(c.is_finite() && c > 0.0 && c <= 1.0e5) => {
                return Err(format!(
                    "machine.clock_mhz = {c} must be a positive number of MHz (e.g. 2000 for 2 GHz)"
                ))
            }
            c => c,
        },
        memory_size: config.memory.size.clone(),
        age: config.memory.age.clone(),
        os: config.os.policy,
    })
}

fn resolve_tlbs(levels: &[TlbSection], seed: u64) -> Result<Vec<TlbSpec>, String> {
    if levels.is_empty() {
        return Err("no [[tlb]] levels".into());
    }
    let mut out = Vec::new();
    for (i, t) in levels.iter().enumerate() {
        let key = |k: &str| {
            format!(
                "tlb[{}].{k}",
                if t.name.is_empty() {
                    i.to_string()
                } else {
                    t.name.clone()
                }
            )
        };
        if t.name.is_empty() {
            return Err(format!("{}: a level needs a non-empty name", key("name")));
        }
        if levels[..i].iter().any(|o| o.name == t.name) {
            return Err(format!("{}: two levels are named '{}'", key("name"), t.name));
        }
        if t.entries == 0 || t.ways == 0 {
            return Err(format!("{} and ways must be positive", key("entries")));
        }
        if t.entries % t.ways != 0 {
            return Err(format!(
                "{} = {} is not a multiple of ways = {} (sets = entries / ways must be whole)",
                key("entries"),
                t.entries,
                t.ways
            ));
        }
        if t.entries > 1 << 24 {
            return Err(format!(
                "{} = {} is implausibly large (limit 16M)",
                key("entries"),
                t.entries
            ));
        }
        let mut sizes = Vec::new();
        for s in &t.page_sizes {
            sizes.push(PageSize::parse(s).map_err(|e| format!("{}: {e}", key("page_sizes")))?);
        }
        sizes.sort();
        sizes.dedup();
        if sizes.is_empty() {
            return Err(format!("{} is empty", key("page_sizes")));
        }
        let next = match &t.next {
            None => None,
            Some(n) => Some(
                levels
                    .iter()
                    .position(|o| &o.name == n)
                    .ok_or_else(|| format!("{} = \"{n}\" names no level", key("next")))?,
            ),
        };
        if next == Some(i) {
            return Err(format!("{} points to itself", key("next")));
        }
        out.push(TlbSpec {
            name: t.name.clone(),
            serves: t.serves,
            entries: t.entries,
            ways: t.ways,
            page_sizes: sizes,
            unsupported: t.unsupported,
            replacement: t.replacement,
            latency: t.latency,
            next,
            seed: seed.wrapping_add(i as u64),
        });
    }
    Ok(out)
}

/// Follows `next` from `start`: no cycles, no level serving only `forbidden`.
fn check_chain(tlbs: &[TlbSpec], start: usize, forbidden: Serves) -> Result<(), String> {
    let mut seen = vec![false; tlbs.len()];
    let mut cur = Some(start);
    let mut depth = 0;
    while let Some(i) = cur {
        if seen[i] {
            return Err(format!("tlb[{}].next forms a cycle", tlbs[i].name));
        }
        seen[i] = true;
        depth += 1;
        if depth > mmulab_model::tlb::MAX_DEPTH {
            return Err(format!(
                "the chain of levels through tlb[{}] is deeper than {}",
                tlbs[start].name,
                mmulab_model::tlb::MAX_DEPTH
            ));
        }
        if tlbs[i].serves == forbidden {
            let (only, path) = if forbidden == Serves::Instr {
                ("instr", "data")
            } else {
                ("data", "instruction")
            };
            return Err(format!(
                "tlb[{}] serves only {only} but is on the {path} path (reached through `next`)",
                tlbs[i].name
            ));
        }
        cur = tlbs[i].next;
    }
    Ok(())
}

fn reaches(tlbs: &[TlbSpec], start: usize, target: usize) -> bool {
    let mut cur = Some(start);
    for _ in 0..=tlbs.len() {
        match cur {
            Some(i) if i == target => return true,
            Some(i) => cur = tlbs[i].next,
            None => return false,
        }
    }
    false
}
