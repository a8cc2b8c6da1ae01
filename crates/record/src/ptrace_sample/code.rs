//! The stepped program's instruction bytes, for the decoder (run.rs).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Instruction bytes, read through /proc/PID/mem page by page and kept for a window.
pub(super) struct Code {
    pid: i32,
    mem: Option<File>,
    pages: HashMap<u64, Option<Box<[u8; 4096]>>>,
}

impl Code {
    pub(super) fn new(pid: i32) -> Code {
        Code {
            pid,
            mem: File::open(format!("/proc/{pid}/mem")).ok(),
            pages: HashMap::new(),
        }
    }

    /// After an exec: the program has a new address space.
    pub(super) fn reopen(&mut self) {
        *self = Code::new(self.pid);
    }

    /// Drops the pages kept: each window reads the code afresh.
    pub(super) fn forget(&mut self) {
        self.pages.clear();
    }

    fn page(&mut self, p: u64) -> Option<&[u8; 4096]> {
        let mem = &self.mem;
        self.pages
            .entry(p)
            .or_insert_with(|| {
                let mut b = Box::new([0u8; 4096]);
                mem.as_ref()?.read_exact_at(&mut b[..], p).ok()?;
                Some(b)
            })
            .as_deref()
    }

    /// Up to 15 bytes at `ip` (fewer when the next page is not readable).
    pub(super) fn fetch(&mut self, ip: u64, out: &mut [u8; 15]) -> usize {
        let (p, off) = (ip & !4095, (ip & 4095) as usize);
        let Some(page) = self.page(p) else { return 0 };
        let n = (4096 - off).min(15);
        out[..n].copy_from_slice(&page[off..off + n]);
        if n == 15 {
            return 15;
        }
        match self.page(p + 4096) {
            Some(next) => {
                out[n..].copy_from_slice(&next[..15 - n]);
                15
            }
            None => n,
        }
    }
}
