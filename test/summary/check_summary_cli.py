#!/usr/bin/env python3
"""check_summary_cli.py MAPRECT WORKDIR: `maprect summary` on Stan CSV files written here with known contents
(CmdStan's layout, 2 chains of 100 draws): every column including the sampler's, --percentiles, --sig-figs,
ESS_bulk/s against the timing blocks, the divergence and tree-depth warnings with their counts, the CSV table,
and one clear error line (file, line) for a missing file, a malformed row, chains that do not match (columns,
lengths), too few draws and bad options."""
import csv
import math
import os
import random
import re
import subprocess
import sys

maprect, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
failures = []


def check(condition, what):
    print(("ok: " if condition else "FAIL: ") + what)
    if not condition:
        failures.append(what)


def write_chain(path, chain, divergent_rows, deep_rows, warmup_seconds, sampling_seconds):
    """A CmdStan-like file: header, columns, adaptation block, 100 draws, timing block."""
    rng = random.Random(chain)
    lines = ["# model = synthetic_model", "# method = sample (Default)", "#   sample", "#     num_samples = 100",
             "#     num_warmup = 100", "#     thin = 1 (Default)", "#     algorithm = hmc (Default)",
             "#       hmc", "#         engine = nuts (Default)", "#           nuts",
             "#             max_depth = 10 (Default)",
             "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,mu,tau",
             "# Adaptation terminated", "# Step size = 0.5", "# Diagonal elements of inverse mass matrix:",
             "# 1, 1"]
    for i in range(100):
        depth = 10 if i in deep_rows else rng.choice([2, 3])
        lines.append("%.17g,%.17g,0.5,%d,%d,%d,%.17g,%.17g,%.17g" % (
            -rng.expovariate(1.0), rng.random(), depth, 2 ** depth - 1, 1 if i in divergent_rows else 0,
            rng.gauss(5, 1), rng.gauss(1, 2), rng.lognormvariate(0, 1)))
    lines += ["# ", "#  Elapsed Time: %g seconds (Warm-up)" % warmup_seconds,
              "#                %g seconds (Sampling)" % sampling_seconds,
              "#                %g seconds (Total)" % (warmup_seconds + sampling_seconds), "# "]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run(*args):
    p = subprocess.run([maprect, "summary", *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


files = [os.path.join(work, "synthetic-%d.csv" % c) for c in (1, 2)]
write_chain(files[0], 1, {3, 50, 77}, {10, 11}, 0.25, 0.5)
write_chain(files[1], 2, set(), {4, 5, 6}, 0.125, 1.5)

rc, out = run(*files)
check(rc == 0, "summary of two CmdStan-like files exits 0")
print(out)
for name in ["lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__", "mu",
             "tau"]:
    check(re.search(r"^%s\s" % re.escape(name), out, re.M) is not None, "the table has a row for " + name)
check(re.search(r"Mean\s+MCSE\s+StdDev\s+MAD\s+5%\s+50%\s+95%\s+ESS_bulk\s+ESS_tail\s+ESS_bulk/s\s+R_hat", out)
      is not None, "stansummary's columns, in its order")
check("Inference for Stan model: synthetic_model" in out, "the model is named")
check("2 chains: each with iter=(100,100); warmup=(0,0); thin=(1,1); 200 iterations saved." in out,
      "chains, draws and thinning")
check("Sampling took (0.5, 1.5) seconds, 2.0 seconds total" in out, "the sampling times, per chain and total")
check("Warning: 3 of 200 (1.5%) transitions ended with a divergence." in out, "the divergence warning counts 3")
check("Warning: 5 of 200 (2.5%) transitions hit the maximum treedepth limit of 10, or 2^10 leapfrog steps." in out,
      "the tree-depth warning counts 5 at max_depth 10")
stepsize_row = re.search(r"^stepsize__\s+(.*)$", out, re.M).group(1).split()
check(stepsize_row[0] == "0.5" and stepsize_row[-1] == "nan", "a constant column: mean 0.5, R_hat nan")

table = os.path.join(work, "table.csv")
rc, out = run(*files, "--sig-figs", "17", "--percentiles", "2.5,50,97.5", "--csv", table)
check(rc == 0, "--sig-figs 17 --percentiles 2.5,50,97.5 --csv exits 0")
rows = {r["name"]: r for r in csv.DictReader(open(table))}
check(list(next(csv.reader(open(table)))) ==
      ["name", "Mean", "MCSE", "StdDev", "MAD", "2.5%", "50%", "97.5%", "ESS_bulk", "ESS_tail", "ESS_bulk/s", "R_hat",
       "MCSE_SD"], "the CSV table's columns follow --percentiles")
mu = [float(line.split(",")[7]) for f in files for line in open(f) if line[0].isdigit() or line[0] == "-"]
check(len(mu) == 200, "200 draws of mu read back for the check")
mean = math.fsum(mu) / 200
check(abs(float(rows["mu"]["Mean"]) - mean) <= 1e-15 * abs(mean), "Mean of mu at 17 digits: %r" % mean)
ess, per_second = float(rows["mu"]["ESS_bulk"]), float(rows["mu"]["ESS_bulk/s"])
check(abs(per_second - ess / 2.0) <= 1e-15 * per_second, "ESS_bulk/s = ESS_bulk / (0.5 + 1.5) s: %r" % per_second)
ordered = sorted(mu)
h = 199 * 0.975
q = ordered[int(h)] + (h - int(h)) * (ordered[int(h) + 1] - ordered[int(h)])
check(abs(float(rows["mu"]["97.5%"]) - q) <= 1e-14 * abs(q), "97.5%% quantile of mu (type 7): %r" % q)
check(rows["stepsize__"]["R_hat"] == "nan" and float(rows["divergent__"]["Mean"]) == 3 / 200,
      "sampler columns in the CSV: stepsize__ R_hat nan, divergent__ mean 3/200")

rc, out = run(*files, "--sig-figs", "3")
tau = re.search(r"^tau\s+(\S+)", out, re.M).group(1)
check(len(tau.replace("-", "").replace(".", "").lstrip("0")) <= 3, "--sig-figs 3 shows 3 digits: " + tau)

rc, out = run(*files, "--csv", "-")
check(rc == 0 and out.startswith("name,Mean,MCSE"), "--csv - writes only the CSV table on stdout")

# Errors: one line, naming the file and, for a malformed row, the line.
good = open(files[0]).read().split("\n")
bad = os.path.join(work, "bad.csv")
lines = list(good)
lines[20] = lines[20].replace(",", ",x", 1)
open(bad, "w").write("\n".join(lines))
short = os.path.join(work, "short.csv")
open(short, "w").write("\n".join(l for l in good if not l.startswith("# Adaptation")
                                 ).replace("lp__,accept_stat__", "lp__,accept_stat_x"))
draw_lines = [i for i, l in enumerate(good) if l[:1].isdigit() or l[:1] == "-"]
shorter = os.path.join(work, "shorter.csv")  # its last draw gone
open(shorter, "w").write("\n".join(l for i, l in enumerate(good) if i != draw_lines[-1]))
three = os.path.join(work, "three.csv")  # three draws
open(three, "w").write("\n".join(l for i, l in enumerate(good) if i not in draw_lines[3:]))
cases = [
    ([os.path.join(work, "none.csv")], r"none\.csv: no such file"),
    ([files[0], shorter],
     r"shorter\.csv: 99 draws, but .*synthetic-1\.csv has 100; the chains must be of equal length"),
    ([three], r"three\.csv: 3 draws per chain; the summary needs at least 4 to split chains"),
    ([files[0], bad], r"bad\.csv: line 21: column 2: 'x[-0-9.e]+' is not a number"),
    ([files[0], short], r"short\.csv: its columns differ from .*synthetic-1\.csv's \(column 2 is 'accept_stat_x'"),
    ([work], r"a directory, not a Stan CSV file"),
    ([files[0], "--percentiles", "5,120"], r"--percentiles: '120' is not a number from 0 to 100"),
    ([files[0], "--percentiles", "50,5"], r"--percentiles: 5 does not increase on the one before"),
]
for args, pattern in cases:
    rc, out = run(*args)
    errors = [l for l in out.splitlines() if l.startswith("maprect: error:")]
    check(rc != 0 and len(errors) == 1 and re.search(pattern, errors[0]) is not None,
          "error /%s/: got exit %d, %s" % (pattern, rc, errors))

sys.exit(1 if failures else 0)
