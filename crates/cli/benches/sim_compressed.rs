//! `mmulab sim` on compressed traces against the same reference stream from `.mlt` and
//! from the built-in workload (issue #24 item 5: every core busy on one run).
//!
//! Writes `gups:table=1GiB,init=off` (the updates only) (`--refs N`, default 20M) as a drmemtrace record stream in
//! `.trace.gz`, `.trace.zip` (members `chunk.0000`, … of 2^20 records, deflated),
//! `.trace.xz` (one block, as `xz` writes it, and in 3 MiB blocks, as `xz -T0` does: these
//! decode on several threads) and `.trace.zst`, and as `.mlt`; then simulates each on the built-in
//! default machine, in process, both with the read-ahead thread (`open_trace_with`, what
//! `mmulab sim` does) and without it (`open_inline`: decoding on the simulating thread),
//! `--rounds` times (default 3) in turn, and reports the fastest wall time of each and
//! its speed relative to the workload row. All rows of one run share the host's phase,
//! so the ratios are the figures (docs/benchmarks.md).
//!
//! Run: `cargo bench -p mmulab-cli --bench sim_compressed [-- --refs 20M --rounds 3]`.
//! Files go to the system temp dir (`MMULAB_BENCH_DIR` overrides) and are removed.

use mmulab_sim::{config, Machine};
use mmulab_trace::{open_inline, open_trace_with, workload, Batch, TraceOptions, TraceSource};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn arg(args: &[String], flag: &str) -> Option<String> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}

/// Simulates `src` on the default machine; returns (references, wall seconds).
fn sim(src: &mut dyn TraceSource) -> (u64, f64) {
    let spec = config::load(None, &[]).expect("default machine");
    let mut m = Machine::new(spec).expect("machine");
    let t = Instant::now();
    let s = mmulab_sim::run(&mut m, src, None).expect("run");
    (s.counters.references, t.elapsed().as_secs_f64())
}

/// The drmemtrace records of the workload (12 bytes each; header, version, thread, pid
/// first), as mmulab's reader takes them (docs/trace-format.md §2.1).
fn records(spec: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rec = |ty: u16, size: u16, addr: u64| {
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&addr.to_le_bytes());
    };
    rec(25, 0, 5);
    rec(28, 12, 5);
    rec(22, 4, 1);
    rec(24, 4, 1);
    let mut src = workload::parse(spec).unwrap();
    let mut buf = Batch::with_capacity(1 << 16);
    while {
        buf.clear();
        src.next_batch(&mut buf, 1 << 16).unwrap()
    } > 0
    {
        for r in &buf.refs {
            rec(r.kind as u16, r.size, r.addr);
        }
    }
    out
}

fn write_files(dir: &Path, spec: &str) -> Vec<(String, PathBuf)> {
    let raw = records(spec);
    let file = |name: &str| BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(name)).unwrap());
    let mut out = Vec::new();
    let t = Instant::now();
    let mut e = flate2::write::GzEncoder::new(file("gups.trace.gz"), flate2::Compression::fast());
    e.write_all(&raw).unwrap();
    e.finish().unwrap().flush().unwrap();
    out.push(("drmemtrace .trace.gz".to_string(), dir.join("gups.trace.gz")));
    let mut z = zip::ZipWriter::new(std::fs::File::create(dir.join("gups.trace.zip")).unwrap());
    let o = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(1));
    for (i, chunk) in raw.chunks(12 << 20).enumerate() {
        z.start_file(format!("chunk.{i:04}"), o).unwrap();
        z.write_all(chunk).unwrap();
    }
    z.finish().unwrap();
    out.push(("drmemtrace .trace.zip".to_string(), dir.join("gups.trace.zip")));
    let mut x = liblzma::write::XzEncoder::new(file("gups.trace.xz"), 1);
    x.write_all(&raw).unwrap();
    x.finish().unwrap().flush().unwrap();
    out.push(("drmemtrace .trace.xz".to_string(), dir.join("gups.trace.xz")));
    // As `xz -1 -T0` writes it: blocks of 3 MiB (three times the preset's 1 MiB
    // dictionary, xz's default block size) that decode on several threads.
    let mt = liblzma::stream::MtStreamBuilder::new()
        .threads(2)
        .preset(1)
        .block_size(3 << 20)
        .encoder()
        .unwrap();
    let mut x = liblzma::write::XzEncoder::new_stream(file("gups-blocks.trace.xz"), mt);
    x.write_all(&raw).unwrap();
    x.finish().unwrap().flush().unwrap();
    out.push((
        "drmemtrace .trace.xz in 3 MiB blocks (`xz -T0`)".to_string(),
        dir.join("gups-blocks.trace.xz"),
    ));
    let mut zs = zstd::stream::write::Encoder::new(file("gups.trace.zst"), 3).unwrap();
    zs.write_all(&raw).unwrap();
    zs.finish().unwrap().flush().unwrap();
    out.push(("drmemtrace .trace.zst".to_string(), dir.join("gups.trace.zst")));
    let mut w = mmulab_trace::format::mlt::MltWriter::new(file("gups.mlt"), 3).unwrap();
    let mut src = workload::parse(spec).unwrap();
    let mut buf = Batch::with_capacity(1 << 16);
    while {
        buf.clear();
        src.next_batch(&mut buf, 1 << 16).unwrap()
    } > 0
    {
        w.push_batch(&buf).unwrap();
    }
    w.finish().unwrap();
    out.push((".mlt".to_string(), dir.join("gups.mlt")));
    eprintln!("wrote the inputs in {:.1} s", t.elapsed().as_secs_f64());
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let refs = arg(&args, "--refs").unwrap_or_else(|| "20M".into());
    let rounds: usize = arg(&args, "--rounds")
        .map(|s| s.parse().expect("--rounds N"))
        .unwrap_or(3);
    let spec = format!("gups:table=1GiB,refs={refs},init=off");
    let dir = std::env::var_os("MMULAB_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("mmulab-sim-compressed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = write_files(&dir, &spec);
    // Rows: the workload, then each file with and without read-ahead.
    let mut best: Vec<(String, u64, f64)> = Vec::new();
    let note = |label: String, (n, secs): (u64, f64), best: &mut Vec<(String, u64, f64)>| match best
        .iter_mut()
        .find(|b| b.0 == label)
    {
        Some(b) => b.2 = b.2.min(secs),
        None => best.push((label, n, secs)),
    };
    let opts = TraceOptions::default();
    for _ in 0..rounds {
        note("workload".into(), sim(&mut *workload::parse(&spec).unwrap()), &mut best);
        for (label, path) in &files {
            let mut ra = open_trace_with(path, &opts).unwrap();
            note(format!("{label}, read-ahead"), sim(&mut ra), &mut best);
            let mut inl = open_inline(path, &opts).unwrap();
            note(format!("{label}, inline"), sim(&mut inl), &mut best);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let base = best[0].2;
    println!("`{spec}` on the default machine, fastest wall time of {rounds} rounds\n");
    println!("| input | references | seconds | M refs/s | speed vs workload |");
    println!("|---|---:|---:|---:|---:|");
    for (label, n, secs) in &best {
        assert_eq!(*n, best[0].1, "{label}: every input holds the same stream");
        println!(
            "| {label} | {n} | {secs:.2} | {:.1} | {:.2} |",
            *n as f64 / secs / 1e6,
            base / secs
        );
    }
}
