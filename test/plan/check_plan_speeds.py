#!/usr/bin/env python3
"""Checks a `maprect plan --model sleep --jobs 12 --slow-rank 1 --slow-factor 3 --json` document from 2 ranks:
one job speed per rank, and the predictions' compute terms against their closed forms in those speeds.
Usage: check_plan_speeds.py FILE."""
import math
import sys

from plan_checks import Checks, load


def main():
    doc = load(sys.argv[1])
    check = Checks()

    speeds = doc["rank_speeds"]
    scale = speeds["model_job_scale"]
    check(doc["measured_ranks"] == 2, f"measured_ranks {doc['measured_ranks']}")
    check(len(speeds["job_scale"]) == 2 and len(scale) == 2, f"job_scale {speeds['job_scale']}")
    check(all(x > 0 for x in scale), f"model_job_scale {scale}")
    check(speeds["slow_rank"] == 1 and speeds["slow_factor"] == 3, f"slowed {speeds['slow_rank']}, {speeds['slow_factor']}")
    check(speeds["sample_jobs"] == 12, f"sample_jobs {speeds['sample_jobs']}")
    # Rounds span several time slices where ranks outnumber cores, so that their turns show in their times.
    round_us = 30000 if speeds["measured_core_sharing"] > 1 else 2000
    check(speeds["round_us"] == round_us, f"round_us {speeds['round_us']}, expected {round_us}")
    # Rank 1 sleeps twice its job's time after each job; rank 0 does not.
    check(len(scale) == 2 and scale[1] > scale[0], f"slowed rank 1 not slower: {scale}")
    check.stop_if_failed()
    job = doc["inputs"]["job_us"]
    one, two = (next(r for r in doc["predictions"] if r["ranks"] == p) for p in (1, 2))
    check(math.isclose(one["compute_us"], 12 * job * scale[0], rel_tol=1e-9), "P = 1: 12 jobs at rank 0's speed")
    # Equal jobs: the least compute is the work over the summed speeds (the dearest job is far below it).
    least_alone = 12 * job / (1 / scale[0] + 1 / scale[1])
    # Phases are measured only on more ranks than cores, and then at the launched 2 ranks, each factor >= 1.
    check(speeds["phase_ranks"] in (0, 2) and all(f >= 1 for f in speeds["phase_sharing"]) and
          len(speeds["phase_sharing"]) == len(speeds["phase_lengths_us"]) and
          (speeds["phase_ranks"] == 2) == (speeds["measured_core_sharing"] > 1),
          f"phases {speeds['phase_ranks']} {speeds['phase_sharing']}")
    # The least compute takes the cores as counted: the threads of rank 0's host over its cores, where above 1.
    inputs = doc["inputs"]
    counted = max(1.0, min(2, inputs["ranks_per_host"]) / inputs["cores_per_host"]) if inputs["cores_per_host"] else 1.0
    least = counted * least_alone
    check(math.isclose(two["compute_bound_us"], least, rel_tol=1e-6), f"least {two['compute_bound_us']} != {least}")
    check(two["compute_bound_us"] <= two["compute_claims_us"] * (1 + 1e-9) and
          two["compute_claims_us"] <= two["compute_us"] * (1 + 1e-9),
          f"claims {two['compute_claims_us']} outside [{two['compute_bound_us']}, {two['compute_us']}]")
    check.stop_if_failed()
    print(f"plan speeds at np=2: {scale[0]:.2f} {scale[1]:.2f}; compute at 2 ranks: static {two['compute_us']:.0f} us, "
          f"claims {two['compute_claims_us']:.0f} us, least {two['compute_bound_us']:.0f} us")


if __name__ == "__main__":
    main()
