"""The Python package against the CLI: the same results, the same validation, the GIL
released while simulating, and the Ray executor equal to the local pool point for point.

Run from the repository root after `pip install './crates/py[test]'` (docs/python.md).
The CLI tests use target/release/mmulab (or $MMULAB_BIN); Ray tests need Ray.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest

import mmulab

ROOT = pathlib.Path(__file__).resolve().parents[3]
DR = ROOT / "tests" / "data" / "drmemtrace"
BIN = pathlib.Path(os.environ.get("MMULAB_BIN", ROOT / "target" / "release" / "mmulab"))
SMALL = "gups:table=16MiB,refs=20k"

needs_bin = pytest.mark.skipif(not BIN.exists(), reason=f"{BIN} not built")


def cli(*args, cwd=None):
    env = dict(os.environ, MMULAB_PROGRESS="off", MMULAB_PYTHON=sys.executable)
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env)


@needs_bin
def test_sim_equals_the_cli_on_a_shared_trace():
    trace = DR / "x86_64-threadsig"
    got = mmulab.sim(machine="skylake", trace=trace, set=["tlb.stlb.entries=96"])
    out = cli("sim", "--machine", "skylake", "--trace", trace, "--set", "tlb.stlb.entries=96", "--json")
    assert out.returncode == 0, out.stderr
    want = json.loads(out.stdout)
    # The CLI's object also names its source and ends with its provenance (version,
    # commit) and the resolved configuration; the statistics are what must agree.
    for k in ("source", "mmulab", "config"):
        want.pop(k)
    assert got == want
    assert got["references"] > 0


@needs_bin
def test_mrc_equals_the_cli_and_lru_curves_never_rise():
    trace = DR / "x86_64-threadsig"
    got = mmulab.mrc(machine="skylake", trace=trace, max_entries=128, sets=[4])
    out = cli("mrc", "--machine", "skylake", "--trace", trace, "--max-entries", "128", "--sets", "4", "--json")
    assert out.returncode == 0, out.stderr
    want = json.loads(out.stdout)
    want.pop("source")
    assert got == want
    ratios = [p["miss_ratio"] for p in got["curve"]]
    assert len(ratios) == 128
    # LRU is a stack algorithm: a larger fully associative TLB never misses more.
    assert all(a >= b for a, b in zip(ratios, ratios[1:]))
    assert ratios[0] > ratios[-1]
    with pytest.raises(ValueError, match="no TLB level"):
        mmulab.mrc(machine="skylake", workload=SMALL, level="nope")


def test_a_config_as_dict_or_toml_text_is_the_same_machine():
    text = '[machine]\nname = "default"\n[[tlb]]\nname = "l2"\nentries = 512\n'
    as_dict = {"machine": {"name": "default"}, "tlb": [{"name": "l2", "entries": 512}]}
    a = mmulab.sim(text, workload=SMALL)
    b = mmulab.sim(as_dict, workload=SMALL)
    c = mmulab.sim(workload=SMALL, set={"tlb.l2.entries": 512})
    assert a == b == c
    # The override reached the machine: a smaller L2 misses more than the default's.
    d = mmulab.sim(workload=SMALL)
    assert a["tlb"]["l2"]["misses"] > d["tlb"]["l2"]["misses"]


def test_bad_configs_are_refused_by_the_rust_validation():
    with pytest.raises(ValueError, match="entires"):
        mmulab.sim(workload=SMALL, set=["tlb.l2.entires=512"])
    with pytest.raises(ValueError, match="exactly one"):
        mmulab.sim(workload=SMALL, trace="x")
    with pytest.raises(ValueError, match="does not exist"):
        mmulab.sim(trace="/nonexistent.trace.gz")
    with pytest.raises(ValueError, match="no None|TOML"):
        mmulab.sim({"machine": None}, workload=SMALL)


def test_machines_lists_the_catalog():
    names = [m["name"] for m in mmulab.machines()]
    assert "skylake" in names and "cortex-a15" in names
    assert all(isinstance(m["description"], str) for m in mmulab.machines())


SPEC = {
    "sweep": {"workload": SMALL, "set": ["os.policy=fixed"]},
    "params": {"os.page_size": ["4K", "2M"], "tlb.l2.entries": [256, 1024]},
}


def test_sweep_returns_one_row_per_point():
    df = mmulab.sweep(SPEC, jobs=2)
    # 2 × 2 points (a dict's parameters cross in name order, the last fastest).
    assert len(df) == 4
    assert list(df["param.tlb.l2.entries"]) == [256, 1024, 256, 1024]
    assert list(df["status"]) == ["ok"] * 4
    assert (df["references"] == 20000).all()
    # 2 MiB pages walk far less than 4 KiB pages on a 16 MiB table.
    small = df[df["param.os.page_size"] == "4K"]["walks.count"].min()
    large = df[df["param.os.page_size"] == "2M"]["walks.count"].max()
    assert large < small


@needs_bin
def test_sweep_equals_the_cli_sweep(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'[sweep]\nworkload = "{SMALL}"\nset = ["os.policy=fixed"]\n'
        '[params]\n"os.page_size" = ["4K", "2M"]\n"tlb.l2.entries" = [256, 1024]\n'
    )
    out = cli("sweep", spec, "-o", tmp_path / "r.csv")
    assert out.returncode == 0, out.stderr
    import pandas

    a = pandas.read_csv(tmp_path / "r.csv").drop(columns=["seconds", "error"])
    b = mmulab.sweep(spec).drop(columns=["seconds", "error"])
    assert list(a.columns) == list(b.columns)
    assert a.astype(str).equals(b.astype(str))


def test_the_gil_is_released_while_simulating():
    ticks = 0
    done = threading.Event()

    def run():
        mmulab.sim(workload="gups:table=1GiB,refs=30M")
        done.set()

    t = threading.Thread(target=run)
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    took = time.perf_counter() - start
    # With the GIL held the loop would not run until sim returned (a few ticks at most);
    # released, it ticks about once per millisecond throughout.
    assert took > 0.2, f"the simulation was too short ({took:.3f} s) to tell"
    assert ticks > 50, f"{ticks} ticks in {took:.3f} s: the GIL was held"




def test_ctrl_c_stops_a_run_within_a_second_with_its_partial_statistics():
    import signal

    # SIGINT to this process one second in: Python's handler raises KeyboardInterrupt in
    # the main thread, which sim() gives back within a second (it looks every 100 ms and
    # the run stops at its next batch), with the statistics of what ran attached.
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            mmulab.sim(workload="gups:table=8MiB,refs=2000M")
    finally:
        timer.cancel()
    took = time.perf_counter() - start
    assert took < 2.0, f"KeyboardInterrupt came {took - 1.0:.2f} s after the signal"
    stats = info.value.stats
    assert stats["complete"] is False
    assert 0 < stats["references"] < 2_000_000_000
    # The stop request is withdrawn: the next run goes to its end.
    after = mmulab.sim(workload="gups:table=8MiB,refs=10k")
    assert "complete" not in after and after["references"] == 10_000


def _interrupt_after(seconds, call):
    """Runs ``call`` with SIGINT sent to this process ``seconds`` in; returns the
    KeyboardInterrupt it raised and how long after the signal it came."""
    timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            call()
    finally:
        timer.cancel()
    return info.value, time.perf_counter() - start - seconds


def test_ctrl_c_stops_mrc_with_the_partial_curves():
    e, late = _interrupt_after(1.0, lambda: mmulab.mrc(workload="gups:table=8MiB,refs=2000M", max_entries=64))
    assert late < 1.0, f"KeyboardInterrupt came {late:.2f} s after the signal"
    assert e.curves["complete"] is False
    assert 0 < e.curves["references"] < 2_000_000_000
    assert len(e.curves["curve"]) == 64
    # The stop request is withdrawn: the next pass goes to its end.
    after = mmulab.mrc(workload="gups:table=8MiB,refs=10k", max_entries=8)
    assert after["complete"] is True


def test_ctrl_c_stops_a_sweep_with_the_finished_rows():
    # One thread, two points in order: the first (10k references) finishes, the second
    # (2G) is stopped and left out.
    spec = {
        "sweep": {"mode": "zip"},
        "params": {"workload": ["gups:table=8MiB,refs=10k", "gups:table=8MiB,refs=2000M"]},
    }
    e, late = _interrupt_after(1.5, lambda: mmulab.sweep(spec, jobs=1))
    assert late < 1.0, f"KeyboardInterrupt came {late:.2f} s after the signal"
    assert list(e.rows["references"]) == [10_000]


def _ray_available():
    try:
        import ray  # noqa: F401

        return True
    except ImportError:
        return False


needs_ray = pytest.mark.skipif(not _ray_available(), reason="Ray is not installed")


@needs_ray
def test_ray_equals_the_local_pool_point_for_point():
    local = mmulab.sweep(SPEC, jobs=2).drop(columns=["seconds"])
    remote = mmulab.sweep(SPEC, executor="ray").drop(columns=["seconds"])
    assert list(remote["point"]) == list(local["point"])
    assert remote.astype(str).equals(local.astype(str))


@needs_ray
@needs_bin
def test_cli_ray_executor_equals_the_local_pool_and_an_unreachable_cluster_is_named(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nworkload = "{SMALL}"\n[params]\n"tlb.l2.entries" = [128, 256, 512]\n')
    ok = cli("sweep", spec, "-o", tmp_path / "local.csv")
    assert ok.returncode == 0, ok.stderr
    out = cli("sweep", spec, "-o", tmp_path / "ray.csv", "--executor", "ray", "--python", sys.executable)
    assert out.returncode == 0, out.stderr
    import pandas

    a = pandas.read_csv(tmp_path / "local.csv").drop(columns=["seconds"])
    b = pandas.read_csv(tmp_path / "ray.csv").drop(columns=["seconds"])
    assert a.astype(str).equals(b.astype(str))
    bad = cli("sweep", spec, "-o", tmp_path / "bad.parquet", "--executor", "ray", "--address", "127.0.0.1:9",
              "--python", sys.executable)
    assert bad.returncode != 0
    assert "cannot reach the Ray cluster at 127.0.0.1:9" in bad.stderr, bad.stderr
    assert "no results file was written" in bad.stderr
    assert not list(tmp_path.glob("bad.parquet*")), "no half-written result file"
