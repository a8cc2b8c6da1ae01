# Renders the advise ledger (tools/advise-ledger/ledger.sh) from what it saved in OUT:
# OUT/ledger.md (the machine, the table, the summary, notes) and OUT/summary.json.
# SPDX-License-Identifier: MIT OR Apache-2.0
#
#   python3 gen.py OUT                     write OUT/ledger.md and OUT/summary.json, print
#                                          the markdown
#   python3 gen.py OUT --splice FILE.md    also put the table in FILE.md, between the line
#                                          `<!-- ledger-table -->` and `<!-- /ledger-table -->`
#                                          (added after it the first time)
#
# Points off = (predicted − measured speed-up) × 100; "within 10 points" is |off| ≤ 10.
# Inside = predicted.low ≤ measured ≤ predicted.high (the 90 % interval advise prints).
# A program that failed, or whose prediction advise withheld, counts as a miss in both.
import glob
import json
import os
import sys

START, END = "<!-- ledger-table -->", "<!-- /ledger-table -->"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def mib(b):
    if b is None:
        return "?"
    return "0" if b == 0 else "%.0f MiB" % (b / 2**20) if b >= 2**20 else "%.1f MiB" % (b / 2**20)


def fmt_load(v):
    return "?" if v is None else "%.2f" % v


def row_of(meta, adv):
    """One program's row as a dict (the JSON summary) with its markdown cells."""
    r = {
        "index": meta.get("index"),
        "name": meta.get("name"),
        "kind": meta.get("kind"),
        "gain_candidate": meta.get("gain_candidate"),
        "what": meta.get("what"),
        "status": meta.get("status"),
        "reason": meta.get("reason") or None,
        "command": meta.get("command"),
        "recorder": meta.get("recorder"),
        "elapsed_s": meta.get("elapsed_s"),
        "started": meta.get("started"),
        "ended": meta.get("ended"),
        "load_before": meta.get("load_before"),
        "load_after": meta.get("load_after"),
    }
    if adv is None:
        return r
    m, p, ps = adv["measured"], adv["predicted"], adv["page_sizes"]
    hp = p.get("huge_pages") or {}
    thp_mins = [b for _, b in ps.get("thp_anon_huge_min") or []]
    withheld = p.get("withheld")
    r.update(
        measured=m["speedup"],
        measured_low=m["low"],
        measured_high=m["high"],
        pairs=m["runs"],
        ratios=m.get("ratios"),
        measured_median_low=m.get("median_low"),
        measured_median_high=m.get("median_high"),
        predicted=None if withheld else p["speedup"],
        predicted_low=None if withheld else p["low"],
        predicted_high=None if withheld else p["high"],
        withheld=withheld,
        no_gain=p.get("no_gain"),
        anon_huge_4k_max=ps.get("base_anon_huge_max"),
        anon_huge_thp_min=min(thp_mins) if thp_mins else None,
        anon_huge_thp_peak=ps.get("thp_anon_huge_peak"),
        anon_max=ps.get("anon_max"),
        thp_verified=ps.get("thp_verified"),
        simulated_huge_bytes=hp.get("simulated_bytes"),
        huge_pages_agree=hp.get("agree"),
        huge_pages_note=hp.get("note"),
        recording=(adv.get("recording") or {}).get("method"),
        recording_windows=(adv.get("recording") or {}).get("windows"),
        advise_load=adv.get("load_average"),
        verdict=adv.get("verdict"),
        translation_share=adv.get("translation_share"),
        protocol=adv.get("protocol"),
    )
    b = p.get("bloat") or {}
    pr = adv.get("proposal") or {}
    pm = pr.get("measured") or {}
    r.update(
        rss_4k=m.get("rss_4k"),
        rss_thp=m.get("rss_thp"),
        bloat_measured=b.get("measured_extra_bytes"),
        bloat_predicted=b.get("predicted_extra_bytes"),
        bloat_error_pct_of_rss=b.get("error_pct_of_rss"),
        proposal_regions=len(pr.get("regions") or []),
        proposal_speedup=pr.get("speedup"),
        proposal_rss=pr.get("rss"),
        proposal_thp_speedup=pm.get("thp_speedup"),
        proposal_gain_kept=pm.get("gain_kept"),
        proposal_extra_rss_share=pm.get("extra_rss_share"),
        proposal_not_measured=pr.get("not_measured"),
    )
    if not withheld:
        r["points_off"] = (p["speedup"] - m["speedup"]) * 100.0
        r["within_10"] = abs(r["points_off"]) <= 10.0
        r["inside"] = p["low"] <= m["speedup"] <= p["high"]
    return r


