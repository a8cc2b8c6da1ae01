//! The `.mlt` reader (the format is described in the parent module and docs/trace-format.md).

use super::*;
use std::path::PathBuf;

/// Where decoding stands inside the current block (column positions in `raw`).
#[derive(Default)]
struct Cursor {
    /// References in the block, and the index of the next one (its tag is `raw[i]`).
    n: usize,
    i: usize,
    /// Next byte of the delta, size and core/asid columns.
    p: usize,
    sp: usize,
    cp: usize,
    prev: [u64; 2],
    /// Indexed by kind; 4 entries so the 2-bit kind needs no bounds check.
    size: [u16; 4],
    core: u16,
    asid: u16,
}

/// Streaming `.mlt` reader. Holds one block's columns and decodes them straight into the
/// caller's buffer.
pub struct MltReader<R: Read> {
    inner: R,
    path: PathBuf,
    total: Option<u64>,
    /// Byte offset of the next unread byte of the file.
    pos: u64,
    dec: zstd::bulk::Decompressor<'static>,
    payload: Vec<u8>,
    /// The current block's columns (plus 8 zero bytes of padding), decoded lazily.
    raw: Vec<u8>,
    cur: Cursor,
    /// References handed out so far.
    delivered: u64,
    /// References in blocks decoded so far.
    decoded: u64,
    blocks: u64,
    ended: bool,
    meta: TraceMeta,
    version: u16,
    /// Events of the frames read since the last reference handed out.
    events: Vec<Event>,
    /// Events read so far.
    events_read: u64,
}

impl<R: Read> MltReader<R> {
    /// Reads the file header from `inner`; `path` names the input in errors and `total` is
    /// its size in bytes when known (progress).
    pub fn new(mut inner: R, path: &Path, total: Option<u64>) -> Result<Self, TraceError> {
        let mut h = [0u8; HEADER_LEN];
        let got = read_full(&mut inner, &mut h).map_err(|source| TraceError::Io {
            path: path.into(),
            error: source,
        })?;
        let bad = |offset: u64, what: String| TraceError::Corrupt {
            path: path.into(),
            offset,
            line: None,
            what,
            refs_before: 0,
        };
        if got < 8 || h[..8] != MAGIC {
            return Err(bad(0, "not an mmulab .mlt trace (bad magic)".into()));
        }
        if got < HEADER_LEN {
            return Err(bad(got as u64, "truncated file header".into()));
        }
        let version = u16::from_le_bytes([h[8], h[9]]);
        if !(1..=VERSION).contains(&version) {
            return Err(bad(
                8,
                format!("unsupported .mlt version {version} (this mmulab reads 1 to {VERSION}: upgrade mmulab)"),
            ));
        }
        let hlen = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes")) as u64;
        if hlen < HEADER_LEN as u64 || hlen > 1 << 20 {
            return Err(bad(12, format!("implausible header length {hlen}")));
        }
        let mut skip = vec![0u8; (hlen - HEADER_LEN as u64) as usize];
        if read_full(&mut inner, &mut skip).map_err(|source| TraceError::Io {
            path: path.into(),
            error: source,
        })? < skip.len()
        {
            return Err(bad(HEADER_LEN as u64, "truncated file header".into()));
        }
        let dec = zstd::bulk::Decompressor::new().map_err(|source| TraceError::Io {
            path: path.into(),
            error: source,
        })?;
        let mut meta = TraceMeta::default();
        meta.markers.insert("mlt_version".into(), version as u64);
        Ok(MltReader {
            inner,
            path: path.into(),
            total,
            pos: hlen,
            dec,
            payload: Vec::new(),
            raw: Vec::new(),
            cur: Cursor::default(),
            delivered: 0,
            decoded: 0,
            blocks: 0,
            ended: false,
            meta,
            version,
            events: Vec::new(),
            events_read: 0,
        })
    }

    fn corrupt(&self, offset: u64, what: String) -> TraceError {
        TraceError::Corrupt {
            path: self.path.clone(),
            offset,
            line: None,
            what,
            refs_before: self.delivered,
        }
    }

