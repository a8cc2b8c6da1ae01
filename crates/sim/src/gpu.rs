//! GPUs on a machine: profiles (`machines/gpu/*.toml`, built in), attaching a GPU to a
//! [`Machine`] as a device requester (`translator::Device`) over its shared
//! physical memory, running a GPU trace or workload through it, and its statistics
//! ([`GpuStats`], the `gpu` array of the JSON report; docs/output.md).

use crate::machine::Machine;
use crate::translator::{Device, Translator};
use crate::SimError;
use mmulab_model::gpu::driver::{Backing, DriverSpec, Gpu, GpuKind};
use mmulab_model::gpu::mmu::MmuSpec;
use mmulab_model::gpu::va::AlignPolicy;
use mmulab_model::gpu::GpuError;
use mmulab_trace::gpu::{GpuEvent, GpuSource};
use mmulab_trace::units::parse_size;
use mmulab_trace::{AccessKind, MemRef};
use serde::{Deserialize, Serialize};

/// The built-in GPU profiles (`machines/gpu/NAME.toml`).
pub const PROFILES: [(&str, &str); 3] = [
    ("pi4-v3d", include_str!("../../../machines/gpu/pi4-v3d.toml")),
    ("pi5-v3d", include_str!("../../../machines/gpu/pi5-v3d.toml")),
    ("mali-g57", include_str!("../../../machines/gpu/mali-g57.toml")),
];

/// The two page-table variants of the reproduction and of `pages =`.
pub const PAGES: [&str; 2] = ["4K-only", "big-super"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    description: String,
    cpu: String,
    gpu: String,
    kernel_page: String,
    #[serde(default)]
    pages: Option<String>,
    #[serde(default)]
    align: Option<String>,
    #[serde(default)]
    backing: Option<String>,
    #[serde(default)]
    mmu: MmuSection,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MmuSection {
    tlb_entries: Option<usize>,
    tlb_ways: Option<usize>,
    ptec_lines: Option<usize>,
    ptec_ways: Option<usize>,
    ptec_cycles: Option<u32>,
    fetch_cycles: Option<u32>,
    flush_cycles: Option<u32>,
    access_cycles: Option<u32>,
}

/// A validated GPU profile.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuProfile {
    /// Profile name (file stem).
    pub name: String,
    /// One line describing it.
    pub description: String,
    /// The CPU machine it sits beside (a catalog name).
    pub cpu: String,
    /// "4K-only" or "big-super".
    pub pages: String,
    /// The driver.
    pub driver: DriverSpec,
    /// The MMU.
    pub mmu: MmuSpec,
}

/// Loads a GPU profile: a built-in name (`pi4-v3d`, `pi5-v3d`, `mali-g57`) or a TOML
/// file; `pages` ("4K-only" | "big-super") overrides the file's `pages`.
pub fn load_profile(name_or_file: &str, pages: Option<&str>) -> Result<GpuProfile, SimError> {
    let (name, text, origin) = match PROFILES.iter().find(|(n, _)| *n == name_or_file) {
        Some((n, t)) => (n.to_string(), t.to_string(), format!("built-in GPU profile {n}")),
        None => {
            let path = std::path::Path::new(name_or_file);
            let text = std::fs::read_to_string(path).map_err(|e| {
                SimError::Config(format!(
                    "GPU profile '{name_or_file}' is neither built in ({}) nor a readable file: {e}",
                    PROFILES.map(|p| p.0).join(", ")
                ))
            })?;
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("gpu").to_string();
            (stem, text, name_or_file.to_string())
        }
    };
    parse_profile(&name, &text, pages).map_err(|e| SimError::Config(format!("{origin}: {e}")))
}

