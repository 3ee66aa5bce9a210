#!/usr/bin/env python3
"""check_log_lik.py DATA.json CSV...: every draw's log_lik.<n> columns of pointwise_regression's Stan CSV equal
normal_lpdf(y[n] | mu + alpha[g] + x[n] . beta, sigma) recomputed here from the same row's parameter columns."""
import csv
import json
import math
import sys


def check(data, path):
    G, K, C = data["G"], data["K"], data["C"]
    with open(path) as f:
        rows = list(csv.reader(line for line in f if not line.startswith("#")))
    header, draws = rows[0], rows[1:]
    names = ["mu"] + [f"beta.{c}" for c in range(1, C + 1)] + [f"alpha.{g}" for g in range(1, G + 1)]
    log_lik = [f"log_lik.{n}" for n in range(1, G * K + 1)]
    first = header.index("mu")
    if header[first:] != names + log_lik:
        sys.exit(f"FAIL: {path}: columns after the sampler's are {header[first:first + 5]}..., expected "
                 f"{names[:5]}... then log_lik.1..{G * K}")
    if not draws:
        sys.exit(f"FAIL: {path}: no draws")
    worst = 0.0
    for row in draws:
        v = dict(zip(header, map(float, row)))
        for n in range(G * K):
            eta = v["mu"] + v[f"alpha.{n // K + 1}"]
            for c in range(C):
                eta += data["x"][n][c] * v[f"beta.{c + 1}"]
            z = (data["y"][n] - eta) / data["sigma"]
            expected = -0.5 * z * z - math.log(data["sigma"]) - 0.5 * math.log(2 * math.pi)
            worst = max(worst, abs(v[f"log_lik.{n + 1}"] - expected) / max(1.0, abs(expected)))
    if worst > 1e-12:
        sys.exit(f"FAIL: {path}: a log_lik column is {worst:.3g} (relative) off its recomputation")
    print(f"ok: {path}: {len(draws)} draws x {G * K} log_lik columns equal their recomputation "
          f"(largest relative difference {worst:.3g})")


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    for path in sys.argv[2:]:
        check(data, path)


if __name__ == "__main__":
    main()
