//! Typed trace events: what happens to address spaces between references (a process
//! exits, a range is unmapped, a page is first touched where a sampled recording was not
//! recording), carried beside the references of a [`Batch`].
//!
//! A [`TraceSource`] appends references to [`Batch::refs`] and events
//! to [`Batch::events`]; each event records how many of the batch's references come
//! before it ([`EventAt::before`]), so a consumer applies it exactly between the two
//! references it fell between. Events are not references: they are not translated, and
//! they count as neither loads, stores nor TLB lookups.
//!
//! Adding an event kind (a GPU buffer object created or destroyed, a memslot change): a
//! variant of [`Event`], its record in the `.mlt` event frame ([`Event::encode`] /
//! [`Event::decode`], documented in docs/trace-format.md), and its handling in the
//! simulator's `Machine::event` — which names every variant, so the compiler points at it.
//!
//! # The legacy encoding
//!
//! Before events were typed, they travelled as *control references*: references to
//! addresses no program can touch. Files written that way (`.mlt` version 1, and din or
//! Lackey text, which have no event records) still read correctly: [`LegacyMarkers`]
//! wraps every file reader and turns such references into events.
//!
//! * **exit** — a reference to [`EXIT_ADDR`] (the last page of the 47-bit user address
//!   space) ends its address space.
//! * **unmap** — two consecutive markers of one address space, in the tagged window
//!   [`UNMAP_TAG`] (address bits 63..48 = `0xfffe`): the first, `UNMAP_TAG | start`,
//!   opens the range; the second, `UNMAP_TAG | end | 1`, closes it and unmaps
//!   `[start, end)` (munmap). The low 12 bits of a marker say which end it is (0: start,
//!   1: end) and any other value is an error, as is an end without a start, a second
//!   start before the end, an end of another address space, an empty or inverted range,
//!   or a trace that ends between the two. Example: unmapping `[0x4000_0000,
//!   0x4020_0000)` is a reference to `0xfffe_0000_4000_0000` followed by one to
//!   `0xfffe_0000_4020_0001`.
//!
//! Why these addresses cannot be a real access: `0xfffe_…` is non-canonical on x86-64 (a
//! #GP, never a memory reference), and on arm64 — even with top-byte-ignore — bit 55 is
//! set, which selects the kernel's TTBR1 half, so a user access faults. The exit address,
//! the page below 2^47, lies outside an x86-64 Linux process: its user space ends one page
//! short of 2^47 (`DEFAULT_MAP_WINDOW` in arch/x86/include/asm/page_64_types.h, kept
//! unmapped because of the SYSRET return-address erratum), so no recorded program touches
//! it. New traces carry events as typed records instead.

use crate::{AccessKind, MemRef, TraceError, TraceMeta, TraceSource};

/// The exit marker of the legacy encoding: the last 4 KiB page of the 47-bit user space.
pub const EXIT_ADDR: u64 = 0x0000_7fff_ffff_f000;
/// Bits 63..48 of a legacy unmap marker.
pub const UNMAP_TAG: u64 = 0xfffe << 48;
/// Low bits of the legacy marker that closes an unmap range.
pub const UNMAP_END_FLAG: u64 = 1;

