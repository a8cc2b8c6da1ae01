//! The write buffer, as DRAMsim3's controller keeps one (`Controller::AddTransaction`,
//! `ScheduleTransaction`, `CommandQueue::GetCommandToIssue` in its controller.cc and
//! command_queue.cc, commit 29817593).
//!
//! A write is posted: it waits in its channel's buffer (latency 0 to the requester, as
//! DRAMsim3 completes it at once) while reads go ahead of it. The buffer is drained
//! when it is full (`write_queue` entries), or when more than [`WRITE_IDLE_DRAIN`] wait
//! and the channel has nothing else to do (DRAMsim3: its command queues are empty; here:
//! no drained write is still unplaced and the data bus has fallen idle before the
//! arrival that finds it so).
//!
//! A drain *releases* the waiting writes; it does not place them all at once. DRAMsim3
//! moves a drain's writes into the per-bank command queues (one a cycle, a few cycles in
//! all), lets reads in behind them, and then serves the bank queues round robin, each
//! in order: a read waits for the drained writes of its own bank, but a read to another
//! bank whose command is ready goes between the writes (its cross-check's command
//! traces show a GUPS drain of 9 writes cut by reads in most drains). Placing a drain
//! whole, as this model did before, made every read after it wait tWTR after the
//! drain's *last* write data: mean read latency +17 % over DRAMsim3's on a GUPS stream
//! with write-backs (docs/memory.md). So a released write is placed, in release order,
//! when a later request arrives and either goes to the write's bank (it queues behind
//! the write) or arrives no earlier than the write's bank could act on it (its first
//! command, a precharge, an activate or the column command, would have issued by then);
//! the rest wait for a later arrival or the end of the stream. A write is placed from
//! its release: the bank, bus and tWTR times the model already keeps do the rest.

use super::{Dram, RowOutcome, NONE, WRITE_IDLE_DRAIN};

/// A write a drain released and the model has not yet placed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Released {
    pa: u64,
    /// Its bank record and row.
    bank: usize,
    row: u32,
    arrival: u64,
    /// When its drain began (at or after `arrival`).
    from: u64,
}

/// The drained writes of every channel not yet placed, with what lets a request skip
/// looking at them (speed only: the same placements as checking every one each time).
#[derive(Clone, Debug)]
pub(super) struct ReleasedWrites {
    /// Per channel, in release order.
    writes: Vec<Vec<Released>>,
    /// Per channel: a time before which none of its writes could issue its column
    /// command (`Dram::column_from`). A bank's times only move later, and only when a
    /// request of that bank is placed, which places that bank's released writes first;
    /// so the least of the estimates last computed stays a lower bound until then. 0:
    /// compute them.
    due: Vec<u64>,
    /// Per bank record: its released writes not yet placed (u32: `write_queue` may be
    /// set large, and a drain's writes may all go to one bank).
    in_bank: Vec<u32>,
}

impl ReleasedWrites {
    pub(super) fn new(channels: usize, banks: usize, per_channel: usize) -> Self {
        ReleasedWrites {
            writes: vec![Vec::with_capacity(per_channel); channels],
            due: vec![0; channels],
            in_bank: vec![0; banks],
        }
    }
}

impl Dram {
    /// [`Dram::serve`] with a write buffer (the module's comment).
    #[inline(always)]
    pub(super) fn serve_buffered(&mut self, pa: u64, write: bool, at: u64) -> (u64, RowOutcome) {
        let (bi, row) = self.index.locate(pa, &self.spec.map);
        let ch = self.banks[bi & self.bank_mask].chan as usize;
        if self.wq[ch].len() > WRITE_IDLE_DRAIN {
            self.drain_if_idle(ch, at);
        }
        if !self.released.writes[ch].is_empty() {
            let b = bi & self.bank_mask;
            let col = self.column_from(b, row, at);
            if col >= self.released.due[ch] || self.released.in_bank[b] > 0 {
                self.place_released(ch, b, col);
            }
        }
        if !write {
            return self.serve_located(pa, bi, row, false, at);
        }
        self.wq[ch].push((pa, at));
        if self.wq[ch].len() >= self.wq_cap {
            self.drain(ch, at);
        }
        (0, RowOutcome::Hit)
    }

