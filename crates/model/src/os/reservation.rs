//! FreeBSD reservation-based superpages (Navarro et al. 2002; `sys/vm/vm_reserv.c`;
//! the pmap promotion rules of amd64/arm64/ARMv6).
//!
//! * At the first fault in an aligned range of the reservation size that starts inside
//!   the VMA (see below) and has no pages mapped yet, a physically contiguous, aligned extent of
//!   that size is reserved; only the faulting base page is mapped. A population map
//!   (one bit per base page) records which pages are in use.
//! * When the population map becomes full, promotion is tried (pmap_promote_pde): the
//!   first page, then the others from the last backwards, are each write-protected if
//!   writable but clean and compared with the first; the first mismatch stops the scan,
//!   so only the pages examined up to it lose write permission. All dirty and writable
//!   → one writable superpage; all clean and read-only → one read-only superpage; a mix
//!   fails ("attrs_differ") and the examined clean pages stay read-only, so each later
//!   write to one soft-faults, dirties its page and retries the promotion.
//! * A store to a read-only superpage demotes it (into read-only base pages), then the
//!   write fault on the base page makes it writable and dirty.
//! * Partially populated reservations sit on a least-recently-changed queue; when a
//!   base-page allocation fails (memory pressure), the oldest are broken until it
//!   succeeds (`vm_page_alloc_domain_after` → `vm_reserv_reclaim_inactive`): their
//!   unpopulated frames go back to the buddy allocator and their populated pages stay
//!   mapped as base pages. (`low_watermark` > 0 also breaks them at a tick while free
//!   memory is low: a mmulab extension, off by default.)
//! * A reservation is made at the first fault in an aligned range that starts inside the
//!   VMA, even if it extends past the VMA's end: `vm_reserv_alloc_page` speculates for
//!   anonymous objects, which may grow. (Not when its tail would overlap another VMA.)
//!
//! Sizes: the reservation size is a configured page size with a leaf in the format
//! (x86-64 and arm64 4K: 2 MiB; ARMv7 short descriptors: a 1 MiB section of 256 ×
//! 4 KiB). With `mid` set (arm64 4K granule: 64 KiB), every fully populated aligned
//! group of that size inside a reservation is promoted first, by the same rules, to a
//! contiguous-bit group (ARMv7: a 64 KiB large page), and the 2 MiB promotion then
//! gathers groups and pages — the two-level scheme of FreeBSD's arm64 pmap (L3C
//! promotion). A store to a read-only group demotes that group only.

use super::remap::{clear_leaves, drop_table, leaves, range_state};
use super::OsEvent;
use super::{free_leaf, free_run, fresh_attrs, order_of, FaultCtx, OsStats, TickCtx};
use crate::addr::{Asid, PageSize, FRAME_SHIFT, FRAME_SIZE};
use crate::error::ModelError;
use crate::mem::numa::At;
use crate::mem::Memory;
use crate::pt::Format;
use crate::space::AddressSpace;
use crate::translation::Attrs;
use crate::walk::{lookup, map_leaf, set_leaf_attrs, Mapping};
use std::collections::{BTreeMap, HashMap};

/// Settings of the reservation policy: the `[os.reservation]` config section itself
/// (docs/config.md; every key optional, defaulting to [`ReservationConfig::default`]).
/// The sizes' defaults depend on the page-table format: [`ReservationConfig::sizes`]
/// resolves and checks them.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReservationConfig {
    /// Reservation (and superpage) size; `None` (the default): 2 MiB, or 1 MiB on a
    /// format without 2 MiB leaves (ARMv7 short descriptors).
    pub size: Option<PageSize>,
    /// An intermediate superpage size promoted inside a reservation (arm64 4K granule:
    /// 64 KiB contiguous-bit groups inside 2 MiB; ARMv7: 64 KiB large pages inside
    /// 1 MiB), or none.
    pub mid_size: MidSize,
    /// Break partial reservations at a tick while free memory is below this share. 0
    /// (the default) is FreeBSD's behaviour: it breaks partial reservations only when an
    /// allocation fails (`vm_page_alloc_domain_after` → `vm_reserv_reclaim_inactive`);
    /// a positive share is a mmulab extension (a watermark-driven pressure model).
    pub low_watermark: f64,
    /// Cycles to scan one base-page descriptor when trying a promotion (not a config
    /// key).
    #[serde(skip)]
    pub scan_cycles_per_pte: u64,
}

