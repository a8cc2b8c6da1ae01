//! The `build` workload's moving working window, fitted to a recording of GCC's cc1
//! (docs/workloads.md, "The build workload against a real compilation"): keys `window`,
//! `text`, `text_used`, `rodata`, `rbw` and `vmas`, all off by default (the default
//! `build` stream is unchanged).
//!
//! What the recording showed (158 M references of `cc1 -O2`): a compiler touches its
//! memory in a small, moving window. Per million references it touches 40 to 980
//! distinct pages (usually 200–450) of its 4,513, so its working set stays within a
//! last-level TLB; new pages appear as it goes (a third in the first 10 M references, the
//! rest in bursts as passes start). Its code (2,196 pages of a 20 MiB text, plus
//! libraries) is half its footprint; its heap pages are first written (malloc and GGC
//! initialise what they hand out), 8 % read first; 800 pages of read-only data are only
//! read (each maps the zero page: a fault, no memory).
//!
//! The model, for one process of `refs` references, after `t` of them:
//!
//! * A region of `n` pages has a *front* `f = ⌈n·(t+1)/refs⌉` (1 ≤ f ≤ n): its pages
//!   come into use in order, evenly over the process's life. The first reference of a
//!   kind that reaches a region whose front is ahead of the pages already touched
//!   touches the next untouched page (its first touch); otherwise it picks a page
//!   uniformly among the last `window` pages below the front.
//! * Code (`text` bytes, instruction fetches only): the pages of a text segment that
//!   hold executed code, `text_used` percent of them spread evenly (page `i` is used
//!   when ⌊(i+1)·u/100⌋ > ⌊i·u/100⌋, so exactly ⌊n·u/100⌋ of the first `n`).
//! * Read-only data (`rodata` bytes after the text): loads only, each page loaded once
//!   when the front reaches it (a data reference takes it before the heap's).
//! * Heap (the `small` objects): a page's first touch is a store, except for `rbw`
//!   percent of pages (the same even spread) whose first touch is a load: under Linux's
//!   zero page such a page takes a zero-page fault and, at its first store, a
//!   copy-on-write fault (mm/memory.c `do_anonymous_page`, then `do_wp_page`); later
//!   references in the window are 30 % stores.
//! * `vmas=on`: the process declares its mappings as `mmulab record` captures them (a
//!   `vmas` metadata section, docs/trace-format.md §1.4): the text and read-only data
//!   at cc1's unaligned file offsets, the heap, the stack. The simulated OS then sees the
//!   VMA edges a real process has, where THP falls back to base pages
//!   (`ThpFaultFallbackVmaEdge`); without them every address lies in an inferred 1 GiB
//!   VMA. The same VMAs hold in every address space (one layout for every process).

use super::SplitMix64;
use crate::AccessKind;

/// The text segment's offset from the code base: cc1's `r-xp` mapping starts 0x231000
/// past its load address 0x400000 (measured: the recording's /proc/PID/maps), so the
/// text is not 2 MiB-aligned.
pub(super) const TEXT_OFFSET: u64 = 0x23_1000;

/// The share of heap pages in the first heap mapping (`[heap]`, malloc's brk heap and
/// the static data) when `vmas=on`: 46 % (measured: cc1's brk heap and .data/.bss held
/// 297 + 279 of its 1,260 written data pages; GGC's mmap chunks the other 684).
pub(super) const BRK_SHARE: u64 = 46;

/// Page `i` is one of the `pct` percent chosen, spread evenly: exactly ⌊n·pct/100⌋ of
/// the first `n` pages are.
pub(super) fn chosen(i: u64, pct: u64) -> bool {
    (i + 1) * pct / 100 > i * pct / 100
}

/// The window keys, as given (0 / false: off).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct WindowKeys {
    /// Pages in the moving window (0: no window, today's mix).
    pub window: u64,
    /// Bytes of text (0: the fixed hot code window).
    pub text: u64,
    /// Percent of text pages that hold executed code.
    pub text_used: u64,
    /// Bytes of read-only data after the text.
    pub rodata: u64,
    /// Percent of heap pages first read before written.
    pub rbw: u64,
    /// Declare the process's VMAs.
    pub vmas: bool,
}

/// A region's pages coming into use in order: `next` pages touched of `pages`.
#[derive(Clone, Copy, Debug, Default)]
struct Front {
    pages: u64,
    next: u64,
}

