//! Builders of small synthetic traces for the tests (shared by several test files).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// A deterministic xorshift64* generator.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A fresh temporary directory for one test.
pub fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mmulab-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One drmemtrace record.
pub fn rec(out: &mut Vec<u8>, ty: u16, size: u16, addr: u64) {
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(&addr.to_le_bytes());
}

/// A thread's records: header, markers, then `segments` of (timestamp, cpu, instructions),
/// each instruction an ifetch (type 10), a load and (every other one) a store, with an
/// encoding record and an INSTR_NO_FETCH thrown in. Returns (bytes, loads, stores, ifetches).
pub fn dr_thread(tid: u64, pid: u64, segments: &[(u64, u64, u64)]) -> (Vec<u8>, u64, u64, u64) {
    let mut b = Vec::new();
    rec(&mut b, 25, 0, 5);
    rec(&mut b, 28, 12, 5);
    rec(&mut b, 28, 9, 0x240);
    rec(&mut b, 22, 4, tid);
    rec(&mut b, 24, 4, pid);
    rec(&mut b, 28, 10, 64);
    rec(&mut b, 28, 18, 4096);
    let (mut l, mut s, mut i) = (0, 0, 0);
    for &(ts, cpu, n) in segments {
        rec(&mut b, 28, 2, ts);
        rec(&mut b, 28, 3, cpu);
        for k in 0..n {
            rec(&mut b, 47, 4, 0xd503201f);
            rec(&mut b, 10, 4, 0x400000 + tid * 0x10000 + 4 * k);
            i += 1;
            rec(&mut b, 0, 8, 0x7000_0000 + tid * 0x100000 + 8 * k);
            l += 1;
            if k % 2 == 0 {
                rec(&mut b, 1, 4, 0x7100_0000 + 8 * k);
                s += 1;
            }
            if k % 7 == 0 {
                rec(&mut b, 29, 4, 0x400000);
                rec(&mut b, 2, 64, 0x7200_0000);
            }
        }
    }
    rec(&mut b, 23, 4, tid);
    rec(&mut b, 26, 0, 0);
    (b, l, s, i)
}

/// A zip archive whose members are `chunk.0000`, `chunk.0001`, … holding `parts`
/// (deflated).
pub fn zip_chunks(parts: &[&[u8]]) -> Vec<u8> {
    zip_chunks_ordered(parts, true)
}

/// [`zip_chunks`], writing the members in order (`reverse` = false) or backwards.
pub fn zip_chunks_ordered(parts: &[&[u8]], reverse: bool) -> Vec<u8> {
    let mut zw = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    // Written in reverse order: the reader must sort members by name.
    let mut order: Vec<(usize, &&[u8])> = parts.iter().enumerate().collect();
    if reverse {
        order.reverse();
    }
    for (i, p) in order {
        zw.start_file(format!("chunk.{i:04}"), opts).unwrap();
        zw.write_all(p).unwrap();
    }
    zw.finish().unwrap().into_inner()
}

pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A ChampSim record (64 bytes, or 96 for cloudsuite with `asid`).
pub fn champsim(ip: u64, src: &[u64], dst: &[u64], cloud: Option<u8>) -> Vec<u8> {
    let (size, dst_at, src_at) = if cloud.is_some() { (96, 24, 56) } else { (64, 16, 32) };
    let mut r = vec![0u8; size];
    r[..8].copy_from_slice(&ip.to_le_bytes());
    r[8] = 1;
    for (i, a) in src.iter().enumerate() {
        r[src_at + 8 * i..src_at + 8 * i + 8].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in dst.iter().enumerate() {
        r[dst_at + 8 * i..dst_at + 8 * i + 8].copy_from_slice(&a.to_le_bytes());
    }
    if let Some(a) = cloud {
        r[88] = a;
    }
    r
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}
