"""check_bench.py BENCH.json RANKS: valid JSON holding records of every backend the rank count calls for."""
import json
import sys

path, ranks = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    doc = json.load(f)
assert doc["ranks"] == ranks, f"ranks {doc['ranks']}, expected {ranks}"
backends = {(r["kernel"], r["backend"]) for r in doc["records"]}
expected = {("none", "analytic"), ("scalar", "single_tape"), ("scalar", "in_process"), ("vector", "single_tape"),
            ("vector", "in_process"), ("scalar", "reduce_sum"), ("vector", "reduce_sum")}
if ranks > 1:
    expected |= {("none", "raw_mpi_floor"), ("scalar", "cluster"), ("vector", "cluster")}
assert backends == expected, f"backends {sorted(backends)}, expected {sorted(expected)}"
for r in doc["records"]:
    assert r["ranks"] == ranks and r["median_us"] > 0, r
    if r["max_abs_diff_vs_analytic"] is not None:
        assert r["max_abs_diff_vs_analytic"] < 1e-9, r
    if r["backend"] == "cluster":  # the root's data check, from the calls' profiles: part of a call
        assert r["check_us"] is not None and 0 <= r["check_us"] < r["median_us"], r
        # One node: a steady call's job parameters and blocks go through shared memory, all of them.
        assert r["bytes_through_memory"] is not None and 0 < r["bytes_through_memory"] < r["bytes_sent"] + r["bytes_received"], r
    else:
        assert r["bytes_through_memory"] is None, r
    if r["backend"] == "reduce_sum":  # one record per grainsize, timed against the plain tape and map_rect
        assert r["grainsize"] >= 1 and r["single_tape_over_this"] > 0 and r["map_rect_over_this"] > 0, r
        assert (r["bytes_sent"] > 0 and r["bytes_received"] > 0) if ranks > 1 else r["bytes_sent"] is None, r
    else:
        assert r["grainsize"] is None, r
serial_keys = ("root_serial_us", "root_serial_min_us", "root_serial_over_in_process", "root_serial_in_process_cpu_us",
               "root_serial_call_cpu_us", "root_serial_wait_cpu_us", "root_serial_calls", "root_serial_checked_rows",
               "root_serial_calls_with_jobs", "root_serial_jobs_run", "root_serial_with_jobs_us")
# The root's serial work per steady call: in cluster records only (its values: check_bench_root_work.py).
for r in doc["records"]:
    missing = [k for k in serial_keys if k not in r]
    assert not missing, f"missing {missing} in {r}"
    if r["backend"] != "cluster":
        assert all(r[k] is None for k in serial_keys), r
        continue
    # One steady root-work call per round, with or without jobs on the root (the auto balance may give it some).
    assert r["root_serial_calls"] + r["root_serial_calls_with_jobs"] == doc["repeat"], r
    # The calling thread's CPU time is the in-process call's on one thread per rank only.
    in_process_cpu = r["root_serial_in_process_cpu_us"]
    assert in_process_cpu > 0 if r["threads"] == 1 else in_process_cpu is None, r
    assert (r["root_serial_us"] is None) == (r["root_serial_calls"] == 0), r
    assert (r["root_serial_with_jobs_us"] is None) == (r["root_serial_calls_with_jobs"] == 0), r
assert doc["data"] == "rows" and doc["thread_cpu_clock_read_us"] > 0, (doc["data"], doc["thread_cpu_clock_read_us"])
grainsizes = sorted({r["grainsize"] for r in doc["records"] if r["backend"] == "reduce_sum"})
assert grainsizes[:3] == [1, 8, 64], grainsizes
for s in doc["summary"]:
    share = s["check_over_in_process"]
    assert (share is not None and 0 <= share < 1) if ranks > 1 else share is None, s
    plain = s["single_tape_over_cluster"]
    assert (plain is not None and plain > 0) if ranks > 1 else plain is None, s
for key in ("command_line", "hostname", "date"):
    assert doc[key], key
print(f"{path}: {len(doc['records'])} records")
