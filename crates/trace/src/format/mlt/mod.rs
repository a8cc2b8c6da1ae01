//! `.mlt`: mmulab's own compact trace format — a streaming writer and reader.
//!
//! Contract (byte layout in docs/trace-format.md, which is normative):
//! - lossless for every [`MemRef`] field (addr, size, kind, core, asid);
//! - a 16-byte header (magic, version), then frames: reference blocks of at most
//!   [`BLOCK_REFS`] references, event frames (typed [`Event`]s: exits, unmaps) and
//!   metadata sections (markers, captured VMAs, …) anywhere between blocks, and an end
//!   frame carrying the totals. Every frame header and payload is
//!   covered by a CRC-32, so a flipped bit is reported with the frame's byte offset, never
//!   decoded as silent garbage; a file without its end frame is reported as truncated, with
//!   the references of the intact blocks delivered first;
//! - version 1 files (no event frames; events as legacy marker references, see
//!   [`crate::event`]) are still read; this code writes version 2;
//! - blocks are independent (the delta predictors restart at each block), so a reader
//!   holds one block (≤ 64 Ki references) in memory whatever the trace length.
//!
//! Encoding of a block: four columns — one tag byte per reference (kind, byte length of the
//! address delta, "size changed", "core/asid changed"), the address deltas (zig-zag,
//! against the previous address *of the same class* — instruction fetches, or data
//! references — so interleaved code and data streams each stay small and a store to the
//! word just loaded costs no delta byte), then the rare size and core/asid changes. The column payload
//! is compressed with zstd.
//!
//! Why zstd rather than lz4_flex: the columns are small integers with long repeats; zstd
//! compresses them 2–4× better than LZ4 and still decompresses at more than 1 GB/s per
//! core, which is above what the column decoder consumes (about 2 bytes per reference);
//! it was already a workspace dependency, and its C library is the reference
//! implementation, widely deployed and fuzzed.

use crate::event::{Batch, Event, RECORD_LEN};
use crate::meta::TraceMeta;
use crate::{AccessKind, MemRef, TraceError, TraceSource};
use std::io::{Read, Write};
use std::path::Path;

mod read;
pub use read::{read_sections, MltReader};

/// The file's first 8 bytes (a PNG-style magic: a high byte, then CR LF, ^Z, LF, so text
/// mangling is detected).
pub const MAGIC: [u8; 8] = *b"\x89MLT\r\n\x1a\n";
/// The format version this code writes (it reads 1 and 2; version 2 added event frames).
pub const VERSION: u16 = 2;
/// The most events a reader accepts in one event frame.
pub const MAX_FRAME_EVENTS: u32 = 1 << 16;
/// Length of the file header.
pub const HEADER_LEN: usize = 16;
/// Length of a frame header.
pub const FRAME_HEADER_LEN: usize = 20;
/// References per block (the writer's block size; a reader accepts up to [`MAX_BLOCK_REFS`]).
pub const BLOCK_REFS: usize = 1 << 16;
/// The most references a reader accepts in one block (bounds its memory).
pub const MAX_BLOCK_REFS: u32 = 1 << 20;
/// The largest metadata section a reader accepts, in bytes.
pub const MAX_SECTION: u32 = 64 << 20;

const TAG_BLOCK: [u8; 2] = *b"RB";
const TAG_SECTION: [u8; 2] = *b"MS";
const TAG_END: [u8; 2] = *b"EN";
const TAG_EVENTS: [u8; 2] = *b"EV";
const CODEC_STORED: u8 = 0;
const CODEC_ZSTD: u8 = 1;
const SIZE_FLAG: u8 = 0x40;
const CTX_FLAG: u8 = 0x80;

/// Masks keeping the low `n` bytes of a little-endian u64, for n = 0..=8.
const MASK: [u64; 9] = [
    0,
    0xff,
    0xffff,
    0xff_ffff,
    0xffff_ffff,
    0xff_ffff_ffff,
    0xffff_ffff_ffff,
    0xff_ffff_ffff_ffff,
    u64::MAX,
];
const KINDS: [AccessKind; 4] = [
    AccessKind::Load,
    AccessKind::Store,
    AccessKind::IFetch,
    AccessKind::IFetch,
];