impl Front {
    /// The front after `t` of `life` references: ⌈pages·(t+1)/life⌉, at least 1.
    fn due(&self, t: u64, life: u64) -> u64 {
        ((self.pages as u128 * (t as u128 + 1)).div_ceil(life as u128) as u64).clamp(1, self.pages)
    }

    /// The page index the next reference goes to, and whether it is the page's first
    /// touch.
    fn pick(&mut self, t: u64, life: u64, window: u64, rng: &mut SplitMix64) -> (u64, bool) {
        let f = self.due(t, life);
        if self.next < f {
            self.next += 1;
            return (self.next - 1, true);
        }
        (f - 1 - rng.below(window.min(f)), false)
    }
}

/// One process's window state.
pub(super) struct Window {
    keys: WindowKeys,
    life: u64,
    text_base: u64,
    rodata_base: u64,
    heap_base: u64,
    /// Used text pages (indices into the text), in address order.
    code: Vec<u32>,
    code_front: Front,
    rodata_front: Front,
    heap_front: Front,
}

impl Window {
    /// The window of a process of `life` references whose code starts at `code`
    /// (the text at `code + TEXT_OFFSET`) and whose heap is `heap_bytes` from `heap`.
    pub(super) fn new(keys: WindowKeys, life: u64, code: u64, heap: u64, heap_bytes: u64) -> Window {
        let text_pages = keys.text / 4096;
        let used: Vec<u32> = (0..text_pages)
            .filter(|&i| chosen(i, keys.text_used))
            .map(|i| i as u32)
            .collect();
        let text_base = code + TEXT_OFFSET;
        Window {
            keys,
            life,
            text_base,
            rodata_base: text_base + text_pages * 4096,
            heap_base: heap,
            code_front: Front {
                pages: used.len() as u64,
                next: 0,
            },
            code: used,
            rodata_front: Front {
                pages: keys.rodata / 4096,
                next: 0,
            },
            heap_front: Front {
                pages: heap_bytes.div_ceil(4096),
                next: 0,
            },
        }
    }

    /// True if instruction fetches go to the text (`text` given), not the hot window.
    pub(super) fn has_text(&self) -> bool {
        !self.code.is_empty()
    }

    /// An instruction fetch after `t` references of the process.
    pub(super) fn fetch(&mut self, t: u64, rng: &mut SplitMix64) -> u64 {
        let (i, _) = self.code_front.pick(t, self.life, self.keys.window, rng);
        self.text_base + self.code[i as usize] as u64 * 4096 + (rng.below(4096) & !3)
    }

    /// A data reference after `t` references of the process: a read-only page's first
    /// load if one is due, else a heap reference.
    pub(super) fn data(&mut self, t: u64, rng: &mut SplitMix64) -> (u64, AccessKind) {
        let ro = self.rodata_front;
        if ro.pages > 0 && ro.next < ro.due(t, self.life) {
            self.rodata_front.next += 1;
            return (
                self.rodata_base + ro.next * 4096 + (rng.below(4096) & !7),
                AccessKind::Load,
            );
        }
        let (page, first) = self.heap_front.pick(t, self.life, self.keys.window, rng);
        let kind = if first {
            if chosen(page, self.keys.rbw) {
                AccessKind::Load
            } else {
                AccessKind::Store
            }
        } else if rng.below(10) < 3 {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        (self.heap_base + page * 4096 + (rng.below(4096) & !7), kind)
    }
}

/// The `vmas` metadata section of a process laid out from `code` (a code window of
/// `hot` bytes when there is no text), with its heap `[heap, heap + heap_bytes)` and its
/// stack below `stack`: `/proc/PID/maps` lines as `mmulab record` stores them.
pub(super) fn vma_section(keys: &WindowKeys, code: u64, hot: u64, heap: u64, heap_bytes: u64, stack: u64) -> Vec<u8> {
    let mut lines = vec!["# sample 0 t_ms=0 pid=0".to_string()];
    let mut line = |start: u64, end: u64, perms: &str, name: &str| {
        if start < end {
            lines.push(format!("{start:08x}-{end:08x} {perms} 00000000 00:00 0 {name}"));
        }
    };
    if keys.text > 0 {
        let text = code + TEXT_OFFSET;
        let text_end = text + keys.text / 4096 * 4096;
        line(text, text_end, "r-xp", "[text]");
        line(text_end, text_end + keys.rodata / 4096 * 4096, "r--p", "[rodata]");
    } else {
        line(code, code + hot, "r-xp", "[text]");
    }
    // The heap as two mappings, as cc1's is: malloc's brk heap with the static data
    // below, and GGC's anonymous mmap chunks above.
    let pages = heap_bytes.div_ceil(4096);
    let brk = heap + pages * BRK_SHARE / 100 * 4096;
    line(heap, brk, "rw-p", "[heap]");
    line(brk, heap + pages * 4096, "rw-p", "");
    line(stack - (64 << 10), stack, "rw-p", "[stack]");
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, MemRef, TraceSource};
    use std::collections::{HashMap, HashSet};

