#!/usr/bin/env bash
# run_fault.sh MPIEXEC NP PROGRAM CASE PATTERN: runs `MPIEXEC -n NP PROGRAM CASE` and passes when the job
# exits non-zero within LIMIT seconds (default 10) of wall time, its output matches PATTERN (grep -E),
# and no process of the case is left afterwards. A hang is cut at 30 s (and fails the time check).
# EXPECT=success turns the status check around: the job must exit 0.
set -euo pipefail
if [ $# -ne 5 ]; then
  echo "usage: $0 MPIEXEC NP PROGRAM CASE PATTERN" >&2
  exit 2
fi
mpiexec=$1 np=$2 program=$3 case=$4 pattern=$5
limit=${LIMIT:-10}
expect=${EXPECT:-failure}
output=$(mktemp)
trap 'rm -f "$output"' EXIT

start=$(date +%s%N)
set +e
# The kill signal reaches mpirun only; a hung job's ranks are swept by the leftover check below.
timeout -s KILL 30 "$mpiexec" -n "$np" "$program" "$case" >"$output" 2>&1
status=$?
set -e
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

# Open MPI reaps the ranks as mpirun exits; give stragglers a moment before calling them leftovers.
leftover=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  leftover=$(pgrep -f -- "^$program $case" || true)
  [ -z "$leftover" ] && break
  sleep 0.2
done

echo "--- job output ($case, np=$np) ---"
cat "$output"
echo "--- exit status $status after $elapsed_ms ms ---"
failed=0
if [ "$expect" = success ] && [ "$status" -ne 0 ]; then
  echo "FAIL: the job exited with status $status, expected 0"
  failed=1
elif [ "$expect" != success ] && [ "$status" -eq 0 ]; then
  echo "FAIL: the job exited with status 0"
  failed=1
fi
if [ "$elapsed_ms" -ge $((limit * 1000)) ]; then
  echo "FAIL: the job took $elapsed_ms ms, more than $limit s"
  failed=1
fi
if ! grep -Eq -- "$pattern" "$output"; then
  echo "FAIL: the output does not match '$pattern'"
  failed=1
fi
if [ -n "$leftover" ]; then
  echo "FAIL: processes left running: $leftover"
  # Clean up what this case left so that it cannot disturb other tests.
  # shellcheck disable=SC2086 # one process id per word
  kill -KILL $leftover 2>/dev/null || true
  failed=1
fi
[ "$failed" -eq 0 ] && echo "PASS: $case exited with status $status in $elapsed_ms ms, output matching '$pattern'"
exit "$failed"
