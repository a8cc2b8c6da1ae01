//! `build`: a build-like workload — many short-lived processes (compiler runs), each
//! with its own address space, a mix of small and large allocations, and an exit.
//!
//! Each process `p` (address space `1 + p % 65535`) has: a code region (instruction
//! fetches concentrated in a hot window), a heap of `small` objects of 4–64 KiB
//! allocated back to back from an unaligned heap start (random loads and stores), `large`
//! mmap-style arrays of `large_size` bytes at 4 KiB-aligned (not 2 MiB-aligned) starts
//! (sequential sweeps), and a stack. References per process: `refs`; mix: 25% code, 40%
//! small objects (30% stores), 30% large arrays (50% stores), 5% stack (stores).
//! `jobs` processes run at once, interleaved in slices of 4096 references (like `make
//! -j`). A process ends with an [`Event::Exit`]: the simulator frees its address space
//! and memory.
//!
//! `unmap=N` (default 0) makes each process free its first `N` large arrays half-way
//! through its life, as a compiler frees big buffers: an [`Event::Unmap`] of each
//! array's whole 4 KiB-aligned range, then a fresh array of
//! the same size at a new mmap address (after the last slot, at a new unaligned offset)
//! takes its place for the second half. `N ≤ large`.
//!
//! `bits=32` lays the processes out below 4 GiB (code 0x8000, heap 0x0100_3000, mmap
//! 0x4000_0000, stack 0xbf00_0000) for 32-bit machines such as ARMv7.
//!
//! `ifetch`, `arrays` (percent of references; defaults 25 and 30) and `skew` (1: a heap
//! reference picks its object uniformly) change the mix; `window`, `text`, `text_used`,
//! `rodata`, `rbw` and `vmas` (off by default) replace the heap draw and the hot code
//! window by a moving working window ([`super::build_window`]); `profile=cc1` sets the
//! values fitted to a recording of GCC's cc1 (docs/workloads.md), which given keys
//! override.
//!
//! Spec: `build:procs=200,refs=200K,jobs=2,small=64,large=2,large_size=4MiB,unmap=0,ifetch=25,arrays=30,skew=1,window=0,text=0,text_used=100,rodata=0,rbw=0,vmas=off,profile=default,seed=0,bits=47`.

use super::build_window::{vma_section, Window, WindowKeys};
use super::{Args, SplitMix64};
use crate::event::{Batch, Event};
use crate::{AccessKind, MemRef, TraceError, TraceMeta, TraceSource};
use std::collections::VecDeque;

const SLICE: u64 = 4096;
#[derive(Clone, Copy)]
struct Layout {
    code: u64,
    heap: u64,
    mmap: u64,
    stack: u64,
}

const LAYOUT_47: Layout = Layout {
    code: 0x0040_0000,
    heap: 0x0000_5555_5556_3000,
    mmap: 0x0000_7f10_0000_0000,
    stack: 0x0000_7ffc_0000_0000,
};
const LAYOUT_32: Layout = Layout {
    code: 0x8000,
    heap: 0x0100_3000,
    mmap: 0x4000_0000,
    stack: 0xbf00_0000,
};

/// The reference mix of a process, in percent of its references (`ifetch`, `arrays`;
/// the stack takes 5, the small objects the rest), and how skewed its choice of small
/// object is (`skew`: 1 uniform; see [`pick_object`]).
#[derive(Clone, Copy)]
struct Mix {
    ifetch: u64,
    arrays: u64,
    skew: u64,
}

/// The defaults (the mix before calibration) and `profile=cc1`, fitted to a recording of
/// GCC's cc1 (docs/workloads.md, "The build workload against a real compilation").
const MIX_DEFAULT: Mix = Mix {
    ifetch: 25,
    arrays: 30,
    skew: 1,
};

/// `profile=cc1`: the instruction share measured in the recording (73 %); no large
/// arrays (their sweeps alone would miss the TLB 100 times more often than cc1 does);
/// 160 small objects (about 1,380 heap pages: the recording wrote 1,260 pages of heap,
/// static data and GGC chunks, and touched 34 of stack), reached through the moving
/// window of [`CC1_WINDOW`] (the `skew` of the heap draw applies only without a window).
/// docs/workloads.md has the recording and this profile side by side.
const CC1_MIX: Mix = Mix {
    ifetch: 73,
    arrays: 0,
    skew: 5,
};
const CC1_SMALL: u64 = 160;
const CC1_LARGE: u64 = 0;

