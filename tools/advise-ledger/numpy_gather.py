# numpy gather for the advise ledger: an int64 array of 2^LOG2 elements (27: 1 GiB),
# then GATHERS reads at random indices (numpy's fancy indexing: one gather, summed).
# Usage: python3 numpy_gather.py LOG2 GATHERS. SPDX-License-Identifier: MIT OR Apache-2.0
import sys

import numpy as np

lg = int(sys.argv[1]) if len(sys.argv) > 1 else 27
k = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000_000
n = 1 << lg
a = np.arange(n, dtype=np.int64)
rng = np.random.default_rng(1)
total = 0
# In chunks, so that the index array stays small beside the table.
chunk = 1 << 22
done = 0
while done < k:
    m = min(chunk, k - done)
    idx = rng.integers(0, n, size=m, dtype=np.int64)
    total += int(a[idx].sum())
    done += m
print(total)
