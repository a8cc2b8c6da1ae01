//! VMA events (an exact ptrace recording's `vma` and `unmap` events, trace event.rs): the
//! simulated address space follows the kernel's VMA list as the program changed it.

use mmulab_base::{AccessKind, MemRef};
use mmulab_sim::config::{from_toml, DEFAULT_TOML};
use mmulab_sim::{run, Machine};
use mmulab_trace::format::mlt::MltWriter;
use mmulab_trace::Event;

const A: u64 = 0x7f00_0000_0000;
const MIB: u64 = 1 << 20;

fn store(addr: u64) -> MemRef {
    MemRef {
        addr,
        size: 8,
        kind: AccessKind::Store,
        core: 0,
        asid: 0,
    }
}

fn vma(start: u64, end: u64, hugepage: bool) -> Event {
    Event::Vma {
        asid: 0,
        start,
        end,
        hugepage,
        nohugepage: false,
    }
}

/// A trace file of `items` (a reference, or an event) with the vma_events marker.
fn trace(items: &[Result<MemRef, Event>], name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("mmulab-vma-events-{}-{name}.mlt", std::process::id()));
    let mut w = MltWriter::new(std::fs::File::create(&p).unwrap(), 1).unwrap();
    for it in items {
        match it {
            Ok(r) => w.push(r).unwrap(),
            Err(e) => w.push_event(e).unwrap(),
        }
    }
    w.section("markers", b"vma_events 1\n").unwrap();
    w.finish().unwrap();
    p
}

fn touch(items: &mut Vec<Result<MemRef, Event>>, start: u64, end: u64) {
    items.extend((start..end).step_by(4096).map(|a| Ok(store(a))));
}

fn simulate(items: &[Result<MemRef, Event>], name: &str) -> mmulab_sim::Stats {
    let spec = from_toml(
        DEFAULT_TOML,
        None,
        &["os.policy=thp".into(), "os.thp.enabled=madvise".into()],
    )
    .unwrap();
    let mut m = Machine::new(spec).unwrap();
    let p = trace(items, name);
    let mut src = mmulab_trace::open_trace(&p, None).unwrap();
    let st = run(&mut m, &mut *src, None);
    let _ = std::fs::remove_file(&p);
    st.unwrap()
}

#[test]
fn a_block_freed_and_mapped_again_lower_faults_afresh_in_its_new_vma() {
    // glibc's malloc of 6 MiB + 4 KiB (madvised: GLIBC_TUNABLES hugetlb=1), touched,
    // freed, then a bigger block mapped below and over the old range: the pattern of
    // malloc/free in a loop. Round 1: [A + 4K, A + 6M + 8K) holds PMD ranges A+2M and
    // A+4M whole: 2 THPs. Round 2: [A - 1M, A + 6M + 8K): A, A+2M, A+4M: 3 THPs.
    let mut it = vec![Err(vma(A + 4096, A + 6 * MIB + 8192, true))];
    touch(&mut it, A + 4096, A + 6 * MIB + 8192);
    it.push(Err(Event::Unmap {
        asid: 0,
        start: A + 4096,
        end: A + 6 * MIB + 8192,
    }));
    it.push(Err(vma(A - MIB, A + 6 * MIB + 8192, true)));
    touch(&mut it, A - MIB, A + 6 * MIB + 8192);
    let st = simulate(&it, "again");
    let k: std::collections::BTreeMap<String, u64> = st.os.kernel_counters().into_iter().collect();
    assert_eq!(k["thp_fault_alloc"], 5, "{k:?}");
}

#[test]
fn a_vma_event_changes_the_flags_and_keeps_the_pages_mapped() {
    // [A, A + 4M) mapped plain (THP madvise mode: 4 KiB pages), one page written; then
    // madvised (the vma event of the sample after madvise): the page stays, and the first
    // store in the other PMD range takes a THP; the first range keeps its table (a page is
    // in it), so a store there gets 4 KiB (pmd not none).
    let mut it = vec![Err(vma(A, A + 4 * MIB, false)), Ok(store(A))];
    it.push(Err(vma(A, A + 4 * MIB, true)));
    it.push(Ok(store(A + 2 * MIB)));
    it.push(Ok(store(A + 8192)));
    let st = simulate(&it, "flags");
    let k: std::collections::BTreeMap<String, u64> = st.os.kernel_counters().into_iter().collect();
    assert_eq!(k["thp_fault_alloc"], 1, "{k:?}");
    assert_eq!(st.os.resident_bytes, 2 * MIB + 2 * 4096);
}

#[test]
fn a_vma_event_that_cuts_a_huge_page_splits_it() {
    // A THP at [A, A + 2M) in a madvised 4 MiB VMA; the VMA is then cut at A + 1M (the
    // sample after an mprotect of [A + 1M, A + 4M)): two vma events. Linux splits the huge
    // page at the VMA split (vma_adjust_trans_huge): THP_SPLIT_PMD once, every page
    // still mapped (512 4 KiB leaves), no deferred split.
    let mut it = vec![Err(vma(A, A + 4 * MIB, true)), Ok(store(A))];
    it.push(Err(vma(A, A + MIB, true)));
    it.push(Err(vma(A + MIB, A + 4 * MIB, true)));
    let st = simulate(&it, "cut");
    let k: std::collections::BTreeMap<String, u64> = st.os.kernel_counters().into_iter().collect();
    assert_eq!(
        (k["thp_fault_alloc"], k["thp_split_pmd"], k["thp_deferred_split_page"]),
        (1, 1, 0),
        "{k:?}"
    );
    assert_eq!(st.os.resident_bytes, 2 * MIB);
    assert_eq!(
        st.os.resident_by_size[mmulab_model::addr::PageSize::K4.index()],
        2 * MIB
    );
}