struct Proc {
    asid: u16,
    mix: Mix,
    left: u64,
    objects: Vec<(u64, u64)>,
    arrays: Vec<(u64, u64, u64)>, // base, size, cursor
    rng: SplitMix64,
    exited: bool,
    unmapped: bool,
    layout: Layout,
    /// The moving window (`window=`, build_window.rs), or none: today's mix.
    window: Option<Window>,
    /// References in its life (`refs`).
    life: u64,
}

/// The build-like workload.
pub struct Build {
    spec: String,
    procs: u64,
    refs: u64,
    jobs: u64,
    small: u64,
    large: u64,
    large_size: u64,
    unmap: u64,
    seed: u64,
    layout: Layout,
    mix: Mix,
    wkeys: WindowKeys,
    /// The `vmas` section (`vmas=on`), built once.
    vmas: Option<Vec<u8>>,
    started: u64,
    running: Vec<Proc>,
    turn: usize,
    in_slice: u64,
    done: u64,
    queued: VecDeque<Event>,
}

impl Build {
    fn spawn(&mut self) -> Proc {
        let p = self.started;
        self.started += 1;
        let mut rng = SplitMix64::new(self.seed.wrapping_mul(0x9e37).wrapping_add(p));
        let mut objects = Vec::with_capacity(self.small as usize);
        let l = self.layout;
        let mut at = l.heap;
        for _ in 0..self.small {
            let size = 4096 * (1 + rng.below(16));
            objects.push((at, size));
            at += size;
        }
        let arrays = (0..self.large)
            .map(|i| (self.array_base(&l, i, &mut rng), self.large_size, 0))
            .collect();
        let window = (self.wkeys.window > 0).then(|| Window::new(self.wkeys, self.refs, l.code, l.heap, at - l.heap));
        Proc {
            asid: (1 + p % 65535) as u16,
            mix: self.mix,
            left: self.refs,
            objects,
            arrays,
            rng,
            exited: false,
            unmapped: false,
            layout: l,
            window,
            life: self.refs,
        }
    }

    /// The start of large-array slot `i` (slots `large..` hold the replacements of freed
    /// arrays): 4 KiB-aligned, not 2 MiB-aligned.
    fn array_base(&self, l: &Layout, i: u64, rng: &mut SplitMix64) -> u64 {
        let gap = if l.mmap == LAYOUT_32.mmap { 4 << 20 } else { 64 << 20 };
        l.mmap + i * (self.large_size + gap) + 4096 * (1 + rng.below(511))
    }

    /// Half-way through its life, process `p` frees its first `unmap` arrays: the unmap
    /// markers go to the queue and fresh arrays take their places.
    fn free_arrays(&mut self, p: usize) {
        let (l, n, large) = (self.running[p].layout, self.unmap, self.large);
        for i in 0..n as usize {
            let (base, size, _) = self.running[p].arrays[i];
            let asid = self.running[p].asid;
            self.queued.push_back(Event::Unmap {
                asid,
                start: base,
                end: base + size,
            });
            let mut rng = SplitMix64::new(self.running[p].rng.next_u64());
            let fresh = self.array_base(&l, large + i as u64, &mut rng);
            self.running[p].arrays[i] = (fresh, size, 0);
        }
        self.running[p].unmapped = true;
    }

    fn total(&self) -> u64 {
        self.procs * self.refs
    }
}

