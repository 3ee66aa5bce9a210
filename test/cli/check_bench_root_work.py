"""check_bench_root_work.py BENCH.json DATA REPEAT: the root's serial work per steady cluster call in a bench run
at 2 ranks with MAPRECT_BALANCE=even, which keeps the root off the jobs of its root-work call sites: every
cluster record carries it from every call, positive, below the call's own CPU time, its min below its median,
and its share the median over the in-process gradient's CPU time. How it compares with the time of a gradient
is a speed, left to the benchmark: under ASan on shared cores the root's serial work has measured half the
in-process gradient's CPU time, and noise moves either. With DATA rows the root compared every worker row in each
call; with job_data none."""
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
    assert r["root_serial_calls"] == repeat and r["root_serial_calls_with_jobs"] == 0, r
    assert r["root_serial_jobs_run"] is None and r["root_serial_with_jobs_us"] is None, r
    assert r["root_serial_checked_rows"] == (r["jobs"] if data == "rows" else 0), r
    assert 0 < low <= serial, r
    # Serial work is part of the root thread's CPU time in the call, which collecting the answers fills out.
    assert r["root_serial_wait_cpu_us"] > 0 and serial < r["root_serial_call_cpu_us"], r
    in_process_cpu = r["root_serial_in_process_cpu_us"]
    # CPU time of a thread never runs ahead of the wall clock (a small margin for the two clocks' reads).
    assert in_process_cpu <= 1.05 * local["median_us"], (in_process_cpu, local)
    share = r["root_serial_over_in_process"]
    assert math.isclose(share, serial / in_process_cpu, rel_tol=1e-12), (share, serial, in_process_cpu)
for r in doc["records"]:
    if r["backend"] != "cluster":
        assert all(r[k] is None for k in r if k.startswith("root_serial")), r
print(f"{path}: root's serial work " + ", ".join(
    f"{r['kernel']} {r['root_serial_us']:.2f} us ({100 * r['root_serial_over_in_process']:.3f}%)" for r in clusters))
