//! Hand-derived DRAM timings and mappings. The test geometry (`TEST`): one channel, two
//! ranks, 2 bank groups x 4 banks, 16 rows of 2 bursts of 64 bytes; mapping
//! `RaRoBaBgCo`, so an address is `co<<6 | bg<<7 | ba<<8 | ro<<10 | ra<<14`. Timings:
//! CL 10, CWL 8, tRCD 5, tRP 7, tRAS 20, tBURST 4, tRRD 3, tFAW 30, tCCD_L 4 (default
//! = tBURST), tWR = tWTR = tRTP = tRTRS = 0.
//!
//! Each timing test names the rule it guards; each was checked to fail with that rule
//! removed from `Dram::access_dram` (noted per test).

use super::profile;
use super::stream;
use super::*;

const TEST: &str = r#"
name = "test"
clock_mhz = 1000.0
channels = 1
ranks = 2
bank_groups = 2
banks_per_group = 4
rows = 16
columns = 16
bus_bits = 64
burst_length = 8
mapping = "RaRoBaBgCo"
write_queue = 0
[timing]
cl = 10
cwl = 8
trcd = 5
trp = 7
tras = 20
tburst = 4
trrd = 3
tfaw = 30
"#;

fn addr(ra: u64, ro: u64, ba: u64, bg: u64, co: u64) -> u64 {
    co << 6 | bg << 7 | ba << 8 | ro << 10 | ra << 14
}

/// `TEST` with top-level keys or tables `extra` added before `[timing]`.
fn spec_with(extra: &str) -> Result<DramSpec, crate::ModelError> {
    profile::parse(&TEST.replace("[timing]", &format!("{extra}[timing]")), "test")
}

fn dram(core_mhz: f64) -> Dram {
    Dram::new(spec_with("").unwrap(), core_mhz)
}

#[test]
fn row_miss_then_hit() {
    let mut d = dram(1000.0);
    // Bank closed: ACT at 0, column command at tRCD = 5, data 15..19: tRCD + CL + burst.
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), false, 0), (19, RowOutcome::Miss));
    // Same row, next column, long after: CL + burst = 14.
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 1), false, 100), (14, RowOutcome::Hit));
    // A write hit: CWL + burst = 12.
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), true, 200), (12, RowOutcome::Hit));
    let s = d.stats();
    assert_eq!((s.row_hits, s.row_misses, s.row_conflicts), (2, 1, 0));
    assert_eq!((s.reads, s.writes, s.bytes), (2, 1, 192));
    assert_eq!(s.read_latency, 33);
    assert_eq!(s.write_latency, 12);
    // Span 0..212 (the write's data ends at 200 + 12).
    assert_eq!(s.span(), 212);
}

#[test]
fn row_conflict_pays_precharge() {
    let mut d = dram(1000.0);
    d.access_dram(addr(0, 0, 0, 0, 0), false, 0);
    // Row 1 of the same bank at 200: PRE at 200, ACT at 207 (tRP), column at 212
    // (tRCD), data 222..226: tRP + tRCD + CL + burst = 26.
    // Checked: fails (19, Miss) when a conflicting open row is treated as closed.
    assert_eq!(
        d.access_dram(addr(0, 1, 0, 0, 0), false, 200),
        (26, RowOutcome::Conflict)
    );
}

#[test]
fn conflict_waits_for_tras() {
    let mut d = dram(1000.0);
    d.access_dram(addr(0, 0, 0, 0, 0), false, 0);
    // Row 1 at cycle 1: the row opened at 0 may close at tRAS = 20; ACT at 27, column
    // at 32, data 42..46; latency 45. Without tRAS: PRE at 6 (after the column command
    // at 5), ACT 13, end 32, latency 31. Checked: fails with `b.pre_ok = act + t.tras`
    // replaced by `act`.
    assert_eq!(d.access_dram(addr(0, 1, 0, 0, 0), false, 1), (45, RowOutcome::Conflict));
}

