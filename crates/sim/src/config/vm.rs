//! `[vm]`: the machine runs its trace in a guest (docs/virtualization.md). The guest's
//! page tables are `machine.arch` tables in guest-physical memory (`vm.memory`), mapped
//! by the `[os]` policy; a host maps guest-physical memory into stage-2 tables
//! (`vm.stage2`) with its own policy (`vm.backing`) in the machine's memory
//! (`memory.size`). Without `[vm]` (or with `vm.enabled = false`) nothing changes.

use super::limits::MAX_PWC_ENTRIES;
use super::os::OsSpec;
use mmulab_model::addr::PageSize;
use mmulab_model::kvm::{Granule, Variant};
use mmulab_model::os::{KhugepagedConfig, ReclaimConfig, ThpConfig};
use mmulab_model::pt::Format;
use mmulab_model::replacement::Policy;
use mmulab_model::tlb::{Serves, TlbSpec, Unsupported};
use serde::{Deserialize, Serialize};

/// `[vm]` as written.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VmSection {
    /// False: no guest (the section is ignored). Default true.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The stage-2 format: `ept` or `npt` (x86-64 hosts), `aarch64-s2`,
    /// `aarch64-s2-16k`, `aarch64-s2-64k` (arm64 hosts). Default: `ept` for an x86-64
    /// guest, `aarch64-s2` for an Arm one.
    #[serde(default)]
    pub stage2: Option<String>,
    /// How the host backs guest memory: `4K` (or `base`: the granule's base page),
    /// `thp`, `hugetlb-2M`, `hugetlb-1G`, or `hugetlb-SIZE` for any leaf size of the
    /// stage-2 format. Default `4K`.
    #[serde(default = "default_backing")]
    pub backing: String,
    /// Guest-physical memory, e.g. `"4GiB"`, at most `memory.size`. Default: half of
    /// `memory.size` (the rest is the host's own).
    #[serde(default)]
    pub memory: Option<String>,
    /// Stage-2 page-walk-cache entries per upper stage-2 level, root first. Default: none.
    #[serde(default)]
    pub pwc_entries: Vec<usize>,
    /// A stage-2-only TLB (IPA → PA; Cortex-A55/A76's IPA cache, gem5's stage-2 TLB).
    /// Default: none.
    #[serde(default)]
    pub s2tlb: Option<S2TlbSection>,
    /// KVM/arm64 dirty logging turned on for one memslot during the run
    /// (`[vm.dirty_log]`, system/dirty_log.rs). Default: none.
    #[serde(default)]
    pub dirty_log: Option<DirtyLogSection>,
}

/// `[vm.dirty_log]`: what a live migration's first step does to a running guest.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DirtyLogSection {
    /// Logging turns on after this many trace references (0: before the first).
    pub at: u64,
    /// The memslot's first guest-physical byte, e.g. `"0"` or `"1GiB"`. Default `"0"`.
    #[serde(default)]
    pub start: Option<String>,
    /// The memslot's size. Default: guest memory from `start` to its end.
    #[serde(default)]
    pub bytes: Option<String>,
    /// `KVM_CAP_ARM_EAGER_SPLIT_CHUNK_SIZE`: `"0"` (off: blocks are broken one write
    /// fault at a time) or a block size of the granule (`"2M"`, `"1G"` at 4K). Default
    /// `"0"`, the kernel's.
    #[serde(default)]
    pub eager_split_chunk: Option<String>,
    /// The split walker: `vanilla` (today's kernel), `skip-level3` or `skip-children`
    /// (the RFC's, docs/kvm-split.md). Default `vanilla`.
    #[serde(default)]
    pub split_walker: Option<String>,
}

/// `[vm.s2tlb]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct S2TlbSection {
    /// Entries.
    pub entries: usize,
    /// Ways (= entries: fully associative).
    pub ways: usize,
    /// Page sizes held, e.g. `["4K", "2M"]`.
    pub page_sizes: Vec<String>,
    /// Lookup latency in cycles. Default 1.
    #[serde(default = "one")]
    pub latency: u32,
    /// Replacement policy. Default `lru`.
    #[serde(default = "lru")]
    pub replacement: Policy,
}

fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
}
fn lru() -> Policy {
    Policy::Lru
}
fn default_backing() -> String {
    "4K".into()
}

/// A validated `[vm]`.
#[derive(Clone, Debug)]
pub struct VmSpec {
    /// Stage-2 format.
    pub stage2: Format,
    /// `vm.backing` as written.
    pub backing: String,
    /// The host's policy for guest memory.
    pub host_os: OsSpec,
    /// Guest-physical bytes.
    pub guest_bytes: u64,
    /// Stage-2 page-walk-cache entries per upper level.
    pub pwc_entries: Vec<usize>,
    /// The stage-2-only TLB, if any.
    pub s2tlb: Option<TlbSpec>,
    /// Dirty logging, if configured.
    pub dirty_log: Option<DirtyLogSpec>,
}

/// A validated `[vm.dirty_log]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyLogSpec {
    /// Logging turns on after this many references.
    pub at: u64,
    /// The memslot `[start, end)` (guest-physical, granule-aligned).
    pub start: u64,
    /// Its end.
    pub end: u64,
    /// The stage-2 granule.
    pub granule: Granule,
    /// Eager-split chunk in bytes (0: off).
    pub chunk: u64,
    /// The split walker.
    pub variant: Variant,
}

/// Resolves `[vm]` for a guest of format `guest` on a host of `host_bytes`.
pub(crate) fn resolve(vm: &VmSection, guest: Format, host_bytes: u64, seed: u64) -> Result<Option<VmSpec>, String> {
    if !vm.enabled {
        return Ok(None);
    }
    let x86 = guest == Format::X86_64;
    let name = vm
        .stage2
        .clone()
        .unwrap_or_else(|| if x86 { "ept" } else { "aarch64-s2" }.into());
    let stage2 = match name.as_str() {
        "npt" => Some(Format::X86_64),
        n => Format::from_arch_name(n),
    };
    let ok_x86 = [Format::Ept, Format::X86_64];
    let ok_arm = [Format::Aarch64S2_4K, Format::Aarch64S2_16K, Format::Aarch64S2_64K];
    let stage2 = match stage2 {
        Some(f) if x86 && ok_x86.contains(&f) => f,
        Some(f) if !x86 && ok_arm.contains(&f) => f,
        _ => {
            let (host, names) = if x86 {
                ("an x86-64", "\"ept\" (Intel) or \"npt\" (AMD)")
            } else {
                ("an arm64", "\"aarch64-s2\", \"aarch64-s2-16k\" or \"aarch64-s2-64k\"")
            };
            return Err(format!(
                "vm.stage2 = \"{name}\": {host} host (machine.arch = \"{}\") has no such stage-2 format; use {names}",
                guest.arch_name()
            ));
        }
    };
    let memory = vm
        .memory
        .clone()
        .unwrap_or_else(|| format!("{}KiB", ((host_bytes / 2) & !0xfff) >> 10));
    let guest_bytes = mmulab_trace::units::parse_size(&memory).map_err(|e| format!("vm.memory = \"{memory}\": {e}"))?;
    if guest_bytes < 1 << 20 || guest_bytes % 4096 != 0 {
        return Err(format!(
            "vm.memory = \"{}\" must be a multiple of 4 KiB of at least 1 MiB",
            memory
        ));
    }
    if guest_bytes > host_bytes {
        return Err(format!(
            "vm.memory = \"{}\" is larger than the host's memory.size ({} bytes); shrink the guest or grow memory.size",
            memory, host_bytes
        ));
    }
    if guest_bytes > 1u64 << stage2.va_bits() {
        return Err(format!(
            "vm.memory = \"{}\" is beyond the {}-bit guest-physical space of {} tables",
            memory,
            stage2.va_bits(),
            stage2.arch_name()
        ));
    }
    let host_os = backing(&vm.backing, stage2)?;
    if let OsSpec::Fixed(size) = host_os {
        if guest_bytes % size.bytes() != 0 {
            return Err(format!(
                "vm.memory = \"{}\" is not a multiple of the {size} pages vm.backing = \"{}\" maps",
                memory, vm.backing
            ));
        }
    }
    super::os::check_policy(&host_os, stage2, host_bytes)
        .map_err(|e| format!("vm.backing = \"{}\": {e}", vm.backing))?;
    if vm.pwc_entries.len() >= stage2.levels().len() {
        return Err(format!(
            "vm.pwc_entries has {} values; {} has {} upper levels",
            vm.pwc_entries.len(),
            stage2.arch_name(),
            stage2.levels().len() - 1
        ));
    }
    if let Some((i, e)) = vm.pwc_entries.iter().enumerate().find(|(_, &e)| e > MAX_PWC_ENTRIES) {
        return Err(format!(
            "vm.pwc_entries[{i}] = {e} is out of range (0 to {MAX_PWC_ENTRIES})"
        ));
    }
    let s2tlb = match &vm.s2tlb {
        None => None,
        Some(t) => Some(s2tlb(t, seed)?),
    };
    let dirty_log = match &vm.dirty_log {
        None => None,
        Some(d) => Some(dirty_log(d, &name, stage2, &host_os, &vm.backing, guest_bytes)?),
    };
    Ok(Some(VmSpec {
        stage2,
        backing: vm.backing.clone(),
        host_os,
        guest_bytes,
        pwc_entries: vm.pwc_entries.clone(),
        s2tlb,
        dirty_log,
    }))
}