impl Default for ReservationConfig {
    fn default() -> Self {
        ReservationConfig {
            size: None,
            mid_size: MidSize::Auto,
            low_watermark: 0.0,
            scan_cycles_per_pte: 2,
        }
    }
}

/// `os.reservation.mid_size`: a page size, `"none"`, or (key absent) the format's
/// default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum MidSize {
    /// 64 KiB inside a 2 MiB reservation on arm64 with the 4 KiB granule (the
    /// contiguous-bit group), none elsewhere.
    #[default]
    Auto,
    /// No intermediate size (`"none"`).
    Off,
    /// This size.
    Size(PageSize),
}

impl TryFrom<String> for MidSize {
    type Error = String;
    fn try_from(s: String) -> Result<MidSize, String> {
        match s.as_str() {
            "none" => Ok(MidSize::Off),
            _ => PageSize::parse(&s)
                .map(MidSize::Size)
                .map_err(|e| format!("{e}, or \"none\"")),
        }
    }
}

impl ReservationConfig {
    /// The reservation size and the intermediate size, if any, on `format`; an error
    /// names the key when a size does not fit the format.
    pub fn sizes(&self, format: Format) -> Result<(PageSize, Option<PageSize>), String> {
        super::granule::check_freebsd(format)?;
        let size = self.size.unwrap_or(if format.leaf_level(PageSize::M2).is_some() {
            PageSize::M2
        } else {
            PageSize::M1
        });
        if size == PageSize::K4 || format.leaf_level(size).is_none() {
            return Err(format!(
                "os.reservation.size = \"{size}\": {} page tables have no {size} leaf above 4K",
                format.arch_name()
            ));
        }
        let mid = match self.mid_size {
            MidSize::Auto if format == Format::Armv8_4K && size == PageSize::M2 => Some(PageSize::K64),
            MidSize::Auto | MidSize::Off => None,
            MidSize::Size(m) => {
                if m <= PageSize::K4 || m >= size || format.leaf_level(m).is_none() {
                    return Err(format!(
                        "os.reservation.mid_size = \"{m}\": must be a size {} maps, above 4K and below the reservation size {size}",
                        format.arch_name()
                    ));
                }
                Some(m)
            }
        };
        Ok((size, mid))
    }
}

#[derive(Clone, Debug)]
struct Resv {
    pfn: u64,
    pop: Vec<u64>,
    /// Pages unmapped by munmap: they left the object, so they never populate again.
    dead: Vec<u64>,
    npop: u64,
    stamp: u64,
}

/// The reservation policy.
#[derive(Clone, Debug)]
pub struct Reservation {
    cfg: ReservationConfig,
    /// Reservation size (resolved from `cfg` for the format).
    size: PageSize,
    /// Intermediate size (resolved from `cfg` for the format).
    mid: Option<PageSize>,
    resv: HashMap<(Asid, u64), Resv>,
    /// Partially populated reservations by last change (oldest first).
    lru: BTreeMap<u64, (Asid, u64)>,
    clock: u64,
    /// Counters.
    pub stats: OsStats,
}

impl Reservation {
    /// A policy with `cfg` on page tables of `format` (an error if a size in `cfg` does
    /// not fit the format, see [`ReservationConfig::sizes`]).
    pub fn new(cfg: ReservationConfig, format: Format) -> Result<Reservation, String> {
        let (size, mid) = cfg.sizes(format)?;
        Ok(Reservation {
            cfg,
            size,
            mid,
            resv: HashMap::new(),
            lru: BTreeMap::new(),
            clock: 0,
            stats: OsStats::default(),
        })
    }

    fn pages(&self) -> u64 {
        self.size.bytes() / FRAME_SIZE
    }