#[test]
fn two_banks_overlap() {
    let mut d = dram(1000.0);
    let a = d.access_dram(addr(0, 0, 0, 0, 0), false, 0).0;
    // Bank 1 of group 0 at the same time: ACT at 3 (tRRD after bank 0's), column at
    // max(3 + 5, 5 + tCCD_L 4) = 9, data 19..23 right behind bank 0's burst (15..19).
    // Serialised banks would end at 19 + 19 = 38. Checked: fails (38) when a bank's
    // ACT waits for the previous request's end (bank-level parallelism removed).
    let b = d.access_dram(addr(0, 0, 1, 0, 0), false, 0).0;
    assert_eq!((a, b), (19, 23));
    assert!(b < a + 19, "the second bank's activate overlapped the first's");
    assert_eq!(d.stats().per_bank[..2], [1, 1]);
}

#[test]
fn tfaw_throttles_the_fifth_activate() {
    let mut d = dram(1000.0);
    // Five banks of rank 0 at cycle 0 (groups 0,1,0,1,0): ACTs at 0, 3, 6, 9 (tRRD),
    // then the fifth waits for the window: 0 + tFAW = 30. Its column command at 35,
    // data 45..49. The first four: data ends 19 (data at 15), 23 (bus), 27, 31.
    // Without tFAW the fifth ACT is at 12, column 17, data 27 -> bus 31 -> end 35.
    // Checked: fails (35) with the `r.faw[r.faw_i]` term removed.
    let lat: Vec<u64> = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]
        .iter()
        .map(|&(ba, bg)| d.access_dram(addr(0, 0, ba, bg, 0), false, 0).0)
        .collect();
    assert_eq!(lat, vec![19, 23, 27, 31, 49]);
    // The other rank has its own window: its first ACT at 0 is free, its column at 5,
    // data ready at 15; the shared bus is busy 15..31 and 45..49, so the burst takes
    // the gap the fifth activate left: 31..35. Checked: fails (53) when a burst may
    // only follow the last one placed (`place` without its gap search).
    assert_eq!(d.access_dram(addr(1, 0, 0, 0, 0), false, 0).0, 35);
    assert_eq!(d.stats().per_rank, vec![5, 1]);
    // Every request arrived at 0 to a closed bank: the activates waited 0, 3, 6, 9
    // (tRRD) and 30 (tFAW) in rank 0, 0 in rank 1. Checked: 0 with the count removed.
    assert_eq!(d.stats().act_wait_cycles, 3 + 6 + 9 + 30);
    assert_eq!(d.stats().wtr_wait_cycles, 0);
}

#[test]
fn two_cores_contend_for_the_bus() {
    // Core clock 2000 MHz, DRAM 1000 MHz: core cycles are half DRAM cycles.
    let mut d = dram(2000.0);
    let req = |pa, core, at| MemReq {
        pa,
        write: false,
        core,
        at,
    };
    // Open a row in group 0 and one in group 1 (different groups: no tCCD_L).
    d.access(&req(addr(0, 0, 0, 0, 0), 0, 0));
    d.access(&req(addr(0, 0, 0, 1, 0), 1, 0));
    // Both cores hit their open rows at core cycle 2000 (DRAM 1000). Core 0: data
    // 1010..1014, 14 DRAM = 28 core cycles. Core 1: its data (ready at 1010) waits for
    // the bus until 1014, ends 1018: 18 DRAM = 36 core cycles.
    // Checked: fails (28) with the `data < bus` wait removed.
    assert_eq!(d.access(&req(addr(0, 0, 0, 0, 1), 0, 2000)), 28);
    assert_eq!(d.access(&req(addr(0, 0, 0, 1, 1), 1, 2000)), 36);
    assert_eq!(d.stats().row_hits, 2);
}

#[test]
fn closed_and_capped_policies() {
    let mut d = Dram::new(spec_with("row_policy = \"closed\"\n").unwrap(), 1000.0);
    d.access_dram(addr(0, 0, 0, 0, 0), false, 0);
    // Auto-precharge at max(tRAS 20, tRTP) = 20, bank ready at 27: the same row is a
    // miss again: ACT 100, end 119. Checked: fails (Hit) with the cap test removed.
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 1), false, 100), (19, RowOutcome::Miss));

    let mut d = Dram::new(
        spec_with("row_policy = \"capped\"\nrow_hits_cap = 1\n").unwrap(),
        1000.0,
    );
    let o: Vec<RowOutcome> = (0..4)
        .map(|i| d.access_dram(addr(0, 0, 0, 0, i & 1), false, 100 * i).1)
        .collect();
    // Miss, hit (the one allowed), then closed: miss, hit.
    use RowOutcome::*;
    assert_eq!(o, vec![Miss, Hit, Miss, Hit]);
}