/// Streaming `.mlt` writer: buffer references with [`MltWriter::push`] and events with
/// [`MltWriter::push_event`], add metadata with [`MltWriter::section`], and call
/// [`MltWriter::finish`] — a file not finished has no end frame and readers report it as
/// truncated.
pub struct MltWriter<W: Write> {
    out: W,
    level: i32,
    comp: zstd::bulk::Compressor<'static>,
    tags: Vec<u8>,
    deltas: Vec<u8>,
    sizes: Vec<u8>,
    ctx: Vec<u8>,
    prev_addr: [u64; 2],
    prev_size: [u16; 3],
    core: u16,
    asid: u16,
    refs: u64,
    blocks: u64,
    bytes: u64,
    raw: Vec<u8>,
    frame: Vec<u8>,
    /// Events after the last reference pushed, written as one frame before the next.
    events: Vec<Event>,
    events_written: u64,
}

impl<W: Write> MltWriter<W> {
    /// Starts a file on `out` with zstd compression `level` (1–22; 3 is a good default,
    /// higher levels shrink files a little and slow writing, not reading).
    pub fn new(mut out: W, level: i32) -> std::io::Result<Self> {
        let mut h = [0u8; HEADER_LEN];
        h[..8].copy_from_slice(&MAGIC);
        h[8..10].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        out.write_all(&h)?;
        let comp = zstd::bulk::Compressor::new(level)?;
        Ok(MltWriter {
            out,
            level,
            comp,
            tags: Vec::with_capacity(BLOCK_REFS),
            deltas: Vec::with_capacity(BLOCK_REFS * 2),
            sizes: Vec::new(),
            ctx: Vec::new(),
            prev_addr: [0; 2],
            prev_size: [0; 3],
            core: 0,
            asid: 0,
            refs: 0,
            blocks: 0,
            bytes: HEADER_LEN as u64,
            raw: Vec::new(),
            frame: Vec::new(),
            events: Vec::new(),
            events_written: 0,
        })
    }