fn parse_profile(name: &str, text: &str, pages: Option<&str>) -> Result<GpuProfile, String> {
    let f: ProfileFile = toml::from_str(text).map_err(|e| e.to_string())?;
    let kind = match f.gpu.as_str() {
        "v3d" => GpuKind::V3d,
        "mali" => GpuKind::Mali,
        o => return Err(format!("gpu = \"{o}\": use \"v3d\" or \"mali\"")),
    };
    let kernel_page = parse_size(&f.kernel_page).map_err(|e| format!("kernel_page: {e}"))?;
    if kernel_page != 4096 && kernel_page != 16384 {
        return Err(format!("kernel_page = \"{}\": use \"4K\" or \"16K\"", f.kernel_page));
    }
    let pages = pages
        .map(str::to_string)
        .or(f.pages)
        .unwrap_or_else(|| "big-super".into());
    let (large, mut align, mut backing) = match pages.as_str() {
        "4K-only" => (false, AlignPolicy::K128, Backing::Shmem),
        "big-super" => (true, AlignPolicy::SizeClass, Backing::Gemfs),
        o => return Err(format!("pages = \"{o}\": use \"4K-only\" or \"big-super\"")),
    };
    if let Some(a) = &f.align {
        align = AlignPolicy::parse(a).map_err(|e| format!("align: {e}"))?;
    }
    if let Some(b) = &f.backing {
        backing = match b.as_str() {
            "shmem" => Backing::Shmem,
            "gemfs" => Backing::Gemfs,
            o => return Err(format!("backing = \"{o}\": use \"shmem\" or \"gemfs\"")),
        };
    }
    let d = MmuSpec::v3d();
    let m = f.mmu;
    let mmu = MmuSpec {
        tlb_entries: m.tlb_entries.unwrap_or(d.tlb_entries),
        tlb_ways: m.tlb_ways.unwrap_or(d.tlb_ways),
        ptec_lines: m.ptec_lines.unwrap_or(d.ptec_lines),
        ptec_ways: m.ptec_ways.unwrap_or(d.ptec_ways),
        ptec_cycles: m.ptec_cycles.unwrap_or(d.ptec_cycles),
        fetch_cycles: m.fetch_cycles.unwrap_or(d.fetch_cycles),
        flush_cycles: m.flush_cycles.unwrap_or(d.flush_cycles),
        access_cycles: m.access_cycles.unwrap_or(d.access_cycles),
    };
    Ok(GpuProfile {
        name: name.to_string(),
        description: f.description,
        cpu: f.cpu,
        pages,
        driver: DriverSpec {
            kind,
            kernel_page,
            align,
            backing,
            large,
        },
        mmu,
    })
}

/// A GPU's statistics (the `gpu` array of the JSON report; docs/output.md).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct GpuStats {
    /// Profile name.
    pub profile: String,
    /// "4K-only" or "big-super".
    pub pages: String,
    /// The driver configuration.
    pub driver: DriverSpec,
    /// The MMU geometry and costs (assumed values).
    pub mmu: MmuSpec,
    /// GPU accesses translated.
    pub accesses: u64,
    /// GPU TLB misses.
    pub tlb_misses: u64,
    /// TLB misses per 1,000 accesses.
    pub tlb_misses_per_1k: f64,
    /// Descriptor-line lookups in the PTE cache.
    pub ptec_lookups: u64,
    /// Descriptor lines fetched from memory (PTE cache misses).
    pub pte_fetches: u64,
    /// Accesses redirected to the scratch page (invalid PTE).
    pub scratch: u64,
    /// Stores to read-only pages.
    pub write_violations: u64,
    /// Full (V3D) or range (Mali) MMU flushes.
    pub flushes: u64,
    /// Cycles of those flushes (cost model).
    pub flush_cycles: u64,
    /// Estimated GPU cycles (cost model: accesses, TLB misses, PTE fetches, flushes).
    pub gpu_cycles: u64,
    /// TLB fills by the page size of the PTE: 4K, 64K, 1M, 2M.
    pub tlb_fills: [u64; 4],
    /// Bytes of every BO created by the page size its PTEs map: 4K, 64K, 1M, 2M.
    pub mapped_bytes: [u64; 4],
    /// Share of those bytes in pages larger than 4 KiB.
    pub coverage: f64,
    /// BOs created, destroyed, live at the end.
    pub bos_created: u64,
    /// BOs destroyed.
    pub bos_destroyed: u64,
    /// BOs live at the end.
    pub bos_live: usize,
    /// PTEs written.
    pub ptes_written: u64,
    /// Scatterlist segments of the BOs created.
    pub segments: u64,
    /// Transparent huge pages gemfs got, and huge-page parts it had to back with kernel
    /// pages.
    pub thp: u64,
    /// Huge-page parts backed with kernel pages.
    pub thp_fallbacks: u64,
}

impl GpuStats {
    /// The statistics of a device.
    pub(crate) fn of(d: &Device) -> GpuStats {
        let c = d.gpu.mmu.counts();
        let dc = d.gpu.counts();
        let total: u64 = dc.mapped.iter().sum();
        GpuStats {
            profile: d.profile.clone(),
            pages: d.pages.clone(),
            driver: *d.gpu.spec(),
            mmu: *d.gpu.mmu.spec(),
            accesses: c.accesses,
            tlb_misses: c.tlb_misses,
            tlb_misses_per_1k: if c.accesses > 0 {
                c.tlb_misses as f64 * 1000.0 / c.accesses as f64
            } else {
                0.0
            },
            ptec_lookups: c.ptec_lookups,
            pte_fetches: c.pte_fetches,
            scratch: c.scratch,
            write_violations: c.write_violations,
            flushes: c.flushes,
            flush_cycles: c.flushes * d.gpu.mmu.spec().flush_cycles as u64,
            gpu_cycles: d.gpu.mmu.gpu_cycles(),
            tlb_fills: c.fills,
            mapped_bytes: dc.mapped,
            coverage: if total > 0 {
                (total - dc.mapped[0]) as f64 / total as f64
            } else {
                0.0
            },
            bos_created: dc.creates,
            bos_destroyed: dc.destroys,
            bos_live: d.gpu.live(),
            ptes_written: dc.ptes_written,
            segments: dc.segments,
            thp: dc.thp,
            thp_fallbacks: dc.thp_fallbacks,
        }
    }
}

