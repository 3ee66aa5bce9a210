#!/bin/bash
# Interleaved rounds of `maprect bench` at 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread (the
# figures of docs/threads.md). Usage: bench_cluster_threads.sh <maprect binary> <rounds> <sizes> <repeat> <out dir>
# Prints, per size and kernel, the median and range over the rounds of the time per gradient (the cluster
# record where the run has one, else the in-process one, which a one-rank cluster runs on its team), and the
# slowest and fastest thread per call of the root's team and of the busiest worker's.
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
        size = f'{rec["jobs"]}x{rec["points"]}'
        want = "cluster" if any(x["backend"] == "cluster" and x["jobs"] == rec["jobs"] and x["points"] == rec["points"]
                                for x in recs) else "in_process"
        if rec["backend"] != want: continue
        rows.setdefault((size, rec["kernel"], cfg), []).append(
            (rec["median_us"], rec.get("thread_slowest_us"), rec.get("thread_fastest_us"),
             rec.get("worker_thread_slowest_us"), rec.get("worker_thread_fastest_us")))
def medians(v, i):
    got = [x[i] for x in v if x[i] is not None]
    return f"{statistics.median(got):9.1f}" if got else f"{'-':>9}"
print(f"{'size':10} {'kernel':7} {'ranks x threads':>15} {'median us':>10} {'min':>10} {'max':>10}"
      f" {'root thread us: slowest':>24} {'fastest':>9} {'worker: slowest':>16} {'fastest':>9}  (rounds)")
for (size, kernel, cfg), v in sorted(rows.items(), key=lambda kv: (int(kv[0][0].split('x')[0]), kv[0][0], kv[0][1], kv[0][2])):
    us = [x[0] for x in v]
    print(f"{size:10} {kernel:7} {cfg:>15} {statistics.median(us):10.1f} {min(us):10.1f} {max(us):10.1f}"
          f" {medians(v, 1):>24} {medians(v, 2)} {medians(v, 3):>16} {medians(v, 4)}  ({len(us)})")
PY