/// The bounds that keep a build finite and its layout inside its address space: every
/// reference counted (≤ [`super::MAX_REFS`]), the processes alive at once and their
/// objects in host memory, the heap below the arrays and the arrays below the stack.
#[allow(clippy::too_many_arguments)]
fn check_bounds(
    a: &Args,
    l: &Layout,
    procs: u64,
    refs: u64,
    jobs: u64,
    small: u64,
    large: u64,
    large_size: u64,
    unmap: u64,
) -> Result<(), TraceError> {
    let total = refs
        .checked_add(1 + 2 * unmap)
        .and_then(|per| per.checked_mul(procs))
        .filter(|&t| t <= super::MAX_REFS);
    if total.is_none() {
        return Err(a.err(format!(
            "procs × refs = {procs} × {refs} references is out of range: at most {} (100G) in all",
            super::MAX_REFS
        )));
    }
    if jobs > 4096 || jobs.min(procs).saturating_mul(small) > 1 << 24 {
        return Err(a.err(format!(
            "jobs = {jobs} is out of range: 1 to 4096, and jobs × small ≤ 16M objects alive at once (16 bytes of host memory each)"
        )));
    }
    // Small objects are at most 64 KiB each, from the heap start up; array slots (the
    // replacements of freed arrays after the first `large`) start at the mmap base, each
    // `large_size` + gap + up to 2 MiB of offset.
    let heap_end = l.heap + small * (64 << 10);
    let gap: u64 = if l.mmap == LAYOUT_32.mmap { 4 << 20 } else { 64 << 20 };
    let arrays_end = l.mmap + (large + unmap) * (large_size.div_ceil(4096) * 4096 + gap + (2 << 20));
    let stack_low = l.stack - (64 << 10);
    if heap_end > l.mmap || arrays_end > stack_low {
        return Err(a.err(format!(
            "small = {small}, large = {large} (+ unmap = {unmap}) arrays of {large_size} bytes do not fit the {} layout (heap {:#x}..{:#x}, arrays {:#x}..{:#x}, stack below {:#x}): use fewer or smaller",
            if l.mmap == LAYOUT_32.mmap { "bits=32" } else { "bits=47" },
            l.heap,
            l.mmap,
            l.mmap,
            stack_low,
            l.stack
        )));
    }
    Ok(())
}

/// The small object a heap reference goes to: uniform for `skew` 1 (the default); for
/// `skew` k, an index drawn uniformly below the previous draw, k times (the nested
/// uniform: index i has probability about (ln(n/i))^(k−1)/(k−1)!/n, so a few objects
/// take most references and every object is still reached), integer-only so that every
/// platform draws the same stream.
fn pick_object(rng: &mut SplitMix64, n: u64, skew: u64) -> usize {
    let mut i = rng.below(n);
    for _ in 1..skew {
        i = rng.below(i + 1);
    }
    i as usize
}

