#!/usr/bin/env bash
# A/B: the build without (old, a worktree at /tmp/base) against the one with (new, /work/main) maprect-bench-unequal, hosts of 2 at np4, interleaved rounds.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export MAPRECT_TEST_HOST_RANKS=${HOST_RANKS:-2}
NP=${NP:-4}; ROUNDS=${ROUNDS:-6}; KIND=${KIND:-map_rect}
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="new old"; else order="old new"; fi
  for build in $order; do
    prog=/work/main/build/bin/maprect-bench-unequal; [ "$build" = old ] && prog=/tmp/base/build/bin/maprect-bench-unequal
    for slow in ${SLOWS:--1 0 1 2}; do
      line=$(mpirun -np "$NP" "$prog" --jobs $((12 * NP)) --job-ms 1 --slow-factor 3 --slow-rank "$slow" --calls 30 --kind "$KIND" 2>&1 | grep "ratio=" | tail -1)
      echo "round=$round build=$build $line"
    done
  done
done
