#!/usr/bin/env bash
# bound_warning.sh MPIEXEC PROGRAM: the cluster warns once, on the root, when a rank runs more threads than
# its affinity mask has CPUs. `PROGRAM calls` (maprect-fault-case) runs at 2 ranks:
#   --bind-to core, MAPRECT_THREADS = the CPUs of one core + 1: exactly one warning line, naming ranks 0-1,
#     their threads and CPUs, and the fixes;
#   --bind-to none, the same thread count: no warning (skipped where the machine has fewer CPUs than that).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 MPIEXEC PROGRAM" >&2
  exit 2
fi
mpiexec=$1 program=$2
output=$(mktemp)
trap 'rm -f "$output"' EXIT

# The CPUs a core-bound rank may run on (its hardware threads), as the launcher binds it.
core_cpus=$("$mpiexec" -n 1 --bind-to core nproc)
threads=$((core_cpus + 1))
warning="^maprect: warning: more threads than CPUs on ranks 0-1 \\($threads threads, $core_cpus CPUs? in the affinity mask\\): .*mpirun --map-by slot:PE=$threads, or srun --cpus-per-task=$threads\\) or unbind the ranks \\(mpirun --bind-to none\\)\$"
failed=0

"$mpiexec" -n 2 --bind-to core -x MAPRECT_THREADS=$threads "$program" calls >"$output" 2>&1
cat "$output"
count=$(grep -c "more threads than CPUs" "$output" || true)
if [ "$count" -eq 1 ] && grep -Eq "$warning" "$output"; then
  echo "PASS: --bind-to core, MAPRECT_THREADS=$threads ($core_cpus CPUs per core): one warning line"
else
  echo "FAIL: --bind-to core, MAPRECT_THREADS=$threads: $count warning lines, expected one matching '$warning'"
  failed=1
fi

if [ "$(nproc)" -lt "$threads" ]; then
  echo "SKIP: --bind-to none: $(nproc) CPUs here, fewer than $threads threads"
else
  "$mpiexec" -n 2 --bind-to none -x MAPRECT_THREADS=$threads "$program" calls >"$output" 2>&1
  cat "$output"
  if grep -q "more threads than CPUs" "$output" || ! grep -q "fault_case: calls done" "$output"; then
    echo "FAIL: --bind-to none, MAPRECT_THREADS=$threads: a warning, or the run did not finish"
    failed=1
  else
    echo "PASS: --bind-to none, MAPRECT_THREADS=$threads: no warning"
  fi
fi
exit "$failed"