#[test]
fn refresh_closes_rows_and_blocks_the_rank() {
    // tREFI 1000, tRFC 50, two ranks: rank 0 refreshes at 500..550, 1500.., rank 1 at
    // 1000..1050, 2000...
    let s = spec_with("").unwrap();
    let text = TEST.replace("tfaw = 30\n", "tfaw = 30\ntrfc = 50\ntrefi = 1000\n");
    let mut d = Dram::new(profile::parse(&text, "t").unwrap(), 1000.0);
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), false, 0), (19, RowOutcome::Miss));
    // The refresh at 500 closed the row: ACT at 550, end 569: latency 59, a miss
    // (14, a hit, without refresh). Checked: fails with the epoch test removed.
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 1), false, 510), (59, RowOutcome::Miss));
    // Rank 1 is not refreshing at 520: a plain miss.
    assert_eq!(d.access_dram(addr(1, 0, 0, 0, 0), false, 520), (19, RowOutcome::Miss));
    // A hit arriving during rank 1's refresh at 1010 waits for its end (1050):
    // the row is closed, ACT 1050, end 1069.
    assert_eq!(d.access_dram(addr(1, 0, 0, 0, 1), false, 1010), (59, RowOutcome::Miss));
    // A closed bank of rank 0 at 1498: ACT at 1498 (before the refresh at 1500), its
    // column command (1503) falls in the refresh and waits until 1550: data 1560..1564,
    // latency 66 (19 without). Checked: fails with `refresh_free` an identity.
    assert_eq!(d.access_dram(addr(0, 0, 1, 0, 0), false, 1498), (66, RowOutcome::Miss));
    assert_eq!(s.timing.trefi, 0, "no refresh unless configured");
}

#[test]
fn pi5_top_bit_selects_the_rank() {
    let s = profile::load("lpddr4x-4267-pi5").unwrap();
    assert_eq!(s.capacity, 8 << 30);
    assert_eq!((s.burst_bytes, s.row_bytes), (64, 2048));
    let m = &s.map;
    let top = m.decode(1 << 32);
    assert_eq!((top.ra, top.ro, top.ba, top.co), (1, 0, 0, 0));
    // The last burst of the low 4 GiB: rank 0, last row, bank 7, column 31.
    let l = m.decode((1 << 32) - 64);
    assert_eq!((l.ra, l.ro, l.ba, l.co), (0, (1 << 18) - 1, 7, 31));
    // 2 KiB apart: the next bank, same row.
    let n = m.decode(2048);
    assert_eq!((n.ra, n.ro, n.ba, n.co), (0, 0, 1, 0));
}

#[test]
fn ddr4_order_string_decodes_like_dramsim3() {
    // DRAMsim3 rochrababgco for x8 DDR4-3200: co bits 6..13, bg 13..15, ba 15..17,
    // ra 17, ro 18..34.
    let s = profile::load("ddr4-3200").unwrap();
    let d = |pa: u64| {
        let l = s.map.decode(pa);
        (l.ro, l.ra, l.ba, l.bg, l.co)
    };
    assert_eq!(d(0x40), (0, 0, 0, 0, 1));
    assert_eq!(d(1 << 13), (0, 0, 0, 1, 0));
    assert_eq!(d(1 << 15), (0, 0, 1, 0, 0));
    assert_eq!(d(1 << 17), (0, 1, 0, 0, 0));
    assert_eq!(d(3 << 18 | 0x1fc0), (3, 0, 0, 0, 127));
    assert_eq!(s.capacity, 16 << 30);
}

#[test]
fn explicit_bits_and_xor_hashing() {
    // The test mapping written out as bit lists decodes the same.
    let bits = "[bits]\nco = [6]\nbg = [7]\nba = [8, 9]\nro = [10, 11, 12, 13]\nra = [14]\n";
    let text = TEST.replace("mapping = \"RaRoBaBgCo\"\n", "");
    let by_bits = profile::parse(&format!("{text}{bits}"), "t").unwrap();
    let by_order = spec_with("").unwrap();
    for pa in (0..1u64 << 15).step_by(64) {
        assert_eq!(by_bits.map.decode(pa), by_order.map.decode(pa), "{pa:#x}");
    }
    // XOR: bank bit 0 ^= row bit 0 (address bit 10), bank bit 1 ^= bits 11 and 12.
    let x = spec_with("[xor]\nba = [[10], [11, 12]]\n").unwrap();
    assert_eq!(x.map.decode(addr(0, 1, 0, 0, 0)).ba, 1);
    assert_eq!(x.map.decode(addr(0, 2, 0, 0, 0)).ba, 2);
    assert_eq!(x.map.decode(addr(0, 6, 0, 0, 0)).ba, 0);
    assert_eq!(x.map.decode(addr(0, 3, 3, 0, 0)).ba, 0);
    assert_eq!(x.map.decode(addr(0, 3, 3, 0, 0)).ro, 3);
}

