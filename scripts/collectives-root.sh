#!/bin/bash
# The root's side of a steady map_rect call under each MAPRECT_COLLECTIVES kind, by message
# (MAPRECT_TRANSPORT=messages), on one machine: the point-to-point messages the root receives and sends per
# call (Open MPI's pml monitoring; counted over two runs of different lengths, so that start-up and the first
# call cancel out) and, with CALLGRIND=1, the root's instructions per call (callgrind, as
# scripts/callgrind-root.sh runs it: workers at a real-time priority where allowed).
# Usage: scripts/collectives-root.sh BINARY [NP [HOST_RANKS]]  (BINARY: build/bin/maprect-steady-instructions;
# NP ranks, default 4; MAPRECT_TEST_HOST_RANKS, default 2); PROGRAM_ARGS="jobs points", default "64 1";
# KINDS="flat tree hierarchical".
set -euo pipefail
bin=$1
np=${2:-4}
host_ranks=${3:-2}
args=${PROGRAM_ARGS:-64 1}
short=100
long=600
out=$(mktemp -d)
export MAPRECT_TRANSPORT=messages MAPRECT_TEST_HOST_RANKS=$host_ranks
worker_prefix=()
if chrt -f 10 true 2>/dev/null; then worker_prefix=(chrt -f 10); fi

# Messages that ranks of the run with prefix $1 sent, summed: to rank 0 (from = *), or from rank 0 (to = *).
count() {
  awk -v dir="$2" '$1 == "I" && ((dir == "in" && $3 == 0 && $2 != 0) || (dir == "out" && $2 == 0)) { n += $6 }
                   END { print n + 0 }' "$1".*.prof
}

for kind in ${KINDS:-flat tree hierarchical}; do
  for calls in $short $long; do
    MAPRECT_COLLECTIVES=$kind OMPI_MCA_osc=^monitoring OMPI_MCA_pml_monitoring_enable=2 \
      OMPI_MCA_pml_monitoring_enable_output=3 OMPI_MCA_pml_monitoring_filename="$out/$kind.$calls" \
      mpirun -np "$np" "$bin" $args $calls >/dev/null 2>&1
  done
  in_short=$(count "$out/$kind.$short" in) in_long=$(count "$out/$kind.$long" in)
  out_short=$(count "$out/$kind.$short" out) out_long=$(count "$out/$kind.$long" out)
  line=$(awk -v a="$in_short" -v b="$in_long" -v c="$out_short" -v d="$out_long" -v n=$((long - short)) \
    'BEGIN { printf "received %.2f, sent %.2f messages per call", (b - a) / n, (d - c) / n }')
  if [[ "${CALLGRIND:-0}" == 1 ]]; then
    MAPRECT_COLLECTIVES=$kind mpirun -np 1 valgrind --tool=callgrind --collect-atstart=no \
      --callgrind-out-file="$out/$kind.cg" "$bin" $args $short : -np $((np - 1)) "${worker_prefix[@]}" "$bin" $args \
      $short >/dev/null 2>&1
    total=$(grep -m1 -E '^(summary|totals):' "$out/$kind.cg" | awk '{print $2}')
    line="$line; root instructions per call $((total / short))"
  fi
  echo "np $np, hosts of $host_ranks, $args: $kind: $line"
done
rm -rf "$out"
