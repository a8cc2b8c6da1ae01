use crate::addr::FRAME_SHIFT;

const NONE: u32 = u32::MAX;

/// The contents of page-table frames. A table is a physically addressed block of frames
/// holding `entries` 64-bit descriptors; walks read them by physical address, so the
/// store maps a table's first frame to its contents with a direct index (no hashing on
/// the walk path).
#[derive(Debug)]
pub struct PtMem {
    tables: Vec<Box<[u64]>>,
    orders: Vec<u32>,
    by_frame: Vec<u32>,
    free_slots: Vec<u32>,
    live: usize,
    frames: u64,
}

impl PtMem {
    /// A store for a physical memory of `frames` frames.
    pub fn new(frames: u64) -> PtMem {
        PtMem { tables: Vec::new(), orders: Vec::new(), by_frame: vec![NONE; frames as usize], free_slots: Vec::new(), live: 0, frames: 0 }
    }

    /// Registers a zeroed table of `entries` descriptors at frame `pfn`; returns its
    /// physical address.
    pub fn create(&mut self, pfn: u64, entries: usize, order: u32) -> u64 {
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.tables[s as usize] = vec![0; entries].into_boxed_slice();
                self.orders[s as usize] = order;
                s
            }
            None => {
                self.tables.push(vec![0; entries].into_boxed_slice());
                self.orders.push(order);
                (self.tables.len() - 1) as u32
            }
        };
        self.by_frame[pfn as usize] = slot;
        self.live += 1;
        self.frames += 1 << order;
        pfn << FRAME_SHIFT
    }

    /// Unregisters the table at `pa`; returns its (frame, order) to free.
    pub fn destroy(&mut self, pa: u64) -> Option<(u64, u32)> {
        let pfn = pa >> FRAME_SHIFT;
        let slot = *self.by_frame.get(pfn as usize)?;
        if slot == NONE {
            return None;
        }
        self.by_frame[pfn as usize] = NONE;
        self.tables[slot as usize] = Box::new([]);
        self.free_slots.push(slot);
        self.live -= 1;
        self.frames -= 1 << self.orders[slot as usize];
        Some((pfn, self.orders[slot as usize]))
    }

    #[inline]
    fn slot(&self, table_pa: u64) -> usize {
        let s = self.by_frame[(table_pa >> FRAME_SHIFT) as usize];
        debug_assert!(s != NONE, "no page table at {table_pa:#x}");
        s as usize
    }

    /// The descriptors of the table at `table_pa` (a walk reads one or two of them and
    /// keeps where the leaf table lives for prefetch hints).
    #[inline]
    pub fn table(&self, table_pa: u64) -> &[u64] {
        &self.tables[self.slot(table_pa)]
    }

    /// Reads descriptor `index` of the table at `table_pa`.
    #[inline]
    pub fn read(&self, table_pa: u64, index: usize) -> u64 {
        self.tables[self.slot(table_pa)][index]
    }

    /// The host address of descriptor 0 of the table at `table_pa`, for prefetch hints
    /// ([`crate::hint::prefetch`]) only: it is valid until the table is destroyed.
    #[inline]
    pub fn host_addr(&self, table_pa: u64) -> Option<usize> {
        let s = *self.by_frame.get((table_pa >> FRAME_SHIFT) as usize)?;
        (s != NONE).then(|| self.tables[s as usize].as_ptr() as usize)
    }

    /// Writes descriptor `index` of the table at `table_pa`.
    #[inline]
    pub fn write(&mut self, table_pa: u64, index: usize, value: u64) {
        let s = self.slot(table_pa);
        self.tables[s][index] = value;
    }

    /// True if a table lives at `pa`.
    pub fn is_table(&self, pa: u64) -> bool {
        self.by_frame.get((pa >> FRAME_SHIFT) as usize).is_some_and(|&s| s != NONE)
    }

    /// Frames held by live tables.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Number of live tables.
    pub fn live_tables(&self) -> usize {
        self.live
    }
}
