#!/usr/bin/env bash
# Compares `maprect plan`'s predicted time per gradient with `maprect bench`'s measurement of the same size at
# the same rank count: one row per (label, np, size, kernel) with the prediction (us), the measurement under
# MAPRECT_BALANCE=static (the even split the model's flat prediction assumes) and by default ("auto": the
# claims), each with prediction / measurement; beside them the predicted messages and the
# raw MPI floor bench measures for the same messages (us), and the link figures plan measured and used
# (alpha: one-way latency, o: the root's time per message in a stream, us; of the link between hosts where
# the ranks span several, else of the one within this host).
# Printed, not asserted: timings on a shared machine are no test (docs/cost-model.md).
#
#   scripts/plan-validate.sh                     np 1-4 on this host, shared memory
#   MAPRECT_PLAN_MPIRUN=<launcher> MAPRECT_PLAN_NPS="2 3" MAPRECT_PLAN_LABEL="tcp 20us" scripts/plan-validate.sh
#
#   MAPRECT_PLAN_MPIRUN   command that launches "<it> -np N program args" (default: mpirun over shared memory)
#   MAPRECT_PLAN_NPS      rank counts (default "1 2 3 4")
#   MAPRECT_PLAN_SIZES    JxN sizes of the standard model (default "64x100 256x100")
#   MAPRECT_PLAN_KERNELS  kernels (default "vector scalar")
#   MAPRECT_PLAN_REPEAT   repeats of both programs (default 20)
#   MAPRECT_PLAN_LABEL    first column (default "shm")
#   MAPRECT_PLAN_HEADER   0: no header line (for a caller that prints several label blocks under one)
#   MAPRECT_BUILD_DIR     build with bin/maprect (built if missing)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

NPS=${MAPRECT_PLAN_NPS:-1 2 3 4}
SIZES=${MAPRECT_PLAN_SIZES:-64x100 256x100}
KERNELS=${MAPRECT_PLAN_KERNELS:-vector scalar}
REPEAT=${MAPRECT_PLAN_REPEAT:-20}
LABEL=${MAPRECT_PLAN_LABEL:-shm}
plan_script_setup validate

# One row: the prediction at P = np with flat collectives (what the runtime does) from plan's JSON, the
# measurements from bench's (cluster; in process at 1): under MAPRECT_BALANCE=static (the even split the
# model's flat prediction assumes) and as the runtime runs by default (auto: the claims).
compare() {
  python3 - "$@" <<'PY'
import json, sys
label, np_, size, kernel, plan_file, even_file, auto_file = sys.argv[1:]
np_ = int(np_)
plan = json.load(open(plan_file))
row = next(r for r in plan["predictions"] if r["ranks"] == np_)
backend = "cluster" if np_ > 1 else "in_process"
def measured(bench_file):
    bench = json.load(open(bench_file))
    return next(r["median_us"] for r in bench["records"] if r["backend"] == backend and r["kernel"] == kernel)
even, auto = measured(even_file), measured(auto_file)
bench = json.load(open(auto_file))
floor = next((r["median_us"] for r in bench["records"] if r["backend"] == "raw_mpi_floor"), float("nan"))
link = plan["inputs"]["remote" if plan["measured_hosts"] > 1 else "local"]
alpha, o = (link["alpha_us"], link["overhead_us"]) if np_ > 1 else (float("nan"), float("nan"))
predicted = row["us_per_gradient_flat"]
print(f"{label:<12} {np_:>3} {size:>9} {kernel:>7} {predicted:>10.1f} {even:>8.1f} {predicted / even:>6.2f} "
      f"{auto:>8.1f} {predicted / auto:>6.2f} {row['messages_us']:>9.1f} {floor:>8.1f} {row['bound']:>9}"
      f" {alpha:>7.1f} {o:>6.1f}")
PY
}

if [ "${MAPRECT_PLAN_HEADER:-1}" != 0 ]; then
  printf '%-12s %3s %9s %7s %10s %8s %6s %8s %6s %9s %8s %9s %7s %6s\n' links np size kernel "predicted" "even" \
    ratio "auto" ratio "messages" "floor" bound "alpha" "o"
fi
for np in $NPS; do
  for size in $SIZES; do
    J=${size%x*} N=${size#*x}
    for balance in even auto; do
      # shellcheck disable=SC2086  # the launcher is a command line
      $MAPRECT_PLAN_MPIRUN -np "$np" -x MAPRECT_BALANCE=$balance "$BIN" bench --sizes "$size" --repeat "$REPEAT" \
        --json "$WORK/bench-$balance.json" >"$WORK/bench.log" 2>&1 ||
        { cat "$WORK/bench.log"; echo "FAIL: bench np=$np $size MAPRECT_BALANCE=$balance"; exit 1; }
    done
    for kernel in $KERNELS; do
      # shellcheck disable=SC2086
      $MAPRECT_PLAN_MPIRUN -np "$np" "$BIN" plan --jobs "$J" --points "$N" --kernel "$kernel" --repeat "$REPEAT" \
        --ranks-max 1 --json "$WORK/plan.json" >"$WORK/plan.log" 2>&1 ||
        { cat "$WORK/plan.log"; echo "FAIL: plan np=$np $size $kernel"; exit 1; }
      compare "$LABEL" "$np" "$size" "$kernel" "$WORK/plan.json" "$WORK/bench-even.json" "$WORK/bench-auto.json"
    done
  done
done