    /// Every reference of a spec, in order.
    fn refs(spec: &str) -> Vec<MemRef> {
        let mut b = super::super::parse(spec).unwrap();
        let mut batch = Batch::default();
        let mut all = Vec::new();
        while b.next_batch(&mut batch, 4096).unwrap() > 0 {
            all.extend(batch.items().filter_map(|x| x.ok().copied()));
            batch.clear();
        }
        all
    }

    /// The heap pages of process 0 of `build:…,small=n,seed=0`, as `spawn` draws them.
    fn heap_pages(small: u64) -> u64 {
        let mut rng = SplitMix64::new(0);
        (0..small).map(|_| 1 + rng.below(16)).sum()
    }

    const HEAP: u64 = 0x0000_5555_5556_3000;

    /// `rbw=25`: of the H heap pages exactly ⌊H/4⌋ — the pages `chosen(i, 25)` — are
    /// first loaded, the rest first stored. Under Linux's zero-page rule (a first load
    /// maps the zero page, a later store copies) the faults are then the distinct pages
    /// plus the pages loaded before their first store: H + ⌊H/4⌋, every page being
    /// stored later (a page stays 8 front steps ≥ 8 × 200K/64 = 25K references in the
    /// window, 30 % of them stores spread over ≤ 8 pages). Fails if the first touch
    /// ignores `rbw` (0 pages read first) or if pages come out of order.
    #[test]
    fn rbw_sets_the_read_first_pages_and_the_fault_count() {
        let h = heap_pages(4);
        let all = refs("build:procs=1,jobs=1,refs=200K,small=4,large=0,arrays=0,ifetch=0,window=8,rbw=25");
        let mut first: HashMap<u64, AccessKind> = HashMap::new();
        let mut stored: HashSet<u64> = HashSet::new();
        let mut faults = 0;
        for r in &all {
            let page = (r.addr - HEAP) / 4096;
            assert!(page < h, "reference beyond the heap: {:#x}", r.addr);
            if let std::collections::hash_map::Entry::Vacant(e) = first.entry(page) {
                e.insert(r.kind);
                faults += 1;
            }
            if r.kind == AccessKind::Store && stored.insert(page) && first[&page] == AccessKind::Load {
                faults += 1; // the copy-on-write fault of a zero-page mapping
            }
        }
        let read_first: Vec<u64> = (0..h).filter(|p| first[p] == AccessKind::Load).collect();
        let expect: Vec<u64> = (0..h).filter(|&p| chosen(p, 25)).collect();
        assert_eq!(read_first.len() as u64, h / 4);
        assert_eq!(read_first, expect);
        assert_eq!(stored.len() as u64, h, "every page written");
        assert_eq!(faults, h + h / 4);
    }

    /// `window=8`: between references t0 and t1 the heap pages touched lie in
    /// [f(t0) − 8, f(t1)), so any 1,000 references of a 100K-reference life over H ≈ 136
    /// pages (front step ≤ ⌈H·1000/100K⌉ = 2) touch at most 8 + 2 + 1 pages; a uniform
    /// choice over the heap touches about H·(1 − e^(−1000/H)) ≈ all of them. Fails
    /// without the window.
    #[test]
    fn the_window_bounds_the_pages_in_use() {
        let h = heap_pages(16);
        assert!(h > 64, "{h}");
        let all = refs("build:procs=1,jobs=1,refs=100K,small=16,large=0,arrays=0,ifetch=0,window=8");
        let bound = 8 + (h * 1000).div_ceil(100_000) + 1;
        for chunk in all.chunks(1000) {
            let pages: HashSet<u64> = chunk.iter().map(|r| r.addr >> 12).collect();
            assert!(pages.len() as u64 <= bound, "{} pages in 1000 references", pages.len());
        }
        let touched: HashSet<u64> = all.iter().map(|r| r.addr >> 12).collect();
        assert_eq!(touched.len() as u64, h, "the front reaches every heap page");
    }

