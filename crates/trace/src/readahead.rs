//! Read-ahead: a trace's decompression and decoding on a second thread.
//!
//! [`ReadAhead`] wraps a [`TraceSource`]. The first [`INLINE_BATCHES`] batches are read
//! on the caller's thread (a short trace ends there, with no thread started and no
//! batches in flight: its start-up costs less CPU time; docs/benchmarks-log.md, "Start-up");
//! from the next [`TraceSource::next_batch`] call on, it runs the wrapped source on a
//! thread of its own that fills [`Batch`]es of the size that call asked for and passes
//! them through a bounded queue
//! ([`DEPTH`] batches); the consumer hands the batches back for reuse, so memory stays
//! at `DEPTH + 2` batches whatever the trace's length. A reader's error travels in order,
//! after the references read before it, with its offset and reference count unchanged.
//! The batches the consumer sees are the ones the wrapped source produced (same
//! boundaries, same events), so results do not change; only the time the simulating
//! thread spends decoding goes. Dropping a `ReadAhead` (a run stopped by Ctrl-C) stops
//! the thread after the batch it is reading and joins it.
//!
//! `meta()` answers from a snapshot the thread takes after batches 0, 64, 128, … (the
//! batches after which `mmulab_sim::run` looks for a trace's VMAs) and at the end, so a
//! run sees the metadata at the same point as without read-ahead; `progress()` is the
//! thread's position (at most `DEPTH + 1` batches ahead of the consumer).

use crate::{Batch, TraceError, TraceMeta, TraceSource};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Batches in flight between the reading thread and the consumer.
pub const DEPTH: usize = 4;
/// Every how many batches the reading thread snapshots the source's metadata.
const META_EVERY: u64 = 64;
/// Batches read on the caller's thread before the reading thread starts: 16 batches of
/// the run loop's 8,192 references are 131,072 references, a few milliseconds of
/// decoding (assumed short enough not to matter on a trace long enough to need the
/// thread). A trace that ends within them never starts it. Fewer than `META_EVERY` (64), so
/// the metadata snapshots stay where they were (after batches 0, 64, 128, …).
pub const INLINE_BATCHES: u64 = 16;

/// What the reading thread sends.
enum Msg {
    /// A batch, with the metadata snapshot taken after it (if one was due).
    Batch(Batch, Option<TraceMeta>),
    /// The items read before an error, and the error.
    Failed(Batch, TraceError),
    /// The end of the trace, and the final metadata.
    End(Option<TraceMeta>),
}

/// Progress shared with the reading thread.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    known: AtomicBool,
    done: AtomicU64,
    total: AtomicU64,
}

/// A [`TraceSource`] read on a second thread (module documentation).
pub struct ReadAhead {
    /// The source until the thread starts (or for good, if no thread could start).
    inner: Option<Box<dyn TraceSource + Send>>,
    described: String,
    rx: Option<Receiver<Msg>>,
    free: Option<SyncSender<Batch>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
    /// A batch being handed out in pieces (a caller asked for fewer items than it holds,
    /// or its buffer was not empty): the batch, the next reference, the next event.
    part: Option<(Batch, usize, usize)>,
    /// An error to return once `part` is handed out.
    error: Option<TraceError>,
    meta: Option<TraceMeta>,
    ended: bool,
    /// Batches handed out by the wrapped source on the caller's thread so far.
    inline: u64,
}

impl ReadAhead {
    /// Wraps `inner`; its thread starts at the first `next_batch`.
    pub fn new(inner: Box<dyn TraceSource + Send>) -> ReadAhead {
        ReadAhead {
            described: inner.describe(),
            meta: None,
            inner: Some(inner),
            rx: None,
            free: None,
            thread: None,
            shared: Arc::new(Shared::default()),
            part: None,
            error: None,
            ended: false,
            inline: 0,
        }
    }

    /// Starts the reading thread with batches of `max` items.
    fn start(&mut self, max: usize) {
        // The metadata as far as read inline, until the thread's first snapshot.
        self.meta = self.inner.as_ref().and_then(|s| s.meta());
        let first = self.inline;
        let (tx, rx) = sync_channel::<Msg>(DEPTH);
        let (free_tx, free_rx) = sync_channel::<Batch>(DEPTH + 2);
        let shared = self.shared.clone();
        let mut inner = self.inner.take().expect("started once");
        let spawned = std::thread::Builder::new()
            .name("trace-read".into())
            .spawn(move || read(&mut *inner, max, first, &tx, &free_rx, &shared));
        match spawned {
            Ok(h) => {
                self.thread = Some(h);
                self.rx = Some(rx);
                self.free = Some(free_tx);
            }
            // Thread creation failed (the source went with the closure).
            Err(e) => {
                self.error = Some(TraceError::Spec(format!(
                    "{}: cannot start the trace reading thread: {e}",
                    self.described
                )));
            }
        }
    }

    /// True once the reading thread was started (after [`INLINE_BATCHES`] batches read
    /// on the caller's thread; never for a trace that ended within them).
    pub fn threaded(&self) -> bool {
        self.thread.is_some()
    }