def cells(r):
    name = "`%s`" % r["name"] + (" (ours)" if r["kind"] == "ours" else "") + (" ◆" if r["gain_candidate"] else "")
    load = "%s → %s" % (fmt_load(r["load_before"]), fmt_load(r["load_after"])) if r["status"] != "skipped" else ""
    if r["status"] != "ok":
        why = r.get("reason") or r["status"]
        return [name, "%s: %s" % (r["status"], why.replace("|", "\\|")[:160]), "", "", "", "", "", "", load]
    meas = "%.3f (%.3f–%.3f, %d)" % (r["measured"], r["measured_low"], r["measured_high"], r["pairs"])
    if r.get("measured_median_low") is not None:
        meas += " [%.3f–%.3f]" % (r["measured_median_low"], r["measured_median_high"])
    if r["withheld"]:
        pred, off, inside = "withheld", "—", "no"
    else:
        pred = "%.3f [%.3f–%.3f]" % (r["predicted"], r["predicted_low"], r["predicted_high"])
        off = "%+.1f" % r["points_off"]
        if not r["within_10"]:
            off = "**%s**" % off
        inside = "yes" if r["inside"] else "**no**"
    thp = mib(r["anon_huge_thp_peak"])
    if r["anon_huge_thp_min"] is not None and r["anon_huge_thp_min"] != r["anon_huge_thp_peak"]:
        thp = "%s–%s" % (mib(r["anon_huge_thp_min"]), thp)
    if r.get("thp_verified") is False:
        thp += " (none)"
    return [name, meas, pred, off, inside, mib(r["anon_huge_4k_max"]), thp, mib(r["simulated_huge_bytes"]), load]


def memory_cells(r):
    """The memory and proposal row (issue 50): RSS of each way, THP's extra RSS measured
    and predicted, and the proposal measured (third way) or why not."""
    def pct(x):
        return "—" if x is None else "%.0f %%" % (x * 100)
    err = r.get("bloat_error_pct_of_rss")
    extra = "%s / %s%s" % (mib(r.get("bloat_measured")), mib(r.get("bloat_predicted")),
                           "" if err is None else " (%+.1f %% of RSS)" % err)
    if r.get("proposal_speedup") is not None:
        prop = "%.3f (THP %.3f in the same rounds), %d region(s)" % (
            r["proposal_speedup"], r["proposal_thp_speedup"], r["proposal_regions"])
        kept, share = pct(r.get("proposal_gain_kept")), pct(r.get("proposal_extra_rss_share"))
    else:
        prop = "not run: %s" % (r.get("proposal_not_measured") or "?").replace("|", "\\|")[:120]
        kept = share = "—"
    return ["`%s`" % r["name"], mib(r.get("rss_4k")), mib(r.get("rss_thp")), extra, prop, kept, share,
            mib(r.get("proposal_rss"))]


MEM_HEAD = [
    "program",
    "peak RSS 4K",
    "peak RSS THP",
    "THP extra RSS measured / predicted",
    "proposal speed-up",
    "gain kept",
    "extra RSS share",
    "peak RSS proposal",
]

HEAD = [
    "program",
    "measured 4K → THP (min–max, pairs) [median's interval]",
    "predicted [90 % interval]",
    "points off",
    "inside",
    "AnonHugePages 4K way",
    "AnonHugePages THP way",
    "simulated huge",
    "load (1 min) before → after",
]


