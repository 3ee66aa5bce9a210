# check_posterior.py DATA CSV...: the draws of normal_model against its closed-form posterior. Each
# posterior mean must lie within 4 Monte Carlo standard errors (exact sd / sqrt(draws / 2), a conservative
# effective sample size for NUTS on these near-normal targets); log_odds must equal logit(p) at every draw.
import csv, json, math, sys

data = json.load(open(sys.argv[1]))
rows = []
for path in sys.argv[2:]:
    lines = [l for l in open(path) if not l.startswith("#")]
    reader = csv.reader(lines)
    header = next(reader)
    rows += [dict(zip(header, map(float, r))) for r in reader]
expected_header = ["lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__",
                   "mu", "p", "lambda", "log_odds"]
problems = [] if header == expected_header else [f"header {header}, expected {expected_header}"]

y = [v for group in data["y"] for v in group]
precision = 1 / 10**2 + len(y) / data["sigma"] ** 2
ones, K = sum(data["z"]), len(data["z"])
a, b = 1 + ones, 1 + K - ones
shape, rate = 2 + sum(data["c"]), 1 + len(data["c"])
exact = {
    "mu": (sum(y) / data["sigma"] ** 2 / precision, 1 / math.sqrt(precision)),
    "p": (a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))),
    "lambda": (shape / rate, math.sqrt(shape) / rate),
}
n = len(rows)
for name, (mean, sd) in exact.items():
    draws = [r[name] for r in rows]
    got = sum(draws) / n
    tolerance = 4 * sd / math.sqrt(n / 2)  # tight enough to see a missing Jacobian: p would be off by 0.0104
    print(f"{name:7s} mean {got:.5f}  exact {mean:.5f}  |diff| {abs(got - mean):.5f}  tolerance {tolerance:.5f}")
    if abs(got - mean) > tolerance:
        problems.append(f"{name}: mean {got} vs exact {mean} (tolerance {tolerance})")
    sd_got = math.sqrt(sum((d - got) ** 2 for d in draws) / (n - 1))
    if abs(sd_got / sd - 1) > 0.15:
        problems.append(f"{name}: sd {sd_got} vs exact {sd}")
bad = [r for r in rows if abs(r["log_odds"] - math.log(r["p"] / (1 - r["p"]))) > 1e-12 * max(1, abs(r["log_odds"]))]
if bad:
    problems.append(f"{len(bad)} draws with log_odds != logit(p)")
if not 0 < min(r["p"] for r in rows) < max(r["p"] for r in rows) < 1 or min(r["lambda"] for r in rows) <= 0:
    problems.append("a bounded parameter left its bounds")
if problems:
    sys.exit("; ".join(problems))
print(f"{n} draws: posterior means within Monte Carlo error of the closed forms")
