"""Ray executor of mmulab sweeps: each point a Ray task.

``mmulab sweep SPEC --executor ray [--address HOST:PORT]`` runs
``python3 -m mmulab.sweep_ray [--address HOST:PORT]``: the points arrive as a JSON array
on stdin and each finished row leaves as one JSON line on stdout, in the order the rows
finish. Anything else (Ray's own logging) goes to stderr. A failure ends with one line
``mmulab: MESSAGE`` on stderr and exit status 3.
"""

import json
import os
import socket
import sys

from . import _native


class ClusterError(Exception):
    """The Ray cluster could not be reached or started."""


def _reachable(address):
    """Raises ClusterError unless something listens at HOST:PORT (fails fast, before
    Ray's own retries)."""
    host, _, port = address.rpartition(":")
    if address.startswith("ray://"):
        host, _, port = address[len("ray://"):].rpartition(":")
    try:
        port = int(port)
    except ValueError:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: the address must be HOST:PORT") from None
    try:
        with socket.create_connection((host or "127.0.0.1", port), timeout=5):
            pass
    except OSError as e:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {e.strerror or e} "
            "(is `ray start --head` running there? check the address and port)"
        ) from None


def _run_point(point_json):
    return _native.run_point(point_json)


def run(points, address=None):
    """Runs `points` (dicts from the native `expand`) as Ray tasks on the cluster at
    `address` (or a local one); yields each row (a dict) as it finishes."""
    try:
        import ray
    except ImportError:
        raise ClusterError("Ray is not installed: pip install 'ray>=2.9' (docs/python.md)") from None
    if address and address != "auto":
        _reachable(address)
    try:
        started = not ray.is_initialized()
        if started:
            ray.init(address=address, log_to_driver=False, include_dashboard=False)
    except Exception as e:  # Ray raises several kinds (ConnectionError, RuntimeError...)
        where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
        raise ClusterError(f"cannot reach {where}: {e}") from None
    try:
        task = ray.remote(_run_point)
        pending = [task.remote(json.dumps(p)) for p in points]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield json.loads(ray.get(ref))
    finally:
        if started:
            ray.shutdown()


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="python3 -m mmulab.sweep_ray", description=__doc__)
    ap.add_argument("--address", help="HOST:PORT of a Ray cluster's head (default: start a local one)")
    args = ap.parse_args(argv)
    # Rows go to the real stdout; everything else printed in this process to stderr.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        points = json.load(sys.stdin)
        # Through the imported module, not __main__, so that Ray ships the task by
        # reference to the installed package.
        from mmulab import sweep_ray

        for row in sweep_ray.run(points, args.address):
            out.write(json.dumps(row) + "\n")
    except (ClusterError, sys.modules[__name__].ClusterError) as e:
        print(f"mmulab: {e}", file=sys.stderr)
        return 3
    except Exception as e:  # a failure of the driver itself: say what it was
        print(f"mmulab: the Ray driver failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
