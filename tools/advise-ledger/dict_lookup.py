# Python dict lookups for the advise ledger: a dict of N string keys, then K lookups of
# keys drawn at random (a fixed seed), half of them absent. CPython's own dict is the work.
# Usage: python3 dict_lookup.py N K. SPDX-License-Identifier: MIT OR Apache-2.0
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
k = int(sys.argv[2]) if len(sys.argv) > 2 else 4_000_000
d = {f"key{i * 7919:x}": i for i in range(n)}
rng = random.Random(1)
queries = [f"key{rng.randrange(2 * n) * 7919:x}" for _ in range(k)]
hits = 0
get = d.get
for q in queries:
    if get(q) is not None:
        hits += 1
print(hits)
