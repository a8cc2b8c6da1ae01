use super::{emit, Args};
use crate::{AccessKind, MemRef, TraceError, TraceSource};

/// Sequential loads every `stride` bytes over `size` bytes, wrapping around.
pub struct Seq {
    spec: String,
    base: u64,
    slots: u64,
    stride: u64,
    /// Next slot (kept instead of `index % slots`: a division per reference is a large
    /// share of the simulator's per-reference budget).
    slot: u64,
    done: u64,
    total: u64,
}

impl super::Generator for Seq {
    const NAME: &'static str = "seq";
    fn from_args(a: &mut Args) -> Result<Seq, TraceError> {
        let size = a.size("size", None)?;
        let stride = a.size("stride", Some(64))?;
        a.positive("stride", stride)?;
        let slots = size / stride;
        a.positive("size / stride", slots)?;
        let refs = a.refs(slots)?;
        // 8-byte loads at slot × stride, slot < slots.
        let base = a.base(0x4000_0000_0000, Some((slots - 1) * stride + 8))?;
        Ok(Seq {
            spec: a.spec().to_string(),
            base,
            slots,
            stride,
            // Thread i of n (`threads=n`) starts at its i/n slice.
            slot: a.thread().map_or(0, |(i, n)| i * slots / n),
            done: 0,
            total: refs,
        })
    }
}

impl TraceSource for Seq {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let (base, slots, stride) = (self.base, self.slots, self.stride);
        let slot = &mut self.slot;
        Ok(emit(&mut self.done, self.total, buf, max, |_| {
            let r = MemRef::new(base + *slot * stride, AccessKind::Load, 8);
            *slot += 1;
            if *slot == slots {
                *slot = 0;
            }
            r
        }))
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.done, self.total))
    }
}