    /// After page `idx` of the reservation at `key` changed: promote its intermediate
    /// group if that is fully populated, then the whole reservation if it is.
    fn promote_around(
        &mut self,
        mem: &mut Memory,
        space: &AddressSpace,
        key: u64,
        idx: u64,
        shootdowns: &mut Vec<super::Shootdown>,
    ) {
        let r = &self.resv[&(space.asid, key)];
        if let Some(mid) = self.mid {
            let n = mid.bytes() / FRAME_SIZE;
            let g = idx & !(n - 1);
            if (g..g + n).all(|i| r.pop[(i / 64) as usize] & (1 << (i % 64)) != 0) {
                self.try_promote(mem, space, key, key + (g << FRAME_SHIFT), mid, shootdowns);
            }
        }
        if self.resv[&(space.asid, key)].npop == self.pages() {
            self.try_promote(mem, space, key, key, self.size, shootdowns);
        }
    }

    /// Allocates 2^order frames. A base-page allocation that fails is memory pressure:
    /// the least recently changed partial reservations are broken until it succeeds
    /// (vm_reserv_reclaim_inactive). A new reservation does not break others: breaking
    /// a partial reservation frees scattered frames, not a whole extent.
    fn alloc(&mut self, mem: &mut Memory, order: u32, at: Option<At>) -> Option<u64> {
        loop {
            if let Some(p) = mem.alloc_pages(order, at) {
                return Some(p);
            }
            if order >= order_of(self.size) {
                return None;
            }
            let (&stamp, &k) = self.lru.iter().next()?;
            self.lru.remove(&stamp);
            self.break_resv(mem, k);
        }
    }

    fn break_resv(&mut self, mem: &mut Memory, k: (Asid, u64)) {
        if let Some(r) = self.resv.remove(&k) {
            self.lru.remove(&r.stamp);
            free_unpopulated(mem, &r, self.pages());
            self.stats.event(OsEvent::ReservationsBroken);
        }
    }

    /// Tries to promote `[start, start + size)` of the reservation at `key`, fully
    /// populated, to one leaf (or contiguous group) of `size` (see the module doc).
    fn try_promote(
        &mut self,
        mem: &mut Memory,
        space: &AddressSpace,
        key: u64,
        start: u64,
        size: PageSize,
        shootdowns: &mut Vec<super::Shootdown>,
    ) {
        let (fmt, root, asid) = (space.fmt, space.root, space.asid);
        let end = start + size.bytes();
        let maps = leaves(mem, fmt, root, start, end);
        if maps.len() == 1 && maps[0].size == size {
            return; // already promoted
        }
        let pages = size.bytes() / FRAME_SIZE;
        self.stats.os_cycles += pages * self.cfg.scan_cycles_per_pte;
        let base = self.resv[&(asid, key)].pfn << FRAME_SHIFT;
        let covered: u64 = maps.iter().map(|m| m.size.bytes()).sum();
        if covered != size.bytes() || maps.iter().any(|m| m.size >= size || m.pa != base + (m.va - key)) {
            self.stats.event(OsEvent::PromotionFailedNotContiguous);
            return;
        }
        // pmap_promote_pde (amd64) / pmap_promote_l2 (arm64): the first page is
        // write-protected if it is writable but clean; then the others are examined from
        // the last one backwards, each write-protected if writable but clean *before* it
        // is compared with the first, and the first mismatch aborts the promotion. Pages
        // examined before the mismatch stay write-protected (so a later write faults and
        // retries the promotion); pages below it are left as they were.
        let mask = Attrs::WRITABLE | Attrs::DIRTY | Attrs::USER;
        let mut changed = false;
        let mut protect = |mem: &mut Memory, m: &Mapping| -> Attrs {
            if m.attrs.has(Attrs::WRITABLE) && !m.attrs.has(Attrs::DIRTY) {
                for off in (0..m.size.bytes()).step_by(FRAME_SIZE as usize) {
                    set_leaf_attrs(mem, fmt, root, m.va + off, m.attrs.without(Attrs::WRITABLE));
                }
                changed = true;
                return m.attrs.without(Attrs::WRITABLE);
            }
            m.attrs
        };
        let first = protect(mem, &maps[0]).0 & mask;
        let mismatch = maps[1..].iter().rev().any(|m| protect(mem, m).0 & mask != first);
        if changed {
            shootdowns.push((asid, start, end));
        }
        if mismatch {
            self.stats.event(OsEvent::PromotionFailedAttrsDiffer);
            return;
        }
        let maps = leaves(mem, fmt, root, start, end);
        clear_leaves(mem, fmt, root, start, end);
        drop_table(mem, fmt, root, start, size);
        let attrs = Attrs(first).with(Attrs::ACCESSED);
        if map_leaf(mem, fmt, root, start, base + (start - key), size, attrs).is_err() {
            // Cannot happen after drop_table; fall back to the old leaves.
            for m in &maps {
                let _ = map_leaf(mem, fmt, root, m.va, m.pa, m.size, m.attrs);
            }
            self.stats.event(OsEvent::PromotionFailedRemap);
            return;
        }
        for m in &maps {
            self.stats.record_unmap(m.size);
        }
        self.stats.record_map(size);
        self.stats.promotions[size.index()] += 1;
        if !attrs.has(Attrs::WRITABLE) {
            self.stats.event(OsEvent::PromotionsReadOnly);
        }
        shootdowns.push((asid, start, end));
    }