impl Machine {
    /// Attaches a GPU of `profile` beside the cores; returns its index. Its scratch page
    /// and every BO's memory come from the machine's physical memory.
    pub fn attach_gpu(&mut self, profile: &GpuProfile) -> Result<usize, SimError> {
        let gpu = Gpu::new(profile.driver, profile.mmu, &mut self.sys.mem)
            .map_err(|e| SimError::Gpu(format!("GPU profile {}: {e}", profile.name)))?;
        self.gpus.push(Device {
            profile: profile.name.clone(),
            pages: profile.pages.clone(),
            gpu,
        });
        Ok(self.gpus.len() - 1)
    }

    /// Applies one GPU event to GPU `gpu`; `at` names where it came from in errors.
    pub fn gpu_event(&mut self, gpu: usize, e: &GpuEvent, at: &dyn Fn() -> String) -> Result<(), SimError> {
        let d = &mut self.gpus[gpu];
        let r = match *e {
            GpuEvent::Create { bo, bytes } => d.create(&mut self.sys, bo, bytes),
            GpuEvent::Destroy { bo } => d.destroy(&mut self.sys, bo),
            GpuEvent::Access { bo, offset, write } => d.gpu.va_of(bo, offset).map(|va| {
                let kind = if write { AccessKind::Store } else { AccessKind::Load };
                let r = MemRef {
                    addr: va,
                    size: 64,
                    kind,
                    core: 0,
                    asid: 0,
                };
                // A device translator never stops (module doc of translator::device).
                let _ = d.access(&mut self.sys, &r);
            }),
        };
        r.map_err(|e| match e {
            GpuError::UnknownBo { bo, .. } => SimError::Gpu(
                GpuError::UnknownBo {
                    bo,
                    context: format!(" at {}", at()),
                }
                .to_string(),
            ),
            e => SimError::Gpu(format!("{}: {e}", at())),
        })
    }

    /// Runs a GPU event stream through GPU `gpu`; returns the events applied.
    pub fn run_gpu(&mut self, gpu: usize, src: &mut dyn GpuSource) -> Result<u64, SimError> {
        let mut n = 0;
        while let Some(e) = src.next_event()? {
            self.gpu_event(gpu, &e, &|| src.position())?;
            n += 1;
            if n % 65536 == 0 && crate::stop_requested() {
                break;
            }
        }
        Ok(n)
    }

    /// Fragments the machine's memory at GPU `gpu`'s kernel-page granularity
    /// ([`mmulab_model::gpu::driver::fragment`]); returns the frames pinned.
    pub fn fragment_for_gpu(&mut self, gpu: usize, used: f64, clean: f64, seed: u64) -> u64 {
        let kp = self.gpus[gpu].gpu.spec().kernel_page;
        mmulab_model::gpu::driver::fragment(&mut self.sys.mem, used, clean, kp, seed)
    }

    /// The statistics of GPU `gpu`.
    pub fn gpu_stats(&self, gpu: usize) -> GpuStats {
        GpuStats::of(&self.gpus[gpu])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_profiles_parse() {
        for (name, _) in PROFILES {
            let p = load_profile(name, None).unwrap();
            assert_eq!(p.pages, "big-super", "{name}");
            assert!(
                crate::catalog::names().contains(&p.cpu.as_str()),
                "{name}: cpu {}",
                p.cpu
            );
        }
        let p = load_profile("pi5-v3d", Some("4K-only")).unwrap();
        assert_eq!(
            (p.driver.kernel_page, p.driver.align, p.driver.large),
            (16384, AlignPolicy::K128, false)
        );
    }

    #[test]
    fn bad_profiles_name_the_key() {
        let base = "description = \"x\"\ncpu = \"default\"\ngpu = \"v3d\"\nkernel_page = \"4K\"\n";
        for (extra, want) in [
            ("pages = \"2M\"\n", "pages = \"2M\""),
            ("[mmu]\ntlb_size = 3\n", "tlb_size"),
            ("align = \"8K\"\n", "align"),
        ] {
            let e = parse_profile("t", &format!("{base}{extra}"), None).unwrap_err();
            assert!(e.contains(want), "{extra}: {e}");
        }
        assert!(parse_profile("t", &base.replace("4K", "8K"), None)
            .unwrap_err()
            .contains("kernel_page"));
    }
}
