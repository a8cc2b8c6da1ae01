//! xz input decoded on several threads when the file allows it (issue 24 item 5).
//!
//! An xz stream is a sequence of blocks. A file written in one block (`xz` without
//! `-T`, the usual ChampSim trace) can only be decoded in order, on one thread. A file
//! written in several blocks with their sizes in the block headers (`xz -T0`, or `-T N`
//! for N > 1: the default of xz 5.4 and later when threads are asked for) can be
//! decoded block by block on several threads: liblzma's multi-threaded decoder
//! (`lzma_stream_decoder_mt`, liblzma 5.4 and later) does that, and falls back to one
//! thread by itself for a single block.
//!
//! The library is the `liblzma` crate (the maintained fork of `xz2`), built with its
//! bundled liblzma 5.8 (`static`, so every build decodes alike): liblzma is the
//! reference decoder of the format, and a Rust re-implementation would be slower.
//!
//! Concatenated streams (`cat a.xz b.xz`, with the format's zero padding between them)
//! are read as one stream, as `xz -d` reads them: the crate's multi-threaded decoder
//! cannot be given liblzma's `LZMA_CONCATENATED` flag, so [`XzReader`] starts a new
//! decoder after each stream's end while input remains.

use liblzma::bufread::XzDecoder;
use liblzma::stream::MtStreamBuilder;
use std::io::{self, BufRead, Read};

/// Decoder threads at most (assumed: more rarely pay off for one simulating reader).
pub const MAX_THREADS: u32 = 16;

/// Memory the decoder may use for its threads' buffers before it uses fewer threads
/// (assumed: 1 GiB; liblzma keeps about a block's input and output per thread, so files
/// written by `xz -T0 -6` (24 MiB blocks) keep all threads). Not a hard limit: a file
/// whose single block needs more is still decoded, on one thread.
pub const THREAD_MEMORY: u64 = 1 << 30;

/// The decoder threads: one per core the process may use, at most [`MAX_THREADS`].
pub fn threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| (n.get() as u32).clamp(1, MAX_THREADS))
}

fn decoder<R: BufRead>(r: R, threads: u32) -> io::Result<XzDecoder<R>> {
    let stream = MtStreamBuilder::new()
        .threads(threads)
        .memlimit_threading(THREAD_MEMORY)
        .memlimit_stop(u64::MAX)
        .decoder()
        .map_err(|e| io::Error::other(format!("cannot start the xz decoder: {e}")))?;
    Ok(XzDecoder::new_stream(r, stream))
}

/// Stream padding must be a multiple of four bytes (xz format 1.0.4, §2.2).
fn check_padding(padding: u64) -> io::Result<()> {
    if padding % 4 == 0 {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        format!("xz stream padding of {padding} bytes is not a multiple of four (a damaged file)"),
    ))
}

/// Reads the decompressed content of one or more concatenated xz streams.
pub struct XzReader<R: BufRead> {
    /// The current stream's decoder; `None` after the last stream.
    dec: Option<XzDecoder<R>>,
    threads: u32,
}

impl<R: BufRead> XzReader<R> {
    /// A reader of the xz streams in `r`, decoded on [`threads`] threads.
    pub fn new(r: R) -> io::Result<XzReader<R>> {
        Self::with_threads(r, threads())
    }

    /// A reader of the xz streams in `r`, decoded on up to `threads` threads (at least one).
    pub fn with_threads(r: R, threads: u32) -> io::Result<XzReader<R>> {
        let threads = threads.max(1);
        Ok(XzReader {
            dec: Some(decoder(r, threads)?),
            threads,
        })
    }

    /// After a stream's end: skips the stream padding (zero bytes, a multiple of four)
    /// and starts a decoder for the next stream, or ends when no input is left.
    fn next_stream(&mut self) -> io::Result<bool> {
        let Some(dec) = self.dec.take() else {
            return Ok(false);
        };
        let mut r = dec.into_inner();
        let mut padding = 0u64;
        loop {
            let buf = r.fill_buf()?;
            if buf.is_empty() {
                check_padding(padding)?;
                return Ok(false);
            }
            let zeros = buf.iter().take_while(|&&b| b == 0).count();
            let more = zeros < buf.len();
            r.consume(zeros);
            padding += zeros as u64;
            if more {
                break;
            }
        }
        check_padding(padding)?;
        self.dec = Some(decoder(r, self.threads)?);
        Ok(true)
    }
}

