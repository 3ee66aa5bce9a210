#!/usr/bin/env bash
# maprect plan's prediction against the measurement, over interleaved rounds. By default maprect-bench-unequal's
# jobs with one rank's jobs s times slower: 48 jobs of 1 ms, each a sleep (so the ranks' speeds hold on 2
# cores). Per rank count and case (no slow rank, the root slow, worker 1 slow), every round runs `maprect plan
# --model sleep` with the same slowed rank (its per-rank speeds come out unequal) and the bench under each
# MAPRECT_BALANCE. With SIZES (JxN of the standard model, scalar kernel) it runs `maprect plan` and `maprect
# bench` instead, per rank count and size (the bench's in-process call at one rank, its cluster call beyond).
# The prediction for auto is plan's claims engine (`us_per_gradient_claims`), for static and even the static
# split with flat collectives (`us_per_gradient_flat`). The table shows per case the medians and the median of
# the rounds' ratios prediction / measurement, with their range. Printed, not asserted.
#   ROUNDS=6 NPS="1 2 4" JOBS=48 JOB_MS=1 SLOW=3 BALANCES="auto static even" scripts/plan-unequal.sh
#   ROUNDS=6 NPS="1 2" SIZES="64x100 256x1000" scripts/plan-unequal.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

ROUNDS="${ROUNDS:-6}"
NPS="${NPS:-1 2 4}"
JOBS="${JOBS:-48}"
JOB_MS="${JOB_MS:-1}"
SLOW="${SLOW:-3}"
SIZES="${SIZES:-}"
read -r -a balances <<<"${BALANCES:-auto static even}"
build maprect-cli maprect-bench-unequal >/dev/null
bin="$MAPRECT_BUILD_DIR/bin"
work=$(mktemp -d /tmp/maprect-plan-unequal.XXXXXX)
trap 'rm -rf "$work"' EXIT

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none

if [ -n "$SIZES" ]; then
  log "plan-unequal: $(nproc) cores, ranks $NPS, the standard model at $SIZES, $ROUNDS rounds"
else
  log "plan-unequal: $(nproc) cores, ranks $NPS, $JOBS jobs of $JOB_MS ms, s = $SLOW, $ROUNDS rounds"
fi
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# row NP CASE BALANCE PLAN_JSON MEASURED_MS: one line of the rows file, the prediction from plan's JSON.
row() {
  python3 - "$@" <<'PY' | tee -a "$work/rows"
import json, sys
np_, case, balance, plan, measured = sys.argv[1:]
row = next(r for r in json.load(open(plan))["predictions"] if r["ranks"] == int(np_))
key = "us_per_gradient_claims" if balance == "auto" else "us_per_gradient_flat"
print(f"np={np_} case={case} balance={balance} predicted_ms={row[key] / 1e3:.4f} measured_ms={float(measured):.4f}")
PY
}

# plan NP ARGS...: maprect plan at NP ranks into $work/plan.json.
plan() {
  local np=$1
  shift
  mpirun -np "$np" "$bin/maprect" plan "$@" --ranks-max "$np" --json "$work/plan.json" >"$work/plan.log" 2>&1 ||
    { cat "$work/plan.log"; exit 1; }
}

# sleep_round NP: the three cases of slowed sleeping jobs at NP ranks.
sleep_round() {
  local np=$1 case_ rank balance line slow
  for case_ in none root worker; do
    case $case_ in none) rank=-1 ;; root) rank=0 ;; worker) rank=1 ;; esac
    [ "$np" -le "$rank" ] && continue
    slow=()
    [ "$rank" -ge 0 ] && slow=(--slow-rank "$rank" --slow-factor "$SLOW")
    plan "$np" --model sleep --jobs "$JOBS" --job-ms "$JOB_MS" "${slow[@]}" --repeat 5
    for balance in "${balances[@]}"; do
      [ "$np" -eq 1 ] && [ "$balance" != auto ] && continue  # one rank: no balancing
      line=$(MAPRECT_BALANCE="$balance" mpirun -np "$np" "$bin/maprect-bench-unequal" --jobs "$JOBS" \
        --job-ms "$JOB_MS" --slow-factor "$SLOW" --slow-rank "$rank" --calls 30)
      row "$np" "$case_" "$balance" "$work/plan.json" "$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
    done
  done
}

# standard_round NP: each of SIZES of the standard model at NP ranks.
standard_round() {
  local np=$1 size balance measured
  for size in $SIZES; do
    plan "$np" --jobs "${size%x*}" --points "${size#*x}" --kernel scalar --repeat 10
    for balance in "${balances[@]}"; do
      [ "$np" -eq 1 ] && [ "$balance" != auto ] && continue
      MAPRECT_BALANCE="$balance" mpirun -np "$np" "$bin/maprect" bench --sizes "$size" --repeat 20 \
        --json "$work/bench.json" >"$work/bench.log" 2>&1 || { cat "$work/bench.log"; exit 1; }
      measured=$(python3 -c "import json, sys
b = 'cluster' if $np > 1 else 'in_process'
print(next(r['median_us'] for r in json.load(open('$work/bench.json'))['records']
           if r['backend'] == b and r['kernel'] == 'scalar') / 1e3)")
      row "$np" "$size" "$balance" "$work/plan.json" "$measured"
    done
  done
}

for round in $(seq "$ROUNDS"); do
  for np in $NPS; do
    if [ -n "$SIZES" ]; then standard_round "$np"; else sleep_round "$np"; fi
  done
done
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work/rows" <<'PY'
import statistics, sys
groups = {}
for line in open(sys.argv[1]):
    r = dict(kv.split("=") for kv in line.split())
    groups.setdefault((r["np"], r["case"], r["balance"]), []).append((float(r["predicted_ms"]), float(r["measured_ms"])))
print(f"{'np':>3} {'case':<8} {'balance':<8} {'predicted ms':>13} {'measured ms (range)':<24} ratio (range)")
for (np_, case, balance), runs in groups.items():
    p, m = [a for a, _ in runs], [b for _, b in runs]
    q = [a / b for a, b in runs]
    print(f"{np_:>3} {case:<8} {balance:<8} {statistics.median(p):13.3f} "
          f"{statistics.median(m):.3f} ({min(m):.3f}-{max(m):.3f}){'':<4} "
          f"{statistics.median(q):.3f} ({min(q):.3f}-{max(q):.3f})")
PY
