#!/usr/bin/env bash
# Runs the batch scripts in slurm/ on a REAL single-node SLURM (scripts/slurm-local.sh) and checks what they
# write: fit.sbatch at 2 tasks through srun --mpi=pmix and through the mpirun fallback (the fit must converge),
# scaling.sbatch at 1, 2 and 4 tasks (one valid bench JSON per task count), sample.sbatch at 2 chains x 2 tasks
# and its resume on 2 tasks. Takes SLURM down again on exit,
# also on failure, unless it was already up before.
#
# Prints PASS/FAIL per check and exits non-zero on any failure. Where SLURM cannot be installed (not root,
# no apt, apt-get fails) it prints `SKIP: SLURM cannot be installed here: <reason>` and exits
# $MAPRECT_SLURM_SKIP_CODE (default 0; CTest sets 77).
#   MAPRECT_BIN        the program to submit (default: $MAPRECT_BUILD_DIR/bin/maprect; built if missing)
#   MAPRECT_BUILD_DIR  build directory (default: <repo>/build)
#   MAPRECT_SLURM_DIR  SLURM state dir (see scripts/slurm-local.sh); job outputs go to $MAPRECT_BUILD_DIR/slurm-test
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

SLURM_LOCAL=$MAPRECT_ROOT/scripts/slurm-local.sh
SLURM_STATE=${MAPRECT_SLURM_DIR:-/tmp/maprect-slurm}
WORK=$MAPRECT_BUILD_DIR/slurm-test
JOB_TIMEOUT=90   # seconds for one `sbatch --wait`; a job stuck pending must not hang the suite
t_all=$SECONDS
failures=0

