//! The GPU model: the V3D PTE writer derived by hand, the VA capacity as exact
//! arithmetic, the MMU's large-page TLB entries and scratch page, the driver's backing
//! memory, a Mali GPU on the same machinery, and bad input.

use mmulab_model::gpu::device::Table;
use mmulab_model::gpu::driver::{Backing, DriverSpec, Gpu, GpuKind};
use mmulab_model::gpu::mmu::{Mmu, MmuSpec};
use mmulab_model::gpu::pte::{write_ptes, Segment, BIGPAGE, SUPERPAGE, VALID, WRITEABLE};
use mmulab_model::gpu::va::{capacity, AlignPolicy};
use mmulab_model::gpu::GpuError;
use mmulab_model::mem::Memory;

const WV: u32 = WRITEABLE | VALID;

fn seg(pfn: u64, pages: u64) -> Segment {
    Segment {
        pa: pfn << 12,
        len: pages << 12,
    }
}

fn table() -> Vec<u32> {
    vec![0; 1 << 20]
}

#[test]
fn pte_writer_exactly_aligned_segment() {
    // One segment of 256 + 16 + 2 pages at PFN 512, written at GPU page 256.
    // Page 256 and PFN 512 are both multiples of 256 and 274 pages >= 1 MiB remain:
    // a super page (256 PTEs, PFN 512..767). Then page 512, PFN 768: both multiples of
    // 16 (not of 256... 512 is, 768 is too, but only 18 pages = 72 KiB remain, < 1 MiB)
    // and 18 pages >= 64 KiB: a big page (16 PTEs). Then page 528, PFN 784, 2 pages
    // left: two 4 KiB PTEs. Pages by size [4K, 64K, 1M] = [2, 1, 1]; PTEs 256+16+2.
    let mut pt = table();
    let w = write_ptes(&mut pt, 256, &[seg(512, 274)], true).unwrap();
    assert_eq!(w.pages, [2, 1, 1]);
    assert_eq!(w.ptes, 274);
    assert_eq!(pt[256], SUPERPAGE | WV | 512);
    assert_eq!(
        pt[511],
        SUPERPAGE | WV | 767,
        "every PTE of the super page carries the bit"
    );
    assert_eq!(pt[512], BIGPAGE | WV | 768);
    assert_eq!(pt[527], BIGPAGE | WV | 783);
    assert_eq!(pt[528], WV | 784);
    assert_eq!(pt[529], WV | 785);
    assert_eq!(pt[530], 0);
    // The pre-series writer: 274 4 KiB PTEs, same PFNs, no size bits.
    let mut pt = table();
    let w = write_ptes(&mut pt, 256, &[seg(512, 274)], false).unwrap();
    assert_eq!(w.pages, [274, 0, 0]);
    assert_eq!(pt[256], WV | 512);
}

#[test]
fn pte_writer_unaligned_segment() {
    // 272 pages (1 MiB + 64 KiB) at PFN 16 written at page 1: page - PFN = -15, so page
    // and PFN are never both multiples of 16: 272 4 KiB PTEs although the segment is
    // contiguous and large (VA and PA must agree modulo the page size).
    let mut pt = table();
    let w = write_ptes(&mut pt, 1, &[seg(16, 272)], true).unwrap();
    assert_eq!(w.pages, [272, 0, 0]);
    assert_eq!(pt[1], WV | 16);
    assert_eq!(pt[272], WV | 287);
}

#[test]
fn pte_writer_partly_contiguous_scatterlist() {
    // Two segments at GPU page 256: 24 pages at PFN 0x1000, then 24 pages at PFN 0x2008.
    // Segment 1: page 256, PFN 4096 both 16-aligned, 24 pages >= 16: a big page; then
    //   page 272, PFN 4112 aligned but only 8 pages left: 8 4 KiB PTEs.
    // Segment 2 starts at page 280 (280 % 16 = 8), PFN 8200 (8200 % 16 = 8): 8 4 KiB
    //   PTEs up to page 288, PFN 8208, both 16-aligned with 16 pages left: a big page.
    // The alignment test is per segment: the second segment gets a big page of its own.
    // Pages [4K, 64K, 1M] = [16, 2, 0]; 48 PTEs.
    let mut pt = table();
    let w = write_ptes(&mut pt, 256, &[seg(0x1000, 24), seg(0x2008, 24)], true).unwrap();
    assert_eq!(w.pages, [16, 2, 0]);
    assert_eq!(w.ptes, 48);
    assert_eq!(pt[256], BIGPAGE | WV | 0x1000);
    assert_eq!(pt[272], WV | 0x1010);
    assert_eq!(pt[280], WV | 0x2008);
    assert_eq!(pt[288], BIGPAGE | WV | 0x2010);
    assert_eq!(pt[303], BIGPAGE | WV | 0x201f);
}