/// Validates `[vm.dirty_log]` over `stage2` tables (`vm.stage2 = name`) backed by `host_os` (`vm.backing`).
fn dirty_log(
    d: &DirtyLogSection,
    name: &str,
    stage2: Format,
    host_os: &OsSpec,
    backing: &str,
    guest_bytes: u64,
) -> Result<DirtyLogSpec, String> {
    // The split walker and fault path modelled are KVM/arm64's (arch/arm64/kvm/mmu.c,
    // hyp/pgtable.c); x86's TDP MMU splits otherwise (tdp_mmu_split_huge_pages_root).
    let Some(granule) = Granule::ALL
        .into_iter()
        .find(|&g| mmulab_model::kvm::s2_format(g) == stage2)
    else {
        return Err(format!(
            "vm.dirty_log models KVM/arm64's dirty logging; vm.stage2 = \"{name}\" is not an arm64 stage-2 format (use \"aarch64-s2\", \"aarch64-s2-16k\" or \"aarch64-s2-64k\", with an arm64 guest)"
        ));
    };
    if let OsSpec::Fixed(size) = host_os {
        if *size != granule.page() && !granule.block_sizes().contains(size) {
            return Err(format!(
                "vm.dirty_log with vm.backing = \"{backing}\": KVM maps no contiguous-bit stage-2 groups ({size}); use a backing of {} pages or blocks ({})",
                granule.page(),
                granule.block_sizes().iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let size = |key: &str, v: &str| {
        mmulab_trace::units::parse_size(v).map_err(|e| format!("vm.dirty_log.{key} = \"{v}\": {e}"))
    };
    let start = match &d.start {
        Some(v) => size("start", v)?,
        None => 0,
    };
    let bytes = match &d.bytes {
        Some(v) => size("bytes", v)?,
        None => guest_bytes.saturating_sub(start),
    };
    let page = granule.page().bytes();
    if start % page != 0 || bytes % page != 0 || bytes == 0 {
        return Err(format!(
            "vm.dirty_log: the memslot (start {start:#x}, {bytes:#x} bytes) must be a non-empty whole number of {} pages",
            granule.page()
        ));
    }
    if start.checked_add(bytes).is_none_or(|e| e > guest_bytes) {
        return Err(format!(
            "vm.dirty_log: the memslot (start {start:#x}, {bytes:#x} bytes) reaches past guest memory (vm.memory = {guest_bytes:#x} bytes)"
        ));
    }
    let chunk = match d.eager_split_chunk.as_deref() {
        None | Some("0") | Some("off") => 0,
        Some(v) => PageSize::parse(v)
            .map(|p| p.bytes())
            .map_err(|e| format!("vm.dirty_log.eager_split_chunk = \"{v}\": {e}"))?,
    };
    if chunk != 0 && !granule.block_sizes().iter().any(|b| b.bytes() == chunk) {
        return Err(format!(
            "vm.dirty_log.eager_split_chunk = \"{}\" is not a block size of the {} granule; use \"0\" (off) or one of {}",
            d.eager_split_chunk.as_deref().unwrap_or_default(),
            granule.name(),
            granule.block_sizes().iter().map(|b| format!("\"{b}\"")).collect::<Vec<_>>().join(", ")
        ));
    }
    let variant = match d.split_walker.as_deref() {
        None => Variant::Vanilla,
        Some(v) => Variant::ALL.into_iter().find(|x| x.name() == v).ok_or_else(|| {
            format!("vm.dirty_log.split_walker = \"{v}\" is not a split walker; use \"vanilla\", \"skip-level3\" or \"skip-children\"")
        })?,
    };
    Ok(DirtyLogSpec {
        at: d.at,
        start,
        end: start + bytes,
        granule,
        chunk,
        variant,
    })
}

/// The host policy `vm.backing` names over `stage2` tables.
fn backing(b: &str, stage2: Format) -> Result<OsSpec, String> {
    let sizes = || {
        let v: Vec<String> = stage2.page_sizes().iter().map(|p| p.to_string()).collect();
        v.join(", ")
    };
    let reclaim = ReclaimConfig::default();
    match b {
        "base" => return Ok(OsSpec::Base { reclaim }),
        "thp" => {
            return Ok(OsSpec::Thp {
                thp: ThpConfig::default(),
                khugepaged: KhugepagedConfig::default(),
                reclaim,
            })
        }
        _ => {}
    }
    let (size, huge) = match b.strip_prefix("hugetlb-") {
        Some(s) => (s, true),
        None => (b, false),
    };
    let bad = || {
        format!(
            "vm.backing = \"{b}\" is not a backing; use \"4K\" (or \"base\"), \"thp\", or \"hugetlb-SIZE\" with a size {} tables map ({})",
            stage2.arch_name(),
            sizes()
        )
    };
    let size = PageSize::parse(size).map_err(|_| bad())?;
    if !huge && size == stage2.base_page() {
        return Ok(OsSpec::Base { reclaim });
    }
    if !huge {
        return Err(bad());
    }
    if stage2.leaf_level(size).is_none() {
        return Err(format!(
            "vm.backing = \"{b}\": {} tables have no {size} leaf; they map {}",
            stage2.arch_name(),
            sizes()
        ));
    }
    Ok(OsSpec::Fixed(size))
}

/// The stage-2 TLB's spec.
fn s2tlb(t: &S2TlbSection, seed: u64) -> Result<TlbSpec, String> {
    if t.entries == 0 || t.ways == 0 || t.entries % t.ways != 0 || t.entries > 1 << 24 {
        return Err(format!(
            "vm.s2tlb.entries = {} with ways = {}: both positive, entries a multiple of ways (at most 16M)",
            t.entries, t.ways
        ));
    }
    let mut page_sizes = Vec::new();
    for s in &t.page_sizes {
        page_sizes.push(PageSize::parse(s).map_err(|e| format!("vm.s2tlb.page_sizes: {e}"))?);
    }
    page_sizes.sort();
    page_sizes.dedup();
    if page_sizes.is_empty() {
        return Err("vm.s2tlb.page_sizes is empty".into());
    }
    Ok(TlbSpec {
        name: "s2tlb".into(),
        serves: Serves::Unified,
        entries: t.entries,
        ways: t.ways,
        page_sizes,
        unsupported: Unsupported::Splinter,
        replacement: t.replacement,
        latency: t.latency,
        next: None,
        seed: seed ^ 0x5_2000,
    })
}
