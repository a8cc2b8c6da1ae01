#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Cross-check mmulab's DRAM model against DRAMsim3 on request streams that
`mmulab sim --mem-trace` writes (issue 49; docs/memory.md, "Cross-check against
DRAMsim3"). Usage:

    python3 tools/dramsim3-check/check.py MMULAB DRAMSIM3_CHECKOUT [--refs N] [--only TEXT] [--skip TEXT]

MMULAB: the mmulab binary. DRAMSIM3_CHECKOUT: a checkout of umd-memsys/DRAMsim3 at
commit 29817593b3389f1337235d63cac515024ab8fd6e; it is built here (cmake, Release;
it vendors its dependencies, so no network is needed) unless build/dramsim3main exists.

For each stream: `mmulab sim` on the Raspberry Pi 5 machine (cortex-a76-pi5, DRAM
profile lpddr4x-4267-pi5) writes the requests that reach memory; their cycles (the
core's 2400 MHz clock) are converted to DRAM cycles (2133 MHz), and the same stream
is replayed open-loop by `mmulab dram` and by DRAMsim3 with
tests/data/dram/dramsim3/LPDDR4X_4267_pi5.ini. Compared: the span (first arrival to
the last completion; for DRAMsim3 found by bisection on its cycle count, to 0.2 %),
bandwidth (bytes over the span) and the mean read latency (DRAM cycles). A ratio
outside 0.9..1.1 is marked. Prints a Markdown table. --only TEXT: only the streams
whose name holds TEXT (e.g. "4 cores"); --skip TEXT: all but those.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INI = os.path.join(ROOT, "tests/data/dram/dramsim3/LPDDR4X_4267_pi5.ini")
CORE_MHZ, DRAM_MHZ, TCK_NS = 2400.0, 2133.0, 0.469
COMMIT = "29817593b3389f1337235d63cac515024ab8fd6e"

BASE = ["--machine", "cortex-a76-pi5", "--set", "os.zero_page=false", "--set", "dram.profile=lpddr4x-4267-pi5"]
TWO_RANKS = ["--set", "numa.fake=2", "--set", "numa.policy=interleave"]


def streams(refs):
    # (name, workload, extra sim arguments, keep writes)
    return [
        ("gups, 1 rank", f"gups:table=256MiB,refs={refs},init=off", [], True),
        ("gups, 1 rank, reads only", f"gups:table=256MiB,refs={refs},init=off", [], False),
        ("gups, 2 ranks", f"gups:table=256MiB,refs={refs},init=off", TWO_RANKS, True),
        ("gups, 4 cores, 1 rank", f"gups:table=256MiB,refs={refs},init=off,threads=4", [], True),
        ("gups, 4 cores, 1 rank, reads only", f"gups:table=256MiB,refs={refs},init=off,threads=4", [], False),
        ("gups, 4 cores, 2 ranks", f"gups:table=256MiB,refs={refs},init=off,threads=4", TWO_RANKS, True),
        ("stream, 1 rank", f"stream:size=16MiB,refs={refs}", [], True),
        ("stream, 4 cores, 1 rank", f"stream:size=16MiB,refs={refs},threads=4", [], True),
        ("stream, 2 ranks", f"stream:size=16MiB,refs={refs}", TWO_RANKS, True),
        ("chase, 1 rank", f"chase:pages=65536,refs={refs}", [], True),
        ("chase, 2 ranks", f"chase:pages=65536,refs={refs}", TWO_RANKS, True),
    ]


def build(checkout):
    exe = os.path.join(checkout, "build", "dramsim3main")
    if os.path.exists(exe):
        return exe, None
    t = time.time()
    subprocess.run(["cmake", "-S", checkout, "-B", os.path.join(checkout, "build"), "-DCMAKE_BUILD_TYPE=Release"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["make", "-C", os.path.join(checkout, "build"), "dramsim3main"], check=True, stdout=subprocess.DEVNULL)
    return exe, time.time() - t


def dramsim3(exe, trace, cycles, out):
    subprocess.run([exe, INI, "-t", trace, "-c", str(cycles), "-o", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "dramsim3.json")) as f:
        return json.load(f)["0"]


def ds3_span(exe, trace, n, guess):
    """Least cycle count after which DRAMsim3 has completed all n requests."""
    with tempfile.TemporaryDirectory() as out:
        done = lambda c: (lambda s: s["num_reads_done"] + s["num_writes_done"] >= n)(dramsim3(exe, trace, c, out))
        # Bracketed around mmulab's span (most streams agree within 10 %), widened
        # until it holds the answer.
        lo, hi = max(1, guess * 9 // 10), max(2, guess * 11 // 10)
        while not done(hi):
            lo, hi = hi, hi * 2
        while done(lo) and lo > 1:
            hi, lo = lo, lo // 2
        while (hi - lo) > max(1, hi // 500):
            mid = (lo + hi) // 2
            if done(mid):
                hi = mid
            else:
                lo = mid
        return hi, dramsim3(exe, trace, hi, out)


def main():
    args = sys.argv[1:]
    refs = "500K"
    if "--refs" in args:
        i = args.index("--refs")
        refs = args[i + 1]
        del args[i:i + 2]
    only = skip = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    if "--skip" in args:
        i = args.index("--skip")
        skip = args[i + 1]
        del args[i:i + 2]
    mmulab, checkout = args[:2]
    exe, secs = build(checkout)
    if secs is not None:
        print(f"DRAMsim3 {COMMIT[:12]} built in {secs:.0f} s\n")
    print("| stream | requests (writes) | span M cycles mmulab / DRAMsim3 | bandwidth GB/s mmulab / DRAMsim3 | mean read latency mmulab / DRAMsim3 | row hits mmulab / DRAMsim3 |")
    print("|---|---|---|---|---|---|")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, work, extra, writes in streams(refs):
            if (only is not None and only not in name) or (skip is not None and skip in name):
                continue
            raw, conv = os.path.join(tmp, "raw.trace"), os.path.join(tmp, "conv.trace")
            subprocess.run([mmulab, "sim", *BASE, *extra, "--workload", work, "--mem-trace", raw],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rows = []
            with open(raw) as f:
                for line in f:
                    a, k, c = line.split()
                    if k == "WRITE" and not writes:
                        continue
                    rows.append((int(int(c) * DRAM_MHZ / CORE_MHZ), a, k))
            rows.sort(key=lambda r: r[0])  # cores interleave; both sides read in order
            with open(conv, "w") as f:
                for c, a, k in rows:
                    f.write(f"{a} {k} {c}\n")
            n, nw = len(rows), sum(1 for r in rows if r[2] == "WRITE")
            m = json.loads(subprocess.run([mmulab, "dram", conv, "--profile", "lpddr4x-4267-pi5", "--json"],
                                          check=True, capture_output=True, text=True).stdout)
            first = rows[0][0]
            end, s = ds3_span(exe, conv, n, first + m["span_cycles"])
            ds_span = end - first
            ds_bw = n * 64 / (ds_span * TCK_NS)
            cmds = s["num_read_cmds"] + s["num_write_cmds"]
            ds_hits = (s["num_read_row_hits"] + s["num_write_row_hits"]) / cmds if cmds else 0.0
            pairs = [(m["span_cycles"], ds_span), (m["bandwidth_gbs"], ds_bw),
                     (m["mean_read_latency_cycles"], s["average_read_latency"])]
            marks = ["" if b and 0.9 <= a / b <= 1.1 else " **" for a, b in pairs]
            bad += sum(1 for x in marks if x)
            print(f"| {name} | {n} ({nw}) | {pairs[0][0] / 1e6:.3f} / {ds_span / 1e6:.3f}{marks[0]} "
                  f"| {pairs[1][0]:.2f} / {ds_bw:.2f}{marks[1]} | {pairs[2][0]:.1f} / {pairs[2][1]:.1f}{marks[2]} "
                  f"| {100 * m['row_hit_rate']:.1f} % / {100 * ds_hits:.1f} % |", flush=True)
    print(f"\n{bad} figure(s) outside 10 % (marked **)")


if __name__ == "__main__":
    main()
