//! A VM's stage-2 table over mmulab's page-table memory, with the kernel's write-protect
//! walk, split walker, split cache and break-before-make, all counted.
//!
//! Kernel functions modelled (Linux `arch/arm64/kvm/`):
//! * `kvm_mmu_split_huge_pages` (mmu.c): the chunked driver ([`Stage2::split`]);
//!   `need_split_memcache_topup_or_resched` and `kvm_mmu_split_nr_page_tables` decide the
//!   top-ups (reschedules are not modelled: `need_resched()` is taken as false).
//! * `kvm_pgtable_stage2_split` and `stage2_split_walker` (hyp/pgtable.c): one walk per
//!   chunk with `KVM_PGTABLE_WALK_LEAF` ([`SplitVisitor`]); `stage2_block_get_nr_page_tables`
//!   (513 pages for a level-1 block with 4K, 1 for a level-2 block).
//! * `kvm_pgtable_stage2_create_unlinked` (hyp/pgtable.c): the replacement subtree built
//!   with the map walker and `SKIP_BBM_TLBI | SKIP_CMO` ([`BuildVisitor`]).
//! * `stage2_try_break_pte` / `stage2_make_pte`: the live block becomes a locked invalid
//!   entry, TLBI by IPA and level (a range flush if the old entry were a table), then the
//!   table entry is published.
//! * `kvm_stage2_wp_range` → `stage2_apply_range` → `kvm_pgtable_stage2_wrprotect`: the
//!   write-protect walk (`LEAF`), in chunks of the largest block size
//!   (`kvm_granule_size(KVM_PGTABLE_MIN_BLOCK_LEVEL)`).

use super::{flags, walk_flags, Backing, Granule, Memslot, Variant};
use crate::mem::Memory;
use crate::pt::{Format, Pte};
use crate::translation::Attrs;
use crate::walk::{walk, Action, Visit, Visitor, WalkCounts};
use crate::ModelError;

/// Counts of one kind of walk, per kernel level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkTally {
    /// Entries visited (read by the walker) per kernel level 0..3.
    pub reads: [u64; 4],
    /// Callbacks made.
    pub callbacks: u64,
}

impl WalkTally {
    fn add(&mut self, c: &WalkCounts, g: Granule) {
        for (i, n) in c.reads_per_level.iter().enumerate() {
            if *n > 0 {
                self.reads[g.kernel_level(i)] += n;
            }
        }
        self.callbacks += c.visits;
    }
    /// Entries visited at every level.
    pub fn total(&self) -> u64 {
        self.reads.iter().sum()
    }
}

/// Everything the dirty-logging operations count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitCounts {
    /// The split walker's walks.
    pub split_walk: WalkTally,
    /// The walks that build unlinked subtrees.
    pub build_walk: WalkTally,
    /// The write-protect walks.
    pub wp_walk: WalkTally,
    /// `kvm_pgtable_stage2_split` calls (one per chunk).
    pub split_calls: u64,
    /// `kvm_pgtable_stage2_wrprotect` calls (one per apply chunk).
    pub wp_calls: u64,
    /// Bitmap words `KVM_CLEAR_DIRTY_LOG` handed to `kvm_arch_mmu_enable_log_dirty_pt_masked`.
    pub words: u64,
    /// Blocks split, per kernel level.
    pub blocks_split: [u64; 4],
    /// Pages taken from the split cache.
    pub pages_taken: u64,
    /// Descriptors written by splits: each subtree entry twice (break, make), the live
    /// entry twice (locked invalid, new table).
    pub descriptors_written: u64,
    /// Descriptors written by write-protection.
    pub wp_writes: u64,
    /// TLB invalidations by IPA and level (break-before-make of a block).
    pub tlbi_ipa: u64,
    /// TLB range invalidations (break-before-make of a table entry; the split never does).
    pub tlbi_range: u64,
    /// VMID-wide invalidations (`kvm_flush_remote_tlbs_memslot` after write-protection).
    pub tlbi_vmid: u64,
    /// Split-cache top-ups (each drops and retakes `mmu_lock`).
    pub topups: u64,
    /// Pages allocated by top-ups.
    pub pages_allocated: u64,
    /// Splits refused for want of cache pages (-ENOMEM; the walk stops).
    pub enomem: u64,
}