    /// Reads frames until a block is decoded (true) or the end frame is reached (false).
    fn next_block(&mut self) -> Result<bool, TraceError> {
        while !self.ended {
            let at = self.pos;
            let mut fh = [0u8; FRAME_HEADER_LEN];
            let got = read_full(&mut self.inner, &mut fh).map_err(|e| self.corrupt(at, format!("read error: {e}")))?;
            if got == 0 {
                return Err(self.corrupt(
                    at,
                    format!(
                        "file ends after {} blocks without its end frame (truncated?)",
                        self.blocks
                    ),
                ));
            }
            if got < FRAME_HEADER_LEN {
                return Err(self.corrupt(at, "truncated frame header".into()));
            }
            let tag = [fh[0], fh[1]];
            let codec = fh[2];
            let count = u32::from_le_bytes(fh[4..8].try_into().expect("4 bytes"));
            let raw_len = u32::from_le_bytes(fh[8..12].try_into().expect("4 bytes"));
            let stored = u32::from_le_bytes(fh[12..16].try_into().expect("4 bytes"));
            let limit = match tag {
                TAG_BLOCK => {
                    if count == 0 || count > MAX_BLOCK_REFS {
                        return Err(self.corrupt(
                            at,
                            format!("block of {count} references (1..={MAX_BLOCK_REFS} allowed)"),
                        ));
                    }
                    count * 15
                }
                TAG_SECTION => MAX_SECTION,
                TAG_END => 24,
                TAG_EVENTS if self.version >= 2 => {
                    if count == 0 || count > MAX_FRAME_EVENTS || raw_len != count * RECORD_LEN as u32 {
                        return Err(self.corrupt(
                            at,
                            format!("event frame of {count} events in {raw_len} bytes (1..={MAX_FRAME_EVENTS} events of {RECORD_LEN} bytes allowed)"),
                        ));
                    }
                    raw_len
                }
                _ => return Err(self.corrupt(at, format!("unknown frame tag {:?}", String::from_utf8_lossy(&tag)))),
            };
            if raw_len > limit || codec > CODEC_ZSTD || fh[3] != 0 {
                return Err(self.corrupt(at, "implausible frame header (damaged?)".into()));
            }
            let stored_max = if codec == CODEC_STORED {
                raw_len as usize
            } else {
                zstd::zstd_safe::compress_bound(raw_len as usize)
            };
            if stored as usize > stored_max || (codec == CODEC_STORED && stored != raw_len) {
                return Err(self.corrupt(at, "implausible frame header (damaged?)".into()));
            }
            self.payload.resize(stored as usize, 0);
            let got = read_full(&mut self.inner, &mut self.payload)
                .map_err(|e| self.corrupt(at, format!("read error: {e}")))?;
            self.pos += (FRAME_HEADER_LEN + got) as u64;
            if got < stored as usize {
                return Err(self.corrupt(at, format!("truncated frame: {got} of {stored} payload bytes present")));
            }
            let mut raw = std::mem::take(&mut self.raw);
            let res = unpack(&fh, &self.payload, &mut self.dec, &mut raw).and_then(|()| match tag {
                TAG_BLOCK => self.start_block(&mut raw, count as usize).map(|()| true),
                TAG_SECTION => self.take_section(&raw).map(|()| false),
                TAG_EVENTS => self.take_events(&raw).map(|()| false),
                _ => self.take_end(&raw).map(|()| false),
            });
            self.raw = raw;
            if res.map_err(|w| self.corrupt(at, w))? {
                return Ok(true);
            }
            if self.ended {
                // The end frame closes the file: anything after it (a second file
                // appended, damage) would otherwise be dropped without a word.
                let mut more = [0u8; 1];
                let end = self.pos;
                if read_full(&mut self.inner, &mut more).map_err(|e| self.corrupt(end, format!("read error: {e}")))? > 0
                {
                    return Err(self.corrupt(
                        end,
                        "data after the end frame (two files joined, or a damaged file): the references before it were read; cut the file at this offset or re-convert it".into(),
                    ));
                }
            }
        }
        Ok(false)
    }