def render(out):
    machine = load(os.path.join(out, "machine.json")) or {}
    calib = load(os.path.join(out, "calibration.json"))
    rows = []
    for mf in glob.glob(os.path.join(out, "*.meta.json")):
        meta = load(mf)
        if not meta or meta.get("status") == "native":
            continue
        adv = load(os.path.join(out, meta["name"] + ".json")) if meta.get("status") == "ok" else None
        if meta.get("status") == "ok" and adv is None:
            meta = dict(meta, status="failed", reason="its JSON is missing or unreadable")
        rows.append(row_of(meta, adv))
    rows.sort(key=lambda r: (r["index"] or 0, r["name"]))

    counted = [r for r in rows if r["status"] != "skipped"]
    n = len(counted)
    within = sum(1 for r in counted if r.get("within_10"))
    inside = sum(1 for r in counted if r.get("inside"))
    third = [r for r in counted if r["kind"] != "ours"]
    gains = [r["name"] for r in counted if r.get("measured") is not None and r["measured"] >= 1.2]
    summary = "within 10 points: %d/%d; inside interval: %d/%d" % (within, n, inside, n)

    md = []
    md.append("Machine: %s (family %s, model %s), %s CPUs, %.1f GiB, kernel %s, virtualization: %s; THP enabled `%s`, defrag `%s`."
              % (machine.get("cpu", "?"), machine.get("cpu_family", "?"), machine.get("cpu_model", "?"),
                 machine.get("cpus", "?"), (machine.get("mem_total_kib") or 0) / 2**20, machine.get("kernel", "?"),
                 machine.get("virtualization", "?"), machine.get("thp_enabled", "?"), machine.get("thp_defrag", "?")))
    times = sorted(t for r in rows for t in (r.get("started"), r.get("ended")) if t)
    span = "; programs run %s – %s UTC" % (times[0].replace("T", " ").rstrip("Z"), times[-1].replace("T", " ").rstrip("Z")) if times else ""
    md.append("Ledger: %s mode, recorder %s, mmulab %s (binary built %s)%s%s."
              % (machine.get("mode", "?"), machine.get("recorder", "?"), machine.get("mmulab_commit", "?"),
                 machine.get("mmulab_built", "?"),
                 ", ADVISE_ARGS `%s`" % machine["advise_args"] if machine.get("advise_args") else "", span))
    if calib and calib.get("model"):
        mo = calib["model"]
        held = ""
        if mo.get("holdout_error_pp") is not None:
            held = "; held out %.1f mean, %.1f worst" % (mo["holdout_error_pp"], mo.get("holdout_error_max_pp") or 0)
        md.append("Runtime model (calibrated at the start): speed-up error in-sample %.1f points mean, %.1f worst%s."
                  % (mo.get("speedup_error_pp", float("nan")), mo.get("speedup_error_max_pp", float("nan")), held))
    md.append("")
    md.append("| " + " | ".join(HEAD) + " |")
    md.append("|" + "---|" * len(HEAD))
    for r in rows:
        md.append("| " + " | ".join(cells(r)) + " |")
    md.append("")
    md.append("%s (third-party: within 10 points %d/%d, inside %d/%d); measured gain ≥ 20 %%: %d (%s)."
              % (summary, sum(1 for r in third if r.get("within_10")), len(third),
                 sum(1 for r in third if r.get("inside")), len(third), len(gains), ", ".join(gains) or "none"))
    ok = [r for r in counted if r["status"] == "ok"]
    if ok:
        md.append("")
        md.append("Memory and the proposal (issue 50): THP's extra peak RSS, measured and predicted; the "
                  "proposal (THP on the regions advise chose) run a third way beside 4 KiB and full THP.")
        md.append("")
        md.append("| " + " | ".join(MEM_HEAD) + " |")
        md.append("|" + "---|" * len(MEM_HEAD))
        for r in ok:
            md.append("| " + " | ".join(memory_cells(r)) + " |")
        big = [r for r in ok if (r.get("measured") or 0) >= 1.1]
        ran = [r for r in big if r.get("proposal_gain_kept") is not None]
        # Full THP's extra RSS under one huge page (2 MiB) leaves the proposal nothing to
        # save: "≤ 50 % of it" is then not judged (the share is null or noise), said apart.
        m2 = 2 << 20
        costly = [r for r in ran if (r.get("bloat_measured") or 0) >= m2]
        met = [r for r in ran if r["proposal_gain_kept"] >= 0.8
               and (r not in costly or (r.get("proposal_extra_rss_share") or 0) <= 0.5)]
        none = [r["name"] for r in big if r.get("proposal_gain_kept") is None]
        bl = [r for r in ok if r.get("bloat_predicted") is not None and r.get("bloat_measured") is not None]
        tol = lambda r: max(0.1 * abs(r["bloat_measured"]), m2)
        rel = sum(1 for r in bl if abs(r["bloat_predicted"] - r["bloat_measured"]) <= tol(r))
        of_rss = sum(1 for r in bl if abs(r.get("bloat_error_pct_of_rss") or 0) <= 10)
        md.append("")
        md.append("THP gain ≥ 10 %%: %d program(s); not measured (nothing to choose, or why in the table): %d (%s); "
                  "proposal measured on %d, of which %d keep ≥ 80 %% of the gain with ≤ 50 %% of the extra RSS "
                  "(%d of them cost full THP 2 MiB or more, the others nothing to halve). THP's extra RSS "
                  "predicted within 10 %% of the measured extra or 2 MiB, the larger: %d/%d (within 10 %% of the "
                  "4 KiB RSS: %d/%d)."
                  % (len(big), len(none), ", ".join(none) or "none", len(ran), len(met),
                     len([r for r in met if r in costly]), rel, len(bl), of_rss, len(bl)))
    md.append("")
    md.append("◆ expected to gain ≥ 20 % (large random-access work). Points off: predicted − measured, "
              "bold beyond 10; inside: the measured speed-up within the predicted 90 % interval. "
              "AnonHugePages: the largest seen in a 4 KiB run; in the THP runs, the least–most of their peaks; "
              "simulated huge: the bytes the simulated THP run mapped with 2 MiB pages.")
    notes = []
    for r in rows:
        if r["status"] == "skipped":
            notes.append("- `%s`: skipped (%s)." % (r["name"], r.get("reason")))
        elif r["status"] != "ok":
            notes.append("- `%s`: %s (%s)." % (r["name"], r["status"], r.get("reason")))
        else:
            bits = []
            if r.get("withheld"):
                bits.append("prediction withheld: " + r["withheld"])
            if r.get("no_gain"):
                bits.append("no gain predicted: " + r["no_gain"])
            if r.get("huge_pages_agree") is False and r.get("huge_pages_note"):
                bits.append("huge pages: " + r["huge_pages_note"])
            if r.get("recorder") and "failed" in str(r["recorder"]):
                bits.append("recorded by " + r["recorder"])
            if bits:
                notes.append("- `%s`: %s." % (r["name"], "; ".join(b.rstrip(".") for b in bits)))
    if notes:
        md.append("")
        md.extend(notes)
    md.append("")
    md.append("Commands (in the ledger's OUT directory):")
    md.append("")
    for r in rows:
        if r.get("command"):
            md.append("- `%s`: `%s`" % (r["name"], " ".join(short(out, a) for a in r["command"])))
    text = "\n".join(md) + "\n"

    with open(os.path.join(out, "ledger.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"machine": machine, "summary": summary, "n": n, "within_10": within, "inside": inside,
                   "gain_20": gains, "rows": rows}, f, indent=1)
    return text


def short(out, a):
    """A command word with OUT and the repository shortened, so that the table reads anywhere."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return a.replace(out + "/", "OUT/").replace(repo + "/", "")


def splice(path, text):
    """Puts `text` in the markdown file between the lines START and END (whole lines: the
    markers may also be quoted in prose)."""
    with open(path) as f:
        lines = f.read().split("\n")
    starts = [i for i, l in enumerate(lines) if l.strip() == START]
    if len(starts) != 1:
        sys.exit("gen.py: %s needs exactly one line %s (found %d)" % (path, START, len(starts)))
    a = starts[0]
    ends = [i for i, l in enumerate(lines) if i > a and l.strip() == END]
    b = ends[0] if ends else a
    new = lines[:a + 1] + text.rstrip("\n").split("\n") + [END] + lines[b + 1:]
    with open(path, "w") as f:
        f.write("\n".join(new))


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit("usage: gen.py OUT [--splice FILE.md]")
    out = os.path.abspath(args[0])
    text = render(out)
    sys.stdout.write(text)
    if len(args) >= 3 and args[1] == "--splice":
        splice(args[2], text)


if __name__ == "__main__":
    main()
