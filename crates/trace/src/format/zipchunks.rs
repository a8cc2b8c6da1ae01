//! The members of a zip archive read as one continuous byte stream, in order, one member
//! at a time (constant memory: one inflater and one file buffer, never a whole member).
//!
//! Why not `ZipArchive::by_index` directly: the member reader it returns borrows the
//! archive, which a streaming reader would have to store beside it (a self-referential
//! struct). Instead the `zip` crate parses the central directory (names, data offsets,
//! sizes, CRCs, methods) and each member is then inflated from its own file handle with
//! `flate2`. The CRC-32 of every member is checked when the member ends.
//!
//! A truncated archive has no central directory; then the local file headers are scanned
//! from the start instead, so the members (and references) before the damage are still
//! delivered and the error names the archive offset where the data stops.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Where one member's data lies.
#[derive(Clone, Debug)]
struct Member {
    name: String,
    data_start: u64,
    compressed: u64,
    deflated: bool,
    crc: u32,
}

/// A `Read` over the concatenated contents of the selected members of a zip archive.
pub struct ZipChunks {
    path: PathBuf,
    /// The selected members, sorted by name.
    members: Vec<Member>,
    next: usize,
    /// Scanning mode (no central directory): the error to report after the last member.
    scan_error: Option<String>,
    current: Option<(Member, Box<dyn Read + Send>, crc32fast::Hasher)>,
    filter: fn(&str) -> bool,
    /// Why the archive is read by scanning, when it is.
    pub damaged_directory: Option<String>,
}

