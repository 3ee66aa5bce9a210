#!/bin/bash
# Interleaved rounds of `maprect bench` at 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread (the
# figures of docs/threads.md). Usage: bench_cluster_threads.sh <maprect binary> <rounds> <sizes> <repeat> <out dir>
# Prints, per size, the median and range over the rounds of the scalar kernel's time per gradient (the cluster
# record where the run has one, else the in-process one, which a one-rank cluster runs on its team), and the
# root team's slowest and fastest thread per call.
set -euo pipefail
bin=$1 rounds=$2 sizes=$3 repeat=$4 out=$5
mkdir -p "$out"
configs=("1 1" "1 2" "2 1")
for ((r = 1; r <= rounds; ++r)); do
  for c in "${configs[@]}"; do
    read -r np t <<<"$c"
    mpirun -np "$np" --bind-to none "$bin" bench --sizes "$sizes" --repeat "$repeat" --threads "$t" \
      --json "$out/r${r}_${np}x${t}.json" >/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys, glob
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for f in sorted(glob.glob(f"{out}/r*_*x*.json")):
    cfg = f.rsplit("_", 1)[1][:-5]
    recs = json.load(open(f))["records"]
    for rec in recs:
        if rec["kernel"] != "scalar": continue
        size = f'{rec["jobs"]}x{rec["points"]}'
        want = "cluster" if any(x["backend"] == "cluster" and x["jobs"] == rec["jobs"] and x["points"] == rec["points"]
                                for x in recs) else "in_process"
        if rec["backend"] != want: continue
        rows.setdefault((size, cfg), []).append((rec["median_us"], rec.get("thread_slowest_us"), rec.get("thread_fastest_us")))
print(f"{'size':10} {'ranks x threads':>15} {'median us':>10} {'min':>10} {'max':>10} {'root slowest thread us':>23} {'fastest':>9}  (rounds)")
for (size, cfg), v in sorted(rows.items(), key=lambda kv: (int(kv[0][0].split('x')[0]), kv[0][1])):
    us = [x[0] for x in v]
    slow = [x[1] for x in v if x[1] is not None]; fast = [x[2] for x in v if x[2] is not None]
    s = f"{statistics.median(slow):23.1f} {statistics.median(fast):9.1f}" if slow else f"{'-':>23} {'-':>9}"
    print(f"{size:10} {cfg:>15} {statistics.median(us):10.1f} {min(us):10.1f} {max(us):10.1f} {s}  ({len(us)})")
PY
