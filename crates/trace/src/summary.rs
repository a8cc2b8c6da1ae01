//! What a trace holds, in one streaming pass ([`summarize`], [`summarize_file`]): counts
//! by kind, threads, cores and address spaces, address range, footprint in 4 KiB and
//! 2 MiB pages, access sizes, trace events, markers and metadata sections — the
//! [`TraceSummary`] that `mmulab trace-info` prints (as text, or as its JSON form, field
//! for field).
//!
//! Contract: memory grows with the footprint (one set entry per distinct 4 KiB page),
//! never with the trace length. A damaged trace still gets its summary, covering the
//! references read before the damage, with the error beside it; a pass stopped by the
//! caller (its callback returns `false`) is summarised as far as it got, `complete: false`.
//! Nothing is printed.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

use serde::Serialize;

use crate::{open_trace_with, AccessKind, Batch, Event, Format, TraceError, TraceMeta, TraceOptions, TraceSource};

/// A trace's summary (its serde form is `mmulab trace-info --json`, docs/output.md).
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// The trace as named.
    pub file: String,
    /// Its format's name (empty if unknown).
    pub format: String,
    /// False if the pass ended early (damage, or a stop).
    pub complete: bool,
    /// Memory references (events excluded).
    pub references: u64,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Instruction fetches.
    pub ifetches: u64,
    /// Threads: as the trace states it, else the cores seen.
    pub threads: u64,
    /// Distinct cores.
    pub cores: usize,
    /// Distinct address spaces.
    pub address_spaces: usize,
    /// Processes, when the format names them.
    pub processes: Option<u64>,
    /// Lowest and highest address (hexadecimal), if any reference was read.
    pub address_range: Option<AddressRange>,
    /// Distinct pages touched.
    pub footprint: Footprint,
    /// References per access size (bytes), sizes seen only.
    pub sizes: BTreeMap<u16, u64>,
    /// Marker values by name.
    pub markers: BTreeMap<String, u64>,
    /// Trace events (exits, unmaps, touches): not in the counts or footprint.
    pub control: ControlCounts,
    /// Records that are not references, by kind.
    pub records_skipped: BTreeMap<String, u64>,
    /// Metadata sections, in file order.
    pub sections: Vec<SectionInfo>,
    /// VMAs in the last sample of the `vmas` section.
    pub vmas: usize,
    /// Why the pass ended early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<SummaryError>,
}

/// Lowest and highest address.
#[derive(Clone, Debug, Serialize)]
pub struct AddressRange {
    /// Lowest, as `0x…`.
    pub min: String,
    /// Highest, as `0x…`.
    pub max: String,
}

/// Distinct pages touched, per (address space, page).
#[derive(Clone, Debug, Serialize)]
pub struct Footprint {
    /// 4 KiB pages.
    pub pages_4k: usize,
    /// 2 MiB pages.
    pub pages_2m: usize,
    /// `pages_4k` × 4 KiB.
    pub bytes_4k: u64,
    /// `pages_2m` × 2 MiB.
    pub bytes_2m: u64,
}

/// Trace events seen ([`crate::event`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ControlCounts {
    /// Address-space exits.
    pub exit: u64,
    /// Unmaps.
    pub unmap: u64,
    /// First touches of pages outside a sampled recording's windows (not references).
    pub touch: u64,
    /// VMA changes (a mapping made, grown, merged or madvised) in an exact recording.
    pub vma: u64,
    /// `MADV_DONTNEED` calls in an exact recording.
    pub dontneed: u64,
}

/// One metadata section.
#[derive(Clone, Debug, Serialize)]
pub struct SectionInfo {
    /// Its name.
    pub name: String,
    /// Its size.
    pub bytes: usize,
}

/// Why a summary is incomplete.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum SummaryError {
    /// The trace could not be read on: the error, and where (for damage).
    Read {
        /// The error.
        message: String,
        /// Byte offset of the damage, if known.
        offset: Option<u64>,
        /// References read before it, if known.
        refs_before: Option<u64>,
    },
    /// The caller stopped the pass (e.g. "interrupted by SIGINT").
    Stopped {
        /// What stopped it.
        message: String,
    },
}