fn next_ref(p: &mut Proc) -> MemRef {
    let l = p.layout;
    let roll = p.rng.below(100);
    let m = p.mix;
    let t = p.life - p.left;
    let (addr, kind) = if roll < m.ifetch {
        match p.window.as_mut().filter(|w| w.has_text()) {
            Some(w) => (w.fetch(t, &mut p.rng), AccessKind::IFetch),
            None => (
                l.code + (p.rng.below(64 << 10) & !3) + (p.rng.below(4) << 18),
                AccessKind::IFetch,
            ),
        }
    } else if let Some(w) = p
        .window
        .as_mut()
        .filter(|_| roll < 95 - m.arrays || p.arrays.is_empty())
    {
        w.data(t, &mut p.rng)
    } else if roll < 95 - m.arrays || p.arrays.is_empty() {
        let (base, size) = p.objects[pick_object(&mut p.rng, p.objects.len() as u64, m.skew)];
        let kind = if p.rng.below(10) < 3 {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        (base + (p.rng.below(size) & !7), kind)
    } else if roll < 95 {
        let i = p.rng.below(p.arrays.len() as u64) as usize;
        let a = &mut p.arrays[i];
        let addr = a.0 + a.2;
        a.2 = (a.2 + 64) % a.1;
        (
            addr,
            if p.rng.below(2) == 0 {
                AccessKind::Store
            } else {
                AccessKind::Load
            },
        )
    } else {
        (l.stack - 8 - (p.rng.below(32 << 10) & !7), AccessKind::Store)
    };
    MemRef {
        addr,
        size: 8,
        kind,
        core: 0,
        asid: p.asid,
    }
}

/// `profile=cc1`'s window keys (build_window.rs), fitted to the recording
/// (docs/workloads.md): a 256-page window (assumed: the recording touches 200–450 pages
/// per million references), cc1's text size 0x13c4000 (measured: its `r-xp` mapping)
/// with 47 % of its pages executed (2,196 of its 5,060 pages were fetched, plus 173 of
/// libraries'), 3.2 MiB of read-only data (measured: 806 pages only read: cc1's rodata
/// and headers, the libraries'), 8 % of heap pages read before written (measured: 98 of
/// 1,260), and its VMAs.
const CC1_WINDOW: WindowKeys = WindowKeys {
    window: 256,
    text: 0x13c_4000,
    text_used: 47,
    rodata: 806 * 4096,
    rbw: 8,
    vmas: true,
};

/// The window keys (build_window.rs), checked: all off by default (today's mix), the
/// profile's values under `profile=cc1`.
fn window_keys(a: &mut Args, cc1: bool, l: &Layout) -> Result<WindowKeys, TraceError> {
    let d = if cc1 {
        CC1_WINDOW
    } else {
        WindowKeys {
            text_used: 100,
            ..Default::default()
        }
    };
    let k = WindowKeys {
        window: a.count("window", Some(d.window))?,
        text: a.size("text", Some(d.text))?,
        text_used: a.count("text_used", Some(d.text_used))?,
        rodata: a.size("rodata", Some(d.rodata))?,
        rbw: a.count("rbw", Some(d.rbw))?,
        vmas: a.flag("vmas", d.vmas)?,
    };
    if k.window > 1 << 20 {
        return Err(a.err(format!("window = {} pages: use 0 (off) to 1M", k.window)));
    }
    if k.window == 0 && (k.text > 0 || k.rodata > 0 || k.rbw > 0) {
        return Err(
            a.err("text, rodata and rbw belong to the moving window: give window=PAGES (e.g. window=256) too".into())
        );
    }
    if !(1..=100).contains(&k.text_used) || k.rbw > 100 {
        return Err(a.err(format!(
            "text_used = {} and rbw = {} are percentages: text_used 1 to 100, rbw 0 to 100",
            k.text_used, k.rbw
        )));
    }
    let end = (l.code + super::build_window::TEXT_OFFSET)
        .checked_add(k.text)
        .and_then(|e| e.checked_add(k.rodata));
    let fits = matches!(end, Some(e) if e <= l.heap);
    if k.text > 1 << 30 || !fits {
        return Err(a.err(format!(
            "text = {} and rodata = {} bytes do not fit between the code base {:#x} and the heap {:#x}: use less (text ≤ 1GiB)",
            k.text, k.rodata, l.code, l.heap
        )));
    }
    Ok(k)
}

impl super::Generator for Build {
    const NAME: &'static str = "build";
    fn from_args(a: &mut Args) -> Result<Build, TraceError> {
        // `profile=cc1`: the defaults fitted to the cc1 recording (docs/workloads.md);
        // any key given still overrides them.
        let cc1 = a.choice("profile", &["default", "cc1"], "default")? == "cc1";
        let (d_small, d_large, d_mix) = if cc1 {
            (CC1_SMALL, CC1_LARGE, CC1_MIX)
        } else {
            (64, 2, MIX_DEFAULT)
        };
        let procs = a.count("procs", Some(200))?;
        let refs = a.count("refs", Some(200_000))?;
        a.positive("refs", refs)?;
        let jobs = a.count("jobs", Some(2))?;
        let small = a.count("small", Some(d_small))?;
        let large = a.count("large", Some(d_large))?;
        let mix = Mix {
            ifetch: a.count("ifetch", Some(d_mix.ifetch))?,
            arrays: a.count("arrays", Some(d_mix.arrays))?,
            skew: a.count("skew", Some(d_mix.skew))?,
        };
        if mix.ifetch + mix.arrays > 95 {
            return Err(a.err(format!(
                "ifetch = {} and arrays = {} (percent of references) leave nothing for the heap: their sum is at most 95 (the stack takes 5)",
                mix.ifetch, mix.arrays
            )));
        }
        if !(1..=16).contains(&mix.skew) {
            return Err(a.err(format!(
                "skew = {}: use 1 (uniform over the small objects) to 16",
                mix.skew
            )));
        }
        let large_size = a.size("large_size", Some(4 << 20))?;
        let unmap = a.count("unmap", Some(0))?;
        let seed = a.count("seed", Some(0))?;
        // `bits` follows the machine's address space unless given.
        let given = a.kv.contains_key("bits");
        let default_bits = if a.va_bits <= 32 { 32 } else { 47 };
        let layout = match a.count("bits", Some(default_bits))? {
            47 if a.va_bits <= 32 => {
                return Err(a.err(format!(
                    "bits = 47 lays processes out above 4 GiB, beyond the {}-bit address space of this machine: use bits=32",
                    a.va_bits
                )))
            }
            47 => LAYOUT_47,
            32 => LAYOUT_32,
            b => return Err(a.err(format!("bits = {b}: use 32 or 47"))),
        };
        if !given && default_bits == 32 {
            let note = format!(
                "workload '{}': bits=32 chosen (processes laid out below 4 GiB) for the {}-bit address space of this machine",
                a.spec(),
                a.va_bits
            );
            a.notes.push(note);
        }
        a.positive("procs", procs)?;
        a.positive("refs", refs)?;
        a.positive("jobs", jobs)?;
        a.positive("small", small)?;
        if large > 0 {
            a.positive("large_size", large_size)?;
        }
        if unmap > large {
            return Err(a.err(format!(
                "unmap = {unmap}: a process can free at most its `large` = {large} arrays"
            )));
        }
        let limit = if layout.code == LAYOUT_32.code {
            1 << 28
        } else {
            1 << 34
        };
        if large_size > limit || large > 64 || small > 1 << 20 {
            return Err(a.err("large_size ≤ 16GiB (256MiB with bits=32), large ≤ 64 and small ≤ 1M".into()));
        }
        check_bounds(a, &layout, procs, refs, jobs, small, large, large_size, unmap)?;
        let wkeys = window_keys(a, cc1, &layout)?;
        // One layout for every process: process 0's heap (the objects `spawn` draws first).
        let vmas = wkeys.vmas.then(|| {
            let mut rng = SplitMix64::new(seed.wrapping_mul(0x9e37));
            let heap: u64 = (0..small).map(|_| 4096 * (1 + rng.below(16))).sum();
            vma_section(&wkeys, layout.code, 1 << 20, layout.heap, heap, layout.stack)
        });
        Ok(Build {
            spec: a.spec().to_string(),
            procs,
            refs,
            jobs,
            small,
            large,
            large_size: large_size.div_ceil(4096) * 4096,
            unmap,
            seed,
            layout,
            mix,
            wkeys,
            vmas,
            started: 0,
            running: Vec::new(),
            turn: 0,
            in_slice: 0,
            done: 0,
            queued: VecDeque::new(),
        })
    }
}

impl TraceSource for Build {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        let mut n = 0;
        let mut events = 0;
        while n < max {
            if let Some(e) = self.queued.pop_front() {
                buf.push_event(e);
                events += 1;
                continue;
            }
            while (self.running.len() as u64) < self.jobs && self.started < self.procs {
                let p = self.spawn();
                self.running.push(p);
            }
            if self.running.is_empty() {
                break;
            }
            if self.turn >= self.running.len() {
                self.turn = 0;
            }
            if self.unmap > 0 && !self.running[self.turn].unmapped && self.running[self.turn].left <= self.refs / 2 {
                self.free_arrays(self.turn);
                continue;
            }
            let p = &mut self.running[self.turn];
            if p.left == 0 {
                if !p.exited {
                    buf.push_event(Event::Exit { asid: p.asid });
                    events += 1;
                }
                self.running.remove(self.turn);
                self.in_slice = 0;
                continue;
            }
            buf.push(next_ref(p));
            p.left -= 1;
            n += 1;
            self.done += 1;
            self.in_slice += 1;
            if self.in_slice == SLICE {
                self.in_slice = 0;
                self.turn += 1;
            }
        }
        Ok(n + events)
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.done, self.total()))
    }
    fn meta(&self) -> Option<TraceMeta> {
        let vmas = self.vmas.as_ref()?;
        Some(TraceMeta {
            sections: vec![("vmas".into(), vmas.clone())],
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reference and event of a spec, in order, read in batches of `step`.
    fn read(spec: &str, step: usize) -> Vec<Result<MemRef, Event>> {
        let mut b = super::super::parse(spec).unwrap();
        let mut batch = Batch::default();
        let mut all = Vec::new();
        loop {
            batch.clear();
            if b.next_batch(&mut batch, step).unwrap() == 0 {
                return all;
            }
            all.extend(batch.items().map(|x| x.copied().map_err(|e| *e)));
        }
    }

    #[test]
    fn every_process_exits_once_and_counts_add_up() {
        let all = read("build:procs=5,refs=10000,jobs=2,seed=3", 777);
        assert_eq!(all.iter().filter(|x| x.is_ok()).count(), 5 * 10_000);
        let exits: Vec<u16> = all
            .iter()
            .filter_map(|x| match x {
                Err(Event::Exit { asid }) => Some(*asid),
                _ => None,
            })
            .collect();
        assert_eq!(all.len(), 5 * 10_000 + exits.len());
        let mut sorted = exits.clone();
        sorted.sort();
        assert_eq!(sorted, vec![1, 2, 3, 4, 5]);
        let v = read("build:procs=2,refs=5000,bits=32,large_size=8MiB", 1000);
        assert!(v.iter().all(|x| x.map_or(true, |r| r.addr < 1 << 32)));
        assert!(super::super::parse("build:bits=36").is_err());
        assert!(
            !all.iter().any(|x| matches!(x, Err(Event::Unmap { .. }))),
            "unmaps without unmap="
        );
        // No reference of a process after its exit.
        for (i, x) in all.iter().enumerate() {
            if let Err(Event::Exit { asid }) = x {
                assert!(all[i + 1..].iter().all(|o| o.map_or(true, |o| o.asid != *asid)));
            }
        }
    }

    #[test]
    fn unmap_frees_arrays_half_way_and_never_touches_them_again() {
        assert!(super::super::parse("build:large=1,unmap=2").is_err());
        let all = read(
            "build:procs=4,refs=20000,jobs=2,large=2,large_size=3MiB,unmap=1,seed=5",
            513,
        );
        assert_eq!(all.len() as u64, 4 * (20_000 + 1 + 1));
        let refs_of = |range: &[Result<MemRef, Event>], asid: u16, lo: u64, hi: u64| {
            range
                .iter()
                .filter(|o| o.is_ok_and(|o| o.asid == asid && (lo..hi).contains(&o.addr)))
                .count()
        };
        let mut freed = 0;
        for (i, x) in all.iter().enumerate() {
            let Err(Event::Unmap { asid, start, end }) = *x else {
                continue;
            };
            assert_eq!(end - start, 3 << 20);
            assert_eq!(start % 4096, 0);
            assert_ne!(start % (2 << 20), 0, "arrays are not 2 MiB-aligned");
            // The array was swept before and is never touched after.
            assert!(refs_of(&all[..i], asid, start, end) > 0);
            assert_eq!(refs_of(&all[i + 1..], asid, start, end), 0);
            // Its place is taken: the process still sweeps large arrays afterwards.
            let later = refs_of(&all[i + 1..], asid, LAYOUT_47.mmap, LAYOUT_47.stack);
            assert!(later > 1000, "only {later} array references after the unmap");
            freed += 1;
        }
        assert_eq!(freed, 4);
    }

    /// The mix keys: over 100,000 references of one process the instruction share is
    /// `ifetch` within ±1 point (binomial: σ = 0.14 points), the array share `arrays`;
    /// `skew=4` sends most heap references to the first objects (the 4-fold nested
    /// uniform gives object 0 of 64 about Σ_{j≤3} ln(64)^j / j! / 64 ≈ 0.4 of the heap
    /// references, against 1/64 uniformly; the heap's first 64 KiB, which holds object 0,
    /// gets about 3 % of ~2 MiB uniformly); `profile=cc1` is 73 % fetches. Fails if a key
    /// is ignored.
    #[test]
    fn mix_keys_set_the_shares() {
        let share = |spec: &str| {
            let all = read(spec, 4096);
            let refs: Vec<MemRef> = all.into_iter().filter_map(|x| x.ok()).collect();
            let n = refs.len() as f64;
            let ifetch = refs.iter().filter(|r| r.kind == AccessKind::IFetch).count() as f64 / n;
            let arrays = refs
                .iter()
                .filter(|r| (LAYOUT_47.mmap..LAYOUT_47.stack - (64 << 10)).contains(&r.addr))
                .count() as f64
                / n;
            let heap: Vec<&MemRef> = refs
                .iter()
                .filter(|r| (LAYOUT_47.heap..LAYOUT_47.mmap).contains(&r.addr))
                .collect();
            // The heap's first 64 KiB holds object 0 whole (objects are ≤ 64 KiB).
            let first = heap.iter().filter(|r| r.addr < LAYOUT_47.heap + (64 << 10)).count() as f64;
            (ifetch, arrays, first / heap.len() as f64)
        };
        let (i, a, f) = share("build:procs=1,jobs=1,refs=100K");
        assert!((i - 0.25).abs() < 0.01 && (a - 0.30).abs() < 0.01, "{i} {a}");
        assert!(f < 0.08, "uniform: the first 64 KiB take {f}");
        let (i, a, _) = share("build:procs=1,jobs=1,refs=100K,ifetch=60,arrays=10");
        assert!((i - 0.60).abs() < 0.01 && (a - 0.10).abs() < 0.01, "{i} {a}");
        let (_, _, f) = share("build:procs=1,jobs=1,refs=100K,skew=4");
        assert!(f > 0.3, "skew=4: the first 64 KiB take only {f}");
        let (i, _, _) = share("build:procs=1,jobs=1,refs=100K,profile=cc1");
        assert!((i - 0.73).abs() < 0.01, "{i}");
        assert!(super::super::parse("build:ifetch=80,arrays=20").is_err());
        assert!(super::super::parse("build:skew=0").is_err());
    }
}
