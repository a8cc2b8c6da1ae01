//! Reader throughput benchmark (references per second, one core), committed and documented
//! in docs/bench-readers.md. Run:
//!
//! ```text
//! CARGO_TARGET_DIR=/tmp/target-trace cargo bench -p mmulab-trace --bench readers
//! ```
//!
//! Environment: `MMULAB_BENCH_REFS` (default 100M) references of each synthetic workload
//! for the `.mlt` rows; the text and record formats get `MMULAB_BENCH_TEXT_REFS` (default
//! 10M: a 100M-line din file alone would be 1.4 GB); `MMULAB_BENCH_DIR` (default the
//! system temp dir) holds the generated files, removed at the end. The shared drmemtrace
//! samples (committed in `tests/data/drmemtrace`) are measured too.
//! `MMULAB_BENCH_ONLY=mlt` keeps only the rows whose label starts with that prefix.
//!
//! Every figure is the best of 3 (`MMULAB_BENCH_RUNS`) timed passes over the same file (page cache warm), so
//! it measures decoding, not the disk. Time is the thread's on-CPU time (from
//! `/proc/thread-self/schedstat`; wall time where that is missing), so other jobs on a
//! shared machine do not inflate it. References are read in batches of 8192, as
//! `mmulab sim` reads them. "decode-only" reads an `.mlt` image already in
//! memory: no file system, just frame checks, zstd and the column decoder.

use mmulab_trace::format::mlt::{MltReader, MltWriter};
use mmulab_trace::{open_inline as open_trace_with, workload, Batch, Format, TraceOptions, TraceSource};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn env_count(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|s| mmulab_trace::units::parse_count(&s).ok())
        .unwrap_or(default)
}

/// Batch size of each `next_batch` call: the simulator's (`mmulab_sim::run::BATCH`).
const BATCH: usize = 8192;

/// Nanoseconds this thread has spent on a CPU (Linux `/proc/thread-self/schedstat`), so
/// that a machine shared with other jobs does not count the time the bench waited for a
/// core. `None` where unavailable.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Drains `src`; returns (references, seconds), the seconds being on-CPU time when the
/// system reports it, else wall time.
fn drain(src: &mut dyn TraceSource) -> (u64, f64) {
    let c0 = cpu_ns();
    let mut buf = Batch::with_capacity(BATCH);
    let t = Instant::now();
    let mut n = 0u64;
    let mut sink = 0u64;
    loop {
        buf.clear();
        let k = src.next_batch(&mut buf, BATCH).expect("bench input reads cleanly");
        if k == 0 {
            break;
        }
        n += k as u64;
        sink = sink.wrapping_add(buf.refs.last().map_or(0, |r| r.addr));
    }
    std::hint::black_box(sink);
    match (c0, cpu_ns()) {
        (Some(a), Some(b)) if b > a => (n, (b - a) as f64 * 1e-9),
        _ => (n, t.elapsed().as_secs_f64()),
    }
}

