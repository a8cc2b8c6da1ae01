use super::{emit, Args};
use crate::{AccessKind, MemRef, TraceError, TraceSource};

/// The tlb_test data pattern: independent loads of `base + i*4096 + i*offset`, `i`
/// wrapping at `pages`.
pub struct Stride {
    spec: String,
    base: u64,
    pages: u64,
    offset: u64,
    /// Next page index (a counter, not `index % pages`: no division per reference).
    page: u64,
    done: u64,
    total: u64,
}

impl super::Generator for Stride {
    const NAME: &'static str = "stride";
    fn from_args(a: &mut Args) -> Result<Stride, TraceError> {
        let pages = a.count("pages", None)?;
        a.positive("pages", pages)?;
        let offset = a.size("offset", Some(16))?;
        let refs = a.refs(pages)?;
        // Loads of 4 bytes at i × (4096 + offset), i < pages.
        let extent = (pages - 1)
            .checked_mul(offset.saturating_add(4096))
            .and_then(|e| e.checked_add(4));
        let base = a.base(0x5000_0000_0000, extent)?;
        Ok(Stride {
            spec: a.spec().to_string(),
            base,
            pages,
            offset,
            page: 0,
            done: 0,
            total: refs,
        })
    }
}

impl TraceSource for Stride {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let (base, pages, offset) = (self.base, self.pages, self.offset);
        let page = &mut self.page;
        Ok(emit(&mut self.done, self.total, buf, max, |_| {
            let i = *page;
            *page = if i + 1 == pages { 0 } else { i + 1 };
            MemRef::new(base + i * 4096 + i * offset, AccessKind::Load, 4)
        }))
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.done, self.total))
    }
}
