#!/usr/bin/env bash
# Soak test: N evaluate-grad-recover cycles of the standard model at 64 jobs x 10 points over 3 ranks
# (maprect-soak). Fails if any result (log density and full gradient) differs from the first bit for bit, or if
# the resident memory of any rank grows steadily after the warm-up (N/10 cycles): by 1% or more, rising in most
# of ten stretches, or by 5% at all; once eager, once with MAPRECT_REVERSE=deferred.
#   scripts/soak.sh [N]     N defaults to 100000, the full soak (about 10 s here: 30-60 us per cycle with
#                           3 ranks on 2 cores); CI (stage `soak` of scripts/test.sh) runs N=10000.
#   MAPRECT_BUILD_DIR       build directory (default: <repo>/build; maprect-soak is built if missing)
# Prints one line per rank: RSS after the warm-up, at the end, the growth, and in how many stretches it rose.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

N=${1:-100000}
NP=3
[ -f "$MAPRECT_BUILD_DIR/CMakeCache.txt" ] || build
cmake --build "$MAPRECT_BUILD_DIR" -j2 --target maprect-soak >/dev/null

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
# Eager, then deferred (every fourth call dropped unswept: the kept tapes must not pile up on any rank).
for reverse in eager deferred; do
  log "soak: $N cycles at np=$NP, MAPRECT_REVERSE=$reverse"
  # Generous wall-clock limit (10 ms per cycle): a deadlock must fail, not hang CI.
  MAPRECT_REVERSE=$reverse timeout -k 15 $((60 + N / 100)) mpirun -np "$NP" "$MAPRECT_BUILD_DIR/bin/maprect-soak" "$N"
done
