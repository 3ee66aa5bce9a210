#!/usr/bin/env python3
"""check_plan.py DATA_JSON PLAN_JSON RANKS RANKS_MAX: the plan of normal_model's map_rect call site, as
`normal_sampler plan --json` wrote it, has the site's shape from the data (G jobs, one var shared parameter
mu, no job parameters, one output per job), every rank count of the table, and positive finite times."""
import json
import math
import sys

data = json.load(open(sys.argv[1]))
plan = json.load(open(sys.argv[2]))
ranks, ranks_max = int(sys.argv[3]), int(sys.argv[4])
failures = []


def expect(what, ok):
    if not ok:
        failures.append(what)


inputs = plan["inputs"]
expect(f"jobs {inputs['jobs']} == G {data['G']}", inputs["jobs"] == data["G"])
expect(f"shared_params {inputs['shared_params']} == 1 (mu)", inputs["shared_params"] == 1)
expect(f"job_params {inputs['job_params']} == 0", inputs["job_params"] == 0)
expect(f"outputs_per_job {inputs['outputs_per_job']} == 1", inputs["outputs_per_job"] == 1)
expect("the model and its call site named", "normal_model" in plan["model"] and "call site 1 (group_normal)" in plan["model"])
expect(f"measured_ranks {plan['measured_ranks']} == {ranks}", plan["measured_ranks"] == ranks)
for key in ("job_us", "in_process_us"):
    expect(f"{key} {inputs[key]} positive and finite", math.isfinite(inputs[key]) and inputs[key] > 0)
for key in ("root_output_us", "root_call_us", "root_check_us_per_job", "job_spread_us"):
    expect(f"{key} {inputs[key]} finite and >= 0", math.isfinite(inputs[key]) and inputs[key] >= 0)
powers = [1 << k for k in range(ranks_max.bit_length()) if 1 << k <= ranks_max]
wanted = sorted(set(powers + [ranks]))
rows = plan["predictions"]
expect(f"rank counts {[r['ranks'] for r in rows]} == {wanted}", [r["ranks"] for r in rows] == wanted)
for r in rows:
    for key in ("us_per_gradient", "compute_us", "efficiency"):
        expect(f"P={r['ranks']}: {key} {r[key]} positive and finite", math.isfinite(r[key]) and r[key] > 0)
    expect(f"P={r['ranks']}: bound {r['bound']}", r["bound"] in ("compute", "balance", "messages", "root"))
    # The terms add up to the total, and no time is below the slowest thread's jobs.
    total = r["root_us"] + r["messages_us"] + r["compute_us"]
    expect(f"P={r['ranks']}: root + messages + compute {total} == {r['us_per_gradient']}",
           math.isclose(total, r["us_per_gradient"], rel_tol=1e-9))
one = rows[0]
expect(f"P=1 efficiency {one['efficiency']} == 1", one["ranks"] == 1 and math.isclose(one["efficiency"], 1.0))
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"ok: plan of {inputs['jobs']} jobs, {len(rows)} rank counts, {rows[-1]['us_per_gradient']:.1f} us at P={rows[-1]['ranks']}")
