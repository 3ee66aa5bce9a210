#!/usr/bin/python3
"""Plots of `maprect bench --json` results.

usage: plot-bench.py BENCH.json [BENCH.json ...] -o DIR

Writes to DIR:
  time-vs-work.png      median time per gradient against work per call (J*N points), one line per backend,
                        one panel per kernel (from the file with the most ranks)
  speedup-vs-ranks.png  cluster speedup over in_process against ranks, one line per size, one panel per
                        kernel (one file per rank count; a 1-rank run counts as speedup 1)
  overhead-vs-floor.png cluster time per gradient next to the raw MPI floor of the same messages, per size,
                        with the ratio above each pair (every file with more than one rank)
"""
import argparse
import json
import os
import sys

try:
    import matplotlib
except ImportError:
    # Debian's python3-matplotlib belongs to /usr/bin/python3, which a virtualenv or pyenv python3 does not see.
    sys.exit("plot-bench.py: matplotlib not found; install python3-matplotlib and run with /usr/bin/python3")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BACKENDS = ["analytic", "single_tape", "in_process", "cluster", "raw_mpi_floor"]
STYLE = {
    "analytic": dict(color="black", marker="o", linestyle="--"),
    "single_tape": dict(color="tab:blue", marker="s"),
    "in_process": dict(color="tab:orange", marker="^"),
    "cluster": dict(color="tab:green", marker="D"),
    "raw_mpi_floor": dict(color="tab:gray", marker="x", linestyle=":"),
}
KERNELS = ["scalar", "vector"]


def load(paths):
    runs = []
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
            records = doc["records"]
            ranks = int(doc["ranks"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"plot-bench.py: {path}: not a maprect bench JSON file ({e})")
        runs.append({"path": path, "ranks": ranks, "records": records})
    return sorted(runs, key=lambda r: r["ranks"])


def median(records, jobs, points, kernel, backend):
    for r in records:
        if (r["jobs"], r["points"], r["backend"]) == (jobs, points, backend) and r["kernel"] in (kernel, "none"):
            return r["median_us"]
    return None


def sizes_of(records):
    return sorted({(r["jobs"], r["points"]) for r in records}, key=lambda s: (s[0] * s[1], s[0]))


def size_label(size):
    return f"{size[0]}x{size[1]}"


def plot_time_vs_work(run, path):
    sizes = sizes_of(run["records"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    for ax, kernel in zip(axes, KERNELS):
        for backend in BACKENDS:
            points = [(s[0] * s[1], median(run["records"], s[0], s[1], kernel, backend), s) for s in sizes]
            points = [p for p in points if p[1] is not None]
            if not points:
                continue
            label = backend if backend != "cluster" else f"cluster ({run['ranks']} ranks)"
            ax.plot([p[0] for p in points], [p[1] for p in points], label=label, **STYLE[backend])
        for s in sizes:
            ax.annotate(size_label(s), (s[0] * s[1], 0.02), xycoords=("data", "axes fraction"), ha="right",
                        fontsize=7, color="dimgray", rotation=90, va="bottom")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("work per call: J x N data points")
        ax.set_title(f"{kernel} kernel")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("median time per gradient (us)")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"Time per gradient vs work per call ({os.path.basename(run['path'])})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_speedup(runs, path):
    sizes = sorted({s for run in runs for s in sizes_of(run["records"])}, key=lambda s: (s[0] * s[1], s[0]))
    all_ranks = sorted({run["ranks"] for run in runs})
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    for ax, kernel in zip(axes, KERNELS):
        for size in sizes:
            xs, ys = [], []
            for run in runs:
                local = median(run["records"], size[0], size[1], kernel, "in_process")
                remote = median(run["records"], size[0], size[1], kernel, "cluster")
                if run["ranks"] == 1 and local is not None:
                    xs.append(1)
                    ys.append(1.0)
                elif local is not None and remote:
                    xs.append(run["ranks"])
                    ys.append(local / remote)
            if xs:
                ax.plot(xs, ys, marker="o", label=size_label(size))
        top = max(all_ranks + [2])
        ax.plot([1, top], [1, top], color="black", linestyle="--", linewidth=0.8, label="ideal")
        ax.axhline(1.0, color="gray", linewidth=0.6)
        ax.set_xticks(all_ranks)
        ax.set_xlabel("ranks")
        ax.set_title(f"{kernel} kernel")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("speedup of cluster over in_process")
    axes[1].legend(title="J x N", fontsize=8)
    fig.suptitle("Speedup vs ranks")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_overhead(runs, path):
    multi = [run for run in runs if run["ranks"] > 1]
    fig, axes = plt.subplots(len(multi) or 1, 1, figsize=(12, 4.5 * max(1, len(multi))), squeeze=False)
    if not multi:
        ax = axes[0][0]
        ax.text(0.5, 0.5, "no run with more than one rank: no cluster or raw MPI floor to compare",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
    for ax, run in zip(axes[:, 0], multi):
        sizes = sizes_of(run["records"])
        width = 0.27
        for i, size in enumerate(sizes):
            floor = median(run["records"], size[0], size[1], "scalar", "raw_mpi_floor")
            bars = [("raw_mpi_floor", floor, "tab:gray")]
            for kernel, color in (("scalar", "tab:green"), ("vector", "tab:olive")):
                bars.append((f"cluster {kernel}", median(run["records"], size[0], size[1], kernel, "cluster"), color))
            for k, (name, value, color) in enumerate(bars):
                if value is None:
                    continue
                x = i + (k - 1) * width
                ax.bar(x, value, width, color=color, label=name if i == 0 else None)
                if k > 0 and floor:
                    ax.annotate(f"{value / floor:.1f}x", (x, value), textcoords="offset points", xytext=(0, 2),
                                ha="center", fontsize=7)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([size_label(s) for s in sizes])
        ax.set_yscale("log")
        ax.set_xlabel("J x N")
        ax.set_ylabel("median time per gradient (us)")
        ax.set_title(f"{run['ranks']} ranks: cluster time vs raw MPI floor (ratio over the floor above the bars)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description="Plot maprect bench JSON files.")
    parser.add_argument("files", nargs="+", metavar="BENCH.json")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="directory for the PNG files")
    args = parser.parse_args()
    runs = load(args.files)
    os.makedirs(args.output, exist_ok=True)
    outputs = {
        "time-vs-work.png": lambda p: plot_time_vs_work(runs[-1], p),
        "speedup-vs-ranks.png": lambda p: plot_speedup(runs, p),
        "overhead-vs-floor.png": lambda p: plot_overhead(runs, p),
    }
    for name, plot in outputs.items():
        path = os.path.join(args.output, name)
        plot(path)
        print(path)


if __name__ == "__main__":
    main()