impl SplitCounts {
    /// Applies `f` to every pair of fields of `self` and `o`.
    pub fn zip(&self, o: &SplitCounts, f: impl Fn(u64, u64) -> u64) -> SplitCounts {
        let t = |a: &WalkTally, b: &WalkTally| WalkTally {
            reads: [
                f(a.reads[0], b.reads[0]),
                f(a.reads[1], b.reads[1]),
                f(a.reads[2], b.reads[2]),
                f(a.reads[3], b.reads[3]),
            ],
            callbacks: f(a.callbacks, b.callbacks),
        };
        let l = |a: &[u64; 4], b: &[u64; 4]| [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2]), f(a[3], b[3])];
        SplitCounts {
            split_walk: t(&self.split_walk, &o.split_walk),
            build_walk: t(&self.build_walk, &o.build_walk),
            wp_walk: t(&self.wp_walk, &o.wp_walk),
            split_calls: f(self.split_calls, o.split_calls),
            wp_calls: f(self.wp_calls, o.wp_calls),
            words: f(self.words, o.words),
            blocks_split: l(&self.blocks_split, &o.blocks_split),
            pages_taken: f(self.pages_taken, o.pages_taken),
            descriptors_written: f(self.descriptors_written, o.descriptors_written),
            wp_writes: f(self.wp_writes, o.wp_writes),
            tlbi_ipa: f(self.tlbi_ipa, o.tlbi_ipa),
            tlbi_range: f(self.tlbi_range, o.tlbi_range),
            tlbi_vmid: f(self.tlbi_vmid, o.tlbi_vmid),
            topups: f(self.topups, o.topups),
            pages_allocated: f(self.pages_allocated, o.pages_allocated),
            enomem: f(self.enomem, o.enomem),
        }
    }

    /// Entries visited by every walk (split, build, write-protect).
    pub fn visits(&self) -> u64 {
        self.split_walk.total() + self.build_walk.total() + self.wp_walk.total()
    }
}

/// The kernel's dirty-logging operations on one stage-2 table held elsewhere (the
/// standalone [`Stage2`] of the `kvm-split` reproduction, or the nested machine's host
/// tables, `vm.dirty_log`): write-protection, the split walker and its cache, all counted.
/// Every operation takes the table's memory and root.
#[derive(Debug)]
pub struct Splitter {
    /// The granule.
    pub granule: Granule,
    /// The split walker's variant.
    pub variant: Variant,
    /// `split_page_chunk_size` (bytes; 0 = eager splitting off).
    pub chunk: u64,
    /// What the operations counted so far.
    pub counts: SplitCounts,
    fmt: Format,
    /// Free pages in the split cache (`kvm_mmu_memory_cache.nobjs`).
    cache: u64,
}

/// One VM's stage-2 table (in its own memory) and its [`Splitter`].
#[derive(Debug)]
pub struct Stage2 {
    /// The operations and what they counted.
    pub splitter: Splitter,
    mem: Memory,
    root: u64,
}

impl Splitter {
    /// The operations for tables of `granule`, with eager splitting in chunks of `chunk`
    /// bytes: 0 (off) or one of the granule's block sizes, else an error naming the key.
    pub fn new(granule: Granule, variant: Variant, chunk: u64) -> Result<Splitter, ModelError> {
        if chunk != 0 && !granule.block_sizes().iter().any(|b| b.bytes() == chunk) {
            let sizes: Vec<String> = granule.block_sizes().iter().map(|b| b.to_string()).collect();
            return Err(ModelError::Config(format!(
                "eager_split_chunk_size (KVM_CAP_ARM_EAGER_SPLIT_CHUNK_SIZE) = {chunk:#x} is not a block size of \
                 the {} granule; use 0 (off) or one of {}",
                granule.name(),
                sizes.join(", ")
            )));
        }
        Ok(Splitter {
            granule,
            variant,
            chunk,
            counts: SplitCounts::default(),
            fmt: super::s2_format(granule),
            cache: 0,
        })
    }

    /// The page-table format the tables use.
    pub fn format(&self) -> Format {
        self.fmt
    }
}