    /// `text=400K,text_used=47`: instruction fetches touch exactly ⌊100·47/100⌋ = 47 of
    /// the text's 100 pages (the `chosen` ones), inside [code + 0x231000, +400K);
    /// `rodata=40K`: 10 read-only pages, each loaded exactly once, never stored. Fails if
    /// fetches ignore `text_used` or the read-only pages are revisited.
    #[test]
    fn text_and_rodata_pages() {
        let all =
            refs("build:procs=1,jobs=1,refs=100K,small=4,large=0,arrays=0,window=16,text=400K,text_used=47,rodata=40K");
        let text = 0x40_0000 + TEXT_OFFSET;
        let fetched: HashSet<u64> = all
            .iter()
            .filter(|r| r.kind == AccessKind::IFetch)
            .map(|r| {
                assert!((text..text + (400 << 10)).contains(&r.addr), "{:#x}", r.addr);
                (r.addr - text) / 4096
            })
            .collect();
        let expect: HashSet<u64> = (0..100).filter(|&i| chosen(i, 47)).collect();
        assert_eq!(fetched, expect);
        let ro = text + (400 << 10);
        let ro_refs: Vec<&MemRef> = all.iter().filter(|r| (ro..ro + (40 << 10)).contains(&r.addr)).collect();
        assert_eq!(ro_refs.len(), 10);
        assert!(ro_refs.iter().all(|r| r.kind == AccessKind::Load));
        assert_eq!(ro_refs.iter().map(|r| r.addr >> 12).collect::<HashSet<_>>().len(), 10);
    }

    /// `vmas=on` declares the text, read-only data, the two heap mappings (46 % of the
    /// heap pages in the first) and the stack; the default declares none. The keys are
    /// checked: `rbw` without a window, a percentage over 100, a text that reaches the
    /// heap are errors.
    #[test]
    fn vmas_and_key_checks() {
        assert!(super::super::parse("build:procs=1").unwrap().meta().is_none());
        let b = super::super::parse("build:procs=1,small=4,window=8,text=400K,rodata=40K,vmas=on").unwrap();
        let vmas = b.meta().unwrap().vmas();
        let spans: Vec<(u64, u64)> = vmas.iter().map(|v| (v.start, v.end)).collect();
        let text = 0x40_0000 + TEXT_OFFSET;
        let h = heap_pages(4);
        let brk = HEAP + h * 46 / 100 * 4096;
        assert_eq!(
            spans,
            vec![
                (text, text + (400 << 10)),
                (text + (400 << 10), text + (440 << 10)),
                (HEAP, brk),
                (brk, HEAP + h * 4096),
                (0x7ffc_0000_0000 - (64 << 10), 0x7ffc_0000_0000),
            ]
        );
        for bad in [
            "build:rbw=5",
            "build:window=8,rbw=101",
            "build:window=8,text_used=0",
            "build:window=8,text=2GiB",
            "build:bits=32,window=8,text=16MiB,rodata=1MiB",
        ] {
            assert!(super::super::parse(bad).is_err(), "{bad}");
        }
    }

    /// The even spread: ⌊n·pct/100⌋ of the first n pages, for n = 100: 47 at 47 %; 0 and
    /// 100 % take none and all. Fails if the rule rounds otherwise.
    #[test]
    fn chosen_takes_exactly_the_share() {
        let count = |n: u64, pct: u64| (0..n).filter(|&i| chosen(i, pct)).count() as u64;
        assert_eq!(count(100, 47), 47);
        assert_eq!(count(1000, 8), 80);
        assert_eq!(count(7, 50), 3); // ⌊7·50/100⌋ = 3
        assert_eq!(count(50, 0), 0);
        assert_eq!(count(50, 100), 50);
    }

    /// A front over 10 pages in a life of 100 references: after t references it stands
    /// at ⌈10·(t+1)/100⌉: 1 at t = 0 … 9, 2 at t = 10, 10 at t = 99.
    #[test]
    fn the_front_advances_evenly() {
        let f = Front { pages: 10, next: 0 };
        assert_eq!(f.due(0, 100), 1);
        assert_eq!(f.due(9, 100), 1);
        assert_eq!(f.due(10, 100), 2);
        assert_eq!(f.due(99, 100), 10);
        assert_eq!(f.due(1000, 100), 10);
    }
}
