use crate::addr::FRAME_SHIFT;
use std::collections::HashMap;

/// Bits of a `by_frame` entry holding the host address of a table's descriptors; the
/// bits above hold log2 of their number. Host addresses of heap memory are below 2^56
/// on every 64-bit platform Rust supports (x86-64 and AArch64 user space: 2^47–2^52),
/// checked when a table is created.
const ADDR_BITS: u32 = 56;
const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;

/// The contents of page-table frames. A table is a physically addressed block of frames
/// holding `entries` (a power of two) 64-bit descriptors; walks read them by physical
/// address, so the store maps a table's first frame straight to its descriptors in host
/// memory: one load from the frame index, no hashing and no second lookup on the walk
/// path.
///
/// The frame index is written by hand rather than as a `Vec<Box<[u64]>>` beside a slot
/// index because the walk's dependent loads are the simulator's critical path (a
/// frame-index entry, then the descriptor; not a slot, then a box, then the
/// descriptor). It is zeroed memory, so the operating system backs only the pages of it
/// that tables use.
#[derive(Debug)]
pub struct PtMem {
    /// Per frame: 0, or for a table's first frame the host address of its descriptors
    /// (bits 0..56) and log2 of their number (bits 56..64). Each non-zero entry owns
    /// its descriptors: a boxed slice turned into a raw pointer by `create` and freed by
    /// `destroy` (or `drop`), which clear the entry first.
    by_frame: Vec<u64>,
    /// Order (log2 of frames) of each live table, by first frame.
    orders: HashMap<u64, u32>,
    frames: u64,
}

/// The descriptors an entry of `by_frame` refers to, as (address, number).
#[inline(always)]
fn unpack(v: u64) -> (*mut u64, usize) {
    ((v & ADDR_MASK) as usize as *mut u64, 1usize << (v >> ADDR_BITS))
}

/// A walk or an update reached a physical address where no table lives: a bug of the
/// model (descriptors only ever point at tables `create` made).
#[cold]
#[inline(never)]
fn no_table(table_pa: u64) -> ! {
    panic!("no page table at {table_pa:#x}")
}

impl PtMem {
    /// A store for a physical memory of `frames` frames.
    pub fn new(frames: u64) -> PtMem {
        PtMem {
            by_frame: vec![0; frames as usize],
            orders: HashMap::new(),
            frames: 0,
        }
    }

    /// Registers a zeroed table of `entries` descriptors (a power of two) at frame
    /// `pfn`, where no table lives; returns its physical address.
    pub fn create(&mut self, pfn: u64, entries: usize, order: u32) -> u64 {
        assert!(
            entries.is_power_of_two(),
            "a page table of {entries} descriptors (not a power of two)"
        );
        assert!(
            self.by_frame[pfn as usize] == 0,
            "a page table already lives at frame {pfn:#x}"
        );
        let descs: Box<[u64]> = vec![0; entries].into_boxed_slice();
        let addr = Box::into_raw(descs) as *mut u64 as usize as u64;
        assert!(addr & !ADDR_MASK == 0, "host address {addr:#x} beyond {ADDR_BITS} bits");
        self.by_frame[pfn as usize] = addr | (entries.trailing_zeros() as u64) << ADDR_BITS;
        self.orders.insert(pfn, order);
        self.frames += 1 << order;
        pfn << FRAME_SHIFT
    }

    /// Unregisters the table at `pa`; returns its (frame, order) to free.
    pub fn destroy(&mut self, pa: u64) -> Option<(u64, u32)> {
        let pfn = pa >> FRAME_SHIFT;
        let v = std::mem::take(self.by_frame.get_mut(pfn as usize)?);
        if v == 0 {
            return None;
        }
        let (ptr, len) = unpack(v);
        // SAFETY: `v` was made by `create` from `Box::into_raw` of a boxed slice of
        // exactly `len` descriptors, and the entry (just cleared) was its only owner.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
        let order = self.orders.remove(&pfn).expect("every live table has an order");
        self.frames -= 1 << order;
        Some((pfn, order))
    }

