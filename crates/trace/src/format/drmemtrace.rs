//! DynamoRIO drmemtrace offline traces (the format of `drcachesim -offline` after
//! raw2trace, of Google's published workload traces and of DynamoRIO's TLB simulator).
//!
//! A trace is an array of packed little-endian 12-byte records `{u16 type; u16 size;
//! u64 addr}`, stored raw, gzip-compressed (`.trace.gz`) or split over the members
//! `chunk.0000`, `chunk.0001`, … of a zip archive (`.trace.zip`, read in name order). A
//! directory holds one such file per thread; [`DrDirReader`] interleaves them.
//!
//! Which records become references (contract, tested against an independent count):
//!
//! | type | record | becomes |
//! |---|---|---|
//! | 0 | READ | load (`size` bytes at `addr`) |
//! | 1 | WRITE | store |
//! | 2–9, 32–46 | prefetches | ignored, or loads with [`DrOptions::prefetches`] |
//! | 10–16, 48, 49 | INSTR and branch kinds | instruction fetch (`size` = instruction length) |
//! | 31 | INSTR_SYSENTER | instruction fetch (DynamoRIO's `type_is_instr` counts it as one) |
//! | 29 | INSTR_NO_FETCH | nothing (the instruction was not fetched) |
//! | 47 | ENCODING | nothing (instruction bytes) |
//! | 22, 23, 24, 25, 26 | THREAD, THREAD_EXIT, PID, HEADER, FOOTER | nothing; set the thread / process |
//! | 28 | MARKER (subtype in `size`, value in `addr`) | nothing; page size, cache-line size, version, file type, chunk size are recorded in [`TraceMeta`]; TIMESTAMP orders threads; CPU_ID sets the core |
//! | 17–21, 27, 30 | bundle, flushes, hardware prefetch, maybe-fetch | nothing (counted) |
//! | ≥ 50 | — | an error: unknown record type |
//!
//! Cores: with [`CoreMap::Cpu`] (default) a reference's core is the CPU named by its
//! thread's latest CPU_ID marker, renumbered densely in order of first appearance (CPU 17
//! seen first → core 0), so a trace of 4 CPUs uses cores 0–3 whatever their ids;
//! references before a thread's first CPU_ID marker use core 0. With [`CoreMap::Thread`]
//! each thread (THREAD record) is its own core, numbered in order of first appearance.
//! Address spaces: each process id (PID record) gets an asid, numbered from 0 in order of
//! first appearance.

use super::input::{open_input, Container, Progress};
use super::zipchunks::ZipChunks;
use crate::meta::{marker, TraceMeta};
use crate::{AccessKind, CoreMap, Interleave, MemRef, TraceError, TraceSource};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes per record.
pub const RECORD: usize = 12;
const TYPE_MARKER: u16 = 28;
const MARKER_TIMESTAMP: u16 = 2;
const MARKER_CPU_ID: u16 = 3;

/// Reading options.
#[derive(Clone, Copy, Debug, Default)]
pub struct DrOptions {
    /// Deliver prefetch records (types 2–9, 32–46) as loads instead of ignoring them.
    pub prefetches: bool,
    /// How threads map to cores.
    pub cores: CoreMap,
}

/// Ids renumbered densely, shared by all threads of a directory.
#[derive(Default)]
struct Ids {
    cpus: HashMap<u64, u16>,
    tids: HashMap<u64, u16>,
    pids: HashMap<u64, u16>,
}

fn dense(map: &mut HashMap<u64, u16>, id: u64) -> u16 {
    let n = map.len();
    *map.entry(id).or_insert(n.min(u16::MAX as usize) as u16)
}

/// State shared by all threads of one reader: options, id renumbering, metadata.
#[derive(Default)]
struct Shared {
    opts: DrOptions,
    ids: Ids,
    meta: TraceMeta,
    skipped: Skipped,
}

impl Shared {
    /// The metadata as far as read: `meta` with the skipped records' counts merged in.
    fn meta_now(&self) -> TraceMeta {
        let mut m = self.meta.clone();
        let named = SKIPPED.iter().map(|s| s.to_string()).zip(self.skipped.named);
        let markers = (0..).map(|sub| format!("marker_{sub}")).zip(self.skipped.markers);
        for (name, n) in named.chain(markers) {
            if n > 0 {
                *m.counts.entry(name).or_insert(0) += n;
            }
        }
        m
    }
}

