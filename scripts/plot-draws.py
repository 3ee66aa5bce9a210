#!/usr/bin/python3
"""Trace plots and marginal densities of MCMC draws from Stan CSV files (one file per chain).

usage: plot-draws.py CHAIN.csv [CHAIN.csv ...] [-p NAME ...] [--warmup] [-o OUT.png]

Each file is a Stan CSV as written by `maprect sample` or CmdStan: '#' comment lines, one header row naming the
columns (lp__, accept_stat__, ..., then the model's parameters such as mu, tau, theta.1), and one row per draw.
Draws written before an '# Adaptation terminated' comment are warm-up (CmdStan's save_warmup) and are left
out unless --warmup is given.

Writes one PNG: a row per parameter, with the trace of every chain on the left and each chain's marginal
density (Gaussian kernel density estimate) on the right, one colour per chain. Parameters default to the first
four model columns (those whose names do not end in '__'). OUT.png defaults to <model>-draws.png next to the
first file, where <model> is its name without the trailing -<chain>.csv.
"""
import argparse
import os
import re
import sys

# Debian's python3-matplotlib (and its numpy) belong to /usr/bin/python3, which a virtualenv or pyenv python3
# does not see.
MISSING = "plot-draws.py: {} not found; install python3-matplotlib and run with /usr/bin/python3"
try:
    import numpy as np
except ImportError:
    sys.exit(MISSING.format("numpy"))

DEFAULT_PARAMETERS = 4
GRID_POINTS = 200


class CsvError(Exception):
    """A Stan CSV file that cannot be read; the message names the file and what is wrong."""


def parse_row(path, line_number, text, columns):
    fields = text.split(",")
    if len(fields) != len(columns):
        raise CsvError(f"{path}: line {line_number}: {len(fields)} fields, expected {len(columns)} as in the header")
    row = []
    for name, field in zip(columns, fields):
        try:
            row.append(float(field))
        except ValueError:
            raise CsvError(f"{path}: line {line_number}, column '{name}': '{field.strip()}' is not a number") from None
    return row


def read_stan_csv(path, keep_warmup):
    """Returns (column names, draws as an array draws x columns)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise CsvError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    columns, rows, warmup_rows = None, [], 0
    for number, text in enumerate(lines, start=1):
        if text.startswith("#"):
            if "Adaptation terminated" in text and columns is not None:
                warmup_rows = len(rows)
            continue
        if not text.strip():
            continue
        if columns is None:
            columns = [c.strip() for c in text.split(",")]
            if any(not c for c in columns):
                raise CsvError(f"{path}: line {number}: the header has an empty column name")
            continue
        rows.append(parse_row(path, number, text, columns))
    if columns is None:
        raise CsvError(f"{path}: no header row (only comments or empty lines)")
    if not keep_warmup:
        rows = rows[warmup_rows:]
    if not rows:
        raise CsvError(f"{path}: no draws after the header" + ("" if keep_warmup else " (warm-up left out)"))
    return columns, np.array(rows)


def read_chains(paths, keep_warmup):
    """Returns (column names, one draws array per file); every file must have the same columns."""
    columns, chains = None, []
    for path in paths:
        names, draws = read_stan_csv(path, keep_warmup)
        if columns is None:
            columns = names
        elif names != columns:
            raise CsvError(f"{path}: columns {names} differ from those of {paths[0]}: {columns}")
        chains.append(draws)
    return columns, chains


def choose_parameters(columns, requested):
    if requested:
        missing = [p for p in requested if p not in columns]
        if missing:
            raise CsvError(f"no column {', '.join(map(repr, missing))} in the files (columns: {', '.join(columns)})")
        return requested
    model = [c for c in columns if not c.endswith("__")]
    if not model:
        raise CsvError(f"no model parameters in the files, only sampler columns: {', '.join(columns)}")
    return model[:DEFAULT_PARAMETERS]


def kernel_density(draws, grid):
    """Gaussian kernel density of `draws` on `grid`, Scott's bandwidth (a narrow one for constant draws)."""
    spread = draws.std(ddof=1) if draws.size > 1 else 0.0
    if spread == 0:
        spread = max(abs(draws[0]), 1.0) * 1e-3
    bandwidth = spread * draws.size ** (-1 / 5)
    z = (grid[:, None] - draws[None, :]) / bandwidth
    return np.exp(-0.5 * z * z).sum(axis=1) / (draws.size * bandwidth * np.sqrt(2 * np.pi))


