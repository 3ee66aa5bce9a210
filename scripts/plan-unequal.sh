#!/usr/bin/env bash
# maprect plan's prediction against maprect-bench-unequal's measurement, with one rank's jobs s times slower:
# 48 jobs of 1 ms, each a sleep (so the ranks' speeds hold on 2 cores). Per rank count and case (no slow rank,
# the root slow, worker 1 slow), every round runs `maprect plan --model sleep` with the same slowed rank (its
# per-rank speeds come out unequal) and the bench under each MAPRECT_BALANCE; the prediction for auto is
# plan's claims engine (`us_per_gradient_claims`), for static and even the static split with flat collectives
# (`us_per_gradient_flat`). Runs are interleaved over ROUNDS rounds; the table shows per case the medians and
# the median of the rounds' ratios prediction / measurement, with their range. Printed, not asserted.
#   ROUNDS=6 NPS="1 2 4" JOBS=48 JOB_MS=1 SLOW=3 BALANCES="auto static even" scripts/plan-unequal.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

ROUNDS="${ROUNDS:-6}"
NPS="${NPS:-1 2 4}"
JOBS="${JOBS:-48}"
JOB_MS="${JOB_MS:-1}"
SLOW="${SLOW:-3}"
read -r -a balances <<<"${BALANCES:-auto static even}"
build maprect-cli maprect-bench-unequal >/dev/null
bin="$MAPRECT_BUILD_DIR/bin"
work=$(mktemp -d /tmp/maprect-plan-unequal.XXXXXX)
trap 'rm -rf "$work"' EXIT

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none

log "plan-unequal: $(nproc) cores, ranks $NPS, $JOBS jobs of $JOB_MS ms, s = $SLOW, $ROUNDS rounds"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for np in $NPS; do
    for case_ in none root worker; do
      case $case_ in none) rank=-1 ;; root) rank=0 ;; worker) rank=1 ;; esac
      [ "$np" -le "$rank" ] && continue
      slow=()
      [ "$rank" -ge 0 ] && slow=(--slow-rank "$rank" --slow-factor "$SLOW")
      mpirun -np "$np" "$bin/maprect" plan --model sleep --jobs "$JOBS" --job-ms "$JOB_MS" "${slow[@]}" --repeat 5 \
        --ranks-max "$np" --json "$work/plan.json" >"$work/plan.log" 2>&1 || { cat "$work/plan.log"; exit 1; }
      for balance in "${balances[@]}"; do
        [ "$np" -eq 1 ] && [ "$balance" != auto ] && continue  # one rank: no balancing
        line=$(MAPRECT_BALANCE="$balance" mpirun -np "$np" "$bin/maprect-bench-unequal" --jobs "$JOBS" \
          --job-ms "$JOB_MS" --slow-factor "$SLOW" --slow-rank "$rank" --calls 30)
        python3 - "$work/plan.json" "$np" "$case_" "$balance" "$line" <<'PY' | tee -a "$work/rows"
import json, re, sys
plan, np_, case, balance, line = sys.argv[1:]
row = next(r for r in json.load(open(plan))["predictions"] if r["ranks"] == int(np_))
key = "us_per_gradient_claims" if balance == "auto" else "us_per_gradient_flat"
measured = float(re.search(r"median_ms=([0-9.]+)", line).group(1))
print(f"np={np_} case={case} balance={balance} predicted_ms={row[key] / 1e3:.3f} measured_ms={measured:.3f}")
PY
      done
    done
  done
done
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work/rows" <<'PY'
import statistics, sys
groups = {}
for line in open(sys.argv[1]):
    r = dict(kv.split("=") for kv in line.split())
    groups.setdefault((r["np"], r["case"], r["balance"]), []).append((float(r["predicted_ms"]), float(r["measured_ms"])))
print(f"{'np':>3} {'slow':<7} {'balance':<8} {'predicted ms':>13} {'measured ms (range)':<24} ratio (range)")
for (np_, case, balance), runs in groups.items():
    p, m = [a for a, _ in runs], [b for _, b in runs]
    q = [a / b for a, b in runs]
    print(f"{np_:>3} {case:<7} {balance:<8} {statistics.median(p):13.2f} "
          f"{statistics.median(m):.2f} ({min(m):.2f}-{max(m):.2f}){'':<4} "
          f"{statistics.median(q):.3f} ({min(q):.3f}-{max(q):.3f})")
PY