/// Names of the counted records that are not references ([`TraceMeta::counts`]), in
/// the order of their slots in [`Skipped::named`].
const SKIPPED: [&str; 10] = [
    "prefetch",
    "instr_no_fetch",
    "encoding",
    "thread_exit",
    "footer",
    "other_record",
    "timestamp",
    "cpu_id",
    "kernel_event",
    "kernel_xfer",
];

/// Counts of the records that are not references, in fixed slots (indices into
/// [`SKIPPED`]; markers of subtype below 64 by subtype), merged into
/// [`TraceMeta::counts`] when the metadata is asked for. A map lookup by name per
/// record cost ~150 host instructions, and an aarch64 thread has an encoding record
/// about every seventh reference (docs/benchmarks-log.md, "Start-up").
struct Skipped {
    named: [u64; SKIPPED.len()],
    markers: [u64; 64],
}

impl Default for Skipped {
    fn default() -> Skipped {
        Skipped {
            named: [0; SKIPPED.len()],
            markers: [0; 64],
        }
    }
}

impl Skipped {
    const PREFETCH: usize = 0;
    const INSTR_NO_FETCH: usize = 1;
    const ENCODING: usize = 2;
    const THREAD_EXIT: usize = 3;
    const FOOTER: usize = 4;
    const OTHER_RECORD: usize = 5;
    const TIMESTAMP: usize = 6;
    const CPU_ID: usize = 7;
    const KERNEL_EVENT: usize = 8;
    const KERNEL_XFER: usize = 9;
}

/// Why [`Thread::fill`] stopped.
enum Stop {
    /// `max` references were delivered.
    Full,
    /// A TIMESTAMP marker was read (when asked to stop at them): the thread's next segment
    /// starts at this time.
    Timestamp(u64),
    /// The thread's records ended.
    End,
}

/// How [`Thread::refs_run`] takes a record, by type ([`RUN_CLASSES`]): as a load, a
/// store or an instruction fetch (the kinds [`Thread::fill`] gives types 0, 1, and
/// 10–16, 31, 48, 49); counted and passed over (types 29 and 47); or not at all (any
/// other type ends the run and goes through [`Thread::fill`]'s full decoding). A table
/// rather than a `match` on the type: one load instead of a jump table and a range test
/// per record.
const RUN_LOAD: u8 = 0;
const RUN_STORE: u8 = 1;
const RUN_IFETCH: u8 = 2;
const RUN_NO_FETCH: u8 = 3;
const RUN_ENCODING: u8 = 4;
const RUN_END: u8 = 5;

/// The class of each record type below 64 (types from 64 on end the run).
const RUN_CLASSES: [u8; 64] = {
    let mut t = [RUN_END; 64];
    t[0] = RUN_LOAD;
    t[1] = RUN_STORE;
    let mut ty = 10;
    while ty <= 16 {
        t[ty] = RUN_IFETCH;
        ty += 1;
    }
    t[31] = RUN_IFETCH;
    t[48] = RUN_IFETCH;
    t[49] = RUN_IFETCH;
    t[29] = RUN_NO_FETCH;
    t[47] = RUN_ENCODING;
    t
};

/// The decoder of one thread's record stream.
struct Thread {
    src: Box<dyn Read + Send>,
    path: PathBuf,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Byte offset (in the decompressed record stream) of `buf[start]`.
    offset: u64,
    eof: bool,
    core: u16,
    asid: u16,
}

impl Thread {
    fn new(src: Box<dyn Read + Send>, path: &Path) -> Thread {
        Thread {
            src,
            path: path.to_path_buf(),
            // Larger than the 64 KiB buffer of the decompressing reader (format/input.rs),
            // so a read bypasses that buffer and decompresses straight into this one.
            buf: vec![0u8; RECORD * 8192],
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
            core: 0,
            asid: 0,
        }
    }

    fn corrupt(&self, offset: u64, what: String, refs_before: u64) -> TraceError {
        TraceError::Corrupt {
            path: self.path.clone(),
            offset,
            line: None,
            what,
            refs_before,
        }
    }

