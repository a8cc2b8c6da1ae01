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
