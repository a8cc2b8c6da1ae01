//! `mmulab trace-info FILE [--format F] [--json]`: what a trace holds — counts by kind,
//! threads, cores and address spaces, address range, footprint in 4 KiB and 2 MiB pages,
//! access sizes, markers and metadata sections.
//!
//! Contract: one streaming pass. Memory grows with the footprint (one set entry per
//! distinct 4 KiB page), never with the trace length. A damaged trace still gets its
//! report, covering the references read before the damage, plus the error (file, offset,
//! references before it); the command then exits with an error. With `--json`, stdout holds
//! exactly one JSON object in both cases.

use super::convert::ReadOpts;
use crate::progress::ProgressLine;
use anyhow::Result;
use mmulab_trace::{open_trace_with, AccessKind, TraceError, TraceMeta};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast multiplicative hasher for page numbers (SipHash would dominate the pass).
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type PageSet = HashSet<(u16, u64), BuildHasherDefault<PageHasher>>;

/// A set of u16 values as a 65,536-bit bitmap.
struct U16Set(Box<[u64; 1024]>);

impl Default for U16Set {
    fn default() -> Self {
        U16Set(Box::new([0; 1024]))
    }
}

impl U16Set {
    #[inline]
    fn insert(&mut self, v: u16) {
        self.0[(v >> 6) as usize] |= 1 << (v & 63);
    }
    fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}
use std::path::PathBuf;

/// Summarise a trace: counts, footprint, markers.
#[derive(clap::Args)]
pub struct Args {
    /// Trace file (or drmemtrace directory).
    pub file: PathBuf,
    #[command(flatten)]
    pub read: ReadOpts,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What one pass over a trace found.
#[derive(Default)]
pub struct Summary {
    /// References by kind (load, store, ifetch).
    pub by_kind: [u64; 3],
    /// Lowest and highest address.
    pub range: Option<(u64, u64)>,
    /// Distinct (asid, 4 KiB page).
    pages_4k: PageSet,
    /// Distinct (asid, 2 MiB page).
    pages_2m: PageSet,
    cores: U16Set,
    asids: U16Set,
    /// References per access size (index = size).
    sizes: Vec<u64>,
    last_page: [(u16, u64); 3],
    /// Trace events (mmulab_trace::event): exits and unmaps, counted apart from loads,
    /// stores and the footprint.
    control_exit: u64,
    control_unmap: u64,
}

impl Summary {
    fn add(&mut self, batch: &mmulab_trace::Batch) {
        for e in &batch.events {
            match e.event {
                mmulab_trace::Event::Exit { .. } => self.control_exit += 1,
                mmulab_trace::Event::Unmap { .. } => self.control_unmap += 1,
            }
        }
        for r in &batch.refs {
            let k = r.kind as usize;
            self.by_kind[k] += 1;
            self.range = Some(match self.range {
                None => (r.addr, r.addr),
                Some((lo, hi)) => (lo.min(r.addr), hi.max(r.addr)),
            });
            let page = (r.asid, r.addr >> 12);
            if self.last_page[k] != page || self.by_kind[k] == 1 {
                self.last_page[k] = page;
                if self.pages_4k.insert(page) {
                    self.pages_2m.insert((r.asid, r.addr >> 21));
                }
            }
            self.cores.insert(r.core);
            self.asids.insert(r.asid);
            if self.sizes.is_empty() {
                self.sizes = vec![0; 1 << 16];
            }
            self.sizes[r.size as usize] += 1;
        }
    }

