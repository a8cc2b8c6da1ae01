//! The mechanism of advise's third way (issue 50 item 3): THP on the proposed regions
//! only, through a preload library (`shim/thp_regions.c`, built by build.rs and embedded
//! here) that calls `madvise(MADV_HUGEPAGE)` on the program's allocations whose size
//! matches a proposed region's, and on the brk heap when `[heap]` is proposed.
//!
//! Regions are matched by size, not address: the proposal's addresses are the
//! recording's, under Valgrind, whose layout is not the native run's, and ASLR moves
//! them run to run. What the shim cannot reach is said, and the third way then not run:
//! a static binary (no dynamic loader, so no `LD_PRELOAD`), a proposed region that is a
//! file mapping, the stack, or addresses outside the recorded VMAs.

use std::path::{Path, PathBuf};

use mmulab_probe::error::{ProbeError, Result};

use super::proposal::Chosen;

/// The preload library.
const LIB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmmulab_thp_regions.so"));

/// The environment variable the library reads its regions from.
pub const ENV: &str = "MMULAB_THP_REGIONS";

/// Writes the library into `dir` (once per build: its name carries a hash of its bytes)
/// and returns its path.
pub fn install(dir: &Path) -> Result<PathBuf> {
    // FNV-1a: a name that changes when the library does; not a security check.
    let h = LIB.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("thp_regions-{h:016x}.so"));
    if std::fs::read(&path).is_ok_and(|b| b == LIB) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| ProbeError::io(format!("cannot create {}", dir.display()), e))?;
    let tmp = dir.join(format!(".thp_regions-{h:016x}.{}", std::process::id()));
    std::fs::write(&tmp, LIB).map_err(|e| ProbeError::io(format!("cannot write {}", tmp.display()), e))?;
    std::fs::rename(&tmp, &path).map_err(|e| ProbeError::io(format!("cannot write {}", path.display()), e))?;
    Ok(path)
}

/// The library's region list for `regions`: `heap` for `[heap]`, the size in bytes for an
/// anonymous mapping; and the regions it leaves out, described (a file mapping, the stack,
/// the outside entry: not an allocation the shim sees; under THP's `madvise` mode they
/// keep the pages they had). Why not, when it leaves out every region.
pub fn spec(regions: &[Chosen]) -> std::result::Result<(String, Vec<String>), String> {
    let mut out = Vec::new();
    let mut left = Vec::new();
    let mib = |r: &Chosen| (r.end - r.start) as f64 / (1u64 << 20) as f64;
    for r in regions {
        match r.name.as_str() {
            "[heap]" => out.push("heap".to_string()),
            "anonymous" => out.push((r.end - r.start).to_string()),
            other => left.push(format!("{other} ({:.1} MiB)", mib(r))),
        }
    }
    if out.is_empty() {
        return Err(if left.is_empty() {
            "the proposal holds no region".into()
        } else {
            format!(
                "the proposal holds no anonymous region or heap, which is all the preload shim can give THP (it madvises allocations): {}",
                left.join(", ")
            )
        });
    }
    Ok((out.join(","), left))
}

/// Why a preload library cannot reach `prog` (a path or a name on PATH), or `None`. A
/// static ELF binary has no `PT_INTERP` program header: no dynamic loader runs, so
/// `LD_PRELOAD` is never read. A script is reached through its interpreter.
pub fn unreachable(prog: &str) -> Option<String> {
    let path = if prog.contains('/') {
        PathBuf::from(prog)
    } else {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(prog)).find(|p| p.is_file()))?
    };
    let bytes = std::fs::read(&path).ok()?;
    match elf_interp(&bytes) {
        Some(false) => Some(format!(
            "{} is a static binary: no dynamic loader reads LD_PRELOAD, so the preload shim cannot apply the proposal; apply the madvise calls in its source instead",
            path.display()
        )),
        _ => None,
    }
}

/// Whether a 64-bit little-endian ELF file has a `PT_INTERP` header (`None`: not such a
/// file, or its headers lie outside it).
fn elf_interp(b: &[u8]) -> Option<bool> {
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let phoff = u64::from_le_bytes(b.get(0x20..0x28)?.try_into().ok()?) as usize;
    let (entsize, num) = (u16_at(0x36)? as usize, u16_at(0x38)? as usize);
    if entsize < 4 {
        return None;
    }
    let mut found = false;
    for i in 0..num {
        let o = phoff.checked_add(i.checked_mul(entsize)?)?;
        let t = u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?);
        found |= t == 3; // PT_INTERP
    }
    Some(found)
}

/// `LD_PRELOAD` with the library first, then what the caller preloads (a preloaded
/// allocator stays the one the program uses: the shim forwards to the next definition).
pub fn preload(lib: &Path) -> String {
    match std::env::var("LD_PRELOAD") {
        Ok(v) if !v.trim().is_empty() => format!("{} {v}", lib.display()),
        _ => lib.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(name: &str, bytes: u64) -> Chosen {
        Chosen {
            name: name.into(),
            start: 1 << 30,
            end: (1 << 30) + bytes,
        }
    }

    #[test]
    fn anonymous_regions_go_by_size_the_heap_by_name_and_files_are_left_out() {
        let (s, left) = spec(&[chosen("anonymous", 64 << 20), chosen("[heap]", 8 << 20)]).unwrap();
        assert_eq!(s, "67108864,heap");
        assert!(left.is_empty());
        let (s, left) = spec(&[chosen("anonymous", 64 << 20), chosen("/usr/lib/libx.so", 2 << 20)]).unwrap();
        assert_eq!(s, "67108864");
        assert_eq!(left, vec!["/usr/lib/libx.so (2.0 MiB)".to_string()]);
        let e = spec(&[chosen("[stack]", 1 << 20)]).unwrap_err();
        assert!(e.contains("[stack] (1.0 MiB)"), "{e}");
        assert!(spec(&[]).is_err());
    }

    #[test]
    fn a_static_binary_is_unreachable_and_a_dynamic_one_is_not() {
        // This test binary is dynamic (Rust links glibc dynamically by default).
        let me = std::env::current_exe().unwrap();
        assert_eq!(unreachable(me.to_str().unwrap()), None);
        // A made-up static ELF: one PT_LOAD program header, no PT_INTERP.
        let mut b = vec![0u8; 64 + 56];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(elf_interp(&b), Some(false));
        b[64..68].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(elf_interp(&b), Some(true));
        // Headers past the end, and a script, are not judged.
        b[0x38..0x3a].copy_from_slice(&9u16.to_le_bytes());
        assert_eq!(elf_interp(&b), None);
        assert_eq!(elf_interp(b"#!/bin/sh\necho hi\n"), None);
    }
}
