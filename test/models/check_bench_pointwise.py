#!/usr/bin/env python3
"""check_bench_pointwise.py BENCH.json RANKS: `maprect bench --model pointwise_regression` recorded every backend
of every size, eager and deferred, their gradients agree with the closed form, and over a cluster the root
received, per job run on another rank, the K (M + 1) doubles of an eager call, or the K values and M adjoints
of a deferred gradient and the job's output count (and at most a few bytes more, and the workers' status)."""
import json
import sys

doc = json.load(open(sys.argv[1]))
ranks = int(sys.argv[2])
sizes = {(r["jobs"], r["points"]) for r in doc["records"]}
for G, K in sizes:
    rs = {r["backend"]: r for r in doc["records"] if (r["jobs"], r["points"]) == (G, K)}
    expected = {"analytic", "in_process", "in_process_deferred"}
    expected |= {"cluster", "cluster_deferred"} if ranks > 1 else set()
    if set(rs) != expected:
        sys.exit(f"FAIL: {G}x{K}: backends {sorted(rs)}, expected {sorted(expected)}")
    for r in rs.values():
        if not r["max_abs_diff_vs_analytic"] < 1e-8:
            sys.exit(f"FAIL: {G}x{K} {r['backend']}: gradient {r['max_abs_diff_vs_analytic']} off the closed form")
    if ranks > 1:
        c = rs["cluster"]
        remote_jobs = G - c["root_jobs"]
        eager = K * (c["parameters_per_job"] + 1) * 8
        # Who ran what is the schedule's (any rank may claim another's jobs): root_jobs is what the call
        # reported. Each worker's five status doubles come too, even when the root ran every job.
        statuses = 8 * 5 * (ranks - 1)
        if not remote_jobs * eager <= c["bytes_received"] <= remote_jobs * (eager + 64) + statuses:
            sys.exit(f"FAIL: {G}x{K}: received {c['bytes_received']} bytes for {remote_jobs} jobs of {eager} bytes")
        d = rs["cluster_deferred"]
        remote_jobs = G - d["root_jobs"]
        deferred = (K + d["parameters_per_job"]) * 8
        # Each worker's report heads (status, failing job: 2 ints forward, 2 doubles back) come too.
        heads = (8 + 16) * (ranks - 1)
        if not remote_jobs * deferred <= d["bytes_received"] <= remote_jobs * (deferred + 4) + heads:
            sys.exit(f"FAIL: {G}x{K}: deferred received {d['bytes_received']} bytes for {remote_jobs} jobs of "
                     f"{deferred} bytes")
print(f"ok: {len(sizes)} sizes, every backend, eager and deferred bytes per job")
