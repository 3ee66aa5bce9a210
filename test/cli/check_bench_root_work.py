"""check_bench_root_work.py BENCH.json DATA REPEAT: the root's serial work per steady cluster call in a bench run
at 2 ranks with MAPRECT_BALANCE=even, which keeps the root off the jobs of its root-work call sites: every
cluster record carries it, positive, below the call's own CPU time and below the cluster's time per gradient,
its min below its median, and its share the median over the in_process record's median. With DATA rows the
root compared every worker row in each call; with job_data none."""
import json
import math
import sys

path, data, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path) as f:
    doc = json.load(f)
assert doc["data"] == data, f"data {doc['data']}, expected {data}"
assert 0 < doc["thread_cpu_clock_read_us"] < 100, doc["thread_cpu_clock_read_us"]
records = {(r["jobs"], r["points"], r["kernel"], r["backend"]): r for r in doc["records"]}
clusters = [r for r in doc["records"] if r["backend"] == "cluster"]
assert len(clusters) == 2, f"{len(clusters)} cluster records, expected 2 (scalar, vector)"
for r in clusters:
    local = records[(r["jobs"], r["points"], r["kernel"], "in_process")]
    serial, low = r["root_serial_us"], r["root_serial_min_us"]
    # Every root-work call after the warm-up is steady, one per round.
    assert r["root_serial_calls"] == repeat, r
    assert r["root_serial_jobs_run"] == 0 and r["root_serial_jobs_us"] == 0, r
    assert r["root_serial_checked_rows"] == (r["jobs"] if data == "rows" else 0), r
    assert 0 < low <= serial, r
    # Serial work is part of the root thread's CPU time in the call, which collecting the answers fills out.
    assert r["root_serial_wait_cpu_us"] > 0 and serial < r["root_serial_call_cpu_us"], r
    assert serial < r["median_us"] and serial < local["median_us"], r
    share = r["root_serial_over_in_process"]
    assert math.isclose(share, serial / local["median_us"], rel_tol=1e-12), (share, serial, local["median_us"])
for r in doc["records"]:
    if r["backend"] != "cluster":
        assert all(r[k] is None for k in r if k.startswith("root_serial")), r
print(f"{path}: root's serial work " + ", ".join(
    f"{r['kernel']} {r['root_serial_us']:.2f} us ({100 * r['root_serial_over_in_process']:.3f}%)" for r in clusters))