impl<R: BufRead> Read for XzReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(dec) = self.dec.as_mut() else {
                return Ok(0);
            };
            let n = dec.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // The stream ended (the crate's decoder reports a premature end as an error).
            if !self.next_stream()? {
                return Ok(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liblzma::write::XzEncoder;
    use std::io::Write;

    /// Bytes that compress, but not to nothing: a counter's little-endian words.
    fn content(n: usize) -> Vec<u8> {
        (0..n as u32)
            .flat_map(|i| (i.wrapping_mul(2_654_435_761) >> 7).to_le_bytes())
            .collect()
    }

    fn one_block(data: &[u8]) -> Vec<u8> {
        let mut e = XzEncoder::new(Vec::new(), 1);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Written as `xz -T2` would: blocks of `block` bytes with their sizes in the headers.
    fn blocks(data: &[u8], block: u64) -> Vec<u8> {
        let s = MtStreamBuilder::new()
            .threads(2)
            .preset(1)
            .block_size(block)
            .encoder()
            .unwrap();
        let mut e = XzEncoder::new_stream(Vec::new(), s);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decode(file: &[u8], threads: u32) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        XzReader::with_threads(file, threads)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// The blocks of a one-stream file, from its index (xz format 1.0.4, §4: the stream
    /// footer's backward size locates the index, whose first field after the indicator
    /// byte is the number of records, one per block, as a multibyte integer).
    fn block_count(file: &[u8]) -> u64 {
        let footer = &file[file.len() - 12..];
        assert_eq!(&footer[10..], b"YZ");
        let backward = u32::from_le_bytes(footer[4..8].try_into().unwrap()) as usize;
        let index = &file[file.len() - 12 - (backward + 1) * 4..];
        assert_eq!(index[0], 0, "index indicator");
        let (mut n, mut shift) = (0u64, 0);
        for &b in &index[1..] {
            n |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        n
    }

    #[test]
    fn a_file_of_several_blocks_decodes_to_its_content_on_one_and_on_several_threads() {
        let data = content(300_000); // 1.2 MB: 5 blocks of 256 KiB
        let file = blocks(&data, 256 << 10);
        // 1,200,000 bytes in blocks of 262,144: 5 blocks (4 full ones and the rest).
        assert_eq!(block_count(&file), 5);
        assert_eq!(block_count(&one_block(&data)), 1);
        for t in [1, 2, 4] {
            assert_eq!(decode(&file, t).unwrap(), data, "{t} threads");
        }
        assert_eq!(decode(&one_block(&data), 4).unwrap(), data);
    }

    #[test]
    fn concatenated_streams_and_their_padding_are_read_as_one() {
        let (a, b) = (content(1000), content(3000));
        let mut file = one_block(&a);
        file.extend_from_slice(&[0; 8]);
        file.extend(blocks(&b, 4096));
        file.extend(one_block(&a));
        let mut want = a.clone();
        want.extend(&b);
        want.extend(&a);
        assert_eq!(decode(&file, 2).unwrap(), want);
        // Trailing padding after the last stream is allowed too.
        file.extend_from_slice(&[0; 4]);
        assert_eq!(decode(&file, 2).unwrap(), want);
    }

    #[test]
    fn a_damaged_or_cut_file_is_an_error_not_a_shorter_content() {
        let data = content(200_000);
        let file = blocks(&data, 128 << 10);
        // Cut in the middle: an error, never the blocks before the cut as the content.
        assert!(decode(&file[..file.len() / 2], 2).is_err());
        // Cut off the stream footer only.
        assert!(decode(&file[..file.len() - 6], 2).is_err());
        // Padding that is not a multiple of four.
        let mut bad = one_block(&data);
        bad.extend_from_slice(&[0; 3]);
        assert!(decode(&bad, 2).is_err());
        // Bytes after a stream that do not start another one.
        let mut junk = one_block(&data);
        junk.extend_from_slice(b"not xz at all");
        assert!(decode(&junk, 2).is_err());
        // A flipped byte inside the compressed data (the block's check catches it).
        let mut flipped = file.clone();
        let mid = flipped.len() / 3;
        flipped[mid] ^= 0x55;
        assert!(decode(&flipped, 2).is_err());
    }
}