/// `TEST` with `from` replaced by `to` and `append` added at the end.
fn error_of(from: &str, to: &str, append: &str) -> String {
    assert!(TEST.contains(from), "{from}");
    let text = format!("{}{append}", TEST.replacen(from, to, 1));
    match profile::parse(&text, "prof.toml") {
        Ok(_) => panic!("accepted: {from} -> {to} + {append}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_profiles_name_the_key() {
    let m = "mapping = \"RaRoBaBgCo\"\n";
    let cases: &[(&str, &str, &str, &str)] = &[
        // A bit list that leaves bit 14 out (and uses 15 instead).
        (
            m,
            "",
            "[bits]\nco = [6]\nbg = [7]\nba = [8, 9]\nro = [10, 11, 12, 13]\nra = [15]\n",
            "`bits` does not cover address bit 14",
        ),
        // Overlap: bit 9 twice.
        (
            m,
            "",
            "[bits]\nco = [6]\nbg = [7]\nba = [8, 9]\nro = [9, 11, 12, 13]\nra = [14]\n",
            "`bits.ba` and `bits.ro` both use address bit 9",
        ),
        (
            m,
            "",
            "[bits]\nco = [6]\nbg = [7]\nba = [8, 9]\nro = [10, 11, 12, 13]\n",
            "`bits.ra` is missing",
        ),
        (m, "mapping = \"RoBaBgCo\"\n", "", "leaves out field \"ra\""),
        (m, "mapping = \"RaRoBaBgCoXx\"\n", "", "unknown field \"Xx\""),
        (m, "mapping = \"RaRoBaBgCoRa\"\n", "", "names field \"Ra\" twice"),
        (m, "", "", "mapping missing"),
        (m, m, "[bits]\nco = [6]\n", "`mapping` and `bits` are both set"),
        ("ranks = 2\n", "ranks = 0\n", "", "`ranks` is 0"),
        ("rows = 16\n", "rows = 12\n", "", "`rows` = 12 is not a power of two"),
        ("trcd = 5\n", "trcd = 0\n", "", "`timing.trcd` is 0"),
        ("tfaw = 30\n", "tfaw = 0\n", "", "`timing.tfaw` is 0"),
        (
            "tfaw = 30\n",
            "tfaw = 30\ntrfc = 50\n",
            "",
            "`timing.trfc` and `timing.trefi` go together",
        ),
        (
            "tfaw = 30\n",
            "tfaw = 30\ntrfc = 50\ntrefi = 50\n",
            "",
            "is not below `timing.trefi`",
        ),
        (
            m,
            "row_policy = \"capped\"\nmapping = \"RaRoBaBgCo\"\n",
            "",
            "needs `row_hits_cap`",
        ),
        ("rows = 16\n", "rows = 16\ncolums = 4\n", "", "unknown field `colums`"),
        (
            "",
            "",
            "[xor]\nba = [[8]]\n",
            "`xor.ba` uses address bit 8, which is the field's own bit",
        ),
    ];
    for (from, to, append, want) in cases {
        let e = error_of(from, to, append);
        assert!(e.contains(want), "{e} lacks {want}");
        assert!(e.contains("prof.toml"), "{e} lacks the origin");
    }
}

#[test]
fn streams_read_write_and_reject_damage() {
    let s = spec_with("").unwrap();
    let g: Vec<_> = stream::generate("two-rank", &s, 4, 3, 2, 1).unwrap().collect();
    let mut buf = Vec::new();
    stream::write(&mut buf, &g).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert_eq!(text, "0x0 READ 0\n0x4000 WRITE 3\n0x40 READ 6\n0x4040 WRITE 9\n");
    assert_eq!(stream::read(text.as_bytes(), "t").unwrap(), g);
    let e = stream::read("0x0 READ 0\n0x40 LOAD 1\n".as_bytes(), "s.trace")
        .unwrap_err()
        .to_string();
    assert!(e.contains("s.trace line 2") && e.contains("READ or WRITE"), "{e}");
    // A stream is input, not configuration (issue 51: it was "invalid configuration").
    assert!(e.starts_with("s.trace line 2"), "{e}");
    let e = stream::read("0x0 READ 5\n0x40 READ 1\n".as_bytes(), "s")
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2") && e.contains("before"), "{e}");
}

#[test]
fn float_conversions_equal_the_plain_casts() {
    // Fractions, integers, the edges of exact integers (2^52, 2^53) and of u64 (2^64:
    // saturation), zero, negatives and NaN: `MemoryBackend::access` rounds its latency
    // with `ceil_u64` and must give what `f64::ceil` then `as u64` gave.
    let mut qs = vec![
        0.0,
        -0.0,
        0.25,
        1.0,
        1.5,
        2.0 - f64::EPSILON,
        -3.5,
        4503599627370495.5,
        4503599627370496.0,
        9007199254740993.0,
        18446744073709549568.0,
        18446744073709551616.0,
        1e30,
        f64::INFINITY,
        f64::NAN,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Latencies and ratios as the model produces them (DRAM/core clock ratios).
        qs.push((x % 100_000) as f64 / (0.5 + (x >> 40) as f64 / 16_777_216.0));
    }
    for &q in &qs {
        assert_eq!(ceil_u64(q), q.ceil() as u64, "{q}");
        assert_eq!(to_u64(q), q as u64, "{q}");
    }
    // And the conversion to f64 at the edges of the signed range and beyond.
    for x in [
        0u64,
        1,
        (1 << 53) + 1,
        (1 << 63) - 1,
        1 << 63,
        (1 << 63) + 1025,
        u64::MAX,
        x,
    ] {
        assert_eq!(to_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
    }
}

#[test]
fn latency_table_equals_the_conversion_it_replaces() {
    // `MemoryBackend::access` reads a latency below LAT_TABLE DRAM cycles from the table
    // built in `Dram::new`: every entry must be what the division and rounding give
    // (`f64::ceil` of latency / (DRAM MHz / core MHz)), for every built-in profile at a
    // few core clocks (one slower than the DRAM clock). Checked to fail with the table
    // built one entry off (`lat_to_core(l + 1, …)`).
    for (name, _) in profile::BUILTIN {
        for core_mhz in [800.0, 2400.0, 3000.0, 4100.0] {
            let spec = profile::load(name).unwrap();
            let dpc = spec.clock_mhz / core_mhz;
            let d = Dram::new(spec, core_mhz);
            assert_eq!(d.lat_core.len(), LAT_TABLE);
            for (l, &c) in d.lat_core.iter().enumerate() {
                assert_eq!(c as u64, (l as f64 / dpc).ceil() as u64, "{name} {core_mhz} MHz: {l}");
            }
        }
    }
}

/// `TEST` with a write buffer of `entries` and tWTR = 10.
fn buffered(entries: u32) -> Dram {
    let text = TEST
        .replace("write_queue = 0", &format!("write_queue = {entries}"))
        .replace("[timing]", "[timing]\ntwtr = 10");
    Dram::new(profile::parse(&text, "test").unwrap(), 1000.0)
}

/// Issue 49, defect 1: with a write buffer a read goes ahead of a waiting write and
/// pays no tWTR. Bank 0, row 0: R1 at 0 misses (ACT 0, column 5, data 15..19: 19). W1 at
/// 20 waits in the buffer (latency 0, posted). R2 at 30 hits: column 30, data 40..44:
/// 14. Served in arrival order instead (no buffer), W1's data would end at 20 + 8 + 4 =
/// 32 and R2's column wait for 32 + tWTR = 42: data 52..56, 26 (checked below). At the
/// end W1 is drained from the bus's idle time 44: column 44, data 52..56, 12 + 24
/// waited = 36.
#[test]
fn reads_go_ahead_of_buffered_writes() {
    let a = |co| addr(0, 0, 0, 0, co);
    let mut d = buffered(32);
    assert_eq!(d.access_dram(a(0), false, 0), (19, RowOutcome::Miss));
    assert_eq!(d.access_dram(a(1), true, 20), (0, RowOutcome::Hit));
    assert_eq!(d.access_dram(a(0), false, 30), (14, RowOutcome::Hit));
    assert_eq!((d.stats().writes, d.writes_waiting()), (0, 1));
    d.drain_all();
    let s = d.stats();
    assert_eq!((s.reads, s.writes, d.writes_waiting()), (2, 1, 0));
    assert_eq!((s.read_latency, s.write_latency), (19 + 14, 36));
    assert_eq!((s.row_hits, s.row_misses), (2, 1));
    // One drain (at the end), and no read waited for tWTR.
    assert_eq!((s.write_drains, s.wtr_wait_cycles), (1, 0));
    // The same stream without the buffer: R2 waits out tWTR after W1's data, from
    // column 30 to 42: 12 cycles; nothing is drained.
    let mut d = buffered(0);
    d.access_dram(a(0), false, 0);
    assert_eq!(d.access_dram(a(1), true, 20), (12, RowOutcome::Hit));
    assert_eq!(d.access_dram(a(0), false, 30), (26, RowOutcome::Hit));
    assert_eq!((d.stats().wtr_wait_cycles, d.stats().write_drains), (12, 0));
}

/// A full buffer drains at the arrival that filled it: its writes are released from
/// then and placed when a later request finds them ahead of it (writes.rs). Buffer of
/// 2: W1 at 0 waits; W2 at 1 fills it: both are released from 1, neither placed yet. A
/// read at 23 to another bank of the rank finds bank 0 able to act long before (closed,
/// never used), so both are placed first, from 1. W1: ACT 1, column 6, data 14..18: 17,
/// plus 1 waited = 18. W2 (same row): column 6 + tCCD_L 4 = 10, data 18..22: 21. The
/// read: ACT at 23 (tRRD 3 after 1 is long past), column 28, but tWTR after the last
/// write data (22 + 10 = 32): data 42..46, 23.
#[test]
fn a_full_write_buffer_drains() {
    let mut d = buffered(2);
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), true, 0).0, 0);
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 1), true, 1).0, 0);
    let s = d.stats();
    assert_eq!((s.writes, s.write_drains, d.writes_waiting()), (0, 1, 2));
    assert_eq!(d.access_dram(addr(0, 0, 1, 0, 0), false, 23), (23, RowOutcome::Miss));
    let s = d.stats();
    assert_eq!((s.writes, s.write_latency, d.writes_waiting()), (2, 18 + 21, 0));
    // The read's column command waited from 28 to 32 for tWTR; one drain.
    assert_eq!((s.wtr_wait_cycles, s.write_drains), (4, 1));
}

