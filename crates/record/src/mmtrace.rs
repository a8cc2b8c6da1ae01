//! mmtrace, a small Valgrind tool that records data references in binary
//! (`tools/valgrind-mmtrace/mmtrace.c`), as a faster alternative to Lackey's text trace,
//! optionally in sampled windows ([`Sampling`]). Used through
//! [`crate::Recorder::record_with`].
//!
//! Valgrind tools are separate static executables linked against Valgrind's own
//! `libcoregrind` and `libvex`; distributions that package Valgrind's tool headers
//! (`pub_tool_*.h`) and these static libraries (Debian's and Ubuntu's `valgrind` does)
//! allow building one outside Valgrind's tree. [`build`] compiles the embedded source with
//! `cc` into a directory that also links every file of Valgrind's own library directory,
//! so that `VALGRIND_LIB=DIR valgrind --tool=mmtrace` finds it beside the preload objects
//! and suppressions. When something is missing the error says what, and the caller can fall
//! back to Lackey.
//!
//! Written here (not a library): there is no Rust binding of Valgrind's tool interface,
//! and the tool is the recorder, which is part of the product.

use std::path::{Path, PathBuf};
use std::process::Command;

use mmulab_trace::{AccessKind, MemRef};

/// The tool's C source.
pub const SOURCE: &str = include_str!("../../../tools/valgrind-mmtrace/mmtrace.c");

/// Bytes per record.
pub const RECORD_BYTES: usize = 16;

/// Record the first `on` references of every `period` (`on ≤ period`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// References recorded per window.
    pub on: u64,
    /// References per period (window and gap).
    pub period: u64,
}

impl Sampling {
    /// Parses `ON/PERIOD` with optional K/M/G suffixes (powers of ten: `1M/10M`).
    pub fn parse(s: &str) -> Result<Sampling, String> {
        let num = |t: &str| -> Result<u64, String> {
            let t = t.trim();
            let (n, mul) = match t.chars().last() {
                Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
                Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
                Some('g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
                _ => (t, 1),
            };
            n.parse::<u64>()
                .ok()
                .and_then(|v| v.checked_mul(mul))
                .ok_or_else(|| format!("'{t}' is not a count (e.g. 1M)"))
        };
        let (a, b) = s
            .split_once('/')
            .ok_or_else(|| format!("sampling '{s}': expected ON/PERIOD, e.g. 1M/10M"))?;
        let (on, period) = (num(a)?, num(b)?);
        if on == 0 || on > period {
            return Err(format!("sampling '{s}': needs 0 < ON ≤ PERIOD"));
        }
        Ok(Sampling { on, period })
    }

    /// The share of references recorded.
    pub fn share(&self) -> f64 {
        self.on as f64 / self.period as f64
    }
}

/// One decoded record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Record {
    /// A reference.
    Ref(MemRef),
    /// A page first read (`write` false) or written between the windows of a sampled
    /// recording: not a reference (mmulab_trace::Event::Touch).
    Touch {
        /// The page's first byte.
        addr: u64,
        /// A first write.
        write: bool,
    },
    /// A writable mapping the program made (an allocation: glibc maps a large block with
    /// its own mmap), `[addr, addr + len)`; not a reference.
    Mmap {
        /// The mapping's first byte.
        addr: u64,
        /// Its length, bytes (whole 4 KiB pages).
        len: u64,
    },
    /// The trailer: references the program made, recorded or not.
    End(u64),
    /// Before the trailer, when the program forked: how many times. The children's
    /// references are not recorded (each is another address space).
    Forks(u64),
}