/// Something that happens to an address space between two references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Address space `asid` ends (the process exits): the OS frees its memory and every
    /// core drops its translations.
    Exit {
        /// The address space.
        asid: u16,
    },
    /// `[start, end)` of address space `asid` is unmapped (munmap). Both ends are
    /// 4 KiB-aligned, `start < end <= 2^48`.
    Unmap {
        /// The address space.
        asid: u16,
        /// First byte of the range.
        start: u64,
        /// One past its last byte.
        end: u64,
    },
    /// The 4 KiB page at `addr` of address space `asid` was first read (`write` false) or
    /// first written (`write` true) between the windows of a sampled recording (mmtrace
    /// `--sample`): the reference itself was not recorded, but the program's page tables
    /// changed. The simulator lets its OS fault the page in as that access would (a fault
    /// counted; no TLB, walk or cache event, no reference counted), so that the windows
    /// after it find the memory the program had touched — the functional warming of a
    /// sampled simulation, at page grain. `addr` is 4 KiB-aligned and below 2^48.
    Touch {
        /// The address space.
        asid: u16,
        /// The page's first byte.
        addr: u64,
        /// A first write (else a first read).
        write: bool,
    },
    /// The VMA list of address space `asid` now has one VMA at exactly `[start, end)`
    /// with these madvise flags: a new mapping, one grown or merged with a neighbour
    /// (`brk`, adjacent `mmap`s), or its flags changed (`madvise`). A recording of every
    /// instruction writes one after each system call that changed the VMAs (`mmulab record
    /// --recorder ptrace --sample all`), so that a simulation sees each mapping as the
    /// kernel had it at each fault. The pages already mapped stay (a huge page one of its
    /// ends cuts is split, as at a VMA split); VMA records the range overlaps are cut back
    /// to make room. Both ends 4 KiB-aligned, `start < end <= 2^48`.
    Vma {
        /// The address space.
        asid: u16,
        /// First byte of the VMA.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// `MADV_HUGEPAGE` (smaps `hg`).
        hugepage: bool,
        /// `MADV_NOHUGEPAGE` (smaps `nh`).
        nohugepage: bool,
    },
    /// `madvise(MADV_DONTNEED)` of `[start, end)` of address space `asid` succeeded: its
    /// pages are freed (a huge page an end cuts is split first), the VMAs stay, and a later
    /// touch faults a fresh zero-filled page. `mmulab record --recorder ptrace --sample
    /// all` writes one after each such call. Both ends 4 KiB-aligned, `start < end <=
    /// 2^48`.
    DontNeed {
        /// The address space.
        asid: u16,
        /// First byte of the range.
        start: u64,
        /// One past its last byte.
        end: u64,
    },
}

/// Length of one event record in an `.mlt` event frame.
pub const RECORD_LEN: usize = 20;