    fn take_section(&mut self, raw: &[u8]) -> Result<(), String> {
        let (name, body) = split_section(raw)?;
        if name == "markers" {
            for line in String::from_utf8_lossy(&body).lines() {
                if let Some((k, v)) = line.split_once(' ') {
                    if let Ok(v) = v.trim().parse::<u64>() {
                        match k {
                            "threads" => self.meta.threads = Some(v),
                            "processes" => self.meta.processes = Some(v),
                            _ => {}
                        }
                        self.meta.markers.insert(k.to_string(), v);
                    }
                }
            }
        }
        if self.meta.sections.len() < 1024 {
            self.meta.sections.push((name, body));
        }
        Ok(())
    }

    fn take_events(&mut self, raw: &[u8]) -> Result<(), String> {
        for (i, rec) in raw.chunks_exact(RECORD_LEN).enumerate() {
            let e = Event::decode(rec.try_into().expect("RECORD_LEN bytes")).map_err(|w| format!("event {i}: {w}"))?;
            self.events.push(e);
        }
        self.events_read += (raw.len() / RECORD_LEN) as u64;
        Ok(())
    }

    fn take_end(&mut self, raw: &[u8]) -> Result<(), String> {
        let word = |i: usize| -> Result<u64, String> {
            Ok(u64::from_le_bytes(
                raw.get(i * 8..i * 8 + 8)
                    .ok_or("short end frame")?
                    .try_into()
                    .expect("8 bytes"),
            ))
        };
        let (refs, blocks) = (word(0)?, word(1)?);
        let events = if self.version >= 2 { word(2)? } else { 0 };
        if refs != self.decoded || blocks != self.blocks || events != self.events_read {
            return Err(format!(
                "end frame promises {refs} references in {blocks} blocks and {events} events but the file holds {} in {} and {}",
                self.decoded, self.blocks, self.events_read
            ));
        }
        self.ended = true;
        Ok(())
    }

    /// Validates a block's columns (the whole tag column first, so that decoding itself
    /// cannot fail) and points the cursor at them.
    fn start_block(&mut self, raw: &mut Vec<u8>, n: usize) -> Result<(), String> {
        if raw.len() < n {
            return Err("block shorter than its tag column".into());
        }
        let (dl, sc, cc, bad) = scan_tags(&raw[..n]);
        if bad {
            return Err("invalid tag byte in block".into());
        }
        if n + dl + 2 * sc + 4 * cc != raw.len() {
            return Err("block columns do not add up to the block length".into());
        }
        raw.extend_from_slice(&[0u8; 8]);
        self.cur = Cursor {
            n,
            i: 0,
            p: n,
            sp: n + dl,
            cp: n + dl + 2 * sc,
            ..Cursor::default()
        };
        self.decoded += n as u64;
        self.blocks += 1;
        Ok(())
    }