    /// The packed `by_frame` entry of the table at `table_pa` (its frame must hold one).
    #[inline(always)]
    fn entry(&self, table_pa: u64) -> u64 {
        let v = self.by_frame[(table_pa >> FRAME_SHIFT) as usize];
        if v == 0 {
            no_table(table_pa);
        }
        v
    }

    /// The descriptors of the table at `table_pa` (a walk reads one or two of them and
    /// keeps where the leaf table lives for prefetch hints).
    #[inline]
    pub fn table(&self, table_pa: u64) -> &[u64] {
        let (ptr, len) = unpack(self.entry(table_pa));
        // SAFETY: a non-zero entry owns `len` live descriptors at `ptr` (see
        // `by_frame`); they are freed only through `&mut self`, so not while the
        // returned slice (borrowing `self`) lives, and written only through `&mut self`.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }

    /// Reads descriptor `index` of the table at `table_pa`.
    #[inline]
    pub fn read(&self, table_pa: u64, index: usize) -> u64 {
        self.table(table_pa)[index]
    }

    /// The host address of descriptor 0 of the table at `table_pa`, for prefetch hints
    /// ([`crate::hint::prefetch`]) only: it is valid until the table is destroyed.
    #[inline]
    pub fn host_addr(&self, table_pa: u64) -> Option<usize> {
        let v = *self.by_frame.get((table_pa >> FRAME_SHIFT) as usize)?;
        (v != 0).then(|| unpack(v).0 as usize)
    }

    /// Writes descriptor `index` of the table at `table_pa`.
    #[inline]
    pub fn write(&mut self, table_pa: u64, index: usize, value: u64) {
        let (ptr, len) = unpack(self.entry(table_pa));
        assert!(index < len, "descriptor {index} of a table of {len}");
        // SAFETY: a non-zero entry owns `len` live descriptors at `ptr`, index < len,
        // and `&mut self` excludes every slice `table` lent.
        unsafe { *ptr.add(index) = value }
    }

    /// True if a table lives at `pa`.
    pub fn is_table(&self, pa: u64) -> bool {
        self.by_frame.get((pa >> FRAME_SHIFT) as usize).is_some_and(|&v| v != 0)
    }

    /// Frames held by live tables.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Number of live tables.
    pub fn live_tables(&self) -> usize {
        self.orders.len()
    }
}

impl Drop for PtMem {
    fn drop(&mut self) {
        for &pfn in self.orders.keys() {
            let (ptr, len) = unpack(self.by_frame[pfn as usize]);
            // SAFETY: as in `destroy`: each live table's entry owns its boxed slice.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_live_from_create_to_destroy_and_frames_are_reused() {
        let mut m = PtMem::new(64);
        let a = m.create(3, 512, 0);
        let b = m.create(8, 2048, 2);
        assert_eq!((m.live_tables(), m.frames()), (2, 5));
        assert!(m.is_table(a) && m.is_table(b) && !m.is_table(4 << FRAME_SHIFT));
        assert_eq!((m.table(a).len(), m.table(b).len()), (512, 2048));
        m.write(b, 2047, 0xabc);
        m.write(a, 0, 7);
        assert_eq!((m.read(b, 2047), m.read(a, 0), m.read(a, 1)), (0xabc, 7, 0));
        assert_eq!(m.host_addr(a), Some(m.table(a).as_ptr() as usize));
        assert_eq!(m.destroy(b), Some((8, 2)));
        assert_eq!(m.destroy(b), None, "destroyed once");
        assert!(!m.is_table(b) && m.host_addr(b).is_none());
        // The frame takes a new, zeroed table.
        let c = m.create(8, 256, 0);
        assert_eq!((c, m.table(c).len(), m.read(c, 255)), (b, 256, 0));
        assert_eq!((m.live_tables(), m.frames()), (2, 2));
        // Dropping the store frees the rest (checked by Miri and leak checkers).
    }

    #[test]
    #[should_panic(expected = "no page table at 0x5000")]
    fn a_walk_to_a_frame_without_a_table_is_a_clear_panic() {
        let m = PtMem::new(16);
        m.table(5 << FRAME_SHIFT);
    }
}