/// Issue 49, item 2: a read to another bank goes between a drain's writes, as
/// DRAMsim3's round robin over its bank queues serves it; a read to a drained write's
/// own bank waits behind it. R0 at 0, bank 0 row 0: ACT 0, column 5, data 15..19: 19
/// (the bank may precharge from tRAS = 20). W1 and W2 at 1 and 2, bank 0 row 1, fill
/// the buffer of 2: released from 2. R3 at 3, bank 1 (group 0): bank 0 cannot act on
/// W1 before 20, so R3 goes first: ACT 3, column 8, tCCD_L after R0's column 5 is 9,
/// data 19..23 (after R0's on the bus): 20, no tWTR. At the end W1: precharge 20, ACT
/// 27, column 32, data 40..44: 42 + 1 waited; W2: column 36, data 44..48: 46. Placed
/// whole at their release (the rule before), R3's column would wait for W2's data end
/// 48 + tWTR 10 = 58: 69. Same stream with R3 to bank 0, row 2 (`own`): W1 and W2 are
/// placed first, as above; R3 precharges at 48 (W2's data end, tWR 0), ACT 55, column
/// 60 (tWTR allows 58), data 70..74: 71.
#[test]
fn a_read_goes_between_a_drains_writes() {
    let run = |read_bank: u64, read_row: u64| {
        let mut d = buffered(2);
        assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), false, 0), (19, RowOutcome::Miss));
        d.access_dram(addr(0, 1, 0, 0, 0), true, 1);
        d.access_dram(addr(0, 1, 0, 0, 1), true, 2);
        let r3 = d.access_dram(addr(0, read_row, read_bank, 0, 0), false, 3);
        let placed_before_end = d.stats().writes;
        d.drain_all();
        (r3, placed_before_end, d.stats())
    };
    let (r3, placed, s) = run(1, 0);
    assert_eq!((r3, placed), ((20, RowOutcome::Miss), 0));
    assert_eq!((s.writes, s.write_latency, s.wtr_wait_cycles), (2, 43 + 46, 0));
    let (r3, placed, s) = run(0, 2);
    assert_eq!((r3, placed), ((71, RowOutcome::Conflict), 2));
    assert_eq!((s.writes, s.write_latency, s.wtr_wait_cycles), (2, 43 + 46, 0));
}

