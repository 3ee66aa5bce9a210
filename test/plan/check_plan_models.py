#!/usr/bin/env python3
"""Checks `maprect plan --json` documents of the built-in models other than logreg, one rank, --ranks-max 4:
usage check_plan_models.py PK2CMT_FILE POINTWISE_FILE. The pk2cmt run is --jobs 4; the pointwise_regression
run is --jobs 4 --points 20 --covariates 3 --alpha-us 5 --beta-gbs 2."""
import math
import sys

from plan_checks import Checks, load


def check_rows(check, doc, name):
    """The rows every plan has: P = 1, 2, 4, each the sum of its terms, P = 1 the site's jobs at one speed."""
    rows, inputs = doc["predictions"], doc["inputs"]
    check([r["ranks"] for r in rows] == [1, 2, 4], f"{name}: rank counts {[r['ranks'] for r in rows]}")
    check(inputs["job_us"] > 0, f"{name}: job_us {inputs['job_us']}")
    for r in rows:
        total = r["root_us"] + r["messages_us"] + r["compute_us"]
        check(math.isclose(r["us_per_gradient"], total, rel_tol=1e-9), f"{name}: P = {r['ranks']} sum")
    one = rows[0]
    check(math.isclose(one["compute_us"], inputs["jobs"] * inputs["job_us"], rel_tol=1e-12),
          f"{name}: P = 1 compute {one['compute_us']} is {inputs['jobs']} jobs of {inputs['job_us']} us")


def main():
    check = Checks()
    pk, pw = load(sys.argv[1]), load(sys.argv[2])
    check(pk["model"] == "pk2cmt, 4 simulated subjects", f"pk2cmt's site: {pk['model']}")
    i = pk["inputs"]
    check((i["jobs"], i["shared_params"], i["job_params"], i["outputs_per_job"]) == (4, 11, 5, 1),
          f"pk2cmt's shape: {i['jobs']} jobs, S = {i['shared_params']}, P = {i['job_params']}, "
          f"K = {i['outputs_per_job']}")
    check(i["remote"]["source"].startswith("assumed"), f"pk2cmt: remote link {i['remote']['source']}")
    check_rows(check, pk, "pk2cmt")

    check(pw["model"] == "pointwise_regression 4x20, 3 covariates", f"pointwise_regression's site: {pw['model']}")
    i = pw["inputs"]
    # Shared: 1 + C; one parameter of its own per group; one output per observation.
    check((i["jobs"], i["shared_params"], i["job_params"], i["outputs_per_job"]) == (4, 4, 1, 20),
          f"pointwise_regression's shape: {i['jobs']} jobs, S = {i['shared_params']}, P = {i['job_params']}, "
          f"K = {i['outputs_per_job']}")
    remote = i["remote"]
    check(remote["source"] == "given (--alpha-us / --beta-gbs)", f"remote link source {remote['source']}")
    check((remote["alpha_us"], remote["beta_gbs"], remote["overhead_us"]) == (5.0, 2.0, 5.0),
          f"remote link {remote}")
    check_rows(check, pw, "pointwise_regression")
    check.stop_if_failed()
    print("plan JSON of pk2cmt and pointwise_regression: shapes, links and rows as given")


if __name__ == "__main__":
    main()
