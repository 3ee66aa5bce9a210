#!/usr/bin/env python3
"""Checks a `maprect plan --json` document from 2 ranks confined to one CPU (taskset): plan counts the one core
the ranks may use, measures the phases of its 2 ranks, and the 2-rank row takes its sharing from them.
Usage: check_plan_phases.py FILE."""
import sys

from plan_checks import Checks, load


def main():
    doc = load(sys.argv[1])
    check = Checks()

    inputs, speeds = doc["inputs"], doc["rank_speeds"]
    check(doc["measured_ranks"] == 2, f"measured_ranks {doc['measured_ranks']}")
    check(inputs["cores_per_host"] == 1, f"cores_per_host {inputs['cores_per_host']}, the ranks may use 1")
    check(speeds["measured_core_sharing"] == 2, f"measured_core_sharing {speeds['measured_core_sharing']}")
    # Two ranks on one CPU time their speeds in rounds of several time slices.
    check(speeds["round_us"] == 30000, f"round_us {speeds['round_us']}")
    lengths, sharing = speeds["phase_lengths_us"], speeds["phase_sharing"]
    check(speeds["phase_ranks"] == 2, f"phase_ranks {speeds['phase_ranks']}")
    check(len(lengths) == 7 and len(sharing) == 7, f"{len(lengths)} lengths, {len(sharing)} factors")
    check(all(a < b for a, b in zip(lengths, lengths[1:])), f"lengths not ascending: {lengths}")
    check(all(f >= 1 for f in sharing), f"a factor below 1: {sharing}")
    check(speeds["phase_round_us"] > 0, f"phase_round_us {speeds['phase_round_us']}")
    check.stop_if_failed()
    rows = {r["ranks"]: r for r in doc["predictions"]}
    check(rows[1]["core_sharing"] == 1 and rows[1]["collective_wait_us"] == 0, f"1 rank: {rows[1]}")
    two = rows[2]
    check(min(sharing) - 1e-9 <= two["core_sharing"] <= max(sharing) + 1e-9,
          f"2 ranks: core_sharing {two['core_sharing']} outside the measured {sharing}")
    check(two["collective_wait_us"] >= 0, f"2 ranks: collective_wait_us {two['collective_wait_us']}")
    check.stop_if_failed()
    print(f"plan on one CPU at np=2: phases {sharing}, empty {speeds['phase_round_us']:.1f} us; "
          f"2 ranks: sharing {two['core_sharing']:.2f}, waits {two['collective_wait_us']:.1f} us")


if __name__ == "__main__":
    main()