/// Issue 49, item 2: a read's column command may go before a write's that was placed
/// earlier but lies later in time, when the read's data and the bus turn are done by
/// then (rtw = CL + tBURST + tRTRS - CWL = 10 + 4 + 0 - 8 = 6 before the write's
/// command); tWTR binds only after a write's data. No buffer, tWTR 10: R0 at 0, bank 0
/// row 0: ACT 0, column 5, data 15..19: 19 (precharge allowed from tRAS = 20). W1 at 1,
/// bank 0 row 1: precharge 20, ACT 27, column 32, data 40..44: 43. R2 at 2, bank 1 of
/// the same group: ACT 3 (tRRD 3), column 8, moved to 9 by tCCD_L 4 after R0's 5; 9 + 6
/// = 15 is before W1's column 32, so no turnaround: data 19..23, 21. The rank's last
/// write data alone (44 + tWTR 10 = 54) would have held R2's column to 54: data
/// 64..68, 66.
#[test]
fn a_read_goes_before_a_write_placed_later_in_time() {
    let mut d = buffered(0);
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), false, 0), (19, RowOutcome::Miss));
    assert_eq!(d.access_dram(addr(0, 1, 0, 0, 0), true, 1), (43, RowOutcome::Conflict));
    assert_eq!(d.access_dram(addr(0, 0, 1, 0, 0), false, 2), (21, RowOutcome::Miss));
    assert_eq!(d.stats().wtr_wait_cycles, 0);
    // A read whose column would fall inside W1's turnaround (from 32 - 6 = 27 to 44 +
    // 10 = 54) waits for 54: R3 at 30, bank 2 row 0, ACT 30 (the window's activates 0,
    // 3, 27 allow it), column 35, tWTR to 54, data 64..68: 38.
    assert_eq!(d.access_dram(addr(0, 0, 2, 0, 0), false, 30), (38, RowOutcome::Miss));
    assert_eq!(d.stats().wtr_wait_cycles, 54 - 35);
}

