//! Machine configuration: plain serde data parsed from TOML, with `--set` overrides
//! applied to the TOML tree, unknown keys rejected, then validated and resolved once
//! into a [`MachineSpec`] the machine is built from. docs/config.md documents every key.

use crate::limits::sets_machine_name;
use crate::SimError;
use mmulab_model::addr::PageSize;
use mmulab_model::cost::WalkCost;
use mmulab_model::pt::Format;
use mmulab_model::replacement::Policy;
use mmulab_model::tlb::{Serves, TlbSpec, Unsupported};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The built-in default machine (machines/default.toml).
pub const DEFAULT_TOML: &str = include_str!("../../../machines/default.toml");

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
    /// `[os]`.
    #[serde(default)]
    pub os: OsSection,
}

/// `[machine]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSection {
    /// A catalog machine (`cortex-a15`) or the path of a machine TOML file this config is
    /// based on: its keys are merged under this file's (see [`crate::catalog::merge`]).
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

/// `[os]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OsSection {
    /// `base` or `fixed`.
    #[serde(default = "default_os")]
    pub policy: String,
    /// Page size of `fixed`.
    #[serde(default)]
    pub page_size: Option<String>,
    /// Cycles the OS spends per fault (reported apart from translation cycles).
    #[serde(default = "default_fault")]
    pub fault_latency: u32,
    /// References between calls of the policy's background work (`Os::tick`) and
    /// time-series samples' granularity floor.
    #[serde(default = "default_tick")]
    pub tick_interval: u64,
    /// `[os.reservation]` (policy `reservation`).
    #[serde(default)]
    pub reservation: ReservationSection,
    /// `[os.thp]` (policy `thp`).
    #[serde(default)]
    pub thp: ThpSection,
    /// `[os.khugepaged]` (policies `khugepaged`, and `thp` when enabled).
    #[serde(default)]
    pub khugepaged: KhugepagedSection,
    /// `[os.mthp]` (policy `mthp`).
    #[serde(default)]
    pub mthp: MthpSection,
    /// `[os.reclaim]` (memory pressure: policies `base`, `thp`, `khugepaged`, `mthp`).
    #[serde(default)]
    pub reclaim: mmulab_model::os::ReclaimConfig,
}

fn default_tick() -> u64 {
    100_000
}

/// `[os.reservation]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReservationSection {
    /// Reservation and superpage size (default: 2M; 1M on ARMv7 short descriptors).
    #[serde(default)]
    pub size: Option<String>,
    /// Break partial reservations at a tick while free memory is below this share.
    #[serde(default)]
    pub low_watermark: Option<f64>,
    /// Intermediate superpage promoted inside a reservation: `"64K"` or `"none"`
    /// (default: 64K on arm64 with the 4K granule, none elsewhere).
    #[serde(default)]
    pub mid_size: Option<String>,
}

/// `[os.thp]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ThpSection {
    /// `always`, `madvise` or `never`.
    #[serde(default = "always")]
    pub enabled: String,
    /// `always`, `defer`, `defer+madvise`, `madvise` or `never`.
    #[serde(default = "madvise")]
    pub defrag: String,
    /// Cycles of one direct-compaction attempt (the scanners).
    #[serde(default = "default_compaction")]
    pub compaction_cycles: u64,
    /// Cycles to migrate one 4 KiB page during compaction.
    #[serde(default = "default_migrate")]
    pub migrate_cycles_per_page: u64,
    /// Cycles to zero one 4 KiB page at fault (0 = not charged).
    #[serde(default)]
    pub zero_cycles_per_page: u64,
}

fn always() -> String {
    "always".into()
}
fn madvise() -> String {
    "madvise".into()
}
fn default_compaction() -> u64 {
    200_000
}
fn default_migrate() -> u64 {
    4_000
}

