#!/usr/bin/env python3
"""Cross-check mmulab's DRAM model against DRAMsim3 on the streams in this directory
(docs/memory.md, "DRAM"). Usage:

    python3 tests/data/dram/crosscheck.py MMULAB DRAMSIM3MAIN DRAMSIM3_CONFIGS

MMULAB: the mmulab binary; DRAMSIM3MAIN: DRAMsim3's trace-mode binary (dramsim3main);
DRAMSIM3_CONFIGS: its configs/ directory. Prints a Markdown table.

Bandwidth, both sides: bytes / (completion of the last request - first arrival). For
DRAMsim3 the completion is found by bisection on its cycle count (-c): the least number
of cycles after which every request is done (DRAMsim3's own average_bandwidth divides
by all simulated cycles). Latency: mean read latency in DRAM cycles; DRAMsim3 counts it
from the cycle its controller accepted the request (a full queue holds requests back in
the trace reader), mmulab from the arrival in the stream.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (stream, mmulab profile, DRAMsim3 config: a file here or one of DRAMsim3's, tCK ns)
CASES = [
    ("ddr4-seq-g1.trace", "ddr4-3200", "DDR4_8Gb_x8_3200.ini", 0.63),
    ("ddr4-seq-g10.trace", "ddr4-3200", "DDR4_8Gb_x8_3200.ini", 0.63),
    ("ddr4-random-g1.trace", "ddr4-3200", "DDR4_8Gb_x8_3200.ini", 0.63),
    ("ddr4-random-g20.trace", "ddr4-3200", "DDR4_8Gb_x8_3200.ini", 0.63),
    ("ddr4-seq-w4-g10.trace", "ddr4-3200", "DDR4_8Gb_x8_3200.ini", 0.63),
    ("pi5-seq-g1.trace", "lpddr4x-4267-pi5", "dramsim3/LPDDR4X_4267_pi5.ini", 0.469),
    ("pi5-random-g20.trace", "lpddr4x-4267-pi5", "dramsim3/LPDDR4X_4267_pi5.ini", 0.469),
    ("pi5-two-rank-g1.trace", "lpddr4x-4267-pi5", "dramsim3/LPDDR4X_4267_pi5.ini", 0.469),
]


def dramsim3(binary, ini, trace, cycles, out):
    subprocess.run(
        [binary, ini, "-t", trace, "-c", str(cycles), "-o", out],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with open(os.path.join(out, "dramsim3.json")) as f:
        return json.load(f)["0"]


def main():
    mmulab, ds3, configs = sys.argv[1:4]
    print("| stream | profile | requests | row-hit rate mmulab / DRAMsim3 | bandwidth GB/s mmulab / DRAMsim3 | mean read latency (DRAM cycles) mmulab / DRAMsim3 |")
    print("|---|---|---:|---|---|---|")
    for trace, profile, ini, tck in CASES:
        path = os.path.join(HERE, trace)
        ini_path = os.path.join(HERE, ini) if ini.startswith("dramsim3/") else os.path.join(configs, ini)
        m = json.loads(
            subprocess.run(
                [mmulab, "dram", path, "--profile", profile, "--json"],
                check=True, capture_output=True, text=True,
            ).stdout
        )
        n = m["requests"]
        with open(path) as f:
            first = int(f.readline().split()[2])
        with tempfile.TemporaryDirectory() as out:
            lo, hi = 1, 1 << 14
            while True:
                s = dramsim3(ds3, ini_path, path, hi, out)
                if s["num_reads_done"] + s["num_writes_done"] >= n:
                    break
                lo, hi = hi, hi * 2
            while hi - lo > 1:
                mid = (lo + hi) // 2
                s = dramsim3(ds3, ini_path, path, mid, out)
                if s["num_reads_done"] + s["num_writes_done"] >= n:
                    hi = mid
                else:
                    lo = mid
            s = dramsim3(ds3, ini_path, path, hi, out)
        cmds = s["num_read_cmds"] + s["num_write_cmds"]
        hits = s["num_read_row_hits"] + s["num_write_row_hits"]
        ds_rate = hits / cmds if cmds else 0.0
        ds_bw = n * 64 / ((hi - first) * tck)
        print(
            f"| {trace} | {profile} | {n} | {100 * m['row_hit_rate']:.1f} % / {100 * ds_rate:.1f} % "
            f"| {m['bandwidth_gbs']:.2f} / {ds_bw:.2f} "
            f"| {m['mean_read_latency_cycles']:.1f} / {s['average_read_latency']:.1f} |"
        )


if __name__ == "__main__":
    main()
