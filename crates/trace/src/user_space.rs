//! References outside the user address space: a kernel address recorded by a
//! system-wide tracer, a non-canonical one from a corrupt or foreign trace. No user
//! process can make such an access (it faults), so simulating it as one would be
//! silently wrong. [`UserOnly`] wraps a source and, by [`OutsideUser`], either stops at
//! the first such reference, naming the trace, the reference's index and its address, or
//! drops every one of them and counts them ([`Dropped`]).
//!
//! The bound is the caller's: the simulator takes it from the page-table format
//! (`Format::user_va_end`).

use crate::{Batch, TraceError, TraceMeta, TraceSource};

/// What to do with a reference at or above the user address space's end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutsideUser {
    /// Stop the run with an error naming the trace, the reference's index and address
    /// (the default: no number is changed without a word).
    #[default]
    Stop,
    /// Drop the reference (it is neither simulated nor counted as one) and count it.
    Drop,
}

impl OutsideUser {
    /// Parses `stop` or `drop` (the CLI's `--outside-user`).
    pub fn parse(s: &str) -> Result<OutsideUser, String> {
        match s {
            "stop" => Ok(OutsideUser::Stop),
            "drop" => Ok(OutsideUser::Drop),
            _ => Err(format!("'{s}': give `stop` (the default) or `drop`")),
        }
    }
}

/// The references [`UserOnly`] dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// How many.
    pub count: u64,
    /// The first one: its index in the trace's reference stream (0-based, counting every
    /// reference the trace holds) and its address.
    pub first: Option<(u64, u64)>,
    /// Touch events (`Event::Touch`, not references) at or above the end, dropped too.
    pub touches: u64,
}

/// A source whose references at or above `end` are stopped at or dropped ([`OutsideUser`]).
pub struct UserOnly<'a> {
    inner: &'a mut dyn TraceSource,
    end: u64,
    space: String,
    mode: OutsideUser,
    /// References the inner source delivered so far (dropped ones included).
    seen: u64,
    dropped: Dropped,
}

impl<'a> UserOnly<'a> {
    /// Wraps `inner`; `end` is one past the last user address, `space` names the address
    /// space for messages (e.g. "x86_64 user space").
    pub fn new(inner: &'a mut dyn TraceSource, end: u64, space: String, mode: OutsideUser) -> UserOnly<'a> {
        UserOnly {
            inner,
            end,
            space,
            mode,
            seen: 0,
            dropped: Dropped::default(),
        }
    }

    /// What was dropped so far.
    pub fn dropped(&self) -> Dropped {
        self.dropped
    }
}

impl UserOnly<'_> {
    /// One batch of the inner source, filtered; `Ok(0)` with `n > 0` from the inner
    /// source when every item was dropped (the caller asks again).
    fn filter_batch(&mut self, buf: &mut Batch, max: usize) -> (Result<usize, TraceError>, bool) {
        let refs0 = buf.refs.len();
        let events0 = buf.events.len();
        let res = self.inner.next_batch(buf, max);
        let new = buf.refs.len() - refs0;
        let end = self.end;
        if self.mode == OutsideUser::Drop {
            // A touch outside is dropped with the references (in stop mode the simulator
            // refuses it, naming it).
            let mut tail = buf.events.split_off(events0);
            let n = tail.len();
            tail.retain(|e| !matches!(e.event, crate::Event::Touch { addr, .. } if addr >= end));
            self.dropped.touches += (n - tail.len()) as u64;
            buf.events.extend(tail);
        }
        // The common case costs one pass with no branch per reference: every address is
        // at most the OR of them all, so an OR below the end clears the batch. (An OR at
        // or above it may still come from addresses all inside: the scan decides.)
        let fresh = &buf.refs[refs0..];
        let inside = or_of_addrs(fresh) < end;
        let Some(first) = (!inside).then(|| fresh.iter().position(|r| r.addr >= end)).flatten() else {
            self.seen += new as u64;
            return (res, false);
        };
        let at = refs0 + first;
        if self.mode == OutsideUser::Stop {
            let index = self.seen + first as u64;
            let addr = buf.refs[at].addr;
            buf.refs.truncate(at);
            let keep = buf.events[events0..].iter().take_while(|e| e.before <= at).count();
            buf.events.truncate(events0 + keep);
            self.seen = index;
            let error = TraceError::OutsideUser {
                trace: self.inner.describe(),
                index,
                addr,
                end,
                space: self.space.clone(),
            };
            return (Err(error), false);
        }
        // Drop: compact the kept references; `kept[j]` is how many of the first `j` new
        // references were kept, so each event keeps its place among them.
        let mut kept = Vec::with_capacity(new + 1);
        kept.push(0);
        let mut w = refs0;
        for i in refs0..refs0 + new {
            let r = buf.refs[i];
            if r.addr >= end {
                self.dropped.count += 1;
                if self.dropped.first.is_none() {
                    self.dropped.first = Some((self.seen + (i - refs0) as u64, r.addr));
                }
            } else {
                buf.refs[w] = r;
                w += 1;
            }
            kept.push(w - refs0);
        }
        self.seen += new as u64;
        buf.refs.truncate(w);
        for e in buf.events[events0..].iter_mut().filter(|e| e.before >= refs0) {
            e.before = refs0 + kept[(e.before - refs0).min(new)];
        }
        let gone = refs0 + new - w;
        match res {
            // `Ok(0)` means the end of the trace: a batch of nothing but dropped
            // references must not end the run.
            Ok(n) if n == gone => (Ok(0), true),
            Ok(n) => (Ok(n - gone), false),
            Err(e) => (Err(e), false),
        }
    }
}

