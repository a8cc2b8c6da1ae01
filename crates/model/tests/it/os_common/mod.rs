//! A small driver that plays the machine's part for OS-policy tests: a software
//! "walk" (lookup), faults to the policy, the hardware's dirty/accessed update on
//! stores, exits and background ticks — and the checks every policy must pass.
#![allow(dead_code)]

use mmulab_base::AccessKind;
use mmulab_model::addr::{Asid, PageSize, FRAME_SHIFT};
use mmulab_model::mem::Memory;
use mmulab_model::os::remap::leaves;
use mmulab_model::os::OsPolicy;
use mmulab_model::os::{FaultCtx, Os, TickCtx};
use mmulab_model::pt::Format;
use mmulab_model::space::AddressSpace;
use mmulab_model::translation::Attrs;
use mmulab_model::walk::{lookup, set_leaf_attrs, Mapping};

pub struct Sys {
    pub fmt: Format,
    pub mem: Memory,
    pub os: Os,
    pub spaces: Vec<Option<AddressSpace>>,
    pub pinned: u64,
    pub now: u64,
    /// Simulated nanoseconds passed to ticks (`None`: background work on references).
    pub now_ns: Option<u64>,
    /// The 4 KiB pages stored to, (asid, va >> 12): what the THP shrinker is told is not
    /// zero-filled ([`Sys::drop_caches`]).
    pub written: std::collections::BTreeSet<(Asid, u64)>,
}

impl Sys {
    pub fn new(fmt: Format, bytes: u64, os: Os) -> Sys {
        Sys {
            fmt,
            mem: Memory::new(bytes).unwrap(),
            os,
            spaces: Vec::new(),
            pinned: 0,
            now: 0,
            now_ns: None,
            written: Default::default(),
        }
    }

    pub fn space(&mut self, asid: Asid) -> &mut AddressSpace {
        let i = asid as usize;
        if self.spaces.len() <= i {
            self.spaces.resize(i + 1, None);
        }
        if self.spaces[i].is_none() {
            self.spaces[i] = Some(AddressSpace::new(asid, self.fmt, &mut self.mem).unwrap());
        }
        self.spaces[i].as_mut().unwrap()
    }

    /// One reference, as the machine handles it (without TLBs).
    pub fn access(&mut self, asid: Asid, va: u64, kind: AccessKind) {
        self.now += 1;
        for _ in 0..3 {
            let (fmt, root) = {
                let s = self.space(asid);
                (s.fmt, s.root)
            };
            match lookup(&mut self.mem, fmt, root, va) {
                Some(m) if kind == AccessKind::Store && !m.attrs.has(Attrs::WRITABLE) => {}
                Some(m) => {
                    let want = if kind == AccessKind::Store {
                        Attrs::DIRTY | Attrs::ACCESSED
                    } else {
                        Attrs::ACCESSED
                    };
                    if !m.attrs.has(want) {
                        set_leaf_attrs(&mut self.mem, fmt, root, va, m.attrs.with(want));
                    }
                    if kind == AccessKind::Store {
                        self.written.insert((asid, va >> 12));
                    }
                    return;
                }
                None => {}
            }
            let mut sd = Vec::new();
            let space = self.spaces[asid as usize].as_mut().unwrap();
            let name = self.os.name();
            if let Err(e) = self.os.handle_fault(FaultCtx {
                mem: &mut self.mem,
                space,
                va,
                kind,
                shootdowns: &mut sd,
            }) {
                panic!("{name} on {:?}: fault at {va:#x}: {e}", self.fmt);
            }
        }
        panic!("{} left {va:#x} unusable for {kind:?}", self.os.name());
    }

    pub fn tick(&mut self) {
        let mut sd = Vec::new();
        self.os
            .tick(TickCtx {
                mem: &mut self.mem,
                spaces: &mut self.spaces,
                now: self.now,
                now_ns: self.now_ns,
                shootdowns: &mut sd,
            })
            .unwrap();
    }

    /// The THP shrinker as `echo 2 > /proc/sys/vm/drop_caches` runs it, told exactly
    /// which pages were stored to. Returns the frames freed.
    pub fn drop_caches(&mut self) -> u64 {
        let base = self.fmt.base_page().bytes();
        let written = &self.written;
        let contents = |asid: Asid, va: u64| {
            Some(
                !(va..va + base)
                    .step_by(4096)
                    .any(|p| written.contains(&(asid, p >> 12))),
            )
        };
        let mut sd = Vec::new();
        self.os.deferred_split_scan(&mut self.mem, &contents, u64::MAX, &mut sd)
    }

    pub fn exit(&mut self, asid: Asid) {
        self.written.retain(|w| w.0 != asid);
        if let Some(s) = self.spaces.get_mut(asid as usize).and_then(Option::take) {
            self.os.exit(&mut self.mem, &s);
        }
    }

    /// munmap of `[start, end)` in `asid` (if the space exists); returns the shootdowns.
    pub fn unmap(
        &mut self,
        asid: Asid,
        start: u64,
        end: u64,
    ) -> Result<Vec<(Asid, u64, u64)>, mmulab_model::ModelError> {
        let mut sd = Vec::new();
        if let Some(Some(space)) = self.spaces.get_mut(asid as usize) {
            self.os.unmap(&mut self.mem, space, start, end, &mut sd)?;
            let gone: Vec<_> = self
                .written
                .range((asid, start >> 12)..(asid, end.div_ceil(4096)))
                .copied()
                .collect();
            for w in gone {
                self.written.remove(&w);
            }
        }
        Ok(sd)
    }