impl Default for ThpSection {
    fn default() -> Self {
        ThpSection {
            enabled: always(),
            defrag: madvise(),
            compaction_cycles: default_compaction(),
            migrate_cycles_per_page: default_migrate(),
            zero_cycles_per_page: 0,
        }
    }
}

/// `[os.khugepaged]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KhugepagedSection {
    /// Run the scanner with policy `thp` too (policy `khugepaged` always runs it).
    #[serde(default)]
    pub enabled: bool,
    /// Base pages' worth of 2 MiB ranges scanned per wake-up.
    #[serde(default = "default_pages_to_scan")]
    pub pages_to_scan: u64,
    /// References between wake-ups.
    #[serde(default = "default_scan_period")]
    pub scan_period: u64,
    /// Collapse when at most this many PTEs of the range are empty (0..=511).
    #[serde(default = "default_max_ptes_none")]
    pub max_ptes_none: u64,
    /// Cycles to copy one 4 KiB page at a collapse.
    #[serde(default = "default_copy")]
    pub copy_cycles_per_page: u64,
    /// Direct compaction when a collapse finds no free 2 MiB block (Linux default: on).
    #[serde(default = "yes")]
    pub defrag: bool,
}

fn yes() -> bool {
    true
}

fn default_pages_to_scan() -> u64 {
    4096
}
fn default_scan_period() -> u64 {
    1_000_000
}
fn default_max_ptes_none() -> u64 {
    511
}
fn default_copy() -> u64 {
    1000
}

impl Default for KhugepagedSection {
    fn default() -> Self {
        KhugepagedSection {
            enabled: false,
            pages_to_scan: default_pages_to_scan(),
            scan_period: default_scan_period(),
            max_ptes_none: default_max_ptes_none(),
            copy_cycles_per_page: default_copy(),
            defrag: true,
        }
    }
}

/// `[os.mthp]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MthpSection {
    /// Enabled folio sizes, e.g. `["16K", "64K", "2M"]`.
    #[serde(default = "default_mthp_sizes")]
    pub sizes: Vec<String>,
    /// Cycles to zero each 4 KiB page of a folio beyond the first (0 = not charged).
    #[serde(default)]
    pub zero_cycles_per_page: u64,
}

fn default_mthp_sizes() -> Vec<String> {
    vec!["16K".into(), "64K".into(), "2M".into()]
}

impl Default for MthpSection {
    fn default() -> Self {
        MthpSection {
            sizes: default_mthp_sizes(),
            zero_cycles_per_page: 0,
        }
    }
}

fn default_os() -> String {
    "base".into()
}
fn default_fault() -> u32 {
    1000
}

impl Default for OsSection {
    fn default() -> Self {
        OsSection {
            policy: default_os(),
            page_size: None,
            fault_latency: default_fault(),
            tick_interval: default_tick(),
            reservation: ReservationSection::default(),
            thp: ThpSection::default(),
            khugepaged: KhugepagedSection::default(),
            mthp: MthpSection::default(),
            reclaim: Default::default(),
        }
    }
}

/// The OS policy, resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum OsSpec {
    /// Every page 4 KiB.
    Base,
    /// Every page of one size.
    Fixed(PageSize),
    /// FreeBSD reservations.
    Reservation(mmulab_model::os::ReservationConfig),
    /// Linux THP at fault (with khugepaged if enabled).
    Thp(mmulab_model::os::ThpConfig, mmulab_model::os::KhugepagedConfig),
    /// khugepaged alone (4 KiB at fault).
    Khugepaged(mmulab_model::os::KhugepagedConfig),
    /// Linux multi-size THP.
    Mthp(mmulab_model::os::MthpConfig),
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
    /// OS policy.
    pub os: OsSpec,
    /// The policy's config name (`os.policy`, for reports).
    pub policy_name: String,
    /// Reclaim under memory pressure (`[os.reclaim]`, validated).
    pub reclaim: mmulab_model::os::ReclaimConfig,
    /// References between calls of the policy's background work (`os.tick_interval`).
    pub tick_interval: u64,
    /// `memory.size` as written (for messages).
    pub memory_size: String,
    /// Reproducible fragmentation before the run (`[memory.age]`), if any.
    pub age: Option<AgeSection>,
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
    let text = match path {
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| SimError::Config(format!("cannot read config {}: {e}", p.display())))?,
        // `--set machine.name=X` without a file: machine X, as `--machine X` (the
        // built-in default's keys laid over X would hide it).
        None if sets.iter().any(|s| sets_machine_name(s)) => {
            return from_table(toml::Table::new(), None, sets);
        }
        None => DEFAULT_TOML.to_string(),
    };
    from_toml(&text, path, sets)
}

