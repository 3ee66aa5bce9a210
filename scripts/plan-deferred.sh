#!/usr/bin/env bash
# Compares `maprect plan`'s predicted time per gradient of both reverse modes, eager and deferred, with
# `maprect bench --model pointwise_regression`'s measurement of the same size at the same rank count, and says
# which mode MAPRECT_REVERSE=auto runs. Rounds interleave every (size, C, np): each round runs plan and bench once
# each, so that the drift of a shared machine falls on all of them alike; the figures are medians over rounds.
# One row per (label, size, C, np): predicted and measured us per gradient and their ratio, eager (auto's: by
# claims where they pay, else the split; in process at one rank) and deferred (MAPRECT_REVERSE=deferred, and
# auto's backend, which runs deferred where auto chooses it): its prediction under MAPRECT_BALANCE=auto, the
# default (by claims where they pay), and its static split's under MAPRECT_BALANCE=static.
# Printed, not asserted: timings on a shared machine are no test (docs/cost-model.md).
#
#   scripts/plan-deferred.sh                     np 1-3 on this host, shared memory
#   MAPRECT_PLAN_MPIRUN=<launcher> MAPRECT_PLAN_NPS="2 3" MAPRECT_PLAN_LABEL="tcp" scripts/plan-deferred.sh
#
#   MAPRECT_PLAN_MPIRUN   command that launches "<it> -np N program args" (default: mpirun over shared memory)
#   MAPRECT_PLAN_NPS      rank counts (default "1 2 3")
#   MAPRECT_PLAN_SIZES    GxK sizes (default "16x100 16x1000")
#   MAPRECT_PLAN_COVS     covariates C (default "8 98")
#   MAPRECT_PLAN_ROUNDS   interleaved rounds (default 6)
#   MAPRECT_PLAN_REPEAT   --repeat of both programs in a round (default 5)
#   MAPRECT_PLAN_LABEL    first column (default "shm")
#   MAPRECT_BUILD_DIR     build with bin/maprect (built if missing)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

NPS=${MAPRECT_PLAN_NPS:-1 2 3}
SIZES=${MAPRECT_PLAN_SIZES:-16x100 16x1000}
COVS=${MAPRECT_PLAN_COVS:-8 98}
ROUNDS=${MAPRECT_PLAN_ROUNDS:-6}
REPEAT=${MAPRECT_PLAN_REPEAT:-5}
LABEL=${MAPRECT_PLAN_LABEL:-shm}
plan_script_setup deferred

for round in $(seq "$ROUNDS"); do
  for size in $SIZES; do
    for C in $COVS; do
      for np in $NPS; do
        G=${size%x*} K=${size#*x}
        base=$WORK/$size-c$C-np$np-r$round
        # shellcheck disable=SC2086  # the launcher is a command line
        $MAPRECT_PLAN_MPIRUN -np "$np" "$BIN" plan --model pointwise_regression --jobs "$G" --points "$K" \
          --covariates "$C" --job-data --ranks-max 1 --repeat "$REPEAT" --json "$base-plan.json" > "$base-plan.txt"
        # shellcheck disable=SC2086
        $MAPRECT_PLAN_MPIRUN -np "$np" "$BIN" bench --model pointwise_regression --sizes "$size" --covariates "$C" \
          --repeat "$REPEAT" --json "$base-bench.json" > "$base-bench.txt"
      done
    done
  done
  echo "round $round of $ROUNDS done" >&2
done

python3 - "$WORK" "$LABEL" "$SIZES" "$COVS" "$NPS" "$ROUNDS" <<'PY'
import json, os, statistics, sys
work, label, sizes, covs, nps, rounds = sys.argv[1:]
rounds = int(rounds)
# Under MAPRECT_BALANCE=auto a deferred call claims where claims pay, else runs the static split, as it
# always does under static.
static = os.environ.get("MAPRECT_BALANCE") in ("static", "even")
deferred_key = "us_per_gradient" if static else "us_per_gradient_auto"
print(f"{'label':6} {'GxK':9} {'C':>3} {'np':>2} {'auto':>8} {'split':>12} | {'eager pred':>10} {'meas':>10} "
      f"{'ratio':>6} | {'def pred':>9} {'meas':>9} {'ratio':>6} {'min':>5} {'max':>5} | {'auto meas':>9} "
      f"{'ratio':>6} | {'def/eag meas':>12}")
for size in sizes.split():
    for c in covs.split():
        for np_ in map(int, nps.split()):
            eager_p, eager_m, def_p, def_m, auto_m, ratios, auto, split = [], [], [], [], [], [], set(), set()
            for r in range(1, rounds + 1):
                base = f"{work}/{size}-c{c}-np{np_}-r{r}"
                plan = json.load(open(base + "-plan.json"))
                bench = json.load(open(base + "-bench.json"))
                row = next(x for x in plan["predictions"] if x["ranks"] == np_)
                drow = next(x for x in plan["reverse"]["predictions"] if x["ranks"] == np_)
                auto.add(plan["reverse"]["auto"])
                split.add("claims" if drow.get("claims") and not static else "static")
                where = "cluster" if np_ > 1 else "in_process"
                rec = {x["backend"]: x["median_us"] for x in bench["records"]}
                eager_p.append(row["us_per_gradient_auto"])
                eager_m.append(rec[where])
                def_p.append(drow[deferred_key])
                def_m.append(rec[where + "_deferred"])
                auto_m.append(rec[where + "_auto"])
                ratios.append(drow[deferred_key] / rec[where + "_deferred"])
            med = statistics.median
            ep, em, dp, dm, am = med(eager_p), med(eager_m), med(def_p), med(def_m), med(auto_m)
            print(f"{label:6} {size:9} {c:>3} {np_:>2} {'/'.join(sorted(auto)):>8} {'/'.join(sorted(split)):>12} | "
                  f"{ep:10.1f} {em:10.1f} {ep / em:6.2f} | {dp:9.1f} {dm:9.1f} {dp / dm:6.2f} "
                  f"{min(ratios):5.2f} {max(ratios):5.2f} | "
                  f"{am:9.1f} {dp / am:6.2f} | {dm / em:12.3f}")
print("(medians over rounds; ratio: prediction / measurement of the medians; min, max: of the rounds' own ratios;"
      "\n eager: plan's auto (claims where they pay) against bench's cluster, in process at np 1;"
      "\n deferred: MAPRECT_REVERSE=deferred;"
      "\n auto meas: MAPRECT_REVERSE=auto, deferred where auto says so; bench times each sample after 5 ms of"
      "\n untimed gradients of the same backend: the steady state the plan predicts)")
PY