impl TraceSummary {
    /// Marks a complete-looking summary as stopped by the caller, saying why (a summary
    /// that already has an error keeps it).
    pub fn stopped(&mut self, why: String) {
        if self.error.is_none() {
            self.complete = false;
            self.error = Some(SummaryError::Stopped { message: why });
        }
    }
}

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

/// The running counts of one pass.
#[derive(Default)]
struct Counts {
    /// References by kind (load, store, ifetch).
    by_kind: [u64; 3],
    /// Lowest and highest address.
    range: Option<(u64, u64)>,
    /// Distinct (asid, 4 KiB page).
    pages_4k: PageSet,
    /// Distinct (asid, 2 MiB page).
    pages_2m: PageSet,
    cores: U16Set,
    asids: U16Set,
    /// References per access size (index = size).
    sizes: Vec<u64>,
    last_page: [(u16, u64); 3],
    control: ControlCounts,
}

impl Counts {
    fn add(&mut self, batch: &Batch) {
        for e in &batch.events {
            match e.event {
                Event::Exit { .. } => self.control.exit += 1,
                Event::Unmap { .. } => self.control.unmap += 1,
                Event::Touch { .. } => self.control.touch += 1,
                Event::Vma { .. } => self.control.vma += 1,
                Event::DontNeed { .. } => self.control.dontneed += 1,
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

    fn references(&self) -> u64 {
        self.by_kind.iter().sum()
    }

    fn finish(self, file: String, format: String, meta: &TraceMeta, err: Option<&TraceError>) -> TraceSummary {
        let hex = |v: u64| format!("{v:#x}");
        TraceSummary {
            file,
            format,
            complete: err.is_none(),
            references: self.references(),
            loads: self.by_kind[AccessKind::Load as usize],
            stores: self.by_kind[AccessKind::Store as usize],
            ifetches: self.by_kind[AccessKind::IFetch as usize],
            threads: meta.threads.unwrap_or(self.cores.len() as u64),
            cores: self.cores.len(),
            address_spaces: self.asids.len(),
            processes: meta.processes,
            address_range: self.range.map(|(lo, hi)| AddressRange {
                min: hex(lo),
                max: hex(hi),
            }),
            footprint: Footprint {
                pages_4k: self.pages_4k.len(),
                pages_2m: self.pages_2m.len(),
                bytes_4k: self.pages_4k.len() as u64 * 4096,
                bytes_2m: self.pages_2m.len() as u64 * (2 << 20),
            },
            sizes: self
                .sizes
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(k, &n)| (k as u16, n))
                .collect(),
            markers: meta.markers.clone(),
            control: self.control,
            records_skipped: meta.counts.clone(),
            sections: meta
                .sections
                .iter()
                .map(|(n, b)| SectionInfo {
                    name: n.clone(),
                    bytes: b.len(),
                })
                .collect(),
            vmas: meta.vmas().len(),
            error: err.map(|e| {
                let (offset, refs_before) = match e {
                    TraceError::Corrupt {
                        offset, refs_before, ..
                    } => (Some(*offset), Some(*refs_before)),
                    _ => (None, None),
                };
                SummaryError::Read {
                    message: e.to_string(),
                    offset,
                    refs_before,
                }
            }),
        }
    }
}

/// Summarises `src` (named `file`, of format `format`) in one pass. Before each batch,
/// `on_batch` gets the references counted so far and the source's progress, and returns
/// `false` to stop there (the summary then covers what was read, `complete: false` —
/// give the reason with [`TraceSummary::stopped`]). Returns the summary and the read
/// error that ended the pass, if one did.
pub fn summarize(
    src: &mut dyn TraceSource,
    file: &str,
    format: &str,
    on_batch: &mut dyn FnMut(u64, Option<(u64, u64)>) -> bool,
) -> (TraceSummary, Option<TraceError>) {
    let mut c = Counts::default();
    let mut buf = Batch::with_capacity(1 << 16);
    let mut stopped = false;
    let err = loop {
        if !on_batch(c.references(), src.progress()) {
            stopped = true;
            break None;
        }
        buf.clear();
        let r = src.next_batch(&mut buf, 1 << 16);
        c.add(&buf);
        match r {
            Ok(0) => break None,
            Ok(_) => {}
            Err(e) => break Some(e),
        }
    };
    let meta = src.meta().unwrap_or_default();
    let mut s = c.finish(file.to_string(), format.to_string(), &meta, err.as_ref());
    if stopped {
        s.complete = false;
    }
    (s, err)
}

/// Opens the trace at `path` with `opts` and [`summarize`]s it (the format named is the
/// one given, else the one detected from the path). An error opening it is `Err`.
pub fn summarize_file(
    path: &Path,
    opts: &TraceOptions,
    on_batch: &mut dyn FnMut(u64, Option<(u64, u64)>) -> bool,
) -> Result<(TraceSummary, Option<TraceError>), TraceError> {
    let mut src = open_trace_with(path, opts)?;
    let format = match opts.format {
        Some(f) => f.name().to_string(),
        None if crate::is_stream(path) => "detected from the stream".to_string(),
        None => Format::detect_path(path)
            .map(|f| f.name().to_string())
            .unwrap_or_default(),
    };
    Ok(summarize(&mut *src, &path.display().to_string(), &format, on_batch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::LegacyMarkers;
    use crate::MemRef;

    /// References (the legacy markers among them are decoded by [`LegacyMarkers`]).
    struct Refs(Vec<MemRef>, Option<TraceError>);

    impl TraceSource for Refs {
        fn next_batch(&mut self, buf: &mut Batch, _max: usize) -> Result<usize, TraceError> {
            let n = self.0.len();
            buf.refs.append(&mut self.0);
            match self.1.take() {
                Some(e) => Err(e),
                None => Ok(n),
            }
        }
        fn describe(&self) -> String {
            "test".into()
        }
    }

    fn refs() -> Vec<MemRef> {
        let mut v = vec![
            MemRef::new(0x1000, AccessKind::Load, 8),
            MemRef::new(0x1008, AccessKind::Store, 4),
            MemRef::new(0x20_0000, AccessKind::IFetch, 4),
            MemRef::new(crate::event::EXIT_ADDR, AccessKind::Load, 1),
        ];
        v.extend(
            Event::Unmap {
                asid: 0,
                start: 0x1000,
                end: 0x2000,
            }
            .legacy_refs(),
        );
        v
    }

    #[test]
    fn counts_footprint_and_control_references() {
        let (s, err) = summarize(&mut LegacyMarkers::new(Refs(refs(), None)), "t", "mlt", &mut |_, _| {
            true
        });
        assert!(err.is_none() && s.complete);
        assert_eq!((s.references, s.loads, s.stores, s.ifetches), (3, 1, 1, 1));
        assert_eq!((s.control.exit, s.control.unmap), (1, 1));
        assert_eq!((s.footprint.pages_4k, s.footprint.pages_2m), (2, 2));
        assert_eq!(s.sizes, BTreeMap::from([(4, 2), (8, 1)]));
        let r = s.address_range.as_ref().unwrap();
        assert_eq!((r.min.as_str(), r.max.as_str()), ("0x1000", "0x200000"));
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""sizes":{"4":2,"8":1}"#), "{json}");
        assert!(!json.contains("error"), "{json}");
    }

    #[test]
    fn a_stop_or_an_error_leaves_an_incomplete_summary_of_what_was_read() {
        let (mut s, _) = summarize(&mut LegacyMarkers::new(Refs(refs(), None)), "t", "", &mut |_, _| false);
        assert!(!s.complete && s.references == 0);
        s.stopped("interrupted by SIGINT".into());
        assert_eq!(
            serde_json::to_value(&s).unwrap()["error"],
            serde_json::json!({"message": "interrupted by SIGINT"})
        );
        let e = TraceError::Corrupt {
            path: "t".into(),
            offset: 77,
            refs_before: 6,
            line: None,
            what: "bad".into(),
        };
        let (s, err) = summarize(&mut LegacyMarkers::new(Refs(refs(), Some(e))), "t", "", &mut |_, _| {
            true
        });
        assert!(err.is_some() && !s.complete && s.references == 3);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (v["error"]["offset"].as_u64(), v["error"]["refs_before"].as_u64()),
            (Some(77), Some(6))
        );
    }
}
