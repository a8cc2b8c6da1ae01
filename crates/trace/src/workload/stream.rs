use super::{emit, Args};
use crate::{AccessKind, MemRef, TraceError, TraceSource};

/// The kernels of McCalpin's STREAM benchmark over arrays `a`, `b`, `c` of 8-byte
/// elements: per element, the loads then the store of
/// copy `c = a`, scale `b = s·c`, add `c = a + b`, triad `a = b + s·c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Copy,
    Scale,
    Add,
    Triad,
}

impl Kernel {
    /// (arrays loaded, array stored), arrays numbered a = 0, b = 1, c = 2, in the order
    /// stream.c's loops read them.
    fn arrays(self) -> (&'static [u64], u64) {
        match self {
            Kernel::Copy => (&[0], 2),
            Kernel::Scale => (&[2], 1),
            Kernel::Add => (&[0, 1], 2),
            Kernel::Triad => (&[1, 2], 0),
        }
    }
}

/// STREAM: one kernel swept over three arrays of `size` bytes each, laid out one after
/// another from `base` as stream.c's static arrays are (no padding: `OFFSET` 0, its
/// default). References per element: the loads, then the store (8 bytes each).
pub struct Stream {
    spec: String,
    base: u64,
    size: u64,
    loads: &'static [u64],
    store: u64,
    elems: u64,
    /// Next element, and the reference within it.
    elem: u64,
    step: u64,
    done: u64,
    total: u64,
}

impl super::Generator for Stream {
    const NAME: &'static str = "stream";
    fn from_args(a: &mut Args) -> Result<Stream, TraceError> {
        let size = a.size("size", None)?;
        let elems = size / 8;
        a.positive("size / 8", elems)?;
        let kernel = match a.text("kernel", "triad").as_str() {
            "copy" => Kernel::Copy,
            "scale" => Kernel::Scale,
            "add" => Kernel::Add,
            "triad" => Kernel::Triad,
            k => {
                return Err(TraceError::Spec(format!(
                    "workload '{}': kernel '{k}' is not one of copy, scale, add, triad",
                    a.spec()
                )))
            }
        };
        let (loads, store) = kernel.arrays();
        let per = loads.len() as u64 + 1;
        // Thread i of n (`threads=n`) sweeps its 1/n slice of the elements, as
        // stream.c's OpenMP `parallel for` divides the loop statically.
        let (first, mine) = match a.thread() {
            Some((i, n)) => (i * elems / n, (i + 1) * elems / n - i * elems / n),
            None => (0, elems),
        };
        let refs = a.refs(mine.max(1).saturating_mul(per))?;
        let base = a.base(0x4000_0000_0000, elems.checked_mul(24))?;
        Ok(Stream {
            spec: a.spec().to_string(),
            base,
            size: elems * 8,
            loads,
            store,
            elems,
            elem: first,
            step: 0,
            done: 0,
            total: refs,
        })
    }
}

impl TraceSource for Stream {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let (base, size, loads, store, elems) = (self.base, self.size, self.loads, self.store, self.elems);
        let (elem, step) = (&mut self.elem, &mut self.step);
        let per = loads.len() as u64 + 1;
        Ok(emit(&mut self.done, self.total, buf, max, |_| {
            let (array, kind) = match loads.get(*step as usize) {
                Some(&l) => (l, AccessKind::Load),
                None => (store, AccessKind::Store),
            };
            let r = MemRef::new(base + array * size + *elem * 8, kind, 8);
            *step += 1;
            if *step == per {
                *step = 0;
                *elem += 1;
                if *elem == elems {
                    *elem = 0;
                }
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