impl Stage2 {
    /// An empty stage-2 table for `granule`, with page-table memory for about
    /// `table_bytes` of tables, and eager splitting in chunks of `chunk` bytes: 0 (off)
    /// or one of the granule's block sizes, else an error naming the key.
    pub fn new(granule: Granule, variant: Variant, chunk: u64, table_bytes: u64) -> Result<Stage2, ModelError> {
        let splitter = Splitter::new(granule, variant, chunk)?;
        let fmt = splitter.fmt;
        let bytes = (table_bytes + (16 << 20)).next_power_of_two();
        let mut mem = Memory::new(bytes)?;
        let root = mem.alloc_table(fmt.levels()[0].entries())?;
        Ok(Stage2 { splitter, mem, root })
    }

    /// The page-table format the tables use.
    pub fn format(&self) -> Format {
        self.splitter.fmt
    }

    /// Maps `slot` as the host backs it: leaves of `backing.leaf(granule)`, writable,
    /// output address = guest-physical address (assumed; the split copies it). Writes
    /// descriptors directly (this is the state faults left, not an operation counted).
    pub fn populate(&mut self, slot: &Memslot, backing: Backing) -> Result<(), ModelError> {
        let size = backing.leaf(self.splitter.granule);
        let level = self
            .splitter
            .fmt
            .leaf_level(size)
            .ok_or_else(|| ModelError::Config(format!("{} has no {size} leaf", self.splitter.fmt.arch_name())))?;
        let ipa_end = 1u64 << self.splitter.fmt.va_bits();
        if slot.end() > ipa_end {
            return Err(ModelError::Config(format!(
                "memslot {} ({:#x}, {:#x} bytes) reaches past the {}-bit IPA of {} tables (ends at {ipa_end:#x})",
                slot.id,
                slot.start(),
                slot.bytes(),
                self.splitter.fmt.va_bits(),
                self.splitter.fmt.arch_name()
            )));
        }
        if slot.start() % size.bytes() != 0 || slot.bytes() % size.bytes() != 0 {
            return Err(ModelError::Config(format!(
                "memslot {} ({:#x}, {:#x} bytes) is not a whole number of aligned {size} {} leaves",
                slot.id,
                slot.start(),
                slot.bytes(),
                backing.name()
            )));
        }
        // Read-write as `stage2_set_prot_attr` maps guest RAM after a write fault: S2AP
        // read and write (`DIRTY` is S2AP[1] in the stage-2 formats).
        let attrs = Attrs::user_rw().with(Attrs::DIRTY);
        let mut gpa = slot.start();
        // The table holding the previous leaf, and the address range it covers.
        let mut last: Option<(u64, u64)> = None;
        let span = self.splitter.fmt.levels()[level].span();
        let parent_span = if level == 0 {
            u64::MAX
        } else {
            self.splitter.fmt.levels()[level - 1].span()
        };
        while gpa < slot.end() {
            let table = match last {
                Some((t, base)) if gpa - base < parent_span => t,
                _ => {
                    let t = self.table_for(gpa, level)?;
                    last = Some((t, gpa & !(parent_span.wrapping_sub(1))));
                    t
                }
            };
            let index = self.splitter.fmt.levels()[level].index(gpa);
            self.mem
                .pt
                .write(table, index, self.splitter.fmt.encode_leaf(level, gpa, attrs));
            gpa += span;
        }
        Ok(())
    }

    /// The table of `level` covering `gpa`, creating the tables above it as needed.
    fn table_for(&mut self, gpa: u64, level: usize) -> Result<u64, ModelError> {
        let mut table = self.root;
        for l in 0..level {
            let index = self.splitter.fmt.levels()[l].index(gpa);
            table = match self.splitter.fmt.decode(l, self.mem.pt.read(table, index)) {
                Pte::Table(t) => t,
                Pte::Invalid => {
                    let t = self.mem.alloc_table(self.splitter.fmt.levels()[l + 1].entries())?;
                    self.mem.pt.write(table, index, self.splitter.fmt.encode_table(l, t));
                    t
                }
                Pte::Leaf { .. } => {
                    return Err(ModelError::Conflict(format!("{gpa:#x} is already mapped at level {l}")))
                }
            };
        }
        Ok(table)
    }

    /// The leaf mapping `gpa`: (kernel level, writable), or `None` if it is unmapped.
    pub fn lookup(&self, gpa: u64) -> Option<(usize, bool)> {
        let mut table = self.root;
        for (l, geom) in self.splitter.fmt.levels().iter().enumerate() {
            match self.splitter.fmt.decode(l, self.mem.pt.read(table, geom.index(gpa))) {
                Pte::Table(t) => table = t,
                Pte::Leaf { attrs, .. } => {
                    return Some((self.splitter.granule.kernel_level(l), attrs.has(Attrs::WRITABLE)))
                }
                Pte::Invalid => return None,
            }
        }
        None
    }

