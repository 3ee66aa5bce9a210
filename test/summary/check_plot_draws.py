"""Checks scripts/plot-draws.py on Stan CSV files written here: a PNG of the right size for good files, and for
each bad file a non-zero exit with a message naming the problem.

usage: python3 check_plot_draws.py PLOT_DRAWS.py WORK_DIR good|errors
"""
import math
import os
import struct
import subprocess
import sys

HEADER = "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,tau,theta.1,theta.2,theta.3"


def draw_row(chain, i):
    """A deterministic, chain-dependent draw with every column finite."""
    t = 0.37 * i + chain
    mu, tau = 4 + 3 * math.sin(t), 2 + math.cos(1.3 * t)
    thetas = [mu + tau * math.sin(t * (k + 2)) for k in range(3)]
    values = [-10 + math.cos(t), 0.8, 0.31, 3, 7, 0, 11 + math.sin(t), mu, tau] + thetas
    return ",".join(f"{v:.6g}" for v in values)


def write_chain(path, chain, draws, warmup=0):
    with open(path, "w") as f:
        f.write("# model = eight_schools\n# method = sample (Default)\n#   num_samples = %d\n" % draws)
        f.write(HEADER + "\n")
        for i in range(warmup):
            f.write(draw_row(chain, -1 - i) + "\n")
        f.write("# Adaptation terminated\n# Step size = 0.31\n# Diagonal elements of inverse mass matrix:\n# 1, 1\n")
        for i in range(draws):
            f.write(draw_row(chain, i) + "\n")
        f.write("#\n#  Elapsed Time: 0.01 seconds (Warm-up)\n")


def run(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def check_good(script, work):
    failures = []
    chains = [os.path.join(work, f"eight_schools-{c}.csv") for c in (1, 2)]
    for c, path in enumerate(chains, start=1):
        write_chain(path, c, draws=150, warmup=50 if c == 2 else 0)
    default_png = os.path.join(work, "eight_schools-draws.png")
    if os.path.exists(default_png):
        os.remove(default_png)
    result = run(script, *chains)
    if result.returncode != 0:
        failures.append(f"default run exited {result.returncode}: {result.stderr.strip()}")
    elif not os.path.getsize(default_png) > 0:
        failures.append(f"{default_png} is empty")
    else:
        # Four parameters by default: 2.4 inches each at 100 dpi, 11 inches wide.
        width, height = png_size(default_png)
        if (width, height) != (1100, 960):
            failures.append(f"default plot is {width}x{height}, expected 1100x960 (4 rows)")
        if "(4 parameters; draws per chain: 150, 150)" not in result.stdout:
            failures.append(f"default run said {result.stdout.strip()!r}")
    chosen_png = os.path.join(work, "chosen.png")
    result = run(script, *chains, "-p", "tau", "theta.3", "--warmup", "-o", chosen_png)
    if result.returncode != 0 or png_size(chosen_png) != (1100, 480):
        failures.append(f"chosen parameters: exit {result.returncode}, {result.stderr.strip()}")
    elif "(2 parameters; draws per chain: 150, 200)" not in result.stdout:
        failures.append(f"--warmup run said {result.stdout.strip()!r}, expected chain 2's 50 warm-up draws kept")
    nonfinite = os.path.join(work, "nonfinite-1.csv")
    with open(nonfinite, "w") as f:
        f.write("lp__,mu,sigma\n-1,0.5,nan\n-2,0.7,inf\n-1.5,0.1,1\n-1.2,0.3,2\n")
    result = run(script, nonfinite, "-o", os.path.join(work, "nonfinite.png"))
    if result.returncode != 0 or "sigma: 2 non-finite draws left out of the plot" not in result.stderr:
        failures.append(f"non-finite draws: exit {result.returncode}, stderr {result.stderr.strip()!r}")
    return failures


def bad_files(work):
    """(name, file text or None for a missing file, extra arguments, expected message piece)."""
    good = HEADER + "\n" + draw_row(1, 0) + "\n"
    return [
        ("missing", None, [], "cannot read (No such file or directory)"),
        ("comments-only", "# nothing here\n# at all\n", [], "no header row"),
        ("ragged", good + "1,2,3\n", [], "line 3: 3 fields, expected 12 as in the header"),
        ("not-a-number", good + draw_row(1, 1).replace("0.31", "abc", 1) + "\n", [],
         "line 3, column 'stepsize__': 'abc' is not a number"),
        ("no-draws", HEADER + "\n# Adaptation terminated\n", [], "no draws after the header"),
        ("sampler-only", "lp__,accept_stat__\n-1,0.9\n", [], "no model parameters in the files"),
        ("unknown-param", good, ["-p", "sigma"], "no column 'sigma' in the files"),
    ]


def check_errors(script, work):
    failures = []
    for name, text, extra, expected in bad_files(work):
        path = os.path.join(work, f"{name}.csv")
        if text is None:
            if os.path.exists(path):
                os.remove(path)
        else:
            with open(path, "w") as f:
                f.write(text)
        result = run(script, path, *extra, "-o", os.path.join(work, f"{name}.png"))
        if result.returncode == 0 or expected not in result.stderr or "Traceback" in result.stderr:
            failures.append(f"{name}: exit {result.returncode}, stderr {result.stderr.strip()!r}, "
                            f"expected a non-zero exit and {expected!r}")
    mismatched = os.path.join(work, "mismatched.csv")
    with open(mismatched, "w") as f:
        f.write(HEADER.rsplit(",", 1)[0] + "\n")
        f.write(",".join(draw_row(1, 0).split(",")[:11]) + "\n")
    first = os.path.join(work, "first.csv")
    write_chain(first, 1, draws=10)
    result = run(script, first, mismatched, "-o", os.path.join(work, "mismatched.png"))
    if result.returncode == 0 or "differ from those of" not in result.stderr:
        failures.append(f"mismatched headers: exit {result.returncode}, stderr {result.stderr.strip()!r}")
    return failures


def main():
    script, work, mode = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = check_good(script, work) if mode == "good" else check_errors(script, work)
    for failure in failures:
        print("FAILED:", failure)
    if failures:
        sys.exit(1)
    print(f"plot-draws {mode}: all checks passed")


if __name__ == "__main__":
    main()
