use super::{emit, Args, SplitMix64};
use crate::{AccessKind, MemRef, TraceError, TraceSource};

/// Most pages of a chase (2^27: 512 GiB of 4 KiB pages; the cycle's two arrays take
/// 1 GiB of host memory).
pub const MAX_PAGES: u64 = 1 << 27;

/// A dependent pointer chase: N pages linked in one random cycle (Sattolo's algorithm),
/// one 64-byte line per page; the line index rotates with the page's position in the
/// cycle so consecutive lines fall in different cache sets.
pub struct Chase {
    spec: String,
    base: u64,
    next: Vec<u32>,
    cur: u32,
    page: u64,
    done: u64,
    total: u64,
}

impl super::Generator for Chase {
    const NAME: &'static str = "chase";
    fn from_args(a: &mut Args) -> Result<Chase, TraceError> {
        let pages = a.count("pages", None)?;
        a.positive("pages", pages)?;
        if pages > MAX_PAGES {
            return Err(TraceError::Spec(format!(
                "workload '{}': pages = {pages} is out of range: 1 to {MAX_PAGES} (the cycle takes 8 bytes of host memory a page)",
                a.spec()
            )));
        }
        let page = a.size("page", Some(4096))?;
        let refs = a.refs(pages)?;
        let seed = a.count("seed", Some(0))?;
        if page < 64 || !page.is_power_of_two() {
            return Err(TraceError::Spec(format!(
                "workload '{}': page must be a power of two >= 64",
                a.spec()
            )));
        }
        let base = a.base(0x6000_0000_0000, pages.checked_mul(page))?;
        let n = pages as usize;
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut rng = SplitMix64::new(seed ^ 0xc4a5e);
        // Sattolo: a uniformly random single cycle.
        for i in (1..n).rev() {
            let j = rng.below(i as u64) as usize;
            order.swap(i, j);
        }
        let mut next = vec![0u32; n];
        for i in 0..n {
            next[order[i] as usize] = order[(i + 1) % n];
        }
        Ok(Chase {
            spec: a.spec().to_string(),
            base,
            next,
            // Thread i of n (`threads=n`) chases the same cycle from its i/n point.
            cur: order[a.thread().map_or(0, |(i, k)| (i * pages / k) as usize)],
            page,
            done: 0,
            total: refs,
        })
    }
}

impl TraceSource for Chase {
    fn next_batch(&mut self, batch: &mut crate::Batch, max: usize) -> Result<usize, TraceError> {
        let buf = &mut batch.refs;
        let (base, page, next) = (self.base, self.page, &self.next);
        let lines = page / 64;
        let cur = &mut self.cur;
        Ok(emit(&mut self.done, self.total, buf, max, |_| {
            let p = *cur as u64;
            *cur = next[p as usize];
            MemRef::new(base + p * page + (p % lines) * 64, AccessKind::Load, 8)
        }))
    }
    fn describe(&self) -> String {
        self.spec.clone()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.done, self.total))
    }
}

#[cfg(test)]
mod tests {
    use crate::workload::parse;

    #[test]
    fn one_cycle_visits_every_page_once() {
        let mut c = parse("chase:pages=1000,refs=1000,seed=3").unwrap();
        let mut buf = crate::Batch::default();
        while c.next_batch(&mut buf, 100).unwrap() > 0 {}
        let mut pages: Vec<u64> = buf.refs.iter().map(|r| (r.addr - 0x6000_0000_0000) >> 12).collect();
        pages.sort();
        pages.dedup();
        assert_eq!(pages.len(), 1000);
    }
}