def plot_parameter(trace, density, chains, j, colours):
    """One row: every chain's trace and density of column j. Returns the number of non-finite draws left out."""
    finite = [c[:, j][np.isfinite(c[:, j])] for c in chains]
    everything = np.concatenate(finite)
    if everything.size == 0:
        density.text(0.5, 0.5, "no finite draws", ha="center", va="center", transform=density.transAxes)
    else:
        low, high = everything.min(), everything.max()
        pad = 0.1 * (high - low) if high > low else max(abs(low), 1.0) * 0.01
        grid = np.linspace(low - pad, high + pad, GRID_POINTS)
    for k, draws in enumerate(chains):
        colour = colours[k % len(colours)]
        trace.plot(np.arange(1, draws.shape[0] + 1), draws[:, j], color=colour, linewidth=0.6, alpha=0.8,
                   label=f"chain {k + 1}")
        if finite[k].size:
            density.plot(kernel_density(finite[k], grid), grid, color=colour, linewidth=1.0)
    density.set_ylim(trace.get_ylim())
    density.set_xticks([])
    return sum(c.shape[0] for c in chains) - everything.size


def load_pyplot():
    """matplotlib.pyplot on the Agg backend, imported only once the files are known good (it takes a second)."""
    try:
        import matplotlib
    except ImportError:
        sys.exit(MISSING.format("matplotlib"))
    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


def plot(columns, chains, parameters, output):
    plt = load_pyplot()
    fig, axes = plt.subplots(len(parameters), 2, figsize=(11, 2.4 * len(parameters)), squeeze=False,
                             gridspec_kw=dict(width_ratios=[3, 1]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, name in enumerate(parameters):
        trace, density = axes[row]
        left_out = plot_parameter(trace, density, chains, columns.index(name), colours)
        if left_out:
            print(f"plot-draws.py: {name}: {left_out} non-finite draws left out of the plot", file=sys.stderr)
        trace.set_ylabel(name)
        if row == 0:
            trace.set_title("trace")
            density.set_title("density")
            trace.legend(loc="upper right", fontsize="small", ncol=min(len(chains), 4))
    axes[-1][0].set_xlabel("draw")
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    plt.close(fig)


def default_output(first_csv):
    stem = re.sub(r"-\d+$", "", os.path.splitext(os.path.basename(first_csv))[0])
    return os.path.join(os.path.dirname(first_csv), f"{stem}-draws.png")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", nargs="+", help="Stan CSV files, one per chain")
    parser.add_argument("-p", "--params", nargs="+", metavar="NAME",
                        help=f"columns to plot (default: the first {DEFAULT_PARAMETERS} model parameters)")
    parser.add_argument("--warmup", action="store_true", help="also plot draws saved during warm-up")
    parser.add_argument("-o", "--output", help="PNG to write (default: <model>-draws.png next to the first file)")
    args = parser.parse_args(argv)
    try:
        columns, chains = read_chains(args.csv, args.warmup)
        parameters = choose_parameters(columns, args.params)
    except CsvError as e:
        sys.exit(f"plot-draws.py: {e}")
    output = args.output or default_output(args.csv[0])
    try:
        plot(columns, chains, parameters, output)
    except OSError as e:
        sys.exit(f"plot-draws.py: {output}: cannot write ({e.strerror or e})")
    per_chain = ", ".join(str(c.shape[0]) for c in chains)
    plural = "" if len(parameters) == 1 else "s"
    print(f"plot-draws.py: wrote {output} ({len(parameters)} parameter{plural}; draws per chain: {per_chain})")


if __name__ == "__main__":
    main(sys.argv[1:])