    /// Hands out up to `max` items of `part` into `buf`; returns how many.
    fn hand_out(&mut self, buf: &mut Batch, max: usize) -> usize {
        let Some((mut b, mut r, mut e)) = self.part.take() else {
            return 0;
        };
        let whole = r == 0 && e == 0 && buf.is_empty() && b.refs.len() + b.events.len() <= max;
        if whole {
            // The usual case: the caller's empty buffer and the batch trade places.
            std::mem::swap(buf, &mut b);
            let n = buf.refs.len() + buf.events.len();
            self.recycle(b);
            return n;
        }
        let mut n = 0;
        while n < max {
            if e < b.events.len() && b.events[e].before <= r {
                buf.push_event(b.events[e].event);
                e += 1;
            } else if r < b.refs.len() {
                buf.push(b.refs[r]);
                r += 1;
            } else {
                break;
            }
            n += 1;
        }
        if r == b.refs.len() && e == b.events.len() {
            self.recycle(b);
        } else {
            self.part = Some((b, r, e));
        }
        n
    }

    fn recycle(&mut self, mut b: Batch) {
        if let Some(free) = &self.free {
            b.clear();
            let _ = free.try_send(b);
        }
    }
}

/// The reading thread: fills batches until the end, an error, or the consumer leaves.
/// `first` batches were read before it started (their number continues, so the metadata
/// snapshots fall after the same batches as without the inline start).
fn read(
    src: &mut dyn TraceSource,
    max: usize,
    first: u64,
    tx: &SyncSender<Msg>,
    free: &Receiver<Batch>,
    shared: &Shared,
) {
    let mut made = 0usize;
    let mut batches = first;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let mut b = match free.try_recv() {
            Ok(b) => b,
            Err(TryRecvError::Empty) if made < DEPTH + 2 => {
                made += 1;
                Batch::with_capacity(max)
            }
            Err(TryRecvError::Empty) => match free.recv() {
                Ok(b) => b,
                Err(_) => return,
            },
            Err(TryRecvError::Disconnected) => return,
        };
        b.clear();
        let res = src.next_batch(&mut b, max);
        if let Some((d, t)) = src.progress() {
            shared.done.store(d, Ordering::Relaxed);
            shared.total.store(t, Ordering::Relaxed);
            shared.known.store(true, Ordering::Relaxed);
        }
        let msg = match res {
            Ok(0) => Msg::End(src.meta()),
            Ok(_) => {
                let meta = (batches % META_EVERY == 0).then(|| src.meta()).flatten();
                batches += 1;
                Msg::Batch(b, meta)
            }
            Err(e) => Msg::Failed(b, e),
        };
        let last = !matches!(msg, Msg::Batch(..));
        if tx.send(msg).is_err() || last {
            return;
        }
    }
}

impl TraceSource for ReadAhead {
    fn next_batch(&mut self, buf: &mut Batch, max: usize) -> Result<usize, TraceError> {
        if max == 0 {
            return Ok(0);
        }
        if self.rx.is_none() && !self.ended && self.inline < INLINE_BATCHES {
            if let Some(inner) = self.inner.as_mut() {
                // The first batches on this thread (module documentation).
                let res = inner.next_batch(buf, max);
                match res {
                    Ok(0) | Err(_) => self.ended = true,
                    Ok(_) => self.inline += 1,
                }
                return res;
            }
        }
        if self.inner.is_some() && self.rx.is_none() && !self.ended {
            self.start(max);
        }
        loop {
            if self.part.is_some() {
                let n = self.hand_out(buf, max);
                // The items read before an error come with the error, in one call, as
                // the wrapped source hands them out.
                if self.part.is_none() {
                    if let Some(e) = self.error.take() {
                        self.ended = true;
                        return Err(e);
                    }
                }
                if n > 0 {
                    return Ok(n);
                }
            }
            if let Some(e) = self.error.take() {
                self.ended = true;
                return Err(e);
            }
            if self.ended {
                return Ok(0);
            }
            let Some(rx) = &self.rx else {
                return Ok(0);
            };
            match rx.recv() {
                Ok(Msg::Batch(b, meta)) => {
                    if meta.is_some() {
                        self.meta = meta;
                    }
                    self.part = Some((b, 0, 0));
                }
                Ok(Msg::Failed(b, e)) => {
                    self.part = Some((b, 0, 0));
                    self.error = Some(e);
                }
                Ok(Msg::End(meta)) => {
                    if meta.is_some() {
                        self.meta = meta;
                    }
                    self.ended = true;
                }
                // The thread ended without a word: it panicked.
                Err(_) => {
                    self.ended = true;
                    return Err(TraceError::Spec(format!(
                        "{}: the trace reading thread failed",
                        self.described
                    )));
                }
            }
        }
    }

    fn describe(&self) -> String {
        self.described.clone()
    }

    fn progress(&self) -> Option<(u64, u64)> {
        match &self.inner {
            Some(s) => s.progress(),
            None => self.shared.known.load(Ordering::Relaxed).then(|| {
                (
                    self.shared.done.load(Ordering::Relaxed),
                    self.shared.total.load(Ordering::Relaxed),
                )
            }),
        }
    }

    fn meta(&self) -> Option<TraceMeta> {
        match &self.inner {
            Some(s) => s.meta(),
            None => self.meta.clone(),
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Closing both channels wakes the thread wherever it waits.
        self.rx = None;
        self.free = None;
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}