#[test]
fn capacity_is_exact_arithmetic() {
    // drm_mm manages pages [1, 2^20) (page 0 reserved). 4 KiB BO = 1 page, 400 KiB =
    // 100 pages.
    // 128K (32-page alignment): 1-page BOs at 32, 64, ..., the last k with 32k <= 2^20 - 1:
    //   k = 1..32767 -> 32,767. 100-page BOs at 32 + 128k (100 rounded up to 128),
    //   32 + 128k + 100 <= 2^20 -> k <= 8190 -> 8,191.
    // 4K: 2^20 - 1 = 1,048,575 pages -> 1,048,575 BOs of 1 page; floor(1,048,575 / 100)
    //   = 10,485 of 100 pages.
    // size-class (gemfs): 4 KiB BOs 4 KiB aligned -> 1,048,575; 400 KiB >= 64 KiB -> 16-page
    //   alignment, stride 112 from page 16: 16 + 112k + 100 <= 2^20 -> k <= 9361 -> 9,362.
    let cases = [
        (AlignPolicy::K128, 4096, 32_767),
        (AlignPolicy::K128, 400 << 10, 8_191),
        (AlignPolicy::K4, 4096, 1_048_575),
        (AlignPolicy::K4, 400 << 10, 10_485),
        (AlignPolicy::SizeClass, 4096, 1_048_575),
        (AlignPolicy::SizeClass, 400 << 10, 9_362),
    ];
    for (policy, bytes, want) in cases {
        assert_eq!(capacity(policy, bytes), want, "{} x {bytes}", policy.name());
    }
}

fn gpu(mem: &mut Memory, kernel_page: u64, backing: Backing, large: bool) -> Gpu {
    let spec = DriverSpec {
        kind: GpuKind::V3d,
        kernel_page,
        align: if large {
            AlignPolicy::SizeClass
        } else {
            AlignPolicy::K128
        },
        backing,
        large,
    };
    Gpu::new(spec, MmuSpec::v3d(), mem).unwrap()
}

#[test]
fn gemfs_bo_gets_super_pages_and_one_tlb_entry_covers_them() {
    // Fresh 64 MiB (the page table and the scratch page sit outside it). A 4 MiB
    // gemfs BO gets two 2 MiB THPs (order 9, 2 MiB aligned), is
    // 1 MiB aligned in VA (size class): 4 super pages.
    let mut mem = Memory::new(64 << 20).unwrap();
    let mut g = gpu(&mut mem, 4096, Backing::Gemfs, true);
    g.create(&mut mem, 1, 4 << 20).unwrap();
    assert_eq!(g.bo(1).unwrap().written.pages, [0, 0, 4]);
    assert_eq!(g.coverage(), [0, 0, 4 << 20, 0]);
    assert_eq!(g.counts().thp, 2);
    // The create flushed once. 256 accesses 4 KiB apart over the first MiB: one TLB
    // miss (the super page's entry covers all of them), one PTE line fetched.
    assert_eq!(g.mmu.counts().flushes, 1);
    for i in 0..256 {
        g.access(&mut mem, 1, i * 4096, false).unwrap();
    }
    let c = g.mmu.counts();
    assert_eq!((c.accesses, c.tlb_misses, c.pte_fetches, c.fills[2]), (256, 1, 1, 1));
    // The same BO with 4 KiB PTEs only: 256 misses; a PTE line holds 16 PTEs: 16 fetches.
    let mut mem = Memory::new(64 << 20).unwrap();
    let mut g = gpu(&mut mem, 4096, Backing::Gemfs, false);
    g.create(&mut mem, 1, 4 << 20).unwrap();
    for i in 0..256 {
        g.access(&mut mem, 1, i * 4096, false).unwrap();
    }
    let c = g.mmu.counts();
    assert_eq!((c.tlb_misses, c.pte_fetches, c.fills[0]), (256, 16, 256));
}

