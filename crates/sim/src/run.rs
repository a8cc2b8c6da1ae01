use crate::{Machine, SimError, Stats};
use mmulab_trace::{MemRef, TraceSource};

/// References read per batch.
pub const BATCH: usize = 8192;

/// How far ahead the run loop prefetches walks.
const AHEAD: usize = 8;

/// A progress callback: (references so far, source progress (done, total) if known).
pub type Progress<'a> = &'a mut dyn FnMut(u64, Option<(u64, u64)>);

/// Feeds `src` through `m` to its end. On a trace or model error the machine keeps the
/// statistics of every reference simulated before it, so the caller can still report
/// them ([`Stats::collect`]).
pub fn run(m: &mut Machine, src: &mut dyn TraceSource, progress: Option<Progress<'_>>) -> Result<Stats, SimError> {
    let mut buf: Vec<MemRef> = Vec::with_capacity(BATCH);
    let mut progress = progress;
    let mut batches = 0u64;
    let mut walk_heavy = false;
    let mut walks_before = m.walks();
    loop {
        buf.clear();
        let n = src.next_batch(&mut buf, BATCH)?;
        if n == 0 {
            break;
        }
        // VMAs the trace carries (docs/policies.md), taken as soon as they are known.
        if !m.bg.trace_vmas_seen && batches % 64 == 0 {
            m.take_trace_vmas(src);
        }
        // When the previous batch walked often (more than one reference in 16), prefetch
        // the page-table descriptors of the reference AHEAD positions ahead, so host cache
        // misses on big simulated page tables overlap. Results are unaffected.
        if m.plain_for(buf.len()) {
            feed::<true>(m, &buf, walk_heavy)?;
        } else {
            feed::<false>(m, &buf, walk_heavy)?;
        }
        let walks = m.walks();
        walk_heavy = (walks - walks_before) * 16 > n as u64;
        walks_before = walks;
        batches += 1;
        if batches % 64 == 0 {
            if let Some(p) = progress.as_mut() {
                p(m.references(), src.progress());
            }
        }
    }
    m.check_markers_closed()?;
    Ok(Stats::collect(m))
}

/// Feeds one batch to `m`, with [`Machine::access_plain`] if `PLAIN` (the caller checked
/// [`Machine::plain_for`] the batch) else [`Machine::access`], prefetching ahead if
/// `prefetch`.
#[inline(always)]
fn feed<const PLAIN: bool>(m: &mut Machine, buf: &[MemRef], prefetch: bool) -> Result<(), SimError> {
    let access = |m: &mut Machine, r: &MemRef| if PLAIN { m.access_plain(r) } else { m.access(r) };
    let mut i = 0;
    if prefetch {
        // Pairs (buf[i + AHEAD - 1], buf[i + AHEAD]) beside buf[i]; the last AHEAD
        // references of the batch have nothing ahead to prefetch.
        let ahead = buf.get(AHEAD - 1..).unwrap_or(&[]).windows(2);
        for (r, w) in buf.iter().zip(ahead) {
            // Only a reference that changes page can start a walk worth prefetching.
            let (prev, next) = (&w[0], &w[1]);
            if next.addr >> 12 != prev.addr >> 12 || next.asid != prev.asid {
                m.prefetch(next);
            }
            access(m, r)?;
            i += 1;
        }
    }
    for r in &buf[i..] {
        access(m, r)?;
    }
    Ok(())
}