    /// Decodes up to `max` references of the current block into `buf`.
    ///
    /// Written for speed: `extend` over a mapped slice iterator reserves once and writes
    /// each reference once (no per-push capacity check); the two address predictors live in
    /// registers and are selected without branches.
    fn decode_into(&mut self, buf: &mut Vec<MemRef>, max: usize) -> usize {
        let c = &mut self.cur;
        let k = max.min(c.n - c.i);
        let raw = &self.raw[..];
        let (mut p, mut sp, mut cp) = (c.p, c.sp, c.cp);
        let [mut pd, mut pi] = c.prev;
        let (mut size, mut core, mut asid) = (c.size, c.core, c.asid);
        buf.extend(raw[c.i..c.i + k].iter().map(|&t| {
            let kind = (t & 3) as usize;
            let l = ((t >> 2) & 15) as usize;
            let w = u64::from_le_bytes(raw[p..p + 8].try_into().expect("padded")) & MASK[l & 15];
            p += l;
            let d = (w >> 1) ^ (w & 1).wrapping_neg();
            let fetch = kind == 2;
            let a = if fetch { pi } else { pd }.wrapping_add(d);
            pi = if fetch { a } else { pi };
            pd = if fetch { pd } else { a };
            if t & SIZE_FLAG != 0 {
                size[kind] = u16::from_le_bytes([raw[sp], raw[sp + 1]]);
                sp += 2;
            }
            if t & CTX_FLAG != 0 {
                core = u16::from_le_bytes([raw[cp], raw[cp + 1]]);
                asid = u16::from_le_bytes([raw[cp + 2], raw[cp + 3]]);
                cp += 4;
            }
            MemRef {
                addr: a,
                size: size[kind],
                kind: KINDS[kind],
                core,
                asid,
            }
        }));
        *c = Cursor {
            n: c.n,
            i: c.i + k,
            p,
            sp,
            cp,
            prev: [pd, pi],
            size,
            core,
            asid,
        };
        k
    }

    /// Metadata seen so far (sections written before the current position).
    pub fn meta_ref(&self) -> &TraceMeta {
        &self.meta
    }
}

impl<R: Read> TraceSource for MltReader<R> {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        if max == 0 {
            return Ok(0);
        }
        let mut events = 0;
        if self.cur.i == self.cur.n {
            // Event frames read on the way come after every reference handed out so far;
            // they are delivered even when a later frame is damaged.
            let more = self.next_block();
            events = self.events.len();
            for e in self.events.drain(..) {
                buf.push_event(e);
            }
            if !more? {
                return Ok(events);
            }
        }
        let n = self.decode_into(&mut buf.refs, max);
        self.delivered += n as u64;
        Ok(n + events)
    }
    fn describe(&self) -> String {
        format!("{} (mlt)", self.path.display())
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.total.map(|t| (self.pos, t))
    }
    fn meta(&self) -> Option<TraceMeta> {
        Some(self.meta.clone())
    }
}

/// Sums a tag column: (delta bytes, size changes, core/asid changes, any invalid tag).
/// Eight tags at a time in a u64 (SWAR): this check runs over every tag before decoding,
/// so it must cost far less than the decoding itself.
fn scan_tags(tags: &[u8]) -> (usize, usize, usize, bool) {
    const LO4: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    let (mut dl, mut sc, mut cc, mut bad) = (0usize, 0usize, 0usize, 0u64);
    let mut chunks = tags.chunks_exact(8);
    for ch in &mut chunks {
        let x = u64::from_le_bytes(ch.try_into().expect("8 bytes"));
        let l = (x >> 2) & LO4;
        // Byte sums via multiplication: each sum fits a byte (8 × 15 at most).
        dl += (l.wrapping_mul(ONES) >> 56) as usize;
        sc += (((x >> 6) & ONES).wrapping_mul(ONES) >> 56) as usize;
        cc += (((x >> 7) & ONES).wrapping_mul(ONES) >> 56) as usize;
        // kind 3 (both low bits set), or a length above 8 (l + 7 reaches 16).
        bad |= (x & (x >> 1) & ONES) | ((l + 0x0707_0707_0707_0707) & 0x1010_1010_1010_1010);
    }
    for &t in chunks.remainder() {
        let l = (t >> 2) & 15;
        dl += l as usize;
        sc += ((t >> 6) & 1) as usize;
        cc += (t >> 7) as usize;
        bad |= ((t & 3) == 3) as u64 | (l > 8) as u64;
    }
    (dl, sc, cc, bad != 0)
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub(super) fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads only the metadata sections of an `.mlt` file, skipping reference payloads with
/// seeks (cheap even for a huge trace) — for consumers that need the VMAs or markers before
/// simulating. A damaged section is an error; a truncated tail ends the list.
pub fn read_sections(path: &Path) -> Result<Vec<(String, Vec<u8>)>, TraceError> {
    use std::io::{Seek, SeekFrom};
    let io = |source| TraceError::Io {
        path: path.into(),
        error: source,
    };
    let mut f = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
    let mut pos = MltReader::new(&mut f, path, None)?.pos;
    let mut dec = zstd::bulk::Decompressor::new().map_err(io)?;
    let (mut payload, mut raw, mut out) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let mut fh = [0u8; FRAME_HEADER_LEN];
        if read_full(&mut f, &mut fh).map_err(io)? < FRAME_HEADER_LEN {
            return Ok(out);
        }
        let stored = u32::from_le_bytes(fh[12..16].try_into().expect("4 bytes"));
        match [fh[0], fh[1]] {
            TAG_SECTION if stored <= MAX_SECTION => {
                payload.resize(stored as usize, 0);
                if read_full(&mut f, &mut payload).map_err(io)? < payload.len() {
                    return Ok(out);
                }
                let bad = |what: String| TraceError::Corrupt {
                    path: path.into(),
                    offset: pos,
                    line: None,
                    what,
                    refs_before: 0,
                };
                unpack(&fh, &payload, &mut dec, &mut raw).map_err(bad)?;
                out.push(split_section(&raw).map_err(bad)?);
            }
            TAG_END => return Ok(out),
            _ => {
                f.seek(SeekFrom::Current(stored as i64)).map_err(io)?;
            }
        }
        pos += FRAME_HEADER_LEN as u64 + stored as u64;
    }
}

