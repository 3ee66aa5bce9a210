#!/bin/bash
# Two builds of maprect side by side: `maprect bench` of each in alternating rounds (the order flips every
# round), then per size and kernel the median time per gradient of each build's cluster record, and the
# median, lowest and highest per-round ratio new / old (a figure is worse than the old one beyond noise only
# when the ratio's whole range lies above 1).
# Usage: scripts/bench-builds.sh OLD_BINARY NEW_BINARY ROUNDS SIZES REPEAT RANKS OUT_DIR
set -euo pipefail
old=$1 new=$2 rounds=$3 sizes=$4 repeat=$5 ranks=$6 out=$7
mkdir -p "$out"
for ((r = 1; r <= rounds; ++r)); do
  order=(old new)
  ((r % 2 == 0)) && order=(new old)
  for which in "${order[@]}"; do
    bin=$old
    [[ $which == new ]] && bin=$new
    mpirun -np "$ranks" "$bin" bench --sizes "$sizes" --repeat "$repeat" --json "$out/r${r}_${which}.json" >/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def cluster_times(path):
    recs = json.load(open(path))["records"]
    return {(f'{x["jobs"]}x{x["points"]}', x["kernel"]): x["median_us"] for x in recs if x["backend"] == "cluster"}
per_round = [(cluster_times(f"{out}/r{r}_old.json"), cluster_times(f"{out}/r{r}_new.json")) for r in range(1, rounds + 1)]
keys = sorted(per_round[0][0], key=lambda k: (int(k[0].split("x")[0]), int(k[0].split("x")[1]), k[1]))
print(f"{'size':10} {'kernel':7} {'old us':>9} {'new us':>9} {'new/old':>8} {'lowest':>8} {'highest':>8}  (rounds)")
for k in keys:
    olds = [o[k] for o, n in per_round if k in o and k in n]
    news = [n[k] for o, n in per_round if k in o and k in n]
    ratios = [b / a for a, b in zip(olds, news)]
    print(f"{k[0]:10} {k[1]:7} {statistics.median(olds):9.1f} {statistics.median(news):9.1f} "
          f"{statistics.median(ratios):8.3f} {min(ratios):8.3f} {max(ratios):8.3f}  ({len(ratios)})")
PY
