"""mmulab from Python: the simulator and the sweep engine of the mmulab CLI.

``sim`` runs one configuration, ``sweep`` a spec of many (a pandas DataFrame, one row
per point), ``mrc`` computes one-pass miss-ratio curves, ``machines`` lists the machine
catalog. Configs and specs are dicts or TOML
text, validated by the same Rust code as the CLI's; simulations run with the GIL
released. docs/python.md documents every function.
"""

import json
import os

from . import _native

__version__ = _native.__version__
__all__ = ["sim", "sweep", "mrc", "machines"]


def _toml(value, what):
    """TOML text of a dict or a TOML string (None stays None)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _native.toml_of_json(json.dumps(value))
    raise TypeError(f"{what} must be a dict or TOML text, not {type(value).__name__}")


def _sets(set):
    if set is None:
        return []
    if isinstance(set, dict):
        return [f"{k}={_toml({'v': v}, 'set')[4:].strip()}" for k, v in set.items()]
    return list(set)


def _run_args(config, machine, workload, trace, set, format):
    """The leading arguments both native runs take (config, machine, sets, workload,
    trace, format), checked: exactly one of workload and trace."""
    if (workload is None) == (trace is None):
        raise ValueError("give exactly one of workload= and trace=")
    return (
        _toml(config, "config"),
        machine,
        _sets(set),
        workload,
        None if trace is None else os.fspath(trace),
        format,
    )


def sim(config=None, *, machine=None, workload=None, trace=None, set=None, format="auto"):
    """Simulates one configuration; returns the statistics ``mmulab sim --json`` prints.

    config: a config dict or TOML text (docs/config.md), laid over ``machine`` (a
    catalog name or machine file) or, with neither, the built-in default machine.
    workload (e.g. ``"gups:table=64MiB,refs=1M"``) or trace (a path): exactly one.
    set: overrides as ``--set`` takes them, a list of ``"key=value"`` or a dict.

    Ctrl-C (KeyboardInterrupt) stops the run within a second, at its next batch; the
    exception carries the statistics of the references simulated as ``e.stats``
    (``"complete": False``).
    """
    with _partial("stats", json.loads):
        out = _native.sim(*_run_args(config, machine, workload, trace, set, format))
    return json.loads(out)


class _partial:
    """Attaches what an interrupted run finished to its KeyboardInterrupt as ``e.NAME``
    (the native call raises it as ``(message, json)``)."""

    def __init__(self, name, convert):
        self.name, self.convert = name, convert

    def __enter__(self):
        return self

    def __exit__(self, kind, e, tb):
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            if len(e.args) == 2 and isinstance(e.args[1], str):
                setattr(e, self.name, self.convert(e.args[1]))
                e.args = (e.args[0],)
        return False


def mrc(
    config=None,
    *,
    machine=None,
    workload=None,
    trace=None,
    set=None,
    format="auto",
    level=None,
    page_size=None,
    max_entries=4096,
    sets=(),
    sample=None,
):
    """Miss-ratio curves of one TLB level in one pass, as ``mmulab mrc --json`` prints
    them (docs/mrc.md): a dict with ``curve`` (``[{"entries", "misses", "miss_ratio"}]``
    for every size 1..``max_entries``), ``set_associative`` (one curve per set count in
    ``sets``) and ``sampled`` (SHARDS at rate ``sample``, with its error).

    config, machine, workload, trace, set, format: as for ``sim``. level: the TLB level
    (default: the one data references enter). page_size: the size every reference is
    translated at (default: the one size the OS policy maps).

    Ctrl-C (KeyboardInterrupt) stops the pass within a second; the exception carries
    the curves of the references read as ``e.curves`` (``"complete": False``).
    """
    with _partial("curves", json.loads):
        out = _native.mrc(
            *_run_args(config, machine, workload, trace, set, format),
            level,
            page_size,
            max_entries,
            list(sets),
            sample,
        )
    return json.loads(out)


def _spec(spec):
    """(TOML text, base directory) of a spec given as a dict, TOML text or a file path."""
    if isinstance(spec, dict):
        return _toml(spec, "spec"), os.getcwd()
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and spec.endswith(".toml") and "\n" not in spec):
        path = os.fspath(spec)
        with open(path, encoding="utf-8") as f:
            return f.read(), os.path.dirname(os.path.abspath(path))
    if isinstance(spec, str):
        return spec, os.getcwd()
    raise TypeError(f"spec must be a dict, TOML text or a .toml path, not {type(spec).__name__}")


def _frame(rows_json):
    import pandas

    t = json.loads(_native.table(rows_json))
    return pandas.DataFrame(t["rows"], columns=t["columns"])


def sweep(spec, *, jobs=None, executor="local", address=None):
    """Runs a sweep spec (docs/sweep.md) and returns a pandas DataFrame, one row per
    point in spec order, with the columns of ``mmulab sweep``'s results file.

    spec: a dict, TOML text or the path of a .toml file (relative paths in it are taken
    from its directory; for a dict or text, from the current directory).
    executor: ``"local"`` (threads, ``jobs`` of them, default every core) or ``"ray"``
    (each point a Ray task on the cluster at ``address``, or a local one).

    Ctrl-C (KeyboardInterrupt) with the local executor stops the running points within a
    second; the exception carries the rows of the points that finished as ``e.rows`` (a
    DataFrame).
    """
    text, base = _spec(spec)
    if executor == "local":
        with _partial("rows", _frame):
            out = _native.sweep(text, base, jobs)
        return _frame(out)
    if executor == "ray":
        from . import sweep_ray

        points = json.loads(_native.expand(text, base))
        rows = list(sweep_ray.run(points, address))
        return _frame(json.dumps(rows))
    raise ValueError(f'executor must be "local" or "ray", not {executor!r}')


def machines():
    """The machine catalog: a list of ``{"name", "description"}`` dicts."""
    return json.loads(_native.machines())
