use crate::{Machine, SimError, Stats};
use mmulab_trace::{MemRef, TraceSource};

/// References read per batch.
pub const BATCH: usize = 8192;

/// A progress callback: (references so far, source progress (done, total) if known).
pub type Progress<'a> = &'a mut dyn FnMut(u64, Option<(u64, u64)>);

/// Feeds `src` through `m` to its end. On a trace or model error the machine keeps the
/// statistics of every reference simulated before it, so the caller can still report
/// them ([`Stats::collect`]).
pub fn run(m: &mut Machine, src: &mut dyn TraceSource, progress: Option<Progress<'_>>) -> Result<Stats, SimError> {
    let mut buf: Vec<MemRef> = Vec::with_capacity(BATCH);
    let mut progress = progress;
    let mut batches = 0u64;
    loop {
        buf.clear();
        let n = src.next_batch(&mut buf, BATCH)?;
        if n == 0 {
            break;
        }
        for r in &buf {
            m.access(r)?;
        }
        batches += 1;
        if batches % 64 == 0 {
            if let Some(p) = progress.as_mut() {
                p(m.counters.references, src.progress());
            }
        }
    }
    Ok(Stats::collect(m))
}
