//! GPU profiles (`machines/gpu/*.toml`, built in): a GPU's driver, MMU and the CPU it
//! sits beside, resolved once ([`GpuProfile`]); the machine attaches one as a device
//! requester (machine/gpu.rs).

use crate::SimError;
use mmulab_model::gpu::driver::{Backing, DriverSpec, GpuKind};
use mmulab_model::gpu::mmu::MmuSpec;
use mmulab_model::gpu::va::AlignPolicy;
use mmulab_trace::units::parse_size;
use serde::Deserialize;

/// The built-in GPU profiles (`machines/gpu/NAME.toml`).
pub const PROFILES: [(&str, &str); 3] = [
    ("pi4-v3d", include_str!("../../../../machines/gpu/pi4-v3d.toml")),
    ("pi5-v3d", include_str!("../../../../machines/gpu/pi5-v3d.toml")),
    ("mali-g57", include_str!("../../../../machines/gpu/mali-g57.toml")),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_profiles_parse() {
        for (name, _) in PROFILES {
            let p = load_profile(name, None).unwrap();
            assert_eq!(p.pages, "big-super", "{name}");
            assert!(
                crate::config::catalog::names().contains(&p.cpu.as_str()),
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
