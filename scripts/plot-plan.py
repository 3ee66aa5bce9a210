#!/usr/bin/python3
"""Plot of `maprect plan --json` predictions beside Stan's published scaling.

usage: plot-plan.py PLAN.json [PLAN.json ...] -o FILE.png

Left: predicted time per gradient against ranks, one line per file (its model and size), the limiting bound
marked on each point (o compute, s balance, ^ messages, x root). Right: the same times relative to each
line's time at 256 ranks, beside Stan's map_rect over MPI as published (0.35 s per gradient on 300 cores,
0.40 s on 700), relative to its 300-core time: above 1 means more ranks made a gradient slower.
"""
import argparse
import json
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot-plan.py: matplotlib not found; install python3-matplotlib and run with /usr/bin/python3")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MARKERS = {"compute": "o", "balance": "s", "messages": "^", "root": "x"}
STAN = [(300, 0.35), (700, 0.40)]  # cores, seconds per gradient
REFERENCE_RANKS = 256


def label_of(doc):
    return doc["model"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    docs = [json.load(open(f)) for f in args.files]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for doc in docs:
        rows = doc["predictions"]
        ranks = [r["ranks"] for r in rows]
        us = [r["us_per_gradient"] for r in rows]
        line, = left.plot(ranks, us, label=label_of(doc))
        for r in rows:
            left.plot(r["ranks"], r["us_per_gradient"], MARKERS[r["bound"]], color=line.get_color())
        ref = next((r["us_per_gradient"] for r in rows if r["ranks"] == REFERENCE_RANKS), None)
        if ref:
            right.plot(ranks, [u / ref for u in us], color=line.get_color(), label=label_of(doc))
    right.plot([c for c, _ in STAN], [t / STAN[0][1] for _, t in STAN], "k*--", markersize=12,
               label="Stan map_rect, MPI (published): 0.35 s @ 300, 0.40 s @ 700 cores")
    links = docs[0]["inputs"]["remote"]
    left.set_title(f"predicted time per gradient; between hosts alpha {links['alpha_us']:.1f} us, "
                   f"{links['beta_gbs']:.0f} GB/s, {docs[0]['inputs']['ranks_per_host']} ranks/host", fontsize=9)
    right.set_title(f"time relative to {REFERENCE_RANKS} ranks (Stan: to 300 cores)", fontsize=9)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks P (T = 1 thread each)")
        ax.grid(True, which="both", alpha=0.3)
    left.set_yscale("log")
    left.set_ylabel("us per gradient")
    right.set_ylabel("time / time at reference")
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set_xlim(32, 1400)  # where the many-rank curves bend, and Stan's two points
    right.set_ylim(0.3, 30)
    right.set_yscale("log")
    handles = [plt.Line2D([], [], marker=m, color="grey", linestyle="", label=f"bound: {b}") for b, m in MARKERS.items()]
    left.legend(handles=left.get_legend_handles_labels()[0] + handles, fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
