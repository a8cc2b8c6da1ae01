#!/usr/bin/env python3
"""The Cortex-A15's 33-page row (docs/catalog.md, "The 33-page row"): L1 data TLB
refills per load of tlb_test's cyclic sweep over N pages, for a 32-entry fully
associative L1 under replacement models, against the readme's perf counts (seed 002:
dTLB-load-misses, which Linux maps to the A15's L1 DTLB read refill event 0x4C).

One load issues per slot. A miss's refill lands D slots later; loads that hit meanwhile
proceed (hit under miss); a load that misses while a refill is in flight waits for it.
  lru          the LRU entry is replaced (D = 1: the refill lands before the next load)
  lru-at-miss  the way is chosen when the miss is detected (the LRU entry then) and
               overwritten when the refill lands; the old entry still serves hits
  lru-at-fill  the LRU entry when the refill lands
  random       a uniformly random entry (seeded)
Run: python3 tools/a15-l1-refill.py  (standard library only; a few seconds)
"""
import random

SEED = {32: 70_292 / 1.000545e9, 33: 0.048, 40: 0.956, 48: 1.000}
K = 32


def refills_per_load(n, policy, d=1, laps=2000, warm=50):
    rng = random.Random(1)
    order = []  # least recently used first
    pending = None  # (lands at, page, victim chosen at the miss)
    misses = t = i = 0
    total = laps * n
    while i < total:
        if pending and pending[0] <= t:
            _, page, v = pending
            pending = None
            if len(order) >= K:
                if policy == "lru-at-miss" and v in order:
                    order.remove(v)
                elif policy == "random":
                    order.pop(rng.randrange(len(order)))
                else:
                    order.pop(0)
            order.append(page)
        page = i % n
        if page in order:
            if policy != "random":
                order.remove(page)
                order.append(page)
            i += 1
            t += 1
            continue
        if pending:
            t = pending[0]
            continue
        if i >= warm * n:
            misses += 1
        pending = (t + d, page, order[0] if len(order) >= K else None)
        i += 1
        t += 1
    return misses / (total - warm * n)


if __name__ == "__main__":
    pages = [32, 33, 34, 40, 48]
    print("model              D  " + "".join(f"{n:>8}" for n in pages))
    print("readme (perf)         " + "".join(f"{SEED[n]:8.3f}" if n in SEED else "       -" for n in pages))
    for policy, ds in [("lru", [1]), ("random", [1]), ("lru-at-miss", [2, 4, 8]), ("lru-at-fill", [2, 4, 8, 20])]:
        for d in ds:
            row = "".join(f"{refills_per_load(n, policy, d):8.3f}" for n in pages)
            print(f"{policy:<17}{d:>3}  {row}")
