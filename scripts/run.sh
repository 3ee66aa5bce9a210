#!/usr/bin/env bash
# Installs what is missing, builds the program in Release (target maprect-cli only: no tests, no
# benchmarks), then runs the main job over MAPRECT_RANKS MPI ranks
# (default 4): posterior sampling of the embedded logistic-regression data, `maprect sample --model logreg`
# with 4 chains (MAPRECT_CHAINS), Stan CSV files in build/sample/ and a summary at the end. Arguments go to
# `maprect sample`; `scripts/run.sh fit [ARGS]` runs the MAP fit (`maprect fit --model logreg ARGS`) instead.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

MAPRECT_RANKS="${MAPRECT_RANKS:-4}"

# The main job needs bin/maprect alone; `maprect sample --plot` adds scripts/plot-draws.py, which runs on
# /usr/bin/python3 with python3-matplotlib (a package of setup.sh).
setup maprect-cli

# Open MPI refuses root without these; oversubscribe lets ranks exceed cores; self,vader keeps all
# traffic in shared memory (no TCP start-up, no listening on every interface).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none

MAPRECT_PROGRAM="$MAPRECT_BUILD_DIR/bin/maprect"
if [[ ${1:-} == fit ]]; then
  shift
  log "run: maprect fit --model logreg on $MAPRECT_RANKS ranks"
  exec mpirun -np "$MAPRECT_RANKS" "$MAPRECT_PROGRAM" fit --model logreg "$@"
fi
MAPRECT_CHAINS="${MAPRECT_CHAINS:-4}"
sample_args=(--model logreg --chains "$MAPRECT_CHAINS")
[[ " $* " == *" --output-dir "* ]] || sample_args+=(--output-dir "$MAPRECT_BUILD_DIR/sample")
log "run: maprect sample ${sample_args[*]} $* on $MAPRECT_RANKS ranks"
exec mpirun -np "$MAPRECT_RANKS" "$MAPRECT_PROGRAM" sample "${sample_args[@]}" "$@"