    /// Refills the buffer; false at the end of the stream.
    fn refill(&mut self, refs_before: u64) -> Result<bool, TraceError> {
        let left = self.end - self.start;
        self.buf.copy_within(self.start..self.end, 0);
        self.start = 0;
        self.end = left;
        while !self.eof && self.end < RECORD {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.offset + self.end as u64;
                    return Err(self.corrupt(at, e.to_string(), refs_before));
                }
            }
        }
        if self.end >= RECORD {
            return Ok(true);
        }
        if self.end > 0 {
            let what = format!(
                "the trace ends inside a record: {} trailing bytes (records are {RECORD} bytes; truncated, or not a drmemtrace file)",
                self.end
            );
            return Err(self.corrupt(self.offset, what, refs_before));
        }
        Ok(false)
    }

    /// Decodes records into `out` until `max` references were added, the stream ends, or
    /// (if `stop_at_ts`) a TIMESTAMP marker is read. `delivered` counts references handed
    /// out before this call (for errors).
    fn fill(
        &mut self,
        out: &mut Vec<MemRef>,
        max: usize,
        stop_at_ts: bool,
        sh: &mut Shared,
        delivered: u64,
    ) -> Result<Stop, TraceError> {
        let Shared {
            opts,
            ids,
            meta,
            skipped,
        } = sh;
        let first = out.len();
        loop {
            if out.len() - first >= max {
                return Ok(Stop::Full);
            }
            if self.end - self.start < RECORD && !self.refill(delivered + (out.len() - first) as u64)? {
                return Ok(Stop::End);
            }
            // The common records, loads, stores and instruction fetches, straight from
            // the buffer while they last (up to `max` references and the buffer's last
            // whole record); any other record goes through the full decoding below.
            let n = self.refs_run(out, max - (out.len() - first), &mut skipped.named);
            if n > 0 {
                continue;
            }
            let rec: &[u8; RECORD] = self.buf[self.start..self.start + RECORD].try_into().expect("12 bytes");
            let ty = u16::from_le_bytes([rec[0], rec[1]]);
            let size = u16::from_le_bytes([rec[2], rec[3]]);
            let addr = u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes"));
            let at = self.offset;
            self.start += RECORD;
            self.offset += RECORD as u64;
            let kind = match ty {
                0 => AccessKind::Load,
                1 => AccessKind::Store,
                10..=16 | 31 | 48 | 49 => AccessKind::IFetch,
                2..=9 | 32..=46 => {
                    if !opts.prefetches {
                        skipped.named[Skipped::PREFETCH] += 1;
                        continue;
                    }
                    AccessKind::Load
                }
                TYPE_MARKER => {
                    if let Some(stop) = self.marker(size, addr, stop_at_ts, opts, ids, meta, skipped) {
                        return Ok(stop);
                    }
                    continue;
                }
                22 => {
                    let t = dense(&mut ids.tids, addr);
                    if matches!(opts.cores, CoreMap::Thread) {
                        self.core = t;
                    }
                    meta.threads = Some(ids.tids.len() as u64);
                    continue;
                }
                24 => {
                    self.asid = dense(&mut ids.pids, addr);
                    meta.processes = Some(ids.pids.len() as u64);
                    continue;
                }
                25 => {
                    meta.markers.insert("header_version".into(), addr);
                    continue;
                }
                17..=21 | 23 | 26 | 27 | 29 | 30 | 47 => {
                    skipped.named[match ty {
                        29 => Skipped::INSTR_NO_FETCH,
                        47 => Skipped::ENCODING,
                        23 => Skipped::THREAD_EXIT,
                        26 => Skipped::FOOTER,
                        _ => Skipped::OTHER_RECORD,
                    }] += 1;
                    continue;
                }
                _ => {
                    let what = format!(
                        "unknown record type {ty} (size {size}, addr {addr:#x}); is this a drmemtrace offline trace?"
                    );
                    return Err(self.corrupt(at, what, delivered + (out.len() - first) as u64));
                }
            };
            out.push(MemRef {
                addr,
                size,
                kind,
                core: self.core,
                asid: self.asid,
            });
        }
    }

    /// Decodes the leading run of load, store, instruction-fetch,
    /// instruction-without-fetch (type 29) and encoding (type 47) records of the buffer,
    /// at most `room` records, into `out`; returns how many records it consumed (the
    /// buffer's position and offset move past them; types 29 and 47 count in `named`, as
    /// [`Thread::fill`] counts them). The same references and counts the full decoding in
    /// [`Thread::fill`] makes of those records, without its per-record checks. (At most
    /// `room` records, not references: then no record needs a room check.) Type 29 (a
    /// repeated string instruction's later iterations) is a fifth of an x86-64 trace's
    /// records, and type 47 precedes most instructions of some aarch64 ones: each ending
    /// the run cost ~75 instructions (docs/benchmarks-log.md, "drmemtrace skip records").
    #[inline]
    fn refs_run(&mut self, out: &mut Vec<MemRef>, room: usize, named: &mut [u64; SKIPPED.len()]) -> usize {
        let whole = ((self.end - self.start) / RECORD).min(room);
        let recs = &self.buf[self.start..self.start + whole * RECORD];
        // The references go straight into the vector's spare room (at least `whole`
        // slots after the reserve), and its length is set once at the end: a `push`
        // per record tested the capacity and stored the length back on every record
        // (with the class table: 68.98 M -> 65.58 M instructions for `sim -t` of the
        // 751 K-record aarch64 thread 2444840, callgrind).
        out.reserve(whole);
        let spare = &mut out.spare_capacity_mut()[..whole];
        let (core, asid) = (self.core, self.asid);
        let (mut n, mut used, mut no_fetch, mut encodings) = (0, 0, 0u64, 0u64);
        for rec in recs.chunks_exact(RECORD) {
            let ty = u16::from_le_bytes([rec[0], rec[1]]) as usize;
            let kind = match RUN_CLASSES.get(ty).copied().unwrap_or(RUN_END) {
                RUN_LOAD => AccessKind::Load,
                RUN_STORE => AccessKind::Store,
                RUN_IFETCH => AccessKind::IFetch,
                RUN_NO_FETCH => {
                    no_fetch += 1;
                    used += 1;
                    continue;
                }
                RUN_ENCODING => {
                    encodings += 1;
                    used += 1;
                    continue;
                }
                _ => break,
            };
            // `n` <= `used` < `whole`: in range.
            spare[n].write(MemRef {
                addr: u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes")),
                size: u16::from_le_bytes([rec[2], rec[3]]),
                kind,
                core,
                asid,
            });
            n += 1;
            used += 1;
        }
        // SAFETY: the first `n` slots after the length were written in the loop above
        // (each `spare[n]` write, then `n += 1`), and `n` <= `whole` <= capacity - len.
        unsafe { out.set_len(out.len() + n) };
        if no_fetch | encodings != 0 {
            named[Skipped::INSTR_NO_FETCH] += no_fetch;
            named[Skipped::ENCODING] += encodings;
        }
        self.start += used * RECORD;
        self.offset += (used * RECORD) as u64;
        used
    }

    /// Handles a marker; returns `Some(stop)` when the caller must stop.
    #[allow(clippy::too_many_arguments)] // the disjoint fields of `Shared`
    fn marker(
        &mut self,
        sub: u16,
        value: u64,
        stop_at_ts: bool,
        opts: &DrOptions,
        ids: &mut Ids,
        meta: &mut TraceMeta,
        skipped: &mut Skipped,
    ) -> Option<Stop> {
        let name = match sub {
            MARKER_TIMESTAMP => {
                skipped.named[Skipped::TIMESTAMP] += 1;
                return stop_at_ts.then_some(Stop::Timestamp(value));
            }
            MARKER_CPU_ID => {
                let c = dense(&mut ids.cpus, value);
                if matches!(opts.cores, CoreMap::Cpu) {
                    self.core = c;
                }
                // Once per CPU_ID marker: no allocation once the key exists.
                match meta.markers.get_mut("cpus") {
                    Some(v) => *v = ids.cpus.len() as u64,
                    None => {
                        meta.markers.insert("cpus".into(), ids.cpus.len() as u64);
                    }
                }
                skipped.named[Skipped::CPU_ID] += 1;
                return None;
            }
            18 => marker::PAGE_SIZE,
            10 => marker::CACHE_LINE_SIZE,
            12 => marker::VERSION,
            9 => "filetype",
            20 => "chunk_instr_count",
            0 => {
                skipped.named[Skipped::KERNEL_EVENT] += 1;
                return None;
            }
            1 => {
                skipped.named[Skipped::KERNEL_XFER] += 1;
                return None;
            }
            _ => {
                match skipped.markers.get_mut(sub as usize) {
                    Some(n) => *n += 1,
                    None => meta.count(&format!("marker_{sub}")),
                }
                return None;
            }
        };
        meta.markers.insert(name.to_string(), value);
        None
    }
}

