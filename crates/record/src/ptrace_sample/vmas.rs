//! The ptrace sampler's VMA samples (`/proc/PID/smaps`, condensed) and, in a recording of
//! every instruction, the VMA changes between them as trace events (`meta::vma_changes`:
//! unmaps, then the VMAs new or changed), so that a simulation sees each mapping when the
//! program made it. The union of the samples, installed at the start, merged a malloc'd
//! block with the next one mapped beside it later and gave its faults huge pages the
//! kernel could not.

use mmulab_trace::meta::{parse_vma_samples, vma_changes, Vma};
use mmulab_trace::Event;

/// Samples kept (as record.rs: the first 255 changes and always the latest).
const MAX_SAMPLES: usize = 256;

/// x86-64 system calls that change VMAs or their madvise flags (`mmap`, `mprotect`,
/// `munmap`, `brk`, `mremap`, `madvise`, and `execve`/`execveat`, which replace them
/// all: `env VAR=… PROGRAM` runs PROGRAM in env's process): after one runs in a window
/// the VMAs are sampled again, so that a recording of every instruction (`--sample all`)
/// holds each mapping with the flags it had (a mapping made, madvised and touched
/// between two timed samples was missing or had no `hg`, and its simulation got no THP
/// where the kernel gave some).
pub(super) const VMA_SYSCALLS: [u64; 8] = [9, 10, 11, 12, 25, 28, 59, 322];

/// The event of a system call that returned `ret`, if it was a successful
/// `madvise(addr, len, MADV_DONTNEED)` (or `MADV_DONTNEED_LOCKED`), whose page work a
/// VMA sample cannot show (x86-64: `madvise` is 28, its arguments in RDI, RSI, RDX;
/// `before` are the registers at the `syscall` instruction). The range is the kernel's:
/// `len` rounded up to whole pages (mm/madvise.c `PAGE_ALIGN(len_in)`).
pub(super) fn dontneed(nr: u64, before: &super::decode::Regs, ret: u64) -> Option<Event> {
    const MADV_DONTNEED: u64 = 4;
    const MADV_DONTNEED_LOCKED: u64 = 24;
    let (addr, len, advice) = (before.gpr[7], before.gpr[6], before.gpr[2]);
    if nr != 28 || ret != 0 || !matches!(advice, MADV_DONTNEED | MADV_DONTNEED_LOCKED) || len == 0 {
        return None;
    }
    let end = addr.checked_add(len)?.checked_add(0xfff)? & !0xfff;
    let e = Event::DontNeed {
        asid: 0,
        start: addr,
        end,
    };
    e.check().ok().map(|_| e)
}

/// The samples taken so far.
#[derive(Default)]
pub(super) struct VmaSamples {
    /// (ms since the start, condensed smaps), the first 255 changes and the latest.
    pub samples: Vec<(u64, String)>,
    last: String,
    /// The VMAs of the last sample, parsed.
    now: Vec<Vma>,
}

impl VmaSamples {
    /// Samples `pid`'s VMAs at `t_ms`; when they changed, keeps the sample and, with
    /// `events` and a sample before it, returns the change events (else none).
    pub fn sample(&mut self, pid: u32, t_ms: u64, events: bool) -> Vec<Event> {
        let Some(text) = crate::valgrind::vma_sample(pid) else {
            return Vec::new();
        };
        if text.is_empty() || text == self.last {
            return Vec::new();
        }
        let new = parse_vma_samples(text.as_bytes()).pop().unwrap_or_default();
        let old = std::mem::replace(&mut self.now, new);
        let out = if events && !self.last.is_empty() {
            vma_changes(&old, &self.now, 0)
        } else {
            Vec::new()
        };
        if self.samples.len() >= MAX_SAMPLES {
            self.samples.pop();
        }
        self.samples.push((t_ms, text.clone()));
        self.last = text;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptrace_sample::decode::Regs;

    /// Registers at a `syscall` instruction: RAX (0) the number, RDI (7), RSI (6), RDX (2).
    fn at(nr: u64, addr: u64, len: u64, advice: u64) -> Regs {
        let mut r = Regs::default();
        r.gpr[0] = nr;
        r.gpr[7] = addr;
        r.gpr[6] = len;
        r.gpr[2] = advice;
        r
    }

    #[test]
    fn a_successful_madvise_dontneed_is_an_event_with_the_kernels_range() {
        // 5000 bytes round up to two pages, as PAGE_ALIGN(len_in) does.
        assert_eq!(
            dontneed(28, &at(28, 0x4000_0000, 5000, 4), 0),
            Some(Event::DontNeed {
                asid: 0,
                start: 0x4000_0000,
                end: 0x4000_2000
            })
        );
        assert!(
            dontneed(28, &at(28, 0x4000_0000, 4096, 24), 0).is_some(),
            "MADV_DONTNEED_LOCKED"
        );
        // Failed (-EINVAL), another advice (MADV_HUGEPAGE 14, MADV_FREE 8), another
        // system call, an empty or unaligned range: none.
        assert_eq!(dontneed(28, &at(28, 0x4000_0000, 4096, 4), (-22i64) as u64), None);
        assert_eq!(dontneed(28, &at(28, 0x4000_0000, 4096, 14), 0), None);
        assert_eq!(dontneed(28, &at(28, 0x4000_0000, 4096, 8), 0), None);
        assert_eq!(dontneed(11, &at(11, 0x4000_0000, 4096, 4), 0), None);
        assert_eq!(dontneed(28, &at(28, 0x4000_0000, 0, 4), 0), None);
        assert_eq!(dontneed(28, &at(28, 0x4000_0008, 4096, 4), 0), None);
    }
}
