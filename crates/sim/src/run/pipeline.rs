//! The run loop's second thread on a machine with data caches ([`Machine::set_pipeline`];
//! docs/memory.md, "Speed"): the data caches and the memory below them (DRAM) run on a
//! thread of their own, one step behind the translation.
//!
//! What makes the split exact: nothing the translation does depends on the caches or on
//! the clock. A reference's TLB lookups, walks, page-walk-cache lookups and OS faults
//! give its descriptor reads and its physical address; the caches and DRAM then take
//! those in order, and only they and the core's clock (core_cache.rs) change. So the
//! simulating thread translates every reference and writes a record of what its cache
//! path needs ([`Stage1::cache_record`]): its descriptor reads, its physical address, and
//! the core's cycles outside the caches after it ([`CachedCore::other_cycles`], which
//! the cache path asks for when a request leaves for memory). The cache thread replays
//! the records through the same code in the same order ([`replay`]): every count, cycle
//! and DRAM request is what the one-thread path gives (tests/it/pipeline.rs compares them).
//!
//! Anything else that reads or changes the cache side — a background tick (its time
//! series samples and its clock), a trace event, the request stream, the statistics at
//! the end — first takes it back ([`Pipe::park`]): the cache thread finishes the records
//! sent so far and hands the caches and the cores' cache state back to the machine.
//!
//! Written here: the hand-off is a few channel messages per batch of records; the
//! records are plain words.
//!
//! [`Stage1::cache_record`]: crate::translator::Stage1::cache_record
//! [`CachedCore::other_cycles`]: crate::translator::CachedCore::other_cycles

use crate::machine::Machine;
use crate::translator::{replay, CacheSide};
use mmulab_model::cache::FirstLevel;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

/// Words per batch of records handed to the cache thread (a record is 4 words, one
/// per first-level miss, of which a GUPS reference makes one or two: 16,384 records,
/// 512 KiB). Measured with the throughput bench's sliced two-thread A/B (`--caches
/// --sliced --threads 2 --refs 20M`, docs/benchmarks-log.md, "ninth pass") on 2026-12-03's
/// 2-vCPU Intel Xeon guest: 1 << 16 ran GUPS with caches and DRAM 1.15x as fast as
/// 1 << 14 (range 1.08-1.15; the other rows 1.00-1.03); 1 << 12 was 0.89x of 1 << 14,
/// 1 << 17 0.95x of 1 << 16, and DEPTH 8 instead of 4 0.97x. Tuned for that machine.
const CHUNK_WORDS: usize = 1 << 16;
/// Batches of records in flight to the cache thread before the simulating thread waits.
const DEPTH: usize = 4;

/// A message to the cache thread.
enum Msg {
    /// The cache side: the thread owns it from now on.
    Take(CacheSide),
    /// Records to replay.
    Records(Vec<u64>),
    /// Give the cache side back.
    Give,
}

/// What the cache thread sends back.
enum Back {
    /// A batch of records replayed, for reuse.
    Free(Vec<u64>),
    /// The cache side, after every record sent before [`Msg::Give`].
    Side(CacheSide),
}

/// The simulating thread's end of the pipeline.
pub(crate) struct Pipe {
    tx: SyncSender<Msg>,
    rx: Receiver<Back>,
    /// Records not yet sent.
    cur: Vec<u64>,
    /// Batches of records to reuse.
    spare: Vec<Vec<u64>>,
    /// True while the cache thread holds the cache side.
    active: bool,
    /// The caches' first level, if this thread runs it while the cache thread holds
    /// the rest ([`Stage1::cache_record`]).
    first: Option<FirstLevel>,
}

/// The cache thread: replays records until the pipe is dropped.
fn serve(rx: Receiver<Msg>, tx: Sender<Back>) {
    let mut side: Option<CacheSide> = None;
    while let Ok(m) = rx.recv() {
        match m {
            Msg::Take(s) => side = Some(s),
            Msg::Records(r) => {
                let s = side.as_mut().expect("records sent before the cache side");
                replay(s, &r);
                let _ = tx.send(Back::Free(r));
            }
            Msg::Give => {
                let s = side.take().expect("the cache side asked for twice");
                if tx.send(Back::Side(s)).is_err() {
                    return;
                }
            }
        }
    }
}

impl Pipe {
    /// Starts the cache thread in `scope`.
    pub(crate) fn spawn<'s>(scope: &'s std::thread::Scope<'s, '_>) -> std::io::Result<Pipe> {
        let (tx, thread_rx) = sync_channel(DEPTH);
        let (thread_tx, rx) = channel();
        std::thread::Builder::new()
            .name("mmulab-caches".into())
            .spawn_scoped(scope, move || serve(thread_rx, thread_tx))?;
        Ok(Pipe {
            tx,
            rx,
            cur: Vec::with_capacity(CHUNK_WORDS + 64),
            spare: Vec::new(),
            active: false,
            first: None,
        })
    }

    /// The records being written: the cache thread holds `m`'s cache side from now on
    /// (taken now if `m` still has it).
    #[inline(always)]
    pub(crate) fn records(&mut self, m: &mut Machine) -> &mut Vec<u64> {
        if !self.active {
            self.resume(m);
        }
        &mut self.cur
    }

    /// The caches' first level if it runs here, and the records being written, while
    /// the cache thread holds the cache side ([`Pipe::records`] gave it).
    #[inline(always)]
    pub(crate) fn cur(&mut self) -> (Option<&mut FirstLevel>, &mut Vec<u64>) {
        debug_assert!(self.active);
        (self.first.as_mut(), &mut self.cur)
    }

    #[cold]
    #[inline(never)]
    fn resume(&mut self, m: &mut Machine) {
        let (side, first) = m.take_cache_side();
        self.first = first;
        self.send(Msg::Take(side));
        self.active = true;
    }

    /// Sends the records written so far once they fill a batch.
    #[inline(always)]
    pub(crate) fn flush_if_full(&mut self) {
        if self.cur.len() >= CHUNK_WORDS {
            self.flush();
        }
    }

    #[inline(never)]
    fn flush(&mut self) {
        if self.cur.is_empty() {
            return;
        }
        // A batch the cache thread is done with, if one came back; else a new one (at
        // most DEPTH + 2 exist: `send` waits while DEPTH are in flight).
        while let Ok(b) = self.rx.try_recv() {
            match b {
                Back::Free(v) => self.spare.push(v),
                Back::Side(_) => unreachable!("the cache side comes back only after Give"),
            }
        }
        let mut next = self.spare.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK_WORDS + 64));
        next.clear();
        let full = std::mem::replace(&mut self.cur, next);
        self.send(Msg::Records(full));
    }

    fn send(&mut self, m: Msg) {
        if self.tx.send(m).is_err() {
            // The cache thread is gone: it panicked (a model bug); the scope that runs
            // it re-raises that panic when it ends.
            panic!("the cache thread stopped");
        }
    }

    /// Gives `m` its cache side back, after every record written so far: before
    /// anything else reads or changes the caches, the DRAM or a core's clock.
    pub(crate) fn park(&mut self, m: &mut Machine) {
        if !self.active {
            return;
        }
        self.flush();
        self.send(Msg::Give);
        loop {
            match self.rx.recv() {
                Ok(Back::Free(v)) => self.spare.push(v),
                Ok(Back::Side(s)) => {
                    m.put_cache_side(s, self.first.take());
                    break;
                }
                Err(_) => panic!("the cache thread stopped"),
            }
        }
        self.active = false;
    }
}