/// Whether a zip member is a trace chunk.
fn is_chunk(name: &str) -> bool {
    name.starts_with("chunk.")
}

/// Opens one per-thread trace file (zip, gzip or raw) as a record stream.
fn open_thread(path: &Path) -> Result<(Thread, Progress), TraceError> {
    let input = open_input(path)?;
    if input.container == Container::Zip {
        drop(input);
        let zc = ZipChunks::open(path, is_chunk).map_err(|source| TraceError::Io {
            path: path.into(),
            error: source,
        })?;
        if zc.has_no_members() {
            return Err(TraceError::Corrupt {
                path: path.into(),
                offset: 0,
                line: None,
                what: "the zip archive holds no chunk.NNNN member (a drmemtrace .trace.zip keeps its records in chunk.0000, chunk.0001, …), so it holds no trace".into(),
                refs_before: 0,
            });
        }
        return Ok((Thread::new(Box::new(zc), path), Progress::default()));
    }
    let progress = input.progress.clone();
    Ok((Thread::new(Box::new(input.reader), path), progress))
}

/// A single drmemtrace file (one thread, or an already serialized trace).
pub struct DrReader {
    thread: Thread,
    sh: Shared,
    delivered: u64,
    progress: Progress,
}

impl DrReader {
    /// Opens `path` (`.trace.zip`, `.trace.gz` or raw records).
    pub fn open(path: &Path, opts: DrOptions) -> Result<DrReader, TraceError> {
        let (thread, progress) = open_thread(path)?;
        Ok(DrReader {
            thread,
            sh: Shared {
                opts,
                ..Shared::default()
            },
            delivered: 0,
            progress,
        })
    }