/// Loads a machine by catalog name or path (`--machine`), optionally with a config
/// file laid over it (`--config`; its own `[machine] name` is replaced), applies `sets`,
/// validates.
pub fn load_machine(machine: &str, path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
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
    from_table(table, path, sets)
}

/// Parses config text (`path` only names it in errors), applies `sets`, validates.
pub fn from_toml(text: &str, path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
    let src = origin(path);
    let table: toml::Table =
        toml::from_str(text).map_err(|e| SimError::Config(format!("{src}: {}", e.to_string().trim_end())))?;
    from_table(table, path, sets)
}

/// Resolves a parsed config's `[machine] name` (merging the named machine under it),
/// applies `sets`, validates.
pub fn from_table(table: toml::Table, path: Option<&Path>, sets: &[String]) -> Result<MachineSpec, SimError> {
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
    let mut table = crate::catalog::expand(table, path)?;
    for s in sets.iter().filter(|s| !sets_machine_name(s)) {
        apply_set(&mut table, s)?;
    }
    let config: Config = Config::deserialize(toml::Value::Table(table)).map_err(|e| {
        let how = if sets.is_empty() {
            String::new()
        } else {
            " (after --set overrides)".into()
        };
        SimError::Config(format!("{src}{how}: {}", e.to_string().trim_end()))
    })?;
    validate(config).map_err(|e| SimError::Config(format!("{src}: {e}")))
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
    if config.machine.cores == 0 || config.machine.cores > 4096 {
        return Err(format!(
            "machine.cores = {} must be between 1 and 4096",
            config.machine.cores
        ));
    }
    let memory_bytes = crate::limits::check_config(&config, format)?;
    if config.walk.pwc_entries.len() >= format.levels().len() {
        return Err(format!(
            "walk.pwc_entries has {} values; {} has {} upper levels",
            config.walk.pwc_entries.len(),
            format.arch_name(),
            format.levels().len() - 1
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
    let os = match config.os.policy.as_str() {
        "base" => {
            if config.os.page_size.is_some() {
                return Err("os.page_size only applies to policy = \"fixed\"".into());
            }
            OsSpec::Base
        }
        "fixed" => {
            let s = config
                .os
                .page_size
                .as_deref()
                .ok_or("os.policy = \"fixed\" needs os.page_size (e.g. \"2M\")")?;
            let size = PageSize::parse(s).map_err(|e| format!("os.page_size: {e}"))?;
            if format.leaf_level(size).is_none() {
                return Err(format!(
                    "os.page_size = \"{s}\": {} page tables map {} leaves only",
                    format.arch_name(),
                    format
                        .page_sizes()
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if size.bytes() > memory_bytes {
                return Err(format!("os.page_size = \"{s}\" is larger than memory.size"));
            }
            OsSpec::Fixed(size)
        }
        other => crate::config_os::resolve_policy(other, &config.os, format)?,
    };
    crate::config_os::check_common(&config, memory_bytes)?;
    Ok(MachineSpec {
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
        reclaim: crate::config_os::reclaim_config(&config.os)?,
        policy_name: config.os.policy.clone(),
        tick_interval: config.os.tick_interval,
        memory_size: config.memory.size.clone(),
        age: config.memory.age.clone(),
        os,
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