    /// Total references.
    pub fn references(&self) -> u64 {
        self.by_kind.iter().sum()
    }
}

fn to_json(path: &str, format: &str, s: &Summary, meta: &TraceMeta, err: Option<&TraceError>) -> Value {
    let hex = |v: u64| format!("{v:#x}");
    let mut v = json!({
        "file": path,
        "format": format,
        "complete": err.is_none(),
        "references": s.references(),
        "loads": s.by_kind[AccessKind::Load as usize],
        "stores": s.by_kind[AccessKind::Store as usize],
        "ifetches": s.by_kind[AccessKind::IFetch as usize],
        "threads": meta.threads.unwrap_or(s.cores.len() as u64),
        "cores": s.cores.len(),
        "address_spaces": s.asids.len(),
        "processes": meta.processes,
        "address_range": s.range.map(|(lo, hi)| json!({"min": hex(lo), "max": hex(hi)})),
        "footprint": {
            "pages_4k": s.pages_4k.len(),
            "pages_2m": s.pages_2m.len(),
            "bytes_4k": s.pages_4k.len() as u64 * 4096,
            "bytes_2m": s.pages_2m.len() as u64 * (2 << 20),
        },
        "sizes": s.sizes.iter().enumerate().filter(|(_, &n)| n > 0).map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "markers": meta.markers,
        "control": {"exit": s.control_exit, "unmap": s.control_unmap},
        "records_skipped": meta.counts,
        "sections": meta.sections.iter().map(|(n, b)| json!({"name": n, "bytes": b.len()})).collect::<Vec<_>>(),
        "vmas": meta.vmas().len(),
    });
    if let Some(e) = err {
        let (offset, refs_before) = match e {
            TraceError::Corrupt {
                offset, refs_before, ..
            } => (Some(*offset), Some(*refs_before)),
            _ => (None, None),
        };
        v["error"] = json!({"message": e.to_string(), "offset": offset, "refs_before": refs_before});
    }
    v
}

fn print_table(v: &Value) {
    let g = |k: &str| v[k].to_string();
    println!(
        "trace        {} ({})",
        v["file"].as_str().unwrap_or(""),
        v["format"].as_str().unwrap_or("")
    );
    println!(
        "references   {}{}",
        g("references"),
        if v["complete"] == json!(false) {
            if v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("interrupted"))
            {
                "  (read before the interruption)"
            } else {
                "  (read before the damage)"
            }
        } else {
            ""
        }
    );
    println!("  loads      {}", g("loads"));
    println!("  stores     {}", g("stores"));
    println!("  ifetches   {}", g("ifetches"));
    println!(
        "threads      {}   cores {}   address spaces {}",
        g("threads"),
        g("cores"),
        g("address_spaces")
    );
    if let Some(r) = v["address_range"].as_object() {
        println!(
            "addresses    {} .. {}",
            r["min"].as_str().unwrap_or(""),
            r["max"].as_str().unwrap_or("")
        );
    }
    let f = &v["footprint"];
    println!(
        "footprint    {} pages of 4 KiB ({:.1} MiB), {} pages of 2 MiB",
        f["pages_4k"],
        f["bytes_4k"].as_u64().unwrap_or(0) as f64 / (1u64 << 20) as f64,
        f["pages_2m"]
    );
    let sizes: Vec<String> = v["sizes"]
        .as_object()
        .map(|m| m.iter().map(|(k, n)| format!("{k}:{n}")).collect())
        .unwrap_or_default();
    println!(
        "sizes        {}",
        if sizes.len() > 12 {
            format!("{} … ({} distinct)", sizes[..12].join(" "), sizes.len())
        } else {
            sizes.join(" ")
        }
    );
    let c = &v["control"];
    if c["exit"] != json!(0) || c["unmap"] != json!(0) {
        println!(
            "control      {} exits, {} unmap markers (OS events: not in the counts or footprint above)",
            c["exit"], c["unmap"]
        );
    }
    for (key, title) in [("markers", "markers"), ("records_skipped", "not refs")] {
        if let Some(m) = v[key].as_object().filter(|m| !m.is_empty()) {
            println!(
                "{title:<12} {}",
                m.iter().map(|(k, n)| format!("{k}={n}")).collect::<Vec<_>>().join(" ")
            );
        }
    }
    if let Some(s) = v["sections"].as_array().filter(|s| !s.is_empty()) {
        let names: Vec<String> = s
            .iter()
            .map(|x| format!("{} ({} B)", x["name"].as_str().unwrap_or(""), x["bytes"]))
            .collect();
        println!(
            "sections     {}   ({} VMAs in the last sample)",
            names.join(", "),
            v["vmas"]
        );
    }
    if let Some(e) = v.get("error") {
        println!("ERROR        {}", e["message"].as_str().unwrap_or(""));
    }
}

pub fn run(a: Args) -> Result<()> {
    // Ctrl-C stops the pass; the report then covers what was read (`complete: false`).
    crate::signals::stop_on_interrupt();
    let opts = a.read.options()?;
    let mut src = match open_trace_with(&a.file, &opts) {
        Ok(s) => s,
        Err(e) => {
            if a.json {
                // Still exactly one JSON object on stdout.
                let v = json!({"file": a.file.display().to_string(), "complete": false, "error": {"message": e.to_string()}});
                println!("{}", serde_json::to_string(&v)?);
            }
            return Err(e.into());
        }
    };
    let format = match opts.format {
        Some(f) => f.name().to_string(),
        None => mmulab_trace::Format::detect_path(&a.file)
            .map(|f| f.name().to_string())
            .unwrap_or_default(),
    };
    let mut s = Summary::default();
    let mut buf = mmulab_trace::Batch::with_capacity(1 << 16);
    let mut p = ProgressLine::new(&format!("trace-info {}", a.file.display()));
    let err = loop {
        if mmulab_sim::stop_requested() {
            break None;
        }
        buf.clear();
        let r = src.next_batch(&mut buf, 1 << 16);
        s.add(&buf);
        match r {
            Ok(0) => break None,
            Ok(_) => p.update(s.references(), src.progress()),
            Err(e) => break Some(e),
        }
    };
    p.finish();
    let meta = src.meta().unwrap_or_default();
    let mut v = to_json(&a.file.display().to_string(), &format, &s, &meta, err.as_ref());
    if let (None, Some(sig)) = (&err, crate::signals::interrupted()) {
        v["complete"] = json!(false);
        v["error"] = json!({"message": format!("interrupted by {}", crate::signals::name(sig))});
    }
    if a.json {
        println!("{}", serde_json::to_string(&v)?);
    } else {
        print_table(&v);
    }
    match err {
        Some(e) => Err(anyhow::Error::new(e)
            .context("the trace is damaged; the counts above cover the references read before the damage")),
        None => Ok(()),
    }
}