    /// Enables dirty logging on `slot` without manual protect ([`Splitter::enable_dirty_logging`]).
    pub fn enable_dirty_logging(&mut self, slot: &Memslot) -> Result<(), ModelError> {
        self.splitter
            .enable_dirty_logging(&mut self.mem, self.root, slot.start(), slot.end())
    }

    /// One `KVM_CLEAR_DIRTY_LOG` over all of `slot` ([`Splitter::clear_dirty_log`]).
    pub fn clear_dirty_log(&mut self, slot: &Memslot) -> Result<(), ModelError> {
        self.splitter
            .clear_dirty_log(&mut self.mem, self.root, slot.start(), slot.end())
    }

    /// `kvm_mmu_split_huge_pages(start, end)` ([`Splitter::split`]).
    pub fn split(&mut self, start: u64, end: u64) -> Result<(), ModelError> {
        self.splitter.split(&mut self.mem, self.root, start, end)
    }
}

impl Splitter {
    /// Enables dirty logging on the slot `[start, end)` without manual protect
    /// (`kvm_arch_commit_memory_region`): `kvm_mmu_wp_memory_region` (write-protect the
    /// slot, then one VMID-wide flush), then `kvm_mmu_split_memory_region` (split it
    /// whole).
    pub fn enable_dirty_logging(
        &mut self,
        mem: &mut Memory,
        root: u64,
        start: u64,
        end: u64,
    ) -> Result<(), ModelError> {
        self.wp_range(mem, root, start, end)?;
        self.counts.tlbi_vmid += 1;
        self.split(mem, root, start, end)
    }

    /// One `KVM_CLEAR_DIRTY_LOG` over all of the slot `[slot_start, slot_end)` with manual protect and
    /// initially-all-set (`kvm_clear_dirty_log_protect`): per 64-page word of the bitmap,
    /// all bits set, `kvm_arch_mmu_enable_log_dirty_pt_masked` write-protects the word's
    /// range and splits it (`kvm_mmu_split_huge_pages`); one flush at the end. A page is
    /// one granule page (the host's `PAGE_SIZE`).
    pub fn clear_dirty_log(
        &mut self,
        mem: &mut Memory,
        root: u64,
        slot_start: u64,
        slot_end: u64,
    ) -> Result<(), ModelError> {
        let word = 64 * self.granule.page().bytes();
        let mut start = slot_start;
        while start < slot_end {
            let end = (start + word).min(slot_end);
            self.counts.words += 1;
            self.wp_range(mem, root, start, end)?;
            self.split(mem, root, start, end)?;
            start = end;
        }
        self.counts.tlbi_vmid += 1;
        Ok(())
    }

    /// `kvm_stage2_wp_range`: `stage2_apply_range` in chunks of the largest block size,
    /// each a `kvm_pgtable_stage2_wrprotect` walk with `KVM_PGTABLE_WALK_LEAF`.
    fn wp_range(&mut self, mem: &mut Memory, root: u64, start: u64, end: u64) -> Result<(), ModelError> {
        let step = self.granule.block_sizes()[0].bytes();
        let mut addr = start;
        while addr < end {
            let next = range_addr_end(addr, end, step);
            let mut c = WalkCounts::default();
            let mut v = WpVisitor {
                fmt: self.fmt,
                writes: 0,
            };
            walk(
                mem,
                self.fmt,
                root,
                0,
                addr,
                next,
                walk_flags(flags::LEAF, self.fmt),
                &mut v,
                &mut c,
            );
            self.counts.wp_walk.add(&c, self.granule);
            self.counts.wp_writes += v.writes;
            self.counts.wp_calls += 1;
            addr = next;
        }
        Ok(())
    }