#[test]
fn big_page_entry_covers_64k_and_destroy_flushes() {
    // Pi 5 kernel (16 KiB pages), gemfs, fresh 64 MiB. Its THP is 32 MiB, so these small
    // BOs get 16 KiB kernel pages; gemfs matters for the VA: the size class applies only
    // with gemfs (with shmem every BO is 4 KiB aligned and BO 7 would start at page 13).
    // The scratch page and the table sit outside; the buddy hands out the lowest free
    // block, so 16 KiB pages (order 2) come at PFN 0, 4, 8, ...
    // BO 6 of 48 KiB takes PFN 0..12 at VA pages 1..13 (4 KiB aligned: < 64 KiB): PFN 0
    // is 16-aligned but VA page 1 is not, so three 16 KiB pages give twelve 4 KiB PTEs.
    // BO 5 of 16 KiB takes PFN 12..16 (VA pages 13..17), so the next BO starts at PFN 16.
    // BO 7 of 64 KiB takes PFN 16..32, 16-aligned, and the size class aligns its VA to
    // 64 KiB (page 32, past BO 5): one big page.
    let mut mem = Memory::new(64 << 20).unwrap();
    let mut g = gpu(&mut mem, 16384, Backing::Gemfs, true);
    g.create(&mut mem, 6, 48 << 10).unwrap();
    assert_eq!(g.bo(6).unwrap().written.pages, [12, 0, 0]);
    assert_eq!(g.bo(6).unwrap().sg, vec![seg(0, 12)]);
    g.create(&mut mem, 5, 16 << 10).unwrap();
    assert_eq!(g.bo(5).unwrap().sg, vec![seg(12, 4)]);
    g.create(&mut mem, 7, 64 << 10).unwrap();
    assert_eq!(g.bo(7).unwrap().sg, vec![seg(16, 16)]);
    assert_eq!(g.bo(7).unwrap().written.pages, [0, 1, 0]);
    for off in (0..64 << 10).step_by(4096) {
        g.access(&mut mem, 7, off, true).unwrap();
    }
    assert_eq!(g.mmu.counts().tlb_misses, 1, "one 64 KiB entry serves 16 pages");
    let free = mem.buddy.free_frames();
    g.destroy(&mut mem, 7).unwrap();
    assert_eq!(mem.buddy.free_frames(), free + 16, "the BO's 16 frames come back");
    assert_eq!(g.mmu.counts().flushes, 4, "every insert and remove flushes");
    // Its VA is unmapped now: an access through the old address goes to the scratch page.
    let va = 32 * 4096; // BO 7's VA page
    g.mmu.access(&mut mem, va, false);
    assert_eq!(g.mmu.counts().scratch, 1);
    // And the BO id is gone.
    let e = g.access(&mut mem, 7, 0, false).unwrap_err();
    assert!(e.to_string().contains("BO 7 is not live"), "{e}");
}

#[test]
fn fragmented_memory_yields_partly_contiguous_scatterlists() {
    // Aged memory: no free 2 MiB block is left for gemfs beyond the few clean regions, so
    // a 16 MiB BO gets fewer THPs than it has 2 MiB parts, and kernel-page fallbacks
    // from partly used regions give a scatterlist of several segments.
    let mut mem = Memory::new(256 << 20).unwrap();
    let mut g = gpu(&mut mem, 4096, Backing::Gemfs, true);
    mem.age(0.6, 0.0, 7);
    g.create(&mut mem, 1, 16 << 20).unwrap();
    let b = g.bo(1).unwrap();
    assert!(g.counts().thp_fallbacks > 0, "{:?}", g.counts());
    assert!(b.sg.len() > 1, "segments {}", b.sg.len());
    let total: u64 = b.sg.iter().map(|s| s.len).sum();
    assert_eq!(total, 16 << 20);
    assert!(
        b.written.pages[2] < 16,
        "fewer super pages than on fresh memory: {:?}",
        b.written.pages
    );
}

