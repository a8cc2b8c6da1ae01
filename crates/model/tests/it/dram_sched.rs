//! Row-hit-first reordering in the DRAM model (model `dram/sched.rs`), on hand-made
//! request sequences. Geometry: one channel, one rank, one bank group of 2 banks, 16
//! rows of 16 bursts (1 KiB rows: 128 columns of 8 bytes); mapping `RoBaCo`, so an
//! address is `co << 6 | ba << 10 | ro << 11`. Timings: CL 10, tRCD 5, tRP 7, tRAS 20,
//! tBURST 4 (tCCD_L = tBURST), no refresh.

use mmulab_model::dram::{profile, Dram, RowOutcome};

const PROFILE: &str = r#"
name = "sched-test"
clock_mhz = 1000.0
channels = 1
ranks = 1
bank_groups = 1
banks_per_group = 2
rows = 16
columns = 128
bus_bits = 64
burst_length = 8
mapping = "RoBaCo"
[timing]
cl = 10
trcd = 5
trp = 7
tras = 20
tburst = 4
trrd = 3
tfaw = 30
"#;

fn addr(ro: u64, ba: u64, co: u64) -> u64 {
    co << 6 | ba << 10 | ro << 11
}

fn dram() -> Dram {
    Dram::new(profile::parse(PROFILE, "sched-test").unwrap(), 1000.0)
}

#[test]
fn the_addresses_decode_as_the_comment_says() {
    let d = dram();
    let l = d.spec().map.decode(addr(3, 1, 15));
    assert_eq!((l.ro, l.ba, l.co), (3, 1, 15));
}

/// Two cores stream rows 0 and 1 of bank 0, their requests interleaved one cycle apart
/// (x0 at 0, y0 at 1, x1 at 2, ...), 16 bursts each. In arrival order every request
/// after the first two would close the other core's row: 1 miss and 31 conflicts. A
/// controller with the requests queued serves the open row's hits first. By hand: x0
/// opens row 0 (miss); y0 (at 1) conflicts, its precharge at tRAS = 20 closes row 0;
/// x1 arrived at 2 < 20, so it joins row 0 (a hit) and moves the precharge on by one
/// burst (4); every later x arrives before the moved precharge (x_k at 2k, the
/// precharge at 20 + 4k) and joins too; every y after y0 finds row 1 open. So 30 hits,
/// 1 miss, 1 conflict.
/// Checked: with `Reorder::join` returning None the counts are (0, 1, 31).
#[test]
fn two_interleaved_streams_in_one_bank_group_their_hits() {
    let mut d = dram();
    let mut outcomes = Vec::new();
    for k in 0..16u64 {
        outcomes.push(d.access_dram(addr(0, 0, k), false, 2 * k).1);
        outcomes.push(d.access_dram(addr(1, 0, k), false, 2 * k + 1).1);
    }
    let s = d.stats();
    assert_eq!((s.row_hits, s.row_misses, s.row_conflicts), (30, 1, 1));
    assert_eq!(outcomes[0], RowOutcome::Miss);
    assert_eq!(outcomes[1], RowOutcome::Conflict);
    assert!(outcomes[2..].iter().all(|&o| o == RowOutcome::Hit));
}

/// Requests that arrive after the row was closed were not waiting for it: the same two
/// streams 100 cycles apart (each request long done before the next arrives) alternate
/// rows in arrival order: 1 miss, then 31 conflicts.
#[test]
fn late_requests_do_not_join() {
    let mut d = dram();
    for k in 0..16u64 {
        d.access_dram(addr(0, 0, k), false, 200 * k);
        d.access_dram(addr(1, 0, k), false, 200 * k + 100);
    }
    let s = d.stats();
    assert_eq!((s.row_hits, s.row_misses, s.row_conflicts), (0, 1, 31));
}

/// One core's sequential stream: 8 rows' worth of bursts (128) in address order, one
/// every 4 cycles. Each row is opened once (banks 0, 1, 0, 1, ...: 2 misses, then 6
/// conflicts with the bank's previous row) and its 16 bursts hit after the first: the
/// row-hit rate is 1 - 1/16 (1 - 1/(lines per row)).
#[test]
fn a_sequential_stream_hits_its_open_row() {
    let mut d = dram();
    for (i, pa) in (0..128u64).map(|i| i * 64).enumerate() {
        d.access_dram(pa, false, 4 * i as u64);
    }
    let s = d.stats();
    assert_eq!((s.row_hits, s.row_misses, s.row_conflicts), (120, 2, 6));
    assert!((s.row_hit_rate() - (1.0 - 1.0 / 16.0)).abs() < 1e-12);
}