    /// Appends one reference.
    #[inline]
    pub fn push(&mut self, r: &MemRef) -> std::io::Result<()> {
        if !self.events.is_empty() {
            self.flush_events()?;
        }
        let k = r.kind as usize;
        let class = (r.kind == AccessKind::IFetch) as usize;
        let d = r.addr.wrapping_sub(self.prev_addr[class]) as i64;
        let z = ((d << 1) ^ (d >> 63)) as u64;
        let len = (8 - z.leading_zeros() / 8) as u8;
        let mut tag = r.kind as u8 | (len << 2);
        self.deltas.extend_from_slice(&z.to_le_bytes()[..len as usize]);
        self.prev_addr[class] = r.addr;
        if r.size != self.prev_size[k] {
            tag |= SIZE_FLAG;
            self.sizes.extend_from_slice(&r.size.to_le_bytes());
            self.prev_size[k] = r.size;
        }
        if r.core != self.core || r.asid != self.asid {
            tag |= CTX_FLAG;
            self.ctx.extend_from_slice(&r.core.to_le_bytes());
            self.ctx.extend_from_slice(&r.asid.to_le_bytes());
            self.core = r.core;
            self.asid = r.asid;
        }
        self.tags.push(tag);
        if self.tags.len() == BLOCK_REFS {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Appends references.
    pub fn push_all(&mut self, refs: &[MemRef]) -> std::io::Result<()> {
        refs.iter().try_for_each(|r| self.push(r))
    }

    /// Appends an event after the references pushed so far. Events are written as one
    /// frame between blocks: the block before them is cut short, so a trace with an event
    /// every few references compresses less well.
    pub fn push_event(&mut self, e: &Event) -> std::io::Result<()> {
        e.check().map_err(|w| invalid(&w))?;
        self.flush_block()?;
        self.events.push(*e);
        if self.events.len() == MAX_FRAME_EVENTS as usize {
            self.flush_events()?;
        }
        Ok(())
    }

    /// Appends a batch: its references and its events, in order.
    pub fn push_batch(&mut self, b: &Batch) -> std::io::Result<()> {
        b.for_each_run(|x| match x {
            Ok(refs) => self.push_all(refs),
            Err(e) => self.push_event(e),
        })
    }

    /// Writes the buffered events as one frame.
    #[cold]
    fn flush_events(&mut self) -> std::io::Result<()> {
        let raw: Vec<u8> = self.events.iter().flat_map(|e| e.encode()).collect();
        self.write_frame(TAG_EVENTS, self.events.len() as u32, &raw, raw.len() > 256)?;
        self.events_written += self.events.len() as u64;
        self.events.clear();
        Ok(())
    }

    /// Writes a named metadata section (after the references pushed so far). Names used by
    /// mmulab: `markers` (text lines `name value`), `vmas` (see `mmulab record`), `source`.
    pub fn section(&mut self, name: &str, body: &[u8]) -> std::io::Result<()> {
        self.flush_block()?;
        if !self.events.is_empty() {
            self.flush_events()?;
        }
        let name = name.as_bytes();
        let name_len = u16::try_from(name.len()).map_err(|_| invalid("section name too long"))?;
        let mut raw = Vec::with_capacity(2 + name.len() + body.len());
        raw.extend_from_slice(&name_len.to_le_bytes());
        raw.extend_from_slice(name);
        raw.extend_from_slice(body);
        if raw.len() as u64 > MAX_SECTION as u64 {
            return Err(invalid("metadata section larger than 64 MiB"));
        }
        self.write_frame(TAG_SECTION, 0, &raw, raw.len() > 256)
    }

    /// References written so far.
    pub fn refs(&self) -> u64 {
        self.refs + self.tags.len() as u64
    }

    /// Bytes written to the output so far (blocks still buffered are not counted).
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events_written + self.events.len() as u64
    }

    /// Flushes the last block and events, writes the end frame (totals: references,
    /// blocks, events) and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_block()?;
        if !self.events.is_empty() {
            self.flush_events()?;
        }
        let mut body = [0u8; 24];
        body[..8].copy_from_slice(&self.refs.to_le_bytes());
        body[8..16].copy_from_slice(&self.blocks.to_le_bytes());
        body[16..].copy_from_slice(&self.events_written.to_le_bytes());
        self.write_frame(TAG_END, 0, &body, false)?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn flush_block(&mut self) -> std::io::Result<()> {
        if self.tags.is_empty() {
            return Ok(());
        }
        let n = self.tags.len() as u32;
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        for col in [&self.tags, &self.deltas, &self.sizes, &self.ctx] {
            raw.extend_from_slice(col);
        }
        self.write_frame(TAG_BLOCK, n, &raw, true)?;
        self.raw = raw;
        self.refs += n as u64;
        self.blocks += 1;
        self.tags.clear();
        self.deltas.clear();
        self.sizes.clear();
        self.ctx.clear();
        self.prev_addr = [0; 2];
        self.prev_size = [0; 3];
        self.core = 0;
        self.asid = 0;
        Ok(())
    }

    fn write_frame(&mut self, tag: [u8; 2], count: u32, raw: &[u8], compress: bool) -> std::io::Result<()> {
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        frame.resize(FRAME_HEADER_LEN, 0);
        let mut codec = CODEC_STORED;
        if compress {
            frame.reserve(zstd::zstd_safe::compress_bound(raw.len()));
            let cap = frame.capacity();
            frame.resize(cap, 0);
            let n = self.comp.compress_to_buffer(raw, &mut frame[FRAME_HEADER_LEN..])?;
            frame.truncate(FRAME_HEADER_LEN + n);
            codec = CODEC_ZSTD;
            if n >= raw.len() {
                frame.truncate(FRAME_HEADER_LEN);
                codec = CODEC_STORED;
            }
        }
        if codec == CODEC_STORED {
            frame.extend_from_slice(raw);
        }
        let stored = (frame.len() - FRAME_HEADER_LEN) as u32;
        frame[0..2].copy_from_slice(&tag);
        frame[2] = codec;
        frame[4..8].copy_from_slice(&count.to_le_bytes());
        frame[8..12].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        frame[12..16].copy_from_slice(&stored.to_le_bytes());
        let crc = frame_crc(&frame[..16], &frame[FRAME_HEADER_LEN..]);
        frame[16..20].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&frame)?;
        self.bytes += frame.len() as u64;
        self.frame = frame;
        Ok(())
    }

    /// The compression level this writer uses.
    pub fn level(&self) -> i32 {
        self.level
    }
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string())
}

fn frame_crc(head: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    h.update(payload);
    h.finalize()
}