    /// `kvm_mmu_split_huge_pages(start, end)`: per chunk, top the cache up when it holds
    /// fewer than `kvm_mmu_split_nr_page_tables(chunk)` pages, then one
    /// `kvm_pgtable_stage2_split` walk; stops at the first error (-ENOMEM).
    pub fn split(&mut self, mem: &mut Memory, root: u64, start: u64, end: u64) -> Result<(), ModelError> {
        if self.chunk == 0 {
            return Ok(());
        }
        let capacity = self.nr_page_tables(self.chunk);
        let mut addr = start;
        while addr < end {
            if self.cache < capacity {
                // __kvm_mmu_topup_memory_cache(cache, capacity, capacity).
                self.counts.topups += 1;
                self.counts.pages_allocated += capacity - self.cache;
                self.cache = capacity;
            }
            let next = range_addr_end(addr, end, self.chunk);
            if !self.split_walk(mem, root, addr, next)? {
                break;
            }
            addr = next;
        }
        Ok(())
    }

    /// `kvm_mmu_split_nr_page_tables(range)`: one page per level-1 block (4K only) and one
    /// per level-2 block the range may hold.
    fn nr_page_tables(&self, range: u64) -> u64 {
        let blocks = self.granule.block_sizes();
        blocks.iter().map(|b| range.div_ceil(b.bytes())).sum()
    }

    /// `kvm_pgtable_stage2_split(addr, size)`: one walk with the variant's flags. False
    /// if a split failed (the driver stops).
    fn split_walk(&mut self, mem: &mut Memory, root: u64, addr: u64, end: u64) -> Result<bool, ModelError> {
        let f = match self.variant {
            Variant::Vanilla => flags::LEAF,
            Variant::SkipLevel3 | Variant::SkipChildren => flags::LEAF | flags::SKIP_LEVEL3,
        };
        let mut c = WalkCounts::default();
        let mut v = SplitVisitor {
            granule: self.granule,
            fmt: self.fmt,
            skip_children: self.variant == Variant::SkipChildren,
            walk_flags: f,
            cache: &mut self.cache,
            counts: &mut self.counts,
            error: None,
        };
        let r = walk(
            mem,
            self.fmt,
            root,
            0,
            addr,
            end,
            walk_flags(f, self.fmt),
            &mut v,
            &mut c,
        );
        if let Some(e) = v.error {
            return Err(e);
        }
        self.counts.split_walk.add(&c, self.granule);
        self.counts.split_calls += 1;
        Ok(r != Action::Stop)
    }
}

/// `__stage2_range_addr_end(addr, end, size)`: the next `size` boundary after `addr`, or
/// `end` if that comes first.
fn range_addr_end(addr: u64, end: u64, size: u64) -> u64 {
    let boundary = (addr & !(size - 1)).saturating_add(size);
    if boundary - 1 < end - 1 {
        boundary
    } else {
        end
    }
}

/// `stage2_attr_walker` for write-protection: a valid writable leaf loses write
/// permission (one descriptor write); anything else is left alone.
struct WpVisitor {
    fmt: Format,
    writes: u64,
}

impl Visitor for WpVisitor {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if let Pte::Leaf { pa, attrs } = v.pte {
            if attrs.has(Attrs::WRITABLE) {
                let ro = attrs.without(Attrs::WRITABLE | Attrs::DIRTY);
                mem.pt.write(v.table, v.index, self.fmt.encode_leaf(v.level, pa, ro));
                self.writes += 1;
            }
        }
        Action::Continue
    }
}

/// `stage2_split_walker`.
struct SplitVisitor<'a> {
    granule: Granule,
    fmt: Format,
    /// The RFC's (b): after a split that built the whole subtree, skip its children.
    skip_children: bool,
    walk_flags: u32,
    cache: &'a mut u64,
    counts: &'a mut SplitCounts,
    error: Option<ModelError>,
}