/// Decodes one record; `None` for a damaged one.
pub fn decode(b: &[u8; RECORD_BYTES]) -> Option<Record> {
    let addr = u64::from_le_bytes(b[0..8].try_into().ok()?);
    let size = u32::from_le_bytes(b[8..12].try_into().ok()?);
    let kind = u32::from_le_bytes(b[12..16].try_into().ok()?);
    match (size, kind) {
        (0xFFFF_FFFF, 0xFFFF_FFFF) => Some(Record::End(addr)),
        (0xFFFF_FFFE, 0xFFFF_FFFF) => Some(Record::Forks(addr)),
        (s, 0) if s <= u16::MAX as u32 => Some(Record::Ref(MemRef::new(addr, AccessKind::Load, s as u16))),
        (s, 1) if s <= u16::MAX as u32 => Some(Record::Ref(MemRef::new(addr, AccessKind::Store, s as u16))),
        (0, k @ (2 | 3)) if addr & 0xfff == 0 && addr < 1 << 48 => Some(Record::Touch { addr, write: k == 3 }),
        (pages, 4) if pages > 0 && addr & 0xfff == 0 && addr + ((pages as u64) << 12) <= 1 << 48 => {
            Some(Record::Mmap {
                addr,
                len: (pages as u64) << 12,
            })
        }
        _ => None,
    }
}

/// Valgrind's platform name and the C defines of this build's architecture.
fn platform() -> Option<(&'static str, &'static str)> {
    match std::env::consts::ARCH {
        "x86_64" => Some((
            "amd64-linux",
            "-DVGA_amd64=1 -DVGP_amd64_linux=1 -DVGPV_amd64_linux_vanilla=1",
        )),
        "aarch64" => Some((
            "arm64-linux",
            "-DVGA_arm64=1 -DVGP_arm64_linux=1 -DVGPV_arm64_linux_vanilla=1",
        )),
        _ => None,
    }
}

/// The first directory of `dirs` holding `file`.
fn find(dirs: &[&str], file: &str) -> Option<PathBuf> {
    dirs.iter().map(PathBuf::from).find(|d| d.join(file).exists())
}

