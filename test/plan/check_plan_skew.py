#!/usr/bin/env python3
"""Checks `maprect plan --jobs 10 --points 200 --skew 10 --job-data --ranks-max 2 --json FILE`: the last of the
10 groups has 10 times the points (19 units of work), so a static split at 2 ranks leaves 14 units on the
worker, while claims need max(19 / 2, 10) = 10. Usage: check_plan_skew.py FILE."""
import math
import sys

from plan_checks import Checks, load


def main():
    doc = load(sys.argv[1])
    check = Checks()

    check("groups j >= 0.9 J with 10 x the points" in doc["model"], f"model {doc['model']}")
    one, two = (next(r for r in doc["predictions"] if r["ranks"] == p) for p in (1, 2))
    # Measured job times keep their shape: 14 / 10 = 1.4 between the static split's compute and the least any
    # schedule reaches (noise allowed). The claims engine's own schedule reaches no less: the dear job is the
    # worker's last, and it starts it (at 4 units) before the root is out of work (at 5).
    ratio = two["compute_us"] / two["compute_bound_us"]
    check(1.2 < ratio < 1.6, f"static / least compute at 2 ranks {ratio:.3f}, expected about 1.4")
    check(two["compute_bound_us"] <= two["compute_claims_us"] <= two["compute_us"] * (1 + 1e-9),
          f"claims compute {two['compute_claims_us']} outside [{two['compute_bound_us']}, {two['compute_us']}]")
    check(abs(two["compute_us"] / one["compute_us"] - 14 / 19) < 0.1,
          f"static compute at 2 ranks / 1 rank {two['compute_us'] / one['compute_us']:.3f}, expected about 14/19")
    check(two["bound"] == "balance", f"bound at 2 ranks {two['bound']}")
    # --job-data: the root's work has no data check, though one was measured.
    inputs = doc["inputs"]
    check(inputs["job_data"] is True and inputs["root_check_us_per_job"] > 0, "job_data and the measured check")
    no_check = inputs["root_call_us"] + 10 * inputs["root_output_us"]
    check(math.isclose(two["root_us"], no_check, rel_tol=1e-9), f"root us {two['root_us']} != {no_check}")
    check.stop_if_failed()
    print(f"skewed plan: static / least compute at 2 ranks {ratio:.2f}")


if __name__ == "__main__":
    main()