/// Issue 49, item 2: a released write goes before a read only if its column command
/// could come first, not merely because its bank could start on it (a precharge) before
/// the read arrived. Buffer of 1, tWTR 10: R0 at 0, bank 0 row 0: data 15..19, 19
/// (precharge allowed from 20). W1 at 1, bank 0 row 1, is released at once. R2 at 24,
/// bank 1 row 0: its column could come at 24 + tRCD 5 = 29, W1's at 20 + tRP 7 + tRCD 5
/// = 32, so R2 goes first: ACT 24, column 29, data 39..43: 19. W1 at the end:
/// precharge 20, ACT 27 (tRRD 3 after 24), column 32, 33 by tCCD_L after 29, its data
/// after R2's on the bus: 43..47 (column 35): 46. Had W1 gone first (its bank could
/// precharge at 20, before 24), R2's column would sit inside W1's turnaround (29 + rtw
/// 6 > 32) and wait for W1's data end 44 + tWTR 10: data 64..68, 44.
#[test]
fn a_released_write_goes_first_only_if_its_column_could() {
    let mut d = buffered(1);
    assert_eq!(d.access_dram(addr(0, 0, 0, 0, 0), false, 0), (19, RowOutcome::Miss));
    assert_eq!(d.access_dram(addr(0, 1, 0, 0, 0), true, 1), (0, RowOutcome::Hit));
    assert_eq!(d.access_dram(addr(0, 0, 1, 0, 0), false, 24), (19, RowOutcome::Miss));
    assert_eq!((d.stats().writes, d.writes_waiting()), (0, 1));
    d.drain_all();
    let s = d.stats();
    assert_eq!((s.writes, s.write_latency, s.wtr_wait_cycles), (1, 46, 0));
}
