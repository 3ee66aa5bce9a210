#!/usr/bin/env python3
"""check_bench_pointwise.py BENCH.json RANKS: `maprect bench --model pointwise_regression` recorded every backend
of every size, eager, deferred and auto, their gradients agree with the closed form, auto ran in the mode that
detail::deferred_pays names for the size, and over a cluster the root received, per job run on another rank, the
K (M + 1) doubles of an eager call, or the K values and M adjoints of a deferred gradient and the job's output
count (and at most a few bytes more, and the workers' status)."""
import json
import sys

doc = json.load(open(sys.argv[1]))
ranks = int(sys.argv[2])
sizes = {(r["jobs"], r["points"]) for r in doc["records"]}


def deferred_pays(outputs, jobs, m):
    """detail::deferred_pays (include/maprect/detail/reverse_mode.hpp)."""
    bytes = outputs * (m + 1) >= 2 * (2 * outputs + m * jobs)
    sweeps = outputs * (outputs / jobs - 1) >= 1 << 14
    return (bytes or sweeps) and outputs * (m + 1) * 8 <= 1 << 30


def check_bytes(G, K, r):
    remote_jobs = G - r["root_jobs"]
    m = r["parameters_per_job"]
    if r["reverse"] == "eager":
        eager = K * (m + 1) * 8
        # Who ran what is the schedule's (any rank may claim another's jobs): root_jobs is what the call
        # reported. Each worker's five status doubles come too, even when the root ran every job.
        statuses = 8 * 5 * (ranks - 1)
        if not remote_jobs * eager <= r["bytes_received"] <= remote_jobs * (eager + 64) + statuses:
            sys.exit(f"FAIL: {G}x{K} {r['backend']}: received {r['bytes_received']} bytes for {remote_jobs} jobs of "
                     f"{eager} bytes")
    else:
        deferred = (K + m) * 8
        # Each worker's report heads come too: status and failing job back, 2 doubles; forward 2 ints, or by
        # claims the five doubles of its result's head (the sizes are the last call's: no counts come).
        heads = (40 + 16) * (ranks - 1)
        if not remote_jobs * deferred <= r["bytes_received"] <= remote_jobs * (deferred + 4) + heads:
            sys.exit(f"FAIL: {G}x{K} {r['backend']}: received {r['bytes_received']} bytes for {remote_jobs} jobs "
                     f"of {deferred} bytes")


for G, K in sizes:
    rs = {r["backend"]: r for r in doc["records"] if (r["jobs"], r["points"]) == (G, K)}
    expected = {"analytic", "in_process", "in_process_deferred", "in_process_auto"}
    expected |= {"cluster", "cluster_deferred", "cluster_auto"} if ranks > 1 else set()
    if set(rs) != expected:
        sys.exit(f"FAIL: {G}x{K}: backends {sorted(rs)}, expected {sorted(expected)}")
    for r in rs.values():
        if not r["max_abs_diff_vs_analytic"] < 1e-8:
            sys.exit(f"FAIL: {G}x{K} {r['backend']}: gradient {r['max_abs_diff_vs_analytic']} off the closed form")
    pays = deferred_pays(G * K, G, rs["in_process"]["parameters_per_job"])
    for name, r in rs.items():
        want = "deferred" if "deferred" in name or ("auto" in name and pays) else "eager"
        if name != "analytic" and r["reverse"] != want:
            sys.exit(f"FAIL: {G}x{K} {name}: ran {r['reverse']}, expected {want}")
    if ranks > 1:
        for name in ("cluster", "cluster_deferred", "cluster_auto"):
            check_bytes(G, K, rs[name])
print(f"ok: {len(sizes)} sizes, every backend, auto's choice, eager and deferred bytes per job")