impl Visitor for SplitVisitor<'_> {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        let last = self.fmt.levels().len() - 1;
        // No huge pages at the last level; only valid blocks are split.
        if v.level == last {
            return Action::Continue;
        }
        let Pte::Leaf { pa, attrs } = v.pte else {
            return Action::Continue;
        };
        // stage2_block_get_nr_page_tables: level 1 → PTRS_PER_PTE + 1, level 2 → 1.
        let level = self.granule.kernel_level(v.level);
        let ptrs_per_pte = self.fmt.levels()[last].entries() as u64;
        let mut nr_pages = if level == 1 { ptrs_per_pte + 1 } else { 1 };
        // Enough cache for the whole tree: build down to pages; else one level.
        let force_pte = *self.cache >= nr_pages;
        if !force_pte {
            nr_pages = 1;
        }
        if *self.cache < nr_pages {
            self.counts.enomem += 1;
            return Action::Stop;
        }
        let new = match self.create_unlinked(mem, v, pa, attrs, force_pte) {
            Ok(t) => t,
            Err(e) => {
                self.error = Some(e);
                return Action::Stop;
            }
        };
        // stage2_try_break_pte: lock the entry (invalid), invalidate the old translation —
        // by IPA and level for a block (__kvm_tlb_flush_vmid_ipa), for a table a range
        // (kvm_tlb_flush_vmid_range, VMID-wide without FEAT_TLBIRANGE; a split never
        // breaks a table) — unless SKIP_BBM_TLBI.
        mem.pt.write(v.table, v.index, 0);
        self.counts.descriptors_written += 1;
        if self.walk_flags & flags::SKIP_BBM_TLBI == 0 {
            self.counts.tlbi_ipa += 1;
        }
        // stage2_make_pte: publish the new table (store-release).
        mem.pt.write(v.table, v.index, self.fmt.encode_table(v.level, new));
        self.counts.descriptors_written += 1;
        self.counts.blocks_split[level] += 1;
        if self.skip_children && force_pte {
            Action::SkipChildren
        } else {
            Action::Continue
        }
    }
}

impl SplitVisitor<'_> {
    /// `kvm_pgtable_stage2_create_unlinked`: a table for the level below `v` from the
    /// cache, filled by the map walker (`LEAF | SKIP_BBM_TLBI | SKIP_CMO`) with leaves of
    /// the next level, or with pages through new last-level tables if `force_pte`.
    fn create_unlinked(
        &mut self,
        mem: &mut Memory,
        v: &Visit,
        pa: u64,
        attrs: Attrs,
        force_pte: bool,
    ) -> Result<u64, ModelError> {
        let child = v.level + 1;
        let last = self.fmt.levels().len() - 1;
        let table = self.take_page(mem, child)?;
        let mut b = BuildVisitor {
            fmt: self.fmt,
            target: if force_pte { last } else { child },
            va: v.va,
            pa,
            attrs,
            pages: 0,
            writes: 0,
            error: None,
        };
        let mut c = WalkCounts::default();
        let f = flags::LEAF | flags::SKIP_BBM_TLBI | flags::SKIP_CMO;
        walk(
            mem,
            self.fmt,
            table,
            child,
            v.va,
            v.va + v.span,
            walk_flags(f, self.fmt),
            &mut b,
            &mut c,
        );
        if let Some(e) = b.error {
            return Err(e);
        }
        *self.cache -= b.pages;
        self.counts.pages_taken += b.pages;
        self.counts.descriptors_written += b.writes;
        self.counts.build_walk.add(&c, self.granule);
        Ok(table)
    }

    /// One page from the split cache, as a table of model level `level`.
    fn take_page(&mut self, mem: &mut Memory, level: usize) -> Result<u64, ModelError> {
        *self.cache -= 1;
        self.counts.pages_taken += 1;
        mem.alloc_table(self.fmt.levels()[level].entries())
    }
}

/// The map walker building an unlinked subtree: an invalid entry above the target level
/// gets a new table (one cache page) and the walker descends into it; one at the target
/// level gets its leaf. Each entry is written twice (break, then make), as the kernel's
/// map walker does even for an invalid entry.
struct BuildVisitor {
    fmt: Format,
    target: usize,
    va: u64,
    pa: u64,
    attrs: Attrs,
    pages: u64,
    writes: u64,
    error: Option<ModelError>,
}

impl Visitor for BuildVisitor {
    fn visit(&mut self, v: &Visit, mem: &mut Memory) -> Action {
        if v.level == self.target {
            let pa = self.pa + (v.va - self.va);
            mem.pt
                .write(v.table, v.index, self.fmt.encode_leaf(v.level, pa, self.attrs));
        } else {
            match mem.alloc_table(self.fmt.levels()[v.level + 1].entries()) {
                Ok(t) => mem.pt.write(v.table, v.index, self.fmt.encode_table(v.level, t)),
                Err(e) => {
                    self.error = Some(e);
                    return Action::Stop;
                }
            }
            self.pages += 1;
        }
        // stage2_map_walker_try_leaf / stage2_map_walk_leaf: stage2_try_break_pte stores
        // the locked entry (no TLBI: SKIP_BBM_TLBI), stage2_make_pte the new one.
        self.writes += 2;
        Action::Continue
    }
}
