#!/usr/bin/env python3
"""Checks a `maprect plan --ranks-max 8 --json` document from a run on NP ranks: usage check_plan.py FILE NP."""
import math
import sys

from plan_checks import Checks, load


def main():
    doc = load(sys.argv[1])
    np_ = int(sys.argv[2])
    check = Checks()

    rows = doc["predictions"]
    check([r["ranks"] for r in rows] == sorted({1, 2, 4, 8, np_}), f"rank counts {[r['ranks'] for r in rows]}")
    check(doc["measured_ranks"] == np_, f"measured_ranks {doc['measured_ranks']} != {np_}")
    inputs = doc["inputs"]
    check(inputs["jobs"] == 8 and inputs["shared_params"] == 2 and inputs["job_params"] == 2, "shape of logreg")
    check(inputs["job_us"] > 0, f"job_us {inputs['job_us']}")
    check(inputs["job_data"] is False, "job_data without --job-data")
    for key in ("root_output_us", "root_call_us", "root_check_us_per_job", "job_spread_us"):
        check(inputs[key] >= 0, f"{key} {inputs[key]}")
    one = rows[0]
    check(one["efficiency"] == 1.0, f"efficiency at 1 rank {one['efficiency']}")
    check(one["messages_us"] == 0, "messages at 1 rank")
    check(math.isclose(one["us_per_gradient"], one["root_us"] + one["compute_us"], rel_tol=1e-12), "P = 1 sum")
    # Every rank's job time, measured side by side, over rank 0's alone: one per rank (none at one rank).
    speeds = doc["rank_speeds"]
    scales = speeds["model_job_scale"]
    check(len(speeds["job_scale"]) == (np_ if np_ > 1 else 0), f"job_scale {speeds['job_scale']} at np={np_}")
    check(all(x > 0 for x in speeds["job_scale"]), f"job_scale {speeds['job_scale']}")
    check(speeds["sample_jobs"] == (8 if np_ > 1 else 0), f"sample_jobs {speeds['sample_jobs']}")
    root_scale = scales[0] if scales else 1.0
    check(math.isclose(one["compute_us"], 8 * inputs["job_us"] * root_scale, rel_tol=1e-12),
          "P = 1 compute is 8 jobs at rank 0's speed")
    check(math.isclose(one["us_per_gradient_claims"], one["us_per_gradient"], rel_tol=1e-12), "P = 1 claims")
    for r in rows:
        total = r["root_us"] + r["messages_us"] + r["compute_us"]
        check(math.isclose(r["us_per_gradient"], total, rel_tol=1e-9), f"P = {r['ranks']} sum")
        check(r["us_per_gradient_flat"] >= r["us_per_gradient"] * (1 - 1e-12), f"P = {r['ranks']} flat")
        check(r["jobs_on_slowest"] == -(-8 // r["ranks"]), f"P = {r['ranks']} jobs {r['jobs_on_slowest']}")
        # Claims: the least compute any schedule reaches, so never above the static split's, whose root starts
        # its jobs after its data check too; the round trips on top grow with the ranks.
        check(r["compute_claims_us"] <= (r["compute_us"] + r["root_check_us"]) * (1 + 1e-9),
              f"P = {r['ranks']} claims compute")
        check(r["compute_bound_us"] <= r["compute_claims_us"] * (1 + 1e-9), f"P = {r['ranks']} least compute")
        check(r["termination_us"] >= 0 and (r["ranks"] > 1 or r["termination_us"] == 0), f"P = {r['ranks']} end")
        check(r["bound"] in ("compute", "balance", "messages", "root"), f"bound {r['bound']}")
        # Auto: the claims engine where it claims (on one host always), else the static split's flat collectives.
        if r["ranks"] == 1 or r["hosts"] == 1:
            check(r["claims"] == (r["ranks"] > 1), f"P = {r['ranks']} on one host: auto claims {r['claims']}")
        auto = r["us_per_gradient_claims"] if r["ranks"] == 1 or r["claims"] else r["us_per_gradient_flat"]
        check(r["us_per_gradient_auto"] == auto, f"P = {r['ranks']} auto {r['us_per_gradient_auto']}")
    # Deferred: the kept forward and sweep fill the in-process deferred gradient beside the root's costs, so at
    # one rank (at rank 0's speed alone) the prediction is that measurement.
    rev = doc["reverse"]
    d1 = rev["predictions"][0]
    check(d1["ranks"] == 1 and d1["reverse_messages_us"] == 0, "deferred P = 1 row")
    check(rev["kept_gradient_scale"] > 0, f"kept_gradient_scale {rev['kept_gradient_scale']}")
    if rev["kept_gradient_scale"] != 1:
        kept = (d1["compute_forward_us"] + d1["compute_sweep_us"]) / root_scale
        check(math.isclose(d1["root_us"] + kept, rev["in_process_us"], rel_tol=1e-9),
              f"deferred P = 1: {d1['root_us']} + {kept} against {rev['in_process_us']} in process")
    local_source = inputs["local"]["source"]
    check(local_source == ("measured" if np_ > 1 else "assumed (no two ranks on one host)"), f"local {local_source}")
    if np_ > 1:
        check(inputs["local"]["alpha_us"] > 0 and inputs["local"]["beta_gbs"] > 0, "measured local link")
    check.stop_if_failed()
    print(f"plan JSON at np={np_}: {len(rows)} rows, P = 1 is {one['us_per_gradient']:.1f} us")


if __name__ == "__main__":
    main()