/// The OR of every reference's address, four at a time (four independent chains: about a
/// cycle per reference less than one chain on the simulator's hot path).
#[inline]
fn or_of_addrs(refs: &[crate::MemRef]) -> u64 {
    let mut m = [0u64; 4];
    let chunks = refs.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        m[0] |= c[0].addr;
        m[1] |= c[1].addr;
        m[2] |= c[2].addr;
        m[3] |= c[3].addr;
    }
    rest.iter().fold(m[0] | m[1] | m[2] | m[3], |a, r| a | r.addr)
}

impl TraceSource for UserOnly<'_> {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        loop {
            match self.filter_batch(buf, max) {
                (_, true) => continue,
                (res, false) => return res,
            }
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

    fn warmup_refs(&self) -> u64 {
        self.inner.warmup_refs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AccessKind, Event, EventAt, MemRef};

    /// One batch: addresses, and exit events as (before, asid).
    type Spec = (Vec<u64>, Vec<(usize, u16)>);

    /// Hands out its batches one per call.
    struct Batches(Vec<Spec>, usize);

    impl TraceSource for Batches {
        fn next_batch(&mut self, buf: &mut Batch, _max: usize) -> Result<usize, TraceError> {
            let Some((refs, events)) = self.0.get(self.1) else {
                return Ok(0);
            };
            self.1 += 1;
            let base = buf.refs.len();
            for &a in refs {
                buf.refs.push(MemRef::new(a, AccessKind::Load, 8));
            }
            for &(before, asid) in events {
                buf.events.push(EventAt {
                    before: base + before,
                    event: Event::Exit { asid },
                });
            }
            Ok(refs.len() + events.len())
        }
        fn describe(&self) -> String {
            "batches".into()
        }
    }

    const END: u64 = 0x1000_0000;
    const K: u64 = 0xffff_ffff_8100_0000;

    fn all(src: &mut UserOnly) -> Result<(Vec<u64>, Vec<usize>), TraceError> {
        let mut buf = Batch::with_capacity(8);
        while src.next_batch(&mut buf, 8)? > 0 {}
        Ok((
            buf.refs.iter().map(|r| r.addr).collect(),
            buf.events.iter().map(|e| e.before).collect(),
        ))
    }

    /// One batch of a reference and three touches, two of them at or above the end.
    struct Touches(bool);

    impl TraceSource for Touches {
        fn next_batch(&mut self, buf: &mut Batch, _max: usize) -> Result<usize, TraceError> {
            if std::mem::replace(&mut self.0, true) {
                return Ok(0);
            }
            buf.refs.push(MemRef::new(0x1000, AccessKind::Load, 8));
            for (before, addr) in [(0, 0x2000), (1, END), (1, END + 0x1000)] {
                buf.events.push(EventAt {
                    before,
                    event: Event::Touch {
                        asid: 0,
                        addr,
                        write: true,
                    },
                });
            }
            Ok(4)
        }
        fn describe(&self) -> String {
            "touches".into()
        }
    }

    /// Dropping drops the touches outside too, counted apart from the references; stop
    /// mode passes them on (the simulator refuses one, naming it).
    #[test]
    fn touches_outside_are_dropped_and_counted_with_drop_and_kept_with_stop() {
        let mut inner = Touches(false);
        let mut src = UserOnly::new(&mut inner, END, "test space".into(), OutsideUser::Drop);
        let (refs, events) = all(&mut src).unwrap();
        assert_eq!((refs, events), (vec![0x1000], vec![0]));
        assert_eq!((src.dropped().count, src.dropped().touches), (0, 2));
        let mut inner = Touches(false);
        let mut src = UserOnly::new(&mut inner, END, "test space".into(), OutsideUser::Stop);
        assert_eq!(all(&mut src).unwrap().1, vec![0, 1, 1]);
    }

    #[test]
    fn drop_keeps_the_others_in_order_and_each_event_between_the_same_references() {
        // Batch 1: a, K, b, event before b (index 2 → 1 once K is gone), K, event at the
        // end (index 5 → 2). Batch 2: only kernel references (must not end the run).
        // Batch 3: c.
        let mut inner = Batches(
            vec![
                (vec![0x1000, K, 0x2000, K], vec![(2, 1), (4, 2)]),
                (vec![K, END], vec![]),
                (vec![0x3000], vec![]),
            ],
            0,
        );
        let mut src = UserOnly::new(&mut inner, END, "test space".into(), OutsideUser::Drop);
        let (refs, events) = all(&mut src).unwrap();
        assert_eq!(refs, vec![0x1000, 0x2000, 0x3000]);
        assert_eq!(events, vec![1, 2]);
        // Four dropped (END itself is outside), the first is the trace's reference 1.
        assert_eq!(
            src.dropped(),
            Dropped {
                count: 4,
                first: Some((1, K)),
                touches: 0,
            }
        );
    }

    #[test]
    fn stop_names_the_reference_index_and_keeps_what_came_before() {
        let mut inner = Batches(
            vec![
                (vec![0x1000, 0x2000], vec![]),
                (vec![0x3000, K, 0x4000], vec![(1, 1), (2, 2)]),
            ],
            0,
        );
        let mut src = UserOnly::new(&mut inner, END, "test space".into(), OutsideUser::Stop);
        let mut buf = Batch::with_capacity(8);
        assert_eq!(src.next_batch(&mut buf, 8).unwrap(), 2);
        let e = src.next_batch(&mut buf, 8).unwrap_err();
        // References 0, 1, 2 come before the kernel one: index 3.
        assert_eq!(e.refs_before(), Some(3));
        let msg = e.to_string();
        assert!(msg.starts_with("batches: reference 3 "), "{msg}");
        assert!(
            msg.contains("0xffffffff81000000") && msg.contains("test space [0, 0x10000000)"),
            "{msg}"
        );
        // The reference before it stays, and the event placed before the kernel one.
        assert_eq!(
            buf.refs.iter().map(|r| r.addr).collect::<Vec<_>>(),
            vec![0x1000, 0x2000, 0x3000]
        );
        assert_eq!(buf.events.iter().map(|e| e.before).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn a_trace_inside_the_user_space_passes_unchanged() {
        let mut inner = Batches(vec![(vec![0x1000, END - 1], vec![(1, 1)])], 0);
        let mut src = UserOnly::new(&mut inner, END, "test space".into(), OutsideUser::Stop);
        assert_eq!(all(&mut src).unwrap(), (vec![0x1000, END - 1], vec![1]));
        assert_eq!(src.dropped(), Dropped::default());
    }

    #[test]
    fn the_or_of_a_batch_sees_an_outside_address_in_any_lane_and_the_tail() {
        let refs = |addrs: &[u64]| {
            addrs
                .iter()
                .map(|&a| MemRef::new(a, AccessKind::Load, 8))
                .collect::<Vec<_>>()
        };
        // 9 references: two chunks of four and a tail of one; one outside in each place.
        for at in 0..9 {
            let mut a = vec![0x1000u64; 9];
            a[at] = END;
            assert!(super::or_of_addrs(&refs(&a)) >= END, "at {at}");
        }
        assert!(super::or_of_addrs(&refs(&[END - 1; 9])) < END);
        // A bound that is no power of two (a 3 GiB ARMv7 user space): two addresses inside
        // whose OR is not (0x8000_0000 | 0x4000_0000) take the scan, which passes them and
        // stops at the one outside.
        let end = 0xc000_0000;
        let mut inner = Batches(vec![(vec![0x8000_0000, 0x4000_0000, 0xc000_0000], vec![])], 0);
        let mut src = UserOnly::new(&mut inner, end, "test space".into(), OutsideUser::Stop);
        let e = all(&mut src).unwrap_err().to_string();
        assert!(e.contains("0xc0000000"), "{e}");
    }
}