/// Checks a frame's CRC and decompresses its payload into `raw`.
fn unpack(
    fh: &[u8; FRAME_HEADER_LEN],
    payload: &[u8],
    dec: &mut zstd::bulk::Decompressor<'static>,
    raw: &mut Vec<u8>,
) -> Result<(), String> {
    let raw_len = u32::from_le_bytes(fh[8..12].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(fh[16..20].try_into().expect("4 bytes"));
    if frame_crc(&fh[..16], payload) != crc {
        return Err("checksum mismatch (the file is damaged)".into());
    }
    raw.clear();
    if fh[2] == CODEC_ZSTD {
        raw.reserve(raw_len + 8);
        match dec.decompress_to_buffer(payload, raw) {
            Ok(n) if n == raw_len => Ok(()),
            _ => Err("compressed payload does not decode to its stated length".into()),
        }
    } else {
        raw.extend_from_slice(payload);
        Ok(())
    }
}

/// Splits a section payload into (name, body).
fn split_section(raw: &[u8]) -> Result<(String, Vec<u8>), String> {
    if raw.len() < 2 {
        return Err("metadata section too short".into());
    }
    let nl = u16::from_le_bytes([raw[0], raw[1]]) as usize;
    let name = raw.get(2..2 + nl).ok_or("metadata section name runs past its end")?;
    Ok((String::from_utf8_lossy(name).into_owned(), raw[2 + nl..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::scan_tags;

    #[test]
    fn tag_scan_matches_a_plain_loop_on_every_tag_value() {
        let tags: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).chain([7, 200, 3]).collect();
        for start in 0..9 {
            for t in &tags[start..] {
                let one = scan_tags(std::slice::from_ref(t));
                let l = (t >> 2) & 15;
                assert_eq!(
                    one,
                    (
                        l as usize,
                        ((t >> 6) & 1) as usize,
                        (t >> 7) as usize,
                        t & 3 == 3 || l > 8
                    ),
                    "tag {t:#x}"
                );
            }
            let all = scan_tags(&tags[start..]);
            let want = tags[start..].iter().fold((0, 0, 0, false), |a, &t| {
                let one = scan_tags(&[t]);
                (a.0 + one.0, a.1 + one.1, a.2 + one.2, a.3 | one.3)
            });
            assert_eq!(all, want);
            let valid: Vec<u8> = tags[start..].iter().copied().filter(|&t| !scan_tags(&[t]).3).collect();
            assert!(!valid.is_empty() && !scan_tags(&valid).3);
        }
    }
}
