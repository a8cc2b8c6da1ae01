//! The zero page is one shared frame that nothing frees, migrates or reclaims
//! (model os/zero.rs, mem/zero.rs).

use crate::os_common;

use mmulab_base::AccessKind::{Load, Store};
use mmulab_model::os::reclaim::{swap_out, ReclaimConfig};
use mmulab_model::os::*;
use mmulab_model::pt::Format;
use mmulab_model::walk::lookup;
use os_common::Sys;

const BASE: u64 = 0x4000_0000;

fn base_with_zero_page() -> Os {
    let mut os = Os::Base(Base::default());
    assert!(os.set_zero_page(true));
    os
}

/// Three pages loaded: three leaves on one frame. Hand-derived: the zero frame is the
/// only frame allocated for data (free frames drop by 1 plus the page tables); reclaim
/// finds nothing to swap out (0 freed, the leaves stay); compaction's owner check
/// refuses the frame; the process's exit frees its page tables but not the zero frame;
/// a store copies (a new frame, not the zero one). Fails if free_leaf frees zero
/// frames (the exit would free it 3 times: a double free), if reclaim takes zero leaves,
/// or if the owner check lets compaction move it.
#[test]
fn the_zero_frame_is_never_freed_moved_or_reclaimed() {
    let mut s = Sys::new(Format::X86_64, 64 << 20, base_with_zero_page());
    let free0 = s.mem.buddy.free_frames();
    s.space(0);
    let tables = free0 - s.mem.buddy.free_frames();
    for i in 0..3 {
        s.access(0, BASE + i * 4096, Load);
    }
    let (zero, _) = s.mem.zero.small.expect("allocated at the first read fault");
    let root = s.space(0).root;
    for i in 0..3 {
        assert_eq!(
            lookup(&mut s.mem, Format::X86_64, root, BASE + i * 4096).unwrap().pa >> 12,
            zero
        );
    }
    // Page tables for one 4 KiB page at BASE on x86-64: a PDPT, a PD and a PT (the
    // root counted in `tables`): 3 frames; plus the zero frame.
    assert_eq!(free0 - s.mem.buddy.free_frames(), tables + 3 + 1);
    assert!(s.mem.owner(zero).is_none(), "compaction must not migrate the zero page");
    let mut stats = OsStats::default();
    let mut sd = Vec::new();
    let cfg = ReclaimConfig {
        enabled: true,
        ..ReclaimConfig::default()
    };
    assert_eq!(swap_out(&mut s.mem, &cfg, &mut stats, &mut sd, 8), 0);
    assert!(lookup(&mut s.mem, Format::X86_64, root, BASE).is_some());
    s.access(0, BASE, Store);
    let copy = lookup(&mut s.mem, Format::X86_64, root, BASE).unwrap();
    assert_ne!(copy.pa >> 12, zero);
    assert_eq!(s.os.stats().count(OsEvent::CowFromZero), 1);
    s.exit(0);
    // Everything back except the zero frame, which stays allocated.
    assert_eq!(free0 - s.mem.buddy.free_frames(), 1);
    assert_eq!(s.mem.zero.small, Some((zero, 0)));
}

/// Issue 49 item 8, hand-derived: with `os.zero_page` off, a read fault on a writable
/// VMA allocates a page, and Linux maps it dirty (mm/memory.c `do_anonymous_page`:
/// `if (vma->vm_flags & VM_WRITE) entry = pte_mkwrite(pte_mkdirty(entry), vma)`,
/// whatever the fault's kind), for `thp` (a THP read fault with `use_zero_page` off,
/// `__do_huge_pmd_anonymous_page`'s `pmd_mkdirty`), `khugepaged` (its 4 KiB faults) and
/// `mthp`. Fails with FreeBSD's rule (clean unless the access was a store), which mmulab
/// applied here before. (`base` with zero pages off keeps FreeBSD's rule: it is the
/// freebsd experiment's FreeBSD base pages, docs/config.md `os.zero_page`.)
#[test]
fn a_read_fault_without_zero_pages_maps_the_page_dirty() {
    use mmulab_model::translation::Attrs;
    let thp = ThpConfig {
        use_zero_page: false,
        ..ThpConfig::default()
    };
    let policies = [
        Os::Thp(Thp::new(thp, KhugepagedConfig::default())),
        Os::Thp(Thp::khugepaged_only(KhugepagedConfig::default())),
        Os::Mthp(Mthp::new(MthpConfig::default())),
    ];
    for mut os in policies {
        let name = os.name();
        assert!(os.set_zero_page(false));
        let mut s = Sys::new(Format::X86_64, 64 << 20, os);
        s.access(0, BASE, Load);
        let root = s.space(0).root;
        let m = lookup(&mut s.mem, Format::X86_64, root, BASE).unwrap();
        assert!(
            m.attrs.has(Attrs::DIRTY | Attrs::WRITABLE | Attrs::ACCESSED),
            "{name}: a read fault maps the page young, writable and dirty ({:?})",
            m.attrs
        );
    }
}