impl ZipChunks {
    /// Opens the archive at `path` and selects the members whose names pass `filter`,
    /// sorted by name (so `chunk.0002` precedes `chunk.0010`).
    pub fn open(path: &Path, filter: fn(&str) -> bool) -> std::io::Result<ZipChunks> {
        let file = BufReader::new(File::open(path)?);
        let mut zc = ZipChunks {
            path: path.to_path_buf(),
            members: Vec::new(),
            next: 0,
            scan_error: None,
            current: None,
            filter,
            damaged_directory: None,
        };
        match zip::ZipArchive::new(file) {
            Ok(mut za) => {
                for i in 0..za.len() {
                    let f = za
                        .by_index_raw(i)
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                    if f.is_dir() || !filter(f.name()) {
                        continue;
                    }
                    let deflated = match f.compression() {
                        zip::CompressionMethod::Stored => false,
                        zip::CompressionMethod::Deflated => true,
                        m => {
                            return Err(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                format!(
                                    "member {} uses compression {m:?}; only stored and deflate are supported",
                                    f.name()
                                ),
                            ))
                        }
                    };
                    zc.members.push(Member {
                        name: f.name().to_string(),
                        data_start: f.data_start(),
                        compressed: f.compressed_size(),
                        deflated,
                        crc: f.crc32(),
                    });
                }
                zc.members.sort_by(|a, b| a.name.cmp(&b.name));
            }
            Err(e) => {
                zc.damaged_directory = Some(e.to_string());
                let (members, why) = zc.scan_local()?;
                zc.members = members;
                zc.members.sort_by(|a, b| a.name.cmp(&b.name));
                zc.scan_error = Some(format!(
                    "the zip archive has no readable central directory ({e}); {}; read {} chunk members from its local headers",
                    why,
                    zc.members.len()
                ));
            }
        }
        // chunk.0000, chunk.0001, …: a gap means a lost member; stop before it, loudly.
        let number = |m: &Member| m.name.rsplit('.').next().and_then(|n| n.parse::<u64>().ok());
        if zc.members.iter().all(|m| number(m).is_some()) {
            if let Some(gap) = zc
                .members
                .iter()
                .enumerate()
                .position(|(i, m)| number(m) != Some(i as u64))
            {
                let missing = format!(
                    "member {} follows a missing chunk (expected number {gap})",
                    zc.members[gap].name
                );
                zc.members.truncate(gap);
                zc.scan_error = Some(match zc.scan_error.take() {
                    Some(e) => format!("{e}; {missing}"),
                    None => missing,
                });
            }
        }
        Ok(zc)
    }

    /// True if the archive holds no selected member and no damage explains why (the
    /// reader would end at once, as a clean empty stream).
    pub fn has_no_members(&self) -> bool {
        self.members.is_empty() && self.scan_error.is_none()
    }

    /// The name of the member being read (for error messages).
    pub fn current_member(&self) -> Option<&str> {
        self.current.as_ref().map(|(m, _, _)| m.name.as_str())
    }

    fn bad(&self, what: String) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, what)
    }

    /// Opens the next selected member; false when there is none.
    fn open_next(&mut self) -> std::io::Result<bool> {
        let Some(member) = self.members.get(self.next).cloned() else {
            return match self.scan_error.take() {
                Some(e) => Err(self.bad(e)),
                None => Ok(false),
            };
        };
        self.next += 1;
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(member.data_start))?;
        let body = BufReader::with_capacity(1 << 15, f).take(member.compressed);
        let reader: Box<dyn Read + Send> = if member.deflated {
            Box::new(flate2::bufread::DeflateDecoder::new(body))
        } else {
            Box::new(body)
        };
        self.current = Some((member, reader, crc32fast::Hasher::new()));
        Ok(true)
    }

    /// Scanning mode: walks the local file headers from the start of the file and returns
    /// the selected members found (the last one possibly cut short) and where and why the
    /// walk stopped.
    fn scan_local(&self) -> std::io::Result<(Vec<Member>, String)> {
        let mut f = File::open(&self.path)?;
        let len = f.metadata()?.len();
        let mut out = Vec::new();
        let mut at = 0u64;
        loop {
            if at + 30 > len {
                return Ok((out, format!("the data stops at byte {len} (truncated archive)")));
            }
            f.seek(SeekFrom::Start(at))?;
            let mut h = [0u8; 30];
            f.read_exact(&mut h)?;
            let u16at = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]) as u64;
            let u32at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
            if u32at(0) != 0x0403_4b50 {
                return Ok((out, format!("no local file header at byte {at}")));
            }
            let (flags, method, compressed) = (u16at(6), u16at(8), u32at(18) as u64);
            let (nl, xl) = (u16at(26), u16at(28));
            let mut name = vec![0u8; nl as usize];
            if f.read_exact(&mut name).is_err() {
                return Ok((
                    out,
                    format!("the archive ends inside the local header at byte {at} (truncated archive)"),
                ));
            }
            let name = String::from_utf8_lossy(&name).into_owned();
            let data_start = at + 30 + nl + xl;
            if flags & 8 != 0 && compressed == 0 {
                return Ok((
                    out,
                    format!(
                        "member {name} at byte {at} has no size in its local header, so nothing after it can be found"
                    ),
                ));
            }
            if (self.filter)(&name) {
                let deflated = match method {
                    0 => false,
                    8 => true,
                    m => {
                        return Ok((
                            out,
                            format!("member {name} uses compression method {m}; only stored and deflate are supported"),
                        ))
                    }
                };
                out.push(Member {
                    name,
                    data_start,
                    compressed,
                    deflated,
                    crc: u32at(14),
                });
            }
            at = data_start + compressed;
        }
    }
}

impl Read for ZipChunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.current.is_none() && !self.open_next()? {
                return Ok(0);
            }
            let (m, r, h) = self.current.as_mut().expect("opened above");
            match r.read(buf) {
                Ok(0) => {
                    let (m, _, h) = self.current.take().expect("current member");
                    let crc = h.finalize();
                    if crc != m.crc {
                        let end = m.data_start + m.compressed;
                        let file_len = std::fs::metadata(&self.path).map(|md| md.len()).unwrap_or(u64::MAX);
                        let why = if end > file_len {
                            format!("the archive stops at byte {file_len} but member data runs to {end} (truncated archive)")
                        } else {
                            "the archive is damaged".to_string()
                        };
                        return Err(self.bad(format!("zip member {} fails its CRC-32 check: {why}", m.name)));
                    }
                }
                Ok(n) => {
                    h.update(&buf[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = m.data_start;
                    let name = m.name.clone();
                    return Err(self.bad(format!(
                        "zip member {name} (data at archive offset {at}) cannot be inflated: {e} (truncated or damaged archive)"
                    )));
                }
            }
        }
    }
}