    pub fn leaves(&mut self, asid: Asid) -> Vec<Mapping> {
        let s = self.spaces[asid as usize].clone().unwrap();
        let top = s.fmt.levels()[0];
        leaves(
            &mut self.mem,
            s.fmt,
            s.root,
            0,
            top.span().saturating_mul(top.entries() as u64),
        )
    }

    pub fn count(&mut self, size: PageSize) -> usize {
        let mut n = 0;
        for a in 0..self.spaces.len() {
            if self.spaces[a].is_some() {
                n += self.leaves(a as Asid).iter().filter(|m| m.size == size).count();
            }
        }
        n
    }

    /// The contract every policy must keep (see crates/model/src/os/mod.rs).
    pub fn check(&mut self) {
        let frames = self.mem.buddy.frames();
        let mut owner = vec![0u8; frames as usize];
        let mut resident = 0;
        let mut zero_mapped = 0;
        for a in 0..self.spaces.len() {
            if self.spaces[a].is_none() {
                continue;
            }
            let maps = self.leaves(a as Asid);
            for w in maps.windows(2) {
                assert!(
                    w[0].va + w[0].size.bytes() <= w[1].va,
                    "{}: overlapping mappings {:?} {:?}",
                    self.os.name(),
                    w[0],
                    w[1]
                );
            }
            for m in &maps {
                let b = m.size.bytes();
                assert_eq!(m.va % b, 0, "{}: {m:?} not aligned in VA", self.os.name());
                assert_eq!(m.pa % b, 0, "{}: {m:?} not aligned in PA", self.os.name());
                if m.size > PageSize::K4 && m.attrs.has(Attrs::WRITABLE) && self.os.name() == "reservation" {
                    assert!(
                        m.attrs.has(Attrs::DIRTY),
                        "reservation: writable superpage {m:?} is not dirty"
                    );
                }
                resident += b;
                if self.mem.zero.contains_pa(m.pa) {
                    // The zero pages are shared by every entry that maps them.
                    zero_mapped += b;
                    continue;
                }
                for f in (m.pa >> FRAME_SHIFT)..((m.pa + b) >> FRAME_SHIFT) {
                    assert!(
                        !self.mem.buddy.is_free(f),
                        "{}: frame {f} is mapped and free",
                        self.os.name()
                    );
                    owner[f as usize] += 1;
                    assert_eq!(owner[f as usize], 1, "{}: frame {f} owned twice", self.os.name());
                }
            }
            // Contiguous-bit entries that do not form a valid group would be UNPREDICTABLE.
            let contig = maps
                .iter()
                .filter(|m| m.attrs.has(Attrs::CONTIG) && m.size == self.fmt.leaf_size(m.level))
                .count();
            assert_eq!(contig, 0, "{}: broken contiguous group", self.os.name());
        }
        assert_eq!(
            resident,
            self.os.stats().resident_bytes,
            "{}: resident_bytes counter",
            self.os.name()
        );
        let by_size: u64 = self.os.stats().resident_by_size.iter().sum();
        assert_eq!(by_size, resident, "{}: resident_by_size counter", self.os.name());
        // Movable pinned frames ([memory.age] movable share) stay allocated, unmapped,
        // and are counted in `pinned` (compaction moves them, never duplicates them).
        let external: Vec<u64> = self.mem.rmap.external_frames().collect();
        for f in external {
            assert!(
                !self.mem.buddy.is_free(f),
                "{}: movable pinned frame {f} is free",
                self.os.name()
            );
            owner[f as usize] += 1;
            assert_eq!(
                owner[f as usize],
                1,
                "{}: movable pinned frame {f} also mapped",
                self.os.name()
            );
        }
        // A page in swap is not mapped, and belongs to a live address space.
        let slots: Vec<_> = self.mem.swap.slots.iter().copied().collect();
        for (asid, va) in slots {
            let s = self.spaces.get(asid as usize).and_then(|s| s.clone());
            let s = s.unwrap_or_else(|| panic!("{}: swap slot of dead asid {asid}", self.os.name()));
            assert!(
                lookup(&mut self.mem, s.fmt, s.root, va).is_none(),
                "{}: {va:#x} is both in swap and mapped",
                self.os.name()
            );
        }
        let mut reserved = 0;
        if let Os::Reservation(r) = &self.os {
            for f in r.reserved_unpopulated_frames() {
                assert!(!self.mem.buddy.is_free(f), "reserved frame {f} is free");
                owner[f as usize] += 1;
                assert_eq!(owner[f as usize], 1, "reserved frame {f} also mapped");
                reserved += 1;
            }
        }
        // Conservation: free + mapped + reserved + page tables + pinned = all frames.
        let zero = self.mem.zero.frame_bytes() >> FRAME_SHIFT;
        let used = ((resident - zero_mapped) >> FRAME_SHIFT) + zero + reserved + self.mem.pt.frames() + self.pinned;
        assert_eq!(
            self.mem.buddy.free_frames() + used,
            frames,
            "{}: frames leaked or double-counted",
            self.os.name()
        );
    }
}

/// The project's SplitMix64, for test streams.
pub use mmulab_base::SplitMix64 as Rng;

/// The `thp` policy with `cfg` and khugepaged off (tests that look at faults, unmaps or
/// compaction alone).
pub fn thp_without_khugepaged(cfg: mmulab_model::os::ThpConfig) -> Os {
    Os::Thp(mmulab_model::os::Thp::new(
        cfg,
        mmulab_model::os::KhugepagedConfig {
            enabled: false,
            ..Default::default()
        },
    ))
}