    /// Drains channel `ch`'s buffer from the time its bus fell idle with more than
    /// [`WRITE_IDLE_DRAIN`] writes waiting, if that time is before `at` and no write of
    /// an earlier drain is still unplaced.
    #[cold]
    #[inline(never)]
    fn drain_if_idle(&mut self, ch: usize, at: u64) {
        if !self.released.writes[ch].is_empty() {
            return;
        }
        let idle = self.c.chans[ch].last_start() + self.spec.timing.tburst;
        let from = idle.max(self.wq[ch][WRITE_IDLE_DRAIN].1);
        if from < at {
            self.drain(ch, from);
        }
    }

    /// Releases every write waiting in channel `ch`'s buffer at time `from`, in arrival
    /// order, emptying the buffer.
    #[cold]
    #[inline(never)]
    fn drain(&mut self, ch: usize, from: u64) {
        if self.wq[ch].is_empty() {
            return;
        }
        self.c.n.drains += 1;
        for i in 0..self.wq[ch].len() {
            let (pa, arrival) = self.wq[ch][i];
            let (bank, row) = self.index.locate(pa, &self.spec.map);
            let bank = bank & self.bank_mask;
            self.released.in_bank[bank] += 1;
            self.released.writes[ch].push(Released {
                pa,
                bank,
                row,
                arrival,
                from: from.max(arrival),
            });
        }
        self.released.due[ch] = 0;
        self.wq[ch].clear();
    }

    /// Places, in release order, the released writes of channel `ch` that a request to
    /// bank `bi` whose column command could come at `col` finds ahead of it: those of
    /// its bank, and those whose own column command could come no later.
    #[cold]
    #[inline(never)]
    fn place_released(&mut self, ch: usize, bi: usize, col: u64) {
        let mut due = u64::MAX;
        let mut i = 0;
        while i < self.released.writes[ch].len() {
            let w = self.released.writes[ch][i];
            let wcol = self.column_from(w.bank, w.row, w.from);
            if w.bank == bi || wcol <= col {
                self.released.writes[ch].remove(i);
                self.released.in_bank[w.bank] -= 1;
                self.place_write(w);
            } else {
                due = due.min(wcol);
                i += 1;
            }
        }
        self.released.due[ch] = due;
    }

    /// When bank `bi` could issue the column command of a request for `row` arriving
    /// at `at`: at once if the row is open, after tRCD from its activate if the bank is
    /// closed, after tRP + tRCD from its precharge if another row is open (tRRD, tFAW,
    /// the bus and refresh left out: an estimate for ordering only).
    #[inline]
    fn column_from(&self, bi: usize, row: u32, at: u64) -> u64 {
        let b = &self.banks[bi];
        let t = &self.c.t;
        if b.open == row {
            at.max(b.col_ok)
        } else if b.open == NONE {
            at.max(b.act_ok) + t.trcd
        } else {
            at.max(b.pre_ok).max(b.col_ok) + t.trp + t.trcd
        }
    }

    /// Places one released write from its drain's start; its latency counts from its
    /// arrival.
    fn place_write(&mut self, w: Released) {
        self.serve_located(w.pa, w.bank, w.row, true, w.from);
        self.c.n.lat[1] += w.from - w.arrival;
    }

    /// Writes waiting in the buffers or released and not yet placed (neither is in
    /// [`Dram::stats`] yet).
    pub fn writes_waiting(&self) -> usize {
        self.wq.iter().map(Vec::len).sum::<usize>() + self.released.writes.iter().map(Vec::len).sum::<usize>()
    }

    /// Drains every buffer from the last arrival on and places every released write
    /// (the end of a stream).
    pub fn drain_all(&mut self) {
        for ch in 0..self.wq.len() {
            if let Some(&(_, last)) = self.wq[ch].last() {
                let idle = self.c.chans[ch].last_start() + self.spec.timing.tburst;
                self.drain(ch, idle.max(last));
            }
            for w in std::mem::take(&mut self.released.writes[ch]) {
                self.released.in_bank[w.bank] -= 1;
                self.place_write(w);
            }
        }
    }
}
