//! The simulated side: a scenario replayed on mmulab's `thp` policy (with its per-size
//! mTHP modes) configured from the live settings ([`crate::host::HostThp`]), on one
//! address space with the same VMAs at the same addresses as the native run and the
//! same touches in the same order.
//!
//! fork is not a model operation: a fork block's touches are replayed by the kernel's
//! rules for the child (mm/huge_memory.c `copy_huge_pmd` shares each PMD-mapped page
//! write-protected; the child's first store to one splits the child's PMD,
//! `do_huge_pmd_wp_page` → `__split_huge_pmd`, `THP_SPLIT_PMD`, and copies one base page;
//! its store to the huge zero page allocates a THP, `do_huge_zero_wp_pmd`). A child's
//! touch of a page the parent has not mapped is refused as not modelled.

use crate::host::HostThp;
use crate::native::RegionView;
use crate::script::{Adv, Op, Script, PAGE};
use mmulab_model::addr::FolioSize;
use mmulab_model::mem::Memory;
use mmulab_model::os::{
    granule, Advice, Defrag, Enabled, FaultCtx, KhugepagedConfig, Os, OsPolicy, SizeMode, Thp, ThpConfig,
};
use mmulab_model::pt::Format;
use mmulab_model::space::AddressSpace;
use mmulab_model::translation::Attrs;
use mmulab_model::walk::lookup;
use mmulab_trace::AccessKind;
use std::collections::{BTreeMap, BTreeSet};

/// The model's result.
#[derive(Clone, Debug, Default)]
pub struct ModelRun {
    /// Counters under the kernel's names.
    pub counters: BTreeMap<String, u64>,
    /// Per marked point (the end included), per region.
    pub marks: Vec<Vec<RegionView>>,
}

/// The page-table format of this machine's kernel.
pub fn host_format() -> Format {
    if cfg!(target_arch = "aarch64") {
        Format::Armv8_4K
    } else {
        Format::X86_64
    }
}

/// The policy the live settings describe (what [`HostThp::os_toml`] writes, built
/// directly).
pub fn policy(h: &HostThp) -> Result<Os, String> {
    let enabled = match h.enabled.as_str() {
        "always" => Enabled::Always,
        "madvise" => Enabled::Madvise,
        "never" => Enabled::Never,
        o => return Err(format!("enabled = {o} is not known to the model")),
    };
    let defrag = match h.defrag.as_str() {
        "always" => Defrag::Always,
        "defer" => Defrag::Defer,
        "defer+madvise" => Defrag::DeferMadvise,
        "madvise" => Defrag::Madvise,
        _ => Defrag::Never,
    };
    let mut sizes = BTreeMap::new();
    for (b, m) in &h.sizes {
        if *b < 16 << 10 {
            continue;
        }
        let p = FolioSize::parse(&crate::host::size_name(*b)).map_err(|e| format!("hugepages-{}kB: {e}", b >> 10))?;
        let mode = match m.as_str() {
            "always" => SizeMode::Always,
            "madvise" => SizeMode::Madvise,
            "inherit" => SizeMode::Inherit,
            _ => SizeMode::Never,
        };
        sizes.insert(p, mode);
    }
    let cfg = ThpConfig {
        enabled,
        defrag,
        use_zero_page: h.use_zero_page,
        shrink_underused: h.shrink_underused,
        sizes,
        ..ThpConfig::default()
    };
    let k = KhugepagedConfig {
        enabled: false,
        max_ptes_none: h.max_ptes_none,
        defrag: h.khugepaged_defrag,
        ..KhugepagedConfig::default()
    };
    let mut os = Os::Thp(Thp::new(cfg, k));
    os.set_zero_page(true);
    Ok(os)
}

struct Sim {
    mem: Memory,
    space: AddressSpace,
    os: Os,
    extra: BTreeMap<String, u64>,
    /// The 4 KiB pages the scenario stored to (every store writes a 1): what the THP
    /// shrinker reads as not zero-filled. A munmap or MADV_DONTNEED empties them again.
    written: BTreeSet<u64>,
}

impl Sim {
    fn touch(&mut self, va: u64, write: bool) -> Result<(), String> {
        if write {
            self.written.insert(va);
        }
        let (fmt, root) = (self.space.fmt, self.space.root);
        if let Some(m) = lookup(&mut self.mem, fmt, root, va) {
            if !write || m.attrs.has(Attrs::WRITABLE) {
                return Ok(());
            }
        }
        let mut sd = Vec::new();
        self.os
            .handle_fault(FaultCtx {
                mem: &mut self.mem,
                space: &mut self.space,
                va,
                kind: if write { AccessKind::Store } else { AccessKind::Load },
                shootdowns: &mut sd,
            })
            .map_err(|e| format!("model fault at {va:#x}: {e}"))
    }

    /// The pages of `[start, end)` are gone: zero-filled when mapped again.
    fn forget(&mut self, start: u64, end: u64) {
        let gone: Vec<u64> = self.written.range(start..end).copied().collect();
        for va in gone {
            self.written.remove(&va);
        }
    }