fn best_of_3(mut open: impl FnMut() -> Box<dyn TraceSource>) -> (u64, f64) {
    let runs = std::env::var("MMULAB_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3u32);
    (0..runs.max(1))
        .map(|_| drain(&mut *open()))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("3 runs")
}

fn row(what: &str, file: &str, bytes: u64, (n, secs): (u64, f64)) {
    println!(
        "| {what} | {file} | {n} | {:.2} | {:.1} | {:.1} |",
        bytes as f64 / n.max(1) as f64,
        n as f64 / secs / 1e6,
        secs
    );
}

fn size(p: &Path) -> u64 {
    if p.is_dir() {
        std::fs::read_dir(p)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| size(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }
}

/// Writes `refs` references of `spec` in every format; returns (label, path) pairs.
fn generate(dir: &Path, spec: &str, refs: u64, text_refs: u64) -> Vec<(String, PathBuf, Format)> {
    let name = spec.split(':').next().unwrap_or("w");
    let mut out = Vec::new();
    let mlt = dir.join(format!("{name}.mlt"));
    let t = Instant::now();
    let mut w = MltWriter::new(
        BufWriter::with_capacity(1 << 20, std::fs::File::create(&mlt).unwrap()),
        3,
    )
    .unwrap();
    let mut src = workload::parse(&format!("{spec},refs={refs}")).unwrap();
    let mut buf = Batch::with_capacity(1 << 16);
    while {
        buf.clear();
        src.next_batch(&mut buf, 1 << 16).unwrap()
    } > 0
    {
        w.push_batch(&buf).unwrap();
    }
    w.finish().unwrap();
    eprintln!(
        "wrote {} ({refs} refs) in {:.1} s: {:.1} M refs/s encode",
        mlt.display(),
        t.elapsed().as_secs_f64(),
        refs as f64 / t.elapsed().as_secs_f64() / 1e6
    );
    out.push((format!("mlt ({name})"), mlt, Format::Mlt));

    let din = dir.join(format!("{name}.din"));
    let lackey = dir.join(format!("{name}.lackey"));
    let dr = dir.join(format!("{name}.trace"));
    let cs = dir.join(format!("{name}.champsim"));
    let (mut fd, mut fl, mut fr, mut fc) = [&din, &lackey, &dr, &cs]
        .map(|p| BufWriter::with_capacity(1 << 20, std::fs::File::create(p).unwrap()))
        .into();
    let rec = |ty: u16, size: u16, addr: u64, f: &mut BufWriter<std::fs::File>| {
        f.write_all(&ty.to_le_bytes()).unwrap();
        f.write_all(&size.to_le_bytes()).unwrap();
        f.write_all(&addr.to_le_bytes()).unwrap();
    };
    rec(25, 0, 5, &mut fr);
    rec(28, 12, 5, &mut fr);
    rec(22, 4, 1, &mut fr);
    rec(24, 4, 1, &mut fr);
    let mut src = workload::parse(&format!("{spec},refs={text_refs}")).unwrap();
    let mut ip = 0x40_0000u64;
    while {
        buf.clear();
        src.next_batch(&mut buf, 1 << 16).unwrap()
    } > 0
    {
        for r in &buf.refs {
            writeln!(fd, "{} {:x}", r.kind as u8, r.addr).unwrap();
            writeln!(fl, " {} {:08x},{}", ["L", "S", "I"][r.kind as usize], r.addr, r.size).unwrap();
            rec(r.kind as u16, r.size, r.addr, &mut fr);
            // ChampSim: one instruction per reference pair (ifetch + one memory operand).
            let mut c = [0u8; 64];
            c[..8].copy_from_slice(&ip.to_le_bytes());
            let at = if r.kind as u8 == 1 { 16 } else { 32 };
            c[at..at + 8].copy_from_slice(&r.addr.to_le_bytes());
            fc.write_all(&c).unwrap();
            ip += 4;
        }
    }
    for f in [&mut fd, &mut fl, &mut fr, &mut fc] {
        f.flush().unwrap();
    }
    drop((fd, fl, fr, fc));
    // Compressed copies, as such traces are usually shipped.
    let compress = |src: &Path, ext: &str| -> PathBuf {
        let dst = PathBuf::from(format!("{}.{ext}", src.display()));
        let mut input = std::fs::File::open(src).unwrap();
        let out = BufWriter::with_capacity(1 << 20, std::fs::File::create(&dst).unwrap());
        if ext == "gz" {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
            std::io::copy(&mut input, &mut e).unwrap();
            e.finish().unwrap().flush().unwrap();
        } else {
            let mut e = liblzma::write::XzEncoder::new(out, 1);
            std::io::copy(&mut input, &mut e).unwrap();
            e.finish().unwrap().flush().unwrap();
        }
        dst
    };
    let din_gz = compress(&din, "gz");
    let dr_gz = compress(&dr, "gz");
    let cs_gz = compress(&cs, "gz");
    let cs_xz = compress(&cs, "xz");
    out.push((format!("din ({name})"), din, Format::Din));
    out.push((format!("din .gz ({name})"), din_gz, Format::Din));
    out.push((format!("lackey ({name})"), lackey, Format::Lackey));
    out.push((format!("drmemtrace raw ({name})"), dr, Format::DrMemtrace));
    out.push((format!("drmemtrace .trace.gz ({name})"), dr_gz, Format::DrMemtrace));
    out.push((format!("champsim 64 B ({name})"), cs, Format::ChampSim));
    out.push((format!("champsim 64 B .gz ({name})"), cs_gz, Format::ChampSim));
    out.push((format!("champsim 64 B .xz ({name})"), cs_xz, Format::ChampSim));
    out
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let refs = env_count("MMULAB_BENCH_REFS", 100_000_000);
    let text_refs = env_count("MMULAB_BENCH_TEXT_REFS", 10_000_000);
    let dir = std::env::var_os("MMULAB_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("mmulab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("| reader | input | references | bytes/ref | M refs/s | seconds |");
    println!("|---|---|---:|---:|---:|---:|");
    for spec in ["seq:size=1GiB", "gups:table=1GiB"] {
        let files = generate(&dir, spec, refs, text_refs);
        // Decode-only: the .mlt image in memory.
        let (_, mlt, _) = &files[0];
        let image = std::fs::read(mlt).unwrap();
        let name = spec.split(':').next().unwrap();
        row(
            &format!("mlt decode-only, in memory ({name})"),
            &format!("{name}.mlt"),
            image.len() as u64,
            best_of_3(|| {
                Box::new(MltReader::new(std::io::Cursor::new(image.clone()), Path::new("mem.mlt"), None).unwrap())
            }),
        );
        drop(image);
        let only = std::env::var("MMULAB_BENCH_ONLY").unwrap_or_default();
        for (label, path, fmt) in &files {
            if !only.is_empty() && !label.starts_with(&only) {
                std::fs::remove_file(path).ok();
                continue;
            }
            let opts = TraceOptions {
                format: Some(*fmt),
                ..Default::default()
            };
            let m = best_of_3(|| open_trace_with(path, &opts).unwrap());
            row(label, &path.file_name().unwrap().to_string_lossy(), size(path), m);
            std::fs::remove_file(path).ok();
        }
    }
    let dr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/drmemtrace");
    if std::env::var_os("MMULAB_BENCH_ONLY").is_some() {
        eprintln!("MMULAB_BENCH_ONLY set: shared traces skipped");
    } else if dr.is_dir() {
        for d in ["x86_64-threadsig", "aarch64-threadsig"] {
            let p = dr.join(d);
            let opts = TraceOptions::default();
            row(
                &format!("drmemtrace .trace.zip dir ({d})"),
                d,
                size(&p),
                best_of_3(|| open_trace_with(&p, &opts).unwrap()),
            );
            // The same trace converted to .mlt.
            let mlt = dir.join(format!("{d}.mlt"));
            let mut w = MltWriter::new(BufWriter::new(std::fs::File::create(&mlt).unwrap()), 3).unwrap();
            let mut src = open_trace_with(&p, &opts).unwrap();
            let mut buf = Batch::default();
            while {
                buf.clear();
                src.next_batch(&mut buf, 1 << 16).unwrap()
            } > 0
            {
                w.push_batch(&buf).unwrap();
            }
            w.finish().unwrap();
            let mo = TraceOptions {
                format: Some(Format::Mlt),
                ..Default::default()
            };
            row(
                &format!("mlt ({d} converted)"),
                &format!("{d}.mlt"),
                size(&mlt),
                best_of_3(|| open_trace_with(&mlt, &mo).unwrap()),
            );
            std::fs::remove_file(&mlt).ok();
        }
    } else {
        eprintln!("shared drmemtrace samples not found at {}: skipped", dr.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}