    /// Splits the superpage (or group) at `va` into base pages with its attributes.
    fn demote(&mut self, mem: &mut Memory, space: &AddressSpace, va: u64, pa: u64, size: PageSize, attrs: Attrs) {
        let (fmt, root) = (space.fmt, space.root);
        clear_leaves(mem, fmt, root, va, va + size.bytes());
        self.stats.record_unmap(size);
        let pages = size.bytes() / FRAME_SIZE;
        for i in 0..pages {
            let off = i << FRAME_SHIFT;
            map_leaf(
                mem,
                fmt,
                root,
                va + off,
                pa + off,
                PageSize::K4,
                attrs.without(Attrs::CONTIG),
            )
            .expect("demotion remaps into an emptied range");
            self.stats.record_leaf(PageSize::K4);
        }
        self.stats.os_cycles += pages * self.cfg.scan_cycles_per_pte;
        self.stats.demotions[size.index()] += 1;
    }

    /// Drops every reservation of `asid` (at exit): unpopulated frames go back to the
    /// buddy allocator; populated ones are freed with their leaves.
    pub fn drop_space(&mut self, mem: &mut Memory, asid: Asid) {
        let keys: Vec<_> = self.resv.keys().filter(|k| k.0 == asid).copied().collect();
        for k in keys {
            let r = self.resv.remove(&k).expect("listed");
            self.lru.remove(&r.stamp);
            free_unpopulated(mem, &r, self.pages());
        }
    }

    /// The reservation covering `va` in `asid`: (first frame, pages populated).
    pub fn reservation_at(&self, asid: Asid, va: u64) -> Option<(u64, u64)> {
        self.resv
            .get(&(asid, va & !self.size.offset_mask()))
            .map(|r| (r.pfn, r.npop))
    }

    /// Reservations alive now, and how many of them are fully populated.
    pub fn live(&self) -> (usize, usize) {
        (
            self.resv.len(),
            self.resv.values().filter(|r| r.npop == self.pages()).count(),
        )
    }

    /// Frames reserved but not populated (owned by reservations).
    pub fn reserved_unpopulated_frames(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for r in self.resv.values() {
            for i in 0..self.pages() {
                if r.pop[(i / 64) as usize] & (1 << (i % 64)) == 0 {
                    out.push(r.pfn + i);
                }
            }
        }
        out
    }
}

fn free_unpopulated(mem: &mut Memory, r: &Resv, pages: u64) {
    let mut i = 0;
    while i < pages {
        if r.pop[(i / 64) as usize] & (1 << (i % 64)) != 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < pages && r.pop[(i / 64) as usize] & (1 << (i % 64)) == 0 {
            i += 1;
        }
        free_run(mem, r.pfn + start, i - start);
    }
}