impl Event {
    /// The event's name, as summaries count it (`exit`, `unmap`, `touch`, `vma`,
    /// `dontneed`).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Exit { .. } => "exit",
            Event::Unmap { .. } => "unmap",
            Event::Touch { .. } => "touch",
            Event::Vma { .. } => "vma",
            Event::DontNeed { .. } => "dontneed",
        }
    }

    /// The address space the event changes.
    pub fn asid(&self) -> u16 {
        match *self {
            Event::Exit { asid }
            | Event::Unmap { asid, .. }
            | Event::Touch { asid, .. }
            | Event::Vma { asid, .. }
            | Event::DontNeed { asid, .. } => asid,
        }
    }

    /// Checks the event's own invariants (an unmap range aligned, non-empty, below 2^48).
    pub fn check(&self) -> Result<(), String> {
        match *self {
            Event::Exit { .. } => Ok(()),
            Event::Unmap { start, end, .. } | Event::Vma { start, end, .. } | Event::DontNeed { start, end, .. } => {
                if (start | end) & 0xfff != 0 || start >= end || end > 1 << 48 {
                    Err(format!(
                        "{} of [{start:#x}, {end:#x}): the range must be 4 KiB-aligned, non-empty and below 2^48",
                        self.name()
                    ))
                } else {
                    Ok(())
                }
            }
            Event::Touch { addr, .. } => {
                if addr & 0xfff != 0 || addr >= 1 << 48 {
                    Err(format!(
                        "touch of {addr:#x}: the page address must be 4 KiB-aligned and below 2^48"
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The event's `.mlt` record: type (u8: 1 exit, 2 unmap, 3 touch, 4 vma, 5
    /// dontneed), a flags byte (zero but for vma: bit 0 `hugepage`, bit 1 `nohugepage`),
    /// asid (u16), then two u64 operands (unmap, vma and dontneed: start, end; touch: the
    /// page, 1 for a write else 0; exit: zeros), little-endian.
    pub fn encode(&self) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        let (ty, a, x, y) = match *self {
            Event::Exit { asid } => (1u8, asid, 0, 0),
            Event::Unmap { asid, start, end } => (2, asid, start, end),
            Event::Touch { asid, addr, write } => (3, asid, addr, write as u64),
            Event::DontNeed { asid, start, end } => (5, asid, start, end),
            Event::Vma {
                asid,
                start,
                end,
                hugepage,
                nohugepage,
            } => {
                b[1] = hugepage as u8 | (nohugepage as u8) << 1;
                (4, asid, start, end)
            }
        };
        b[0] = ty;
        b[2..4].copy_from_slice(&a.to_le_bytes());
        b[4..12].copy_from_slice(&x.to_le_bytes());
        b[12..20].copy_from_slice(&y.to_le_bytes());
        b
    }

    /// Decodes an `.mlt` record (see [`Event::encode`]); an unknown type or a bad range
    /// is an error saying which.
    pub fn decode(b: &[u8; RECORD_LEN]) -> Result<Event, String> {
        let asid = u16::from_le_bytes([b[2], b[3]]);
        let x = u64::from_le_bytes(b[4..12].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(b[12..20].try_into().expect("8 bytes"));
        let e = match b[0] {
            1 if x == 0 && y == 0 && b[1] == 0 => Event::Exit { asid },
            2 if b[1] == 0 => Event::Unmap { asid, start: x, end: y },
            3 if b[1] == 0 && y <= 1 => Event::Touch {
                asid,
                addr: x,
                write: y == 1,
            },
            4 if b[1] <= 3 => Event::Vma {
                asid,
                start: x,
                end: y,
                hugepage: b[1] & 1 != 0,
                nohugepage: b[1] & 2 != 0,
            },
            5 if b[1] == 0 => Event::DontNeed { asid, start: x, end: y },
            t => {
                return Err(format!(
                    "event record of unknown type {t} (a newer mmulab wrote it? upgrade mmulab)"
                ))
            }
        };
        e.check()?;
        Ok(e)
    }

    /// The event in the legacy encoding (for formats without event records: din and
    /// Lackey text, which keep no address space either). A touch, a vma or a dontneed has
    /// none: it is not a reference, and those formats cannot carry it (empty; `mmulab
    /// convert` says how many it dropped).
    pub fn legacy_refs(&self) -> Vec<MemRef> {
        let m = |addr, asid| MemRef {
            addr,
            size: 0,
            kind: AccessKind::Load,
            core: 0,
            asid,
        };
        match *self {
            Event::Exit { asid } => vec![m(EXIT_ADDR, asid)],
            Event::Unmap { asid, start, end } => {
                vec![m(UNMAP_TAG | start, asid), m(UNMAP_TAG | end | UNMAP_END_FLAG, asid)]
            }
            Event::Touch { .. } | Event::Vma { .. } | Event::DontNeed { .. } => Vec::new(),
        }
    }
}

/// An event and its place in a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventAt {
    /// How many of the batch's references come before the event (an index into
    /// [`Batch::refs`]: the event happens after `refs[..before]`, before `refs[before..]`).
    pub before: usize,
    /// The event.
    pub event: Event,
}

/// References and the events between them, as a [`TraceSource`] hands them out.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// The references, in order.
    pub refs: Vec<MemRef>,
    /// The events, in order, each placed among [`Batch::refs`].
    pub events: Vec<EventAt>,
}

impl Batch {
    /// An empty batch with room for `n` references.
    pub fn with_capacity(n: usize) -> Batch {
        Batch {
            refs: Vec::with_capacity(n),
            events: Vec::new(),
        }
    }

    /// Empties the batch (keeping its allocations).
    #[inline]
    pub fn clear(&mut self) {
        self.refs.clear();
        self.events.clear();
    }

    /// Appends a reference.
    #[inline]
    pub fn push(&mut self, r: MemRef) {
        self.refs.push(r);
    }

    /// Appends an event after the references appended so far.
    #[inline]
    pub fn push_event(&mut self, event: Event) {
        self.events.push(EventAt {
            before: self.refs.len(),
            event,
        });
    }

    /// True if the batch holds neither references nor events.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty() && self.events.is_empty()
    }

    /// References and events in trace order: each event as `Err`, each reference as `Ok`.
    pub fn items(&self) -> impl Iterator<Item = Result<&MemRef, &Event>> + '_ {
        let mut ev = self.events.iter().peekable();
        let mut i = 0;
        std::iter::from_fn(move || {
            if let Some(e) = ev.next_if(|e| e.before <= i) {
                return Some(Err(&e.event));
            }
            let r = self.refs.get(i)?;
            i += 1;
            Some(Ok(r))
        })
    }

    /// The references in runs between events: `f(Ok(run))` for each non-empty run and
    /// `f(Err(event))` for each event, in trace order.
    pub fn for_each_run<E>(&self, mut f: impl FnMut(Result<&[MemRef], &Event>) -> Result<(), E>) -> Result<(), E> {
        let mut from = 0;
        for e in &self.events {
            if e.before > from {
                f(Ok(&self.refs[from..e.before]))?;
                from = e.before;
            }
            f(Err(&e.event))?;
        }
        if from < self.refs.len() {
            f(Ok(&self.refs[from..]))?;
        }
        Ok(())
    }
}

/// True if `addr` is in the legacy unmap window.
#[inline]
pub fn is_unmap_marker(addr: u64) -> bool {
    addr >> 48 == UNMAP_TAG >> 48
}

/// True if `addr` is a legacy control reference (exit or either end of an unmap).
#[inline]
pub fn is_legacy_marker(addr: u64) -> bool {
    addr == EXIT_ADDR || is_unmap_marker(addr)
}

/// Reads the legacy encoding (see the module docs): wraps a file reader and turns its
/// control references into [`Event`]s, so nothing downstream sees a magic address. A
/// malformed marker sequence is a [`TraceError::Event`] naming the trace and how many
/// references came before it.
pub struct LegacyMarkers<S> {
    inner: S,
    open: Option<(u16, u64)>,
    delivered: u64,
}

impl<S: TraceSource> LegacyMarkers<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        LegacyMarkers {
            inner,
            open: None,
            delivered: 0,
        }
    }

    fn bad(&self, at: u64, what: String) -> TraceError {
        TraceError::Event {
            trace: self.inner.describe(),
            refs_before: at,
            what,
        }
    }

    /// Rewrites `batch.refs[start..]` without its markers and merges the events they
    /// stand for with those the inner source appended from `ev_start`.
    fn decode(&mut self, batch: &mut Batch, start: usize, ev_start: usize) -> Result<(), TraceError> {
        let inner_events = batch.events.split_off(ev_start);
        let mut inner_events = inner_events.into_iter().peekable();
        let end = batch.refs.len();
        let mut w = start;
        for i in start..end {
            while let Some(e) = inner_events.next_if(|e| e.before <= i) {
                batch.events.push(EventAt { before: w, ..e });
            }
            let r = batch.refs[i];
            let at = self.delivered + (w - start) as u64;
            if r.addr == EXIT_ADDR {
                batch.events.push(EventAt {
                    before: w,
                    event: Event::Exit { asid: r.asid },
                });
            } else if is_unmap_marker(r.addr) {
                let what = |s: String| format!("unmap marker {:#x} (asid {}): {s}", r.addr, r.asid);
                let va = r.addr & 0x0000_ffff_ffff_f000;
                match (r.addr & 0xfff, self.open) {
                    (0, None) => self.open = Some((r.asid, va)),
                    (0, Some((a, s))) => {
                        return Err(self.bad(
                            at,
                            what(format!(
                                "a second start while the range from {s:#x} of asid {a} is open"
                            )),
                        ))
                    }
                    (UNMAP_END_FLAG, None) => {
                        return Err(self.bad(at, what("an end marker without its start marker".into())))
                    }
                    (UNMAP_END_FLAG, Some((asid, s))) => {
                        self.open = None;
                        if asid != r.asid {
                            return Err(self.bad(at, what(format!("the open range belongs to asid {asid}"))));
                        }
                        if va <= s {
                            return Err(self.bad(at, what(format!("the range [{s:#x}, {va:#x}) is empty or inverted"))));
                        }
                        batch.events.push(EventAt {
                            before: w,
                            event: Event::Unmap {
                                asid,
                                start: s,
                                end: va,
                            },
                        });
                    }
                    _ => return Err(self.bad(at, what("the low 12 bits must be 0 (start) or 1 (end)".into()))),
                }
            } else {
                batch.refs[w] = r;
                w += 1;
            }
        }
        for e in inner_events {
            batch.events.push(EventAt { before: w, ..e });
        }
        batch.refs.truncate(w);
        Ok(())
    }
}

