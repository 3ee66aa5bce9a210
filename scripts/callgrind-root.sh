#!/bin/bash
# The root's instructions per steady 2x1 gradient (callgrind) of one or more builds' maprect-steady-instructions,
# RUNS runs each, alternating; prints every run and each build's minimum (a run whose root waited on a
# descheduled worker counts its polling too, so the minimum is the figure). Where this user may, the worker
# runs at a real-time priority (chrt -f 10): never descheduled, it is always done before the root (50x slower
# under callgrind) looks, and every run counts the same instructions whatever else the machine runs.
# Usage: scripts/callgrind-root.sh RUNS BINARY [BINARY ...]; PROGRAM_ARGS="jobs points calls" (with CALLS=calls)
# measures another size.
set -euo pipefail
runs=$1
shift
out=$(mktemp -d)
worker_prefix=()
if chrt -f 10 true 2>/dev/null; then worker_prefix=(chrt -f 10); fi
for ((r = 1; r <= runs; ++r)); do
  i=0
  for bin in "$@"; do
    i=$((i + 1))
    mpirun -np 1 valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/b$i.r$r" \
      "$bin" ${PROGRAM_ARGS:-} : -np 1 "${worker_prefix[@]}" "$bin" ${PROGRAM_ARGS:-} >/dev/null 2>&1
  done
done
i=0
for bin in "$@"; do
  i=$((i + 1))
  per_call=()
  for ((r = 1; r <= runs; ++r)); do
    total=$(grep -m1 -E '^(summary|totals):' "$out/b$i.r$r" | awk '{print $2}')
    per_call+=("$((total / ${CALLS:-1000}))")
  done
  min=$(printf '%s\n' "${per_call[@]}" | sort -n | head -1)
  echo "$bin: ${per_call[*]} instructions per gradient; minimum $min"
done
rm -rf "$out"
