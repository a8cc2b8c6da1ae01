# Python dictionary workload for docs/advise.md: build a dict of N ints, then random
# lookups. Usage: python3 dict_workload.py N LOOKUPS. MIT OR Apache-2.0.
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
k = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
rng = random.Random(1)
d = {i * 7919: i for i in range(n)}
hits = 0
for _ in range(k):
    if rng.randrange(n * 2) * 7919 // 2 in d:
        hits += 1
print(hits)