    /// A touch by a forked child (module doc).
    fn child_touch(&mut self, va: u64, write: bool, split: &mut BTreeSet<u64>) -> Result<(), String> {
        let (fmt, root) = (self.space.fmt, self.space.root);
        let pmd = granule::linux_pmd_size(fmt).map_err(|e| e.to_string())?;
        let Some(m) = lookup(&mut self.mem, fmt, root, va) else {
            return Err(format!(
                "a forked child touches {va:#x}, which the parent has not mapped: not modelled"
            ));
        };
        if !write || m.size != pmd || split.contains(&m.va) {
            return Ok(());
        }
        split.insert(m.va);
        let name = if self.mem.zero.contains_pa(m.pa) {
            *self
                .extra
                .entry(format!("hugepages-{}kB/anon_fault_alloc", pmd.bytes() >> 10))
                .or_default() += 1;
            "thp_fault_alloc"
        } else {
            "thp_split_pmd"
        };
        *self.extra.entry(name.to_string()).or_default() += 1;
        Ok(())
    }

    fn views(&mut self, bases: &[u64], lens: &[u64]) -> Vec<RegionView> {
        let (fmt, root) = (self.space.fmt, self.space.root);
        let pmd = granule::linux_pmd_size(fmt).ok();
        let vmas = self.space.vmas.clone();
        bases
            .iter()
            .zip(lens)
            .map(|(&b, &l)| {
                let mut v = RegionView::default();
                for vma in vmas.iter().filter(|x| x.start < b + l && b < x.end) {
                    v.vmas += 1;
                    for m in mmulab_model::os::remap::leaves(&mut self.mem, fmt, root, vma.start, vma.end) {
                        if self.mem.zero.contains_pa(m.pa) {
                            continue;
                        }
                        let s = m.va.max(vma.start);
                        let e = (m.va + m.size.bytes()).min(vma.end);
                        v.rss_kb += (e - s) >> 10;
                        if Some(m.size) == pmd {
                            v.anon_huge_kb += (e - s) >> 10;
                        }
                    }
                }
                v
            })
            .collect()
    }
}

/// Replays `script` on the model with the regions at `bases` (the native run's).
pub fn run(script: &Script, host: &HostThp, bases: &[u64]) -> Result<ModelRun, String> {
    let fmt = host_format();
    let mut mem = Memory::new(1 << 30).map_err(|e| e.to_string())?;
    let space = AddressSpace::new(1, fmt, &mut mem).map_err(|e| e.to_string())?;
    let mut s = Sim {
        mem,
        space,
        os: policy(host)?,
        extra: BTreeMap::new(),
        written: BTreeSet::new(),
    };
    let mut lens = vec![0u64; bases.len()];
    let mut out = ModelRun::default();
    let mut child: Option<BTreeSet<u64>> = None;
    let err = |e: mmulab_model::ModelError| e.to_string();
    for op in &script.ops {
        let mut sd = Vec::new();
        match *op {
            Op::Map { r, len, .. } => {
                s.space.add_vma(bases[r], bases[r] + len, false).map_err(err)?;
                lens[r] = len;
            }
            Op::Madvise { r, off, len, adv } => {
                let a = match adv {
                    Adv::Hugepage => Advice::Hugepage,
                    Adv::NoHugepage => Advice::NoHugepage,
                    Adv::DontNeed => Advice::DontNeed,
                    Adv::Collapse => Advice::Collapse,
                };
                let st = bases[r] + off;
                s.os.madvise(&mut s.mem, &mut s.space, st, st + len, a, &mut sd)
                    .map_err(err)?;
                if adv == Adv::DontNeed {
                    s.forget(st, st + len);
                }
            }
            Op::Touch { r, off, len, write } => {
                let mut va = bases[r] + off;
                while va < bases[r] + off + len {
                    match &mut child {
                        Some(split) => s.child_touch(va, write, split)?,
                        None => s.touch(va, write)?,
                    }
                    va += PAGE;
                }
            }
            Op::Munmap { r, off, len } => {
                let st = bases[r] + off;
                s.os.unmap(&mut s.mem, &mut s.space, st, st + len, &mut sd)
                    .map_err(err)?;
                s.forget(st, st + len);
                if off + len == lens[r] {
                    lens[r] = off;
                }
            }
            Op::Mprotect { r, off, len, writable } => {
                let st = bases[r] + off;
                s.os.protect(&mut s.mem, &mut s.space, st, st + len, writable, &mut sd)
                    .map_err(err)?;
            }
            Op::Mremap { r, len } => {
                if !s.space.grow(bases[r] + lens[r], bases[r] + len) {
                    return Err("mremap: the model could not grow the VMA in place".into());
                }
                lens[r] = len;
            }
            Op::Fork => child = Some(BTreeSet::new()),
            Op::End => child = None,
            Op::Mark => out.marks.push(s.views(bases, &lens)),
            Op::Shrink => {
                let written = &s.written;
                let contents = |_, va: u64| Some(!written.contains(&(va & !(PAGE - 1))));
                s.os.deferred_split_scan(&mut s.mem, &contents, u64::MAX, &mut sd);
            }
        }
    }
    out.marks.push(s.views(bases, &lens));
    let mut c: BTreeMap<String, u64> = s.os.stats().kernel_counters().into_iter().collect();
    for (k, v) in s.extra {
        *c.entry(k).or_default() += v;
    }
    out.counters = c;
    Ok(out)
}