impl super::OsPolicy for Reservation {
    fn name(&self) -> &'static str {
        "reservation"
    }

    super::policy_fields!(stats);

    fn exit_space(&mut self, mem: &mut Memory, asid: Asid) {
        self.drop_space(mem, asid);
    }

    /// Handles a fault.
    fn fault(&mut self, ctx: FaultCtx<'_>) -> Result<(), ModelError> {
        self.stats.faults += 1;
        let FaultCtx {
            mem,
            space,
            va,
            kind,
            shootdowns,
        } = ctx;
        let (fmt, root, asid) = (space.fmt, space.root, space.asid);
        let size = self.size;
        let key = va & !size.offset_mask();
        if let Some(m) = lookup(mem, fmt, root, va) {
            // A protection fault: a store to a read-only page.
            if m.size > PageSize::K4 {
                self.demote(mem, space, m.va, m.pa, m.size, m.attrs);
                shootdowns.push((asid, m.va, m.va + m.size.bytes()));
            }
            let page = va & !PageSize::K4.offset_mask();
            let m = lookup(mem, fmt, root, page).expect("base page mapped");
            set_leaf_attrs(
                mem,
                fmt,
                root,
                page,
                m.attrs.with(Attrs::WRITABLE | Attrs::DIRTY | Attrs::ACCESSED),
            );
            shootdowns.push((asid, page, page + FRAME_SIZE));
            self.stats.event(OsEvent::SoftWriteFaults);
            if self.resv.contains_key(&(asid, key)) {
                self.promote_around(mem, space, key, (page - key) >> FRAME_SHIFT, shootdowns);
            }
            return Ok(());
        }
        let page = va & !PageSize::K4.offset_mask();
        let idx = (page - key) >> FRAME_SHIFT;
        if !self.resv.contains_key(&(asid, key)) {
            // vm_reserv_alloc_page: no reservation that would start before the object
            // (`pindex < VM_RESERV_INDEX`), but an anonymous object (OBJ_ANON; all of
            // mmulab's memory is anonymous) gets one even where it extends past the
            // object's end, which may grow.
            // mmulab keeps one reservation to one mapping: it refuses one whose tail
            // would overlap another VMA (FreeBSD, whose reservations belong to objects,
            // would make one whose tail is never populated: the same superpages).
            let vma = space.vma(va);
            let end = key + size.bytes();
            let inside = key >= vma.start
                && !space
                    .vmas
                    .iter()
                    .any(|v| v.start != vma.start && v.start < end && key < v.end);
            let busy = inside && range_state(mem, fmt, root, key, size).small > 0;
            if !inside {
                self.stats.event(OsEvent::NoReservationVmaEdge);
            } else if busy {
                self.stats.event(OsEvent::NoReservationRangeBusy);
            } else if let Some(pfn) = self.alloc(mem, order_of(size), Some(At::anon(&vma, key))) {
                self.clock += 1;
                let words = (self.pages() as usize).div_ceil(64);
                self.resv.insert(
                    (asid, key),
                    Resv {
                        pfn,
                        pop: vec![0; words],
                        dead: vec![0; words],
                        npop: 0,
                        stamp: self.clock,
                    },
                );
                self.lru.insert(self.clock, (asid, key));
                self.stats.event(OsEvent::ReservationsCreated);
            } else {
                self.stats.event(OsEvent::ReservationFailedNoContiguousMemory);
            }
        }
        let attrs = fresh_attrs(kind);
        let pfn = match self.resv.get(&(asid, key)) {
            Some(r) if r.dead[(idx / 64) as usize] & (1 << (idx % 64)) == 0 => r.pfn + idx,
            hole => {
                if hole.is_some() {
                    self.stats.event(OsEvent::FaultInUnmappedHole);
                }
                let at = super::numa_at(mem, space, page);
                let pfn = self
                    .alloc(mem, 0, at)
                    .ok_or_else(|| mem.buddy.oom(&format!("a 4K page at va {va:#x}")))?;
                map_leaf(mem, fmt, root, page, pfn << FRAME_SHIFT, PageSize::K4, attrs)?;
                self.stats.record_map(PageSize::K4);
                return Ok(());
            }
        };
        map_leaf(mem, fmt, root, page, pfn << FRAME_SHIFT, PageSize::K4, attrs)?;
        self.stats.record_map(PageSize::K4);
        let full = self.pages();
        let r = self.resv.get_mut(&(asid, key)).expect("reservation");
        r.pop[(idx / 64) as usize] |= 1 << (idx % 64);
        r.npop += 1;
        self.lru.remove(&r.stamp);
        if r.npop == full {
            self.stats.event(OsEvent::ReservationsFull);
        } else {
            self.clock += 1;
            r.stamp = self.clock;
            self.lru.insert(self.clock, (asid, key));
        }
        self.promote_around(mem, space, key, idx, shootdowns);
        Ok(())
    }

    /// Breaking reservations is background work.
    fn has_tick(&self) -> bool {
        true
    }

    /// Background work: break the oldest partial reservations while free memory is
    /// below the low watermark.
    fn tick(&mut self, ctx: TickCtx<'_>) -> Result<(), ModelError> {
        let low = (ctx.mem.buddy.frames() as f64 * self.cfg.low_watermark) as u64;
        while ctx.mem.buddy.free_frames() < low {
            let Some((&stamp, &k)) = self.lru.iter().next() else {
                break;
            };
            self.lru.remove(&stamp);
            self.break_resv(ctx.mem, k);
            self.stats.event(OsEvent::ReservationsBrokenWatermark);
        }
        Ok(())
    }

    /// munmap of `[start, end)` of `asid`, after its leaves were split at the ends and
    /// cleared (`maps`: what they mapped). FreeBSD: `vm_map_delete` →
    /// `vm_object_page_remove` frees each page, and `vm_reserv_free_page` →
    /// `vm_reserv_depopulate` returns a reserved page to its reservation (popmap bit
    /// cleared, popcnt decremented, the reservation goes (back) on the partial queue;
    /// popcnt 0 frees the whole extent to the buddy allocator). Frames that are not a
    /// reservation's go back to the buddy allocator. The unmapped pages are dead for the
    /// reservation: they left the object (a later mapping there gets a new object), so
    /// a later fault in the hole takes a 4 KiB page from the buddy allocator, and the
    /// reservation never becomes fully populated again — it never promotes over the
    /// hole, and stays partial until it is broken, emptied or its space exits.
    fn unmap_frames(&mut self, mem: &mut Memory, asid: Asid, start: u64, end: u64, maps: &[Mapping]) {
        let size = self.size;
        for m in maps {
            let key = m.va & !size.offset_mask();
            let Some(r) = self
                .resv
                .get_mut(&(asid, key))
                .filter(|r| m.size <= size && m.pa == (r.pfn << FRAME_SHIFT) + (m.va - key))
            else {
                free_leaf(mem, m);
                continue;
            };
            let first = (m.va - key) >> FRAME_SHIFT;
            for idx in first..first + m.size.bytes() / FRAME_SIZE {
                let (w, b) = ((idx / 64) as usize, 1u64 << (idx % 64));
                if r.pop[w] & b != 0 {
                    r.pop[w] &= !b;
                    r.npop -= 1;
                }
            }
        }
        let mut keys: Vec<u64> = self
            .resv
            .keys()
            .filter(|k| k.0 == asid && k.1 < end && k.1 + size.bytes() > start)
            .map(|k| k.1)
            .collect();
        keys.sort_unstable();
        for key in keys {
            let r = self.resv.get_mut(&(asid, key)).expect("listed");
            let (lo, hi) = (
                (start.max(key) - key) >> FRAME_SHIFT,
                (end.min(key + size.bytes()) - key) >> FRAME_SHIFT,
            );
            for idx in lo..hi {
                r.dead[(idx / 64) as usize] |= 1 << (idx % 64);
            }
            self.lru.remove(&r.stamp);
            if r.npop == 0 {
                let r = self.resv.remove(&(asid, key)).expect("listed");
                free_run(mem, r.pfn, self.pages());
                self.stats.event(OsEvent::MunmapReservationsFreed);
            } else {
                self.clock += 1;
                r.stamp = self.clock;
                self.lru.insert(self.clock, (asid, key));
                self.stats.event(OsEvent::MunmapReservationsShrunk);
            }
        }
    }
}