#[test]
fn mali_gpu_on_the_same_machinery() {
    // A Mali (AArch64 4 KiB-granule table): a 4 MiB BO backed by two 2 MiB THPs
    // (shmem with THP on) is one 2 MiB-aligned segment; Panfrost aligns BOs >= 2 MiB to
    // 2 MiB in VA: two 2 MiB blocks. 512 accesses 4 KiB apart over the first block: one
    // TLB miss, whose walk reads one descriptor line at each of levels 0, 1 and 2 (the
    // block is a level-2 leaf): 3 PTE-cache lookups.
    let mut mem = Memory::new(64 << 20).unwrap();
    let spec = DriverSpec {
        kind: GpuKind::Mali,
        kernel_page: 4096,
        align: AlignPolicy::K4,
        backing: Backing::Gemfs,
        large: true,
    };
    let mut g = Gpu::new(spec, MmuSpec::v3d(), &mut mem).unwrap();
    g.create(&mut mem, 1, 4 << 20).unwrap();
    assert_eq!(g.coverage(), [0, 0, 0, 4 << 20]);
    for i in 0..512 {
        g.access(&mut mem, 1, i * 4096, false).unwrap();
    }
    let c = g.mmu.counts();
    assert_eq!((c.tlb_misses, c.ptec_lookups, c.fills[3]), (1, 3, 1));
}

#[test]
fn bad_input_gets_clear_errors() {
    let mut mem = Memory::new(64 << 20).unwrap();
    let mut g = gpu(&mut mem, 4096, Backing::Shmem, true);
    // A BO larger than the space.
    let e = g.create(&mut mem, 3, 5 << 30).unwrap_err();
    assert!(matches!(e, GpuError::BoTooLarge { bo: 3, .. }), "{e}");
    assert!(e.to_string().contains("larger than the GPU address space"), "{e}");
    // A PFN beyond 40 bits: a segment at 1 TiB. The last page below 1 TiB is fine.
    let mut pt = table();
    let e = write_ptes(&mut pt, 1, &[Segment { pa: 1 << 40, len: 4096 }], true).unwrap_err();
    assert_eq!(e, GpuError::PfnTooLarge { pa: 1 << 40 });
    assert!(e.to_string().contains("beyond the 40 bits"), "{e}");
    write_ptes(
        &mut pt,
        1,
        &[Segment {
            pa: (1 << 40) - 4096,
            len: 4096,
        }],
        true,
    )
    .unwrap();
    assert_eq!(pt[1], WV | 0x0fff_ffff);
    // An overlapping mapping: page 1 is taken; writing pages 0..2 fails and writes nothing.
    let e = write_ptes(&mut pt, 0, &[seg(100, 2)], true).unwrap_err();
    assert_eq!(
        e,
        GpuError::Overlap {
            page: 1,
            va: 0x1000,
            pte: WV | 0x0fff_ffff
        }
    );
    assert!(e.to_string().contains("already mapped"), "{e}");
    assert_eq!(pt[0], 0, "nothing written on error");
    // A destroyed BO.
    g.create(&mut mem, 9, 4096).unwrap();
    g.destroy(&mut mem, 9).unwrap();
    let e = g.destroy(&mut mem, 9).unwrap_err();
    assert!(e.to_string().contains("BO 9 is not live"), "{e}");
    // A bad MMU geometry.
    let t = Table::v3d();
    let bad = MmuSpec {
        tlb_entries: 48,
        tlb_ways: 5,
        ..MmuSpec::v3d()
    };
    assert!(Mmu::new(t, bad, 0)
        .unwrap_err()
        .to_string()
        .contains("tlb_entries = 48"));
}

#[test]
fn fragment_leaves_about_the_clean_share_of_regions_free() {
    // 256 MiB = 128 regions of 2 MiB; clean 0.25: about 32 regions stay wholly free, and
    // about half of all memory is pinned (0.5 / 0.75 of the kernel pages of the others).
    let mut mem = Memory::new(256 << 20).unwrap();
    let pinned = mmulab_model::gpu::driver::fragment(&mut mem, 0.5, 0.25, 4096, 1);
    let free_2m = mem.buddy.free_frames_at_least(9) / 512;
    assert!((20..=44).contains(&free_2m), "{free_2m} free 2 MiB blocks");
    let share = pinned as f64 / mem.buddy.frames() as f64;
    assert!((0.4..0.6).contains(&share), "pinned share {share}");
}