skip() { echo "SKIP: SLURM cannot be installed here: $*"; exit "${MAPRECT_SLURM_SKIP_CODE:-0}"; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- 1. SLURM packages: the only reason to skip ----------------------------------------------------------
[[ $(id -u) == 0 ]] || skip "not root (apt-get and the SLURM daemons need root)"
status=0
install_log=$("$SLURM_LOCAL" install 2>&1) || status=$?
echo "$install_log"
if ((status == 3)); then skip "$(tail -n 1 <<<"$install_log" | sed 's/^\[slurm-local\] //')"; fi
((status == 0)) || { echo "FAIL: scripts/slurm-local.sh install (exit $status)"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 is needed to check the JSON outputs"; exit 1; }

# --- 2. the program ------------------------------------------------------------------------------------------
# The program as the build makes it, unless MAPRECT_BIN names another.
BIN=${MAPRECT_BIN:-$MAPRECT_BUILD_DIR/bin/maprect}
if [[ -z ${MAPRECT_BIN:-} && ! -x $BIN ]]; then
  log "slurm: no $BIN: building"
  build
fi
[[ -x $BIN ]] || { echo "FAIL: no maprect program at $BIN"; exit 1; }
BIN=$(realpath "$BIN")
log "slurm: program $BIN"

# --- 3. SLURM up, and down again whatever happens --------------------------------------------------------------
was_up=0
MAPRECT_SLURM_DIR=$SLURM_STATE "$SLURM_LOCAL" status >/dev/null 2>&1 && was_up=1
teardown() {
  local rc=$?
  if ((was_up)); then
    log "slurm: left running (it was up before this test)"
  else
    MAPRECT_SLURM_DIR=$SLURM_STATE "$SLURM_LOCAL" down || true
  fi
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM
t0=$SECONDS
MAPRECT_SLURM_DIR=$SLURM_STATE "$SLURM_LOCAL" up
log "slurm: up in $((SECONDS - t0)) s"
# shellcheck source=/dev/null
source "$SLURM_STATE/env.sh"

# Open MPI as root, more ranks than cores, shared memory only (no TCP listening on every interface).
# The jobs get them through --export=ALL.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export MAPRECT_BIN=$BIN
rm -rf "$WORK"
mkdir -p "$WORK"

# submit <name> <sbatch options and script...>: sbatch --wait, job log in $WORK/<name>.log. Returns the job's
# exit status (124 when it did not finish within JOB_TIMEOUT).
submit() {
  local name=$1 t0=$SECONDS rc=0 id
  shift
  timeout "$JOB_TIMEOUT" sbatch --wait --parsable --export=ALL --time=5 --job-name="maprect-$name" \
    --output="$WORK/$name.log" "$@" >"$WORK/$name.id" || rc=$?
  id=$(head -n 1 "$WORK/$name.id" 2>/dev/null || true)
  log "slurm: job $name (id ${id:-?}) finished with exit $rc in $((SECONDS - t0)) s"
  return "$rc"
}

show_log() { sed 's/^/    | /' "$WORK/$1.log" 2>/dev/null || echo "    (no job log $WORK/$1.log)"; }

# check_fit <name> <ranks>: the fit's JSON is valid, says it converged, and the fit ran on <ranks> ranks.
check_fit() {
  python3 - "$WORK/$1/fit.json" "$2" <<'PY'
import json, sys
path, ranks = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    doc = json.load(f)
if doc.get("converged") is not True:
    sys.exit(f"{path}: converged={doc.get('converged')!r}, status={doc.get('status')!r}")
if doc.get("ranks", ranks) != ranks:
    sys.exit(f"{path}: ran on {doc.get('ranks')} ranks, expected {ranks}")
print(f"fit.json: {doc.get('status')} after {doc.get('iterations')} iterations, log density "
      f"{doc.get('log_density')}, {doc.get('ranks')} ranks")
PY
}

# check_bench <dir> <ranks...>: bench-np<K>.json exists for each K, is valid JSON and holds records.
check_bench() {
  local dir=$1
  shift
  python3 - "$dir" "$@" <<'PY'
import json, os, sys
directory, ranks = sys.argv[1], [int(k) for k in sys.argv[2:]]
for k in ranks:
    path = os.path.join(directory, f"bench-np{k}.json")
    with open(path) as f:
        doc = json.load(f)
    records = doc if isinstance(doc, list) else next(
        (v for v in doc.values() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)), None)
    if not records:
        sys.exit(f"{path}: no records")
    if isinstance(doc, dict) and doc.get("ranks", k) != k:
        sys.exit(f"{path}: ran on {doc.get('ranks')} ranks, expected {k}")
    # A record that names its rank count must name this one.
    for r in records:
        for key in ("ranks", "np", "world_size", "nranks"):
            if key in r and r[key] != k:
                sys.exit(f"{path}: record with {key}={r[key]}, expected {k}")
    print(f"bench-np{k}.json: {len(records)} record(s)")
PY
}

# --- 4. fit.sbatch: srun --mpi=pmix, then the mpirun fallback --------------------------------------------------
FIT_ARGS=(--model logreg --jobs 8 --points 50 --max-iter 50)
for launcher in srun mpirun; do
  name=fit-$launcher
  if ! MAPRECT_LAUNCHER=$launcher MAPRECT_OUT_DIR=$WORK/$name submit "$name" --ntasks=2 \
       slurm/fit.sbatch "${FIT_ARGS[@]}"; then
    fail "fit.sbatch via $launcher: job failed"; show_log "$name"
  elif ! grep -q "via $launcher" "$WORK/$name.log"; then
    fail "fit.sbatch via $launcher: the job did not use $launcher"; show_log "$name"
  elif ! check_fit "$name" 2; then
    fail "fit.sbatch via $launcher: fit did not converge"; show_log "$name"
  else
    pass "fit.sbatch via $launcher, 2 tasks: fit converged"
  fi
done

# --- 5. scaling.sbatch at 1, 2, 4 tasks ---------------------------------------------------------------------------
name=scaling
if ! MAPRECT_BENCH_RANKS="1 2 4" MAPRECT_OUT_DIR=$WORK/$name submit "$name" --ntasks=4 \
     slurm/scaling.sbatch --sizes 2x1,64x100 --repeat 5; then
  fail "scaling.sbatch: job failed"; show_log "$name"
elif ! check_bench "$WORK/$name" 1 2 4; then
  fail "scaling.sbatch: bench JSON missing or invalid"; show_log "$name"
else
  pass "scaling.sbatch, 1/2/4 tasks: bench JSON valid for each"
fi

# The plots are optional in scaling.sbatch; where they can be made here, they must have been.
if [[ ! -f scripts/plot-bench.py ]]; then
  echo "NOTE: plots not checked: no scripts/plot-bench.py"
elif ! { python3 -c 'import matplotlib' || /usr/bin/python3 -c 'import matplotlib'; } 2>/dev/null; then
  echo "NOTE: plots not checked: no python3 with matplotlib"
elif compgen -G "$WORK/scaling/*.png" >/dev/null && grep -q 'plot: PNG files' "$WORK/scaling.log"; then
  pass "scaling.sbatch: plots $(cd "$WORK/scaling" && echo ./*.png)"
else
  fail "scaling.sbatch: no plots although scripts/plot-bench.py and matplotlib are there"; show_log scaling
fi

# --- 6. sample.sbatch: 2 chains x 2 ranks through srun, then a resume on 2 tasks ---------------------------------
# The resumed job continues a finished run's checkpoints on 1 rank per chain: its files must equal the first's.
name=sample
SAMPLE_ARGS=(--model eight_schools --warmup 200 --samples 200 --progress-seconds 0)
if ! MAPRECT_CHAINS=2 MAPRECT_CHECKPOINT_EVERY=50 MAPRECT_OUT_DIR=$WORK/$name submit "$name" --ntasks=4 \
     slurm/sample.sbatch "${SAMPLE_ARGS[@]}"; then
  fail "sample.sbatch: job failed"; show_log "$name"
elif ! grep -q '2 chains of 2 ranks' "$WORK/$name.log" || ! grep -q 'Inference for 2 chains' "$WORK/$name.log"; then
  fail "sample.sbatch: no 2 x 2 split or no summary in the log"; show_log "$name"
elif [[ $(grep -vc '^#' "$WORK/$name/eight_schools-2.csv") != 201 ]]; then
  fail "sample.sbatch: eight_schools-2.csv does not hold 200 draws"; show_log "$name"
else
  cp "$WORK/$name/eight_schools-2.csv" "$WORK/$name-chain2-first.csv"
  if ! MAPRECT_CHAINS=2 MAPRECT_RESUME=1 MAPRECT_CHECKPOINT_EVERY=50 MAPRECT_OUT_DIR=$WORK/$name \
       submit "$name-resume" --ntasks=2 slurm/sample.sbatch "${SAMPLE_ARGS[@]}"; then
    fail "sample.sbatch: resume job failed"; show_log "$name-resume"
  elif ! diff <(grep -v 'seconds (' "$WORK/$name-chain2-first.csv") \
              <(grep -v 'seconds (' "$WORK/$name/eight_schools-2.csv") >/dev/null; then
    fail "sample.sbatch: the resumed files differ from the first run's"; show_log "$name-resume"
  else
    pass "sample.sbatch: 2 chains x 2 tasks, Stan CSV and summary; resumed on 2 tasks with the same files"
  fi
fi

if ((failures > 0)); then
  echo "---- SLURM logs ($SLURM_STATE/log) ----"
  tail -n 15 "$SLURM_STATE"/log/slurmctld.log "$SLURM_STATE"/log/slurmd.log 2>/dev/null || true
  echo "FAIL: SLURM stage: $failures check(s) failed in $((SECONDS - t_all)) s (job outputs: $WORK)"
  exit 1
fi
echo "PASS: SLURM stage: all checks passed in $((SECONDS - t_all)) s (job outputs: $WORK)"
