"""L2 TLB size × page size over the shared drmemtrace samples, drawn as a plot.

    pip install './crates/py[plot]'      # once, from the repository root
    python docs/sweep_l2.py [OUT.png]    # default: sweep-l2.png

The sweep is docs/sweep-l2.toml (2 traces × 2 page sizes × 4 L2 sizes, 16 points, on
every core); the plot shows page walks per million references against L2 entries.
"""

import pathlib
import sys

import mmulab

here = pathlib.Path(__file__).resolve().parent
df = mmulab.sweep(here / "sweep-l2.toml")
df["walks per M refs"] = df["walks.count"] * 1e6 / df["references"]
print(df[["param.trace", "param.os.page_size", "param.tlb.l2.entries", "walks.count", "walks per M refs"]])

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(7, 4))
for (trace, page), g in df.groupby(["param.trace", "param.os.page_size"]):
    ax.plot(g["param.tlb.l2.entries"], g["walks per M refs"], marker="o", label=f"{pathlib.Path(trace).name}, {page}")
ax.set_xscale("log", base=2)
ax.set_xlabel("L2 TLB entries")
ax.set_ylabel("page walks per million references")
ax.legend()
fig.tight_layout()
out = sys.argv[1] if len(sys.argv) > 1 else "sweep-l2.png"
fig.savefig(out)
print(f"wrote {out}")