    /// Reads records from any byte stream (`path` names it in errors).
    pub fn from_reader(src: Box<dyn Read + Send>, path: &Path, opts: DrOptions) -> DrReader {
        DrReader {
            thread: Thread::new(src, path),
            sh: Shared {
                opts,
                ..Shared::default()
            },
            delivered: 0,
            progress: Progress::default(),
        }
    }
}

impl TraceSource for DrReader {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let start = buf.len();
        self.thread.fill(buf, max, false, &mut self.sh, self.delivered)?;
        let n = buf.len() - start;
        self.delivered += n as u64;
        Ok(n)
    }
    fn describe(&self) -> String {
        format!("{} (drmemtrace)", self.thread.path.display())
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.progress.get()
    }
    fn meta(&self) -> Option<TraceMeta> {
        Some(self.sh.meta_now())
    }
}

/// The per-thread trace files of a drmemtrace directory (`*.trace.zip`, `*.trace.gz`,
/// `*.trace`; a `trace/` subdirectory is used when present), sorted by name. Schedule files
/// (`cpu_schedule.bin.zip`, `serial_schedule.bin.gz`) are not threads and are skipped.
pub fn thread_files(dir: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let sub = dir.join("trace");
    let dir = if sub.is_dir() { sub } else { dir.to_path_buf() };
    let rd = std::fs::read_dir(&dir).map_err(|source| TraceError::Io {
        path: dir.clone(),
        error: source,
    })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            !n.contains("schedule") && (n.ends_with(".trace.zip") || n.ends_with(".trace.gz") || n.ends_with(".trace"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(TraceError::Spec(format!(
            "{}: no per-thread *.trace.zip / *.trace.gz files in this directory",
            dir.display()
        )));
    }
    Ok(files)
}

/// A directory of per-thread drmemtrace files, interleaved into one stream.
///
/// [`Interleave::Timestamp`] (default) replays threads as traced: each thread's records
/// are cut into segments at its TIMESTAMP markers and the segment with the smallest
/// timestamp runs next (ties: the lower file index), as DynamoRIO's serial replay does.
/// [`Interleave::RoundRobin`] gives each live thread `quantum` references in turn.
/// Memory: one open decoder per thread (roughly 200–300 KiB: record buffer, file buffers, inflate
/// state), never a whole file. Each thread also keeps one file open, so a directory with
/// more threads than the open-file limit (`ulimit -n`) needs that limit raised.
pub struct DrDirReader {
    dir: PathBuf,
    threads: Vec<Thread>,
    next_ts: Vec<u64>,
    live: Vec<bool>,
    cur: usize,
    run: u64,
    mode: Interleave,
    sh: Shared,
    delivered: u64,
}

impl DrDirReader {
    /// Opens every thread file of `dir`.
    pub fn open(dir: &Path, opts: DrOptions, mode: Interleave) -> Result<DrDirReader, TraceError> {
        let files = thread_files(dir)?;
        let threads = files
            .iter()
            .map(|f| open_thread(f).map(|t| t.0))
            .collect::<Result<Vec<_>, _>>()?;
        let n = threads.len();
        Ok(DrDirReader {
            dir: dir.to_path_buf(),
            threads,
            next_ts: vec![0; n],
            live: vec![true; n],
            cur: 0,
            run: 0,
            mode,
            sh: Shared {
                opts,
                ..Shared::default()
            },
            delivered: 0,
        })
    }

    fn pick(&mut self) -> Option<usize> {
        match self.mode {
            Interleave::Timestamp => (0..self.threads.len())
                .filter(|&i| self.live[i])
                .min_by_key(|&i| (self.next_ts[i], i)),
            Interleave::RoundRobin(_) => {
                let n = self.threads.len();
                (1..=n).map(|k| (self.cur + k) % n).find(|&i| self.live[i])
            }
        }
    }
}

impl TraceSource for DrDirReader {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let start = buf.len();
        while buf.len() - start < max {
            if !self.live[self.cur] {
                match self.pick() {
                    Some(i) => self.cur = i,
                    None => break,
                }
            }
            let room = max - (buf.len() - start);
            let (room, stop_ts) = match self.mode {
                Interleave::Timestamp => (room, true),
                Interleave::RoundRobin(q) => (room.min(q.max(1).saturating_sub(self.run).max(1) as usize), false),
            };
            let before = buf.len();
            let delivered = self.delivered + (before - start) as u64;
            let t = &mut self.threads[self.cur];
            let stop = t.fill(buf, room, stop_ts, &mut self.sh, delivered)?;
            self.run += (buf.len() - before) as u64;
            match (stop, self.mode) {
                (Stop::End, _) => {
                    self.live[self.cur] = false;
                    self.run = 0;
                }
                (Stop::Timestamp(ts), _) => {
                    self.next_ts[self.cur] = ts;
                    if let Some(i) = self.pick() {
                        self.cur = i;
                    }
                }
                (Stop::Full, Interleave::RoundRobin(q)) if self.run >= q.max(1) => {
                    self.run = 0;
                    if let Some(i) = self.pick() {
                        self.cur = i;
                    }
                }
                (Stop::Full, _) => {}
            }
        }
        let n = buf.len() - start;
        self.delivered += n as u64;
        Ok(n)
    }
    fn describe(&self) -> String {
        format!(
            "{} (drmemtrace directory, {} threads)",
            self.dir.display(),
            self.threads.len()
        )
    }
    fn meta(&self) -> Option<TraceMeta> {
        let mut m = self.sh.meta_now();
        m.markers.insert("thread_files".into(), self.threads.len() as u64);
        Some(m)
    }
}

/// True when `head` (the first decompressed bytes) looks like a drmemtrace record stream:
/// a HEADER record (type 25) followed by a version marker, thread or pid record.
pub fn looks_like(head: &[u8]) -> bool {
    head.len() >= 2 * RECORD
        && u16::from_le_bytes([head[0], head[1]]) == 25
        && matches!(u16::from_le_bytes([head[12], head[13]]), 22 | 24 | 28)
}