impl<S: TraceSource> TraceSource for LegacyMarkers<S> {
    fn next_batch(&mut self, batch: &mut Batch, max: usize) -> Result<usize, TraceError> {
        loop {
            let (start, ev_start) = (batch.refs.len(), batch.events.len());
            let res = self.inner.next_batch(batch, max);
            // Decode what was appended even on an error: the references before the damage
            // are delivered, their markers as events.
            let found = batch.refs[start..].iter().any(|r| r.addr >= EXIT_ADDR);
            if found {
                self.decode(batch, start, ev_start)?;
            }
            self.delivered += (batch.refs.len() - start) as u64;
            let n = res?;
            if n == 0 {
                if let Some((asid, s)) = self.open {
                    return Err(self.bad(
                        self.delivered,
                        format!("the trace ended inside an unmap marker pair: the range from {s:#x} of asid {asid} has a start marker but no end marker (is the trace truncated? see docs/trace-format.md, events)"),
                    ));
                }
                return Ok(0);
            }
            let appended = batch.refs.len() - start + batch.events.len() - ev_start;
            if appended > 0 {
                return Ok(appended);
            }
            // The whole batch was one unmap start marker: read on.
        }
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        self.inner.progress()
    }
    fn meta(&self) -> Option<TraceMeta> {
        self.inner.meta()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(addr: u64, asid: u16) -> MemRef {
        MemRef {
            addr,
            size: 8,
            kind: AccessKind::Load,
            core: 0,
            asid,
        }
    }

    /// A source handing out a fixed list in batches of `step`.
    struct List(Vec<MemRef>, usize, usize);
    impl TraceSource for List {
        fn next_batch(&mut self, b: &mut Batch, max: usize) -> Result<usize, TraceError> {
            let n = self.1.min(max).min(self.0.len() - self.2);
            b.refs.extend_from_slice(&self.0[self.2..self.2 + n]);
            self.2 += n;
            Ok(n)
        }
        fn describe(&self) -> String {
            "list".into()
        }
    }

    fn read_all(src: &mut dyn TraceSource) -> Result<Vec<Result<MemRef, Event>>, TraceError> {
        let mut out = Vec::new();
        let mut b = Batch::default();
        loop {
            b.clear();
            if src.next_batch(&mut b, 3)? == 0 {
                return Ok(out);
            }
            out.extend(b.items().map(|x| x.copied().map_err(|e| *e)));
        }
    }

    #[test]
    fn legacy_markers_become_events_in_place_across_batch_boundaries() {
        let unmap = Event::Unmap {
            asid: 3,
            start: 0x4000_0000,
            end: 0x4020_0000,
        }
        .legacy_refs();
        assert_eq!(unmap[0].addr, 0xfffe_0000_4000_0000);
        assert_eq!(unmap[1].addr, 0xfffe_0000_4020_0001);
        let mut list = vec![r(0x1000, 3), r(0x2000, 3)];
        list.extend(unmap);
        list.push(r(0x3000, 3));
        list.push(r(EXIT_ADDR, 3));
        list.push(r(0x5000, 4));
        for step in 1..=7 {
            let got = read_all(&mut LegacyMarkers::new(List(list.clone(), step, 0))).unwrap();
            assert_eq!(
                got,
                vec![
                    Ok(r(0x1000, 3)),
                    Ok(r(0x2000, 3)),
                    Err(Event::Unmap {
                        asid: 3,
                        start: 0x4000_0000,
                        end: 0x4020_0000
                    }),
                    Ok(r(0x3000, 3)),
                    Err(Event::Exit { asid: 3 }),
                    Ok(r(0x5000, 4)),
                ],
                "batches of {step}"
            );
        }
    }

    #[test]
    fn malformed_legacy_markers_are_errors_naming_the_place() {
        let cases: [(Vec<MemRef>, &str); 5] = [
            (vec![r(UNMAP_TAG | 0x5000 | 1, 0)], "without its start"),
            (vec![r(UNMAP_TAG | 0x5000, 0), r(UNMAP_TAG | 0x6000, 0)], "second start"),
            (
                vec![r(UNMAP_TAG | 0x5000, 0), r(UNMAP_TAG | 0x6001, 1)],
                "belongs to asid 0",
            ),
            (
                vec![r(UNMAP_TAG | 0x5000, 0), r(UNMAP_TAG | 0x5001, 0)],
                "empty or inverted",
            ),
            (vec![r(0x1000, 0), r(UNMAP_TAG | 0x5008, 0)], "low 12 bits"),
        ];
        for (list, want) in cases {
            let e = read_all(&mut LegacyMarkers::new(List(list, 8, 0)))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.starts_with("list: "), "{e}");
        }
        let e = read_all(&mut LegacyMarkers::new(List(
            vec![r(0x1000, 0), r(UNMAP_TAG | 0x5000, 0)],
            8,
            0,
        )))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("ended inside an unmap marker pair") && e.contains("after 1 references"),
            "{e}"
        );
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_refused() {
        for e in [
            Event::Exit { asid: 7 },
            Event::Unmap {
                asid: 65535,
                start: 0,
                end: 1 << 48,
            },
            Event::Touch {
                asid: 2,
                addr: 0x7fff_ffff_e000,
                write: true,
            },
            Event::Touch {
                asid: 0,
                addr: 0x1000,
                write: false,
            },
            Event::DontNeed {
                asid: 3,
                start: 0x4000_2000,
                end: 0x4001_2000,
            },
        ] {
            assert_eq!(Event::decode(&e.encode()), Ok(e));
        }
        // A dontneed record is type 5 with a zero flags byte, its range checked as an unmap's.
        let d = Event::DontNeed {
            asid: 1,
            start: 0x1000,
            end: 0x3000,
        }
        .encode();
        assert_eq!((d[0], d[1]), (5, 0));
        let mut flagged = d;
        flagged[1] = 1;
        assert!(Event::decode(&flagged).is_err());
        let mut unaligned = d;
        unaligned[4..12].copy_from_slice(&0x1008u64.to_le_bytes());
        assert!(Event::decode(&unaligned).is_err());
        // A touch must name a page below 2^48, and its operand is 0 or 1.
        for (addr, w) in [(0x1008u64, 0u64), (1 << 48, 0), (0x1000, 2)] {
            let mut b = Event::Touch {
                asid: 1,
                addr: 0,
                write: false,
            }
            .encode();
            b[4..12].copy_from_slice(&addr.to_le_bytes());
            b[12..20].copy_from_slice(&w.to_le_bytes());
            assert!(Event::decode(&b).is_err(), "{addr:#x} {w}");
        }
        let mut b = Event::Exit { asid: 1 }.encode();
        b[0] = 9;
        assert!(Event::decode(&b).unwrap_err().contains("unknown type 9"));
        let bad = Event::Unmap {
            asid: 1,
            start: 0x2000,
            end: 0x2000,
        };
        assert!(Event::decode(&bad.encode()).is_err());
    }

    #[test]
    fn runs_and_items_keep_trace_order() {
        let mut b = Batch::default();
        b.push_event(Event::Exit { asid: 9 });
        b.push(r(0x1000, 0));
        b.push(r(0x2000, 0));
        b.push_event(Event::Exit { asid: 1 });
        b.push_event(Event::Exit { asid: 2 });
        b.push(r(0x3000, 0));
        let mut seen = Vec::new();
        b.for_each_run(|x| -> Result<(), ()> {
            seen.push(match x {
                Ok(run) => format!("{}", run.len()),
                Err(e) => format!("e{}", e.asid()),
            });
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, ["e9", "2", "e1", "e2", "1"]);
        assert_eq!(b.items().count(), 6);
    }
}
