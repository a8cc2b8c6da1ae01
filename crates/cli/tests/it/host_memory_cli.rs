//! One host-memory check for every command that allocates by a user's number (issue 51
//! item 3), through the real `mmulab` binary: data caches × cores, a DRAM profile's
//! geometry, a GPU profile's MMU, a native benchmark's buffer and an MRC's entries are
//! each refused before they are allocated, with the part that scales and its figure
//! (derived by hand below); a generated DRAM stream is written as it is generated.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn mmulab(args: &[&str], host: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mmulab"));
    c.args(args).env_remove("MMULAB_HOST_MEMORY");
    if let Some(h) = host {
        c.env("MMULAB_HOST_MEMORY", h);
    }
    c.output().expect("run mmulab")
}

fn refused(o: &Output, parts: &[&str]) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    for p in parts {
        assert!(e.contains(p), "missing '{p}' in: {e}");
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mmulab-hostmem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn private_caches_times_cores_are_refused_with_the_level() {
    // 256 MiB of L2 in 64-byte lines = 4 Mi lines; LRU keeps one 8-byte tag a line:
    // 32 MiB a copy, and a private L2 has one copy a core: 64 × 32 MiB = 2.0 GiB.
    let args = |cores: &'static str| {
        [
            "sim",
            "-m",
            "skylake-caches",
            "--workload",
            "chase:pages=10,refs=1000",
            "--set",
            cores,
            "--set",
            "caches.l2.size=256MiB",
            "--set",
            "caches.l2.ways=16",
        ]
    };
    let o = mmulab(&args("machine.cores=64"), Some("1GiB"));
    refused(
        &o,
        &[
            "2.0 GiB for caches.l2: 64 copies",
            "1.0 GiB available",
            "MMULAB_HOST_MEMORY",
        ],
    );
    // Two cores: 64 MiB of L2 tags, well inside the same host.
    let o = mmulab(&args("machine.cores=2"), Some("1GiB"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn gpu_mmu_beyond_host_is_refused() {
    // 2^20 TLB entries in 4 ways: 2^20 × 32 bytes of entries and links + 2^18 sets ×
    // (2 × 16 fingerprint lanes + 16) + 8 KiB = 32 MiB + 12 MiB + 8 KiB = 44.0 MiB.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../machines/gpu/pi5-v3d.toml"))
        .unwrap()
        .replace("tlb_entries = 64", "tlb_entries = 1048576");
    let p = tmp("big-mmu.toml");
    std::fs::write(&p, text).unwrap();
    let args = [
        "sim",
        "--gpu",
        p.to_str().unwrap(),
        "--gpu-workload",
        "vertex-buffer:buffers=2,bytes=64K,draws=2,frames=1",
        "--set",
        "memory.size=256MiB",
    ];
    let o = mmulab(&args, Some("64MiB"));
    refused(
        &o,
        &[
            "44.0 MiB for GPU profile big-mmu: mmu.tlb_entries = 1048576",
            "tlb_entries or ptec_lines",
        ],
    );
    let o = mmulab(&args, Some("1GiB"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn dram_profile_geometry_beyond_host_is_refused() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../machines/dram/ddr4-3200.toml"
    ))
    .unwrap()
    .replace("ranks = 2", "ranks = 1073741824");
    let p = tmp("big-dram.toml");
    std::fs::write(&p, text).unwrap();
    let s = tmp("seq.trace");
    std::fs::write(&s, "0x0 READ 0\n0x40 READ 1\n").unwrap();
    let o = mmulab(
        &["dram", s.to_str().unwrap(), "--profile", p.to_str().unwrap()],
        Some("8GiB"),
    );
    refused(&o, &["1073741824 rank(s)", "8.0 GiB available", "ranks"]);
    // 2 ranks × 262144 groups × 4 banks = 2097152 banks: the model fits a host of
    // 1000 MiB, but the report's per-bank counts (8 bytes, a 72-byte JSON value and
    // about 24 bytes of text each: 208 MiB) do not (the fuzzer's abort, 2026-12-06).
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../machines/dram/ddr4-3200.toml"
    ))
    .unwrap()
    .replace("bank_groups = 4", "bank_groups = 262144");
    let wide = tmp("wide-dram.toml");
    std::fs::write(&wide, text).unwrap();
    let o = mmulab(
        &["dram", s.to_str().unwrap(), "--profile", wide.to_str().unwrap()],
        Some("1000MiB"),
    );
    refused(&o, &["208.0 MiB for the report's per-bank counts: 2097152 bank(s)"]);
    // The shipped profile replays the same stream on a small host.
    let o = mmulab(&["dram", s.to_str().unwrap(), "--profile", "ddr4-3200"], Some("256MiB"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn generated_dram_stream_is_written_as_it_is_generated() {
    // 10^12 requests would be 24 TB held at once; written as generated, the first lines
    // arrive at once and the reader stops the writer (a closed pipe).
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmulab"))
        .args([
            "dram",
            "--generate",
            "seq",
            "--profile",
            "ddr4-3200",
            "--requests",
            "1000000000000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let lines: Vec<String> = BufReader::new(out).lines().take(3).map(|l| l.unwrap()).collect();
    assert_eq!(lines.len(), 3);
    // Sequential 64-byte requests, one a DRAM cycle (gap 1).
    assert!(lines[0].starts_with("0x0 READ 0"), "{lines:?}");
    assert!(lines[1].starts_with("0x40 READ 1"), "{lines:?}");
    let _ = child.kill();
    child.wait().unwrap();
}

#[test]
fn native_benchmark_buffer_beyond_host_is_refused_before_mapping() {
    let o = mmulab(&["bench", "gups", "--size", "1G"], Some("512MiB"));
    refused(
        &o,
        &[
            "1.0 GiB for --size 1073741824 bytes",
            "512.0 MiB available",
            "lower --size",
        ],
    );
}

#[test]
fn mrc_entries_beyond_host_are_refused() {
    // 2^24 entries, one core, no sampling: histogram 8 + stack 64 bytes an entry =
    // 1152 MiB (1.1 GiB); the curve 24 bytes a point = 384 MiB; 32 MiB assumed for the
    // program: 1568 MiB = 1.5 GiB.
    let o = mmulab(
        &["mrc", "-w", "gups:table=1MiB,refs=1000", "--max-entries", "16777216"],
        Some("1GiB"),
    );
    refused(
        &o,
        &[
            "about 1.5 GiB",
            "1.1 GiB for --max-entries 16777216",
            "384.0 MiB",
            "lower --max-entries",
        ],
    );
}