/// Builds the tool into `dir` (reused when it was built from the same source) and returns
/// the directory to give Valgrind as `VALGRIND_LIB`.
pub fn build(dir: &Path) -> Result<PathBuf, String> {
    if !cfg!(target_os = "linux") {
        return Err("mmtrace is built for Linux only".into());
    }
    let (plat, defines) =
        platform().ok_or_else(|| format!("mmtrace: no build recipe for {}", std::env::consts::ARCH))?;
    let tool = dir.join(format!("mmtrace-{plat}"));
    let stamp = dir.join("mmtrace.source");
    if tool.exists() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == SOURCE) {
        return Ok(dir.to_path_buf());
    }
    let libexec = find(
        &[
            "/usr/libexec/valgrind",
            "/usr/lib/x86_64-linux-gnu/valgrind",
            "/usr/lib/aarch64-linux-gnu/valgrind",
            "/usr/lib/valgrind",
            "/usr/local/libexec/valgrind",
            "/usr/local/lib/valgrind",
        ],
        &format!("vgpreload_core-{plat}.so"),
    )
    .ok_or("mmtrace: Valgrind's library directory (vgpreload_core) was not found")?;
    let static_dirs = [
        "/usr/lib/x86_64-linux-gnu/valgrind",
        "/usr/lib/aarch64-linux-gnu/valgrind",
        "/usr/libexec/valgrind",
        "/usr/lib/valgrind",
        "/usr/local/lib/valgrind",
        "/usr/local/libexec/valgrind",
    ];
    let libs = find(&static_dirs, &format!("libcoregrind-{plat}.a"))
        .ok_or("mmtrace: Valgrind's static libraries (libcoregrind) are not installed; the tool cannot be built")?;
    let include = find(
        &["/usr/include/valgrind", "/usr/local/include/valgrind"],
        "pub_tool_basics.h",
    )
    .ok_or("mmtrace: Valgrind's tool headers (pub_tool_basics.h) are not installed")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("mmtrace: creating {}: {e}", dir.display()))?;
    let src = dir.join("mmtrace.c");
    std::fs::write(&src, SOURCE).map_err(|e| format!("mmtrace: writing {}: {e}", src.display()))?;
    let tmp = dir.join(format!("mmtrace-{plat}.tmp{}", std::process::id()));
    let lib = |name: &str| libs.join(format!("{name}-{plat}.a"));
    let mut cc = Command::new("cc");
    cc.args(defines.split(' '))
        .args([
            "-DVGO_linux=1",
            "-O2",
            "-fno-strict-aliasing",
            "-fno-builtin",
            "-fno-stack-protector",
        ])
        .args([
            "-fno-pie",
            "-no-pie",
            "-static",
            "-nodefaultlibs",
            "-nostartfiles",
            "-u",
            "_start",
        ])
        .args(["-Wl,--build-id=none", "-Wl,-Ttext-segment=0x58000000"])
        .arg(format!("-I{}", include.display()))
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .arg(lib("libcoregrind"))
        .arg(lib("libvex"))
        .arg(lib("libgcc-sup"))
        .arg("-lgcc");
    let out = cc
        .output()
        .map_err(|e| format!("mmtrace: cannot run cc ({e}); install a C compiler"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("mmtrace: building the tool failed:\n{}", tail.join("\n")));
    }
    std::fs::rename(&tmp, &tool).map_err(|e| format!("mmtrace: {}: {e}", tool.display()))?;
    // Valgrind's own files beside it (preload objects, suppressions, the other tools).
    let entries = std::fs::read_dir(&libexec).map_err(|e| format!("mmtrace: {}: {e}", libexec.display()))?;
    for e in entries.flatten() {
        let to = dir.join(e.file_name());
        if !to.exists() {
            std::os::unix::fs::symlink(e.path(), &to)
                .map_err(|err| format!("mmtrace: linking {}: {err}", to.display()))?;
        }
    }
    std::fs::write(&stamp, SOURCE).map_err(|e| format!("mmtrace: {}: {e}", stamp.display()))?;
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_parsed_and_checked() {
        assert_eq!(
            Sampling::parse("1M/10M"),
            Ok(Sampling {
                on: 1_000_000,
                period: 10_000_000
            })
        );
        assert_eq!(Sampling::parse("5k/5k").map(|s| s.share()), Ok(1.0));
        assert!(Sampling::parse("2M/1M").unwrap_err().contains("ON ≤ PERIOD"));
        assert!(Sampling::parse("0/1M").is_err());
        assert!(Sampling::parse("1M").unwrap_err().contains("ON/PERIOD"));
    }

    #[test]
    fn records_decode() {
        let mut b = [0u8; RECORD_BYTES];
        b[..8].copy_from_slice(&0x7fff_0010u64.to_le_bytes());
        b[8..12].copy_from_slice(&8u32.to_le_bytes());
        b[12..].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            decode(&b),
            Some(Record::Ref(MemRef::new(0x7fff_0010, AccessKind::Store, 8)))
        );
        b[12..].copy_from_slice(&7u32.to_le_bytes());
        assert_eq!(decode(&b), None);
        b[..8].copy_from_slice(&12345u64.to_le_bytes());
        b[8..].copy_from_slice(&[0xFF; 8]);
        assert_eq!(decode(&b), Some(Record::End(12345)));
        // Touches: size 0, kind 2 (read) or 3 (write), a page address below 2^48.
        let touch = |addr: u64, size: u32, kind: u32| {
            let mut b = [0u8; RECORD_BYTES];
            b[..8].copy_from_slice(&addr.to_le_bytes());
            b[8..12].copy_from_slice(&size.to_le_bytes());
            b[12..].copy_from_slice(&kind.to_le_bytes());
            decode(&b)
        };
        assert_eq!(
            touch(0x7000, 0, 3),
            Some(Record::Touch {
                addr: 0x7000,
                write: true
            })
        );
        assert_eq!(
            touch(0x7000, 0, 2),
            Some(Record::Touch {
                addr: 0x7000,
                write: false
            })
        );
        assert_eq!(touch(0x7008, 0, 2), None);
        assert_eq!(touch(1 << 48, 0, 2), None);
        assert_eq!(touch(0x7000, 4, 2), None);
        // Allocations: kind 4, the length in pages, a page-aligned range below 2^48.
        assert_eq!(
            touch(0x7f00_0000_0000, 3, 4),
            Some(Record::Mmap {
                addr: 0x7f00_0000_0000,
                len: 3 << 12
            })
        );
        assert_eq!(touch(0x7f00_0000_0000, 0, 4), None);
        assert_eq!(touch(0x7f00_0000_0010, 1, 4), None);
        assert_eq!(touch((1 << 48) - 4096, 2, 4), None);
    }
}
