#!/bin/bash
# kill_resume.sh MPIEXEC MAPRECT WORKDIR [OPTION...]: a sampling run (OPTIONs added) with checkpoints is killed (SIGKILL to the whole job)
# once a checkpoint lies past warm-up, resumed with --resume, and must then have written the same files as an
# uninterrupted run with the same seed, timing lines apart.
set -u
mpiexec=$1 maprect=$2 work=$3
shift 3
args=(sample --model logreg --jobs 8 --points 200 --chains 2 --warmup 200 --samples 1500 --seed 5
      --checkpoint-every 25 --output-dir out "$@")
rm -rf "$work" && mkdir -p "$work/straight" "$work/killed"
(cd "$work/straight" && "$mpiexec" -np 2 "$maprect" "${args[@]}") > "$work/straight.log" 2>&1 \
  || { echo "FAIL: the uninterrupted run failed"; cat "$work/straight.log"; exit 1; }

cd "$work/killed"
setsid "$mpiexec" -np 2 "$maprect" "${args[@]}" > ../killed.log 2>&1 &
job=$!
# Wait for a checkpoint of chain 2 past warm-up (iteration > 200), then kill the whole process group.
for _ in $(seq 1 600); do
  it=$(sed -n 's/^iteration //p' out/logreg-2.checkpoint 2>/dev/null)
  [[ -n $it && $it -gt 300 ]] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.05
done
if ! kill -0 $job 2>/dev/null; then echo "FAIL: the run ended before it could be killed"; exit 1; fi
# The whole job: mpirun's process group and every process below it (Open MPI may give the ranks groups of
# their own), all at once, then wait until none is left.
descendants() { local child; for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done; }
pids=("$job" $(descendants "$job"))
kill -KILL -- -"$job" "${pids[@]}" 2>/dev/null
wait $job 2>/dev/null
for _ in $(seq 1 100); do
  alive=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
  ((alive)) || break
  sleep 0.05
done
((alive == 0)) || { echo "FAIL: processes of the killed job still run: ${pids[*]}"; exit 1; }
echo "killed ${#pids[@]} processes at checkpoint iteration $it of 1700"
draws_then=$(grep -vc '^#' out/logreg-2.csv)
"$mpiexec" -np 2 "$maprect" "${args[@]}" --resume > ../resumed.log 2>&1 \
  || { echo "FAIL: --resume failed"; cat ../resumed.log; exit 1; }
status=0
for chain in 1 2; do
  a=$work/straight/out/logreg-$chain.csv b=$work/killed/out/logreg-$chain.csv
  if ! diff <(grep -v 'seconds (' "$a") <(grep -v 'seconds (' "$b") >/dev/null; then
    echo "FAIL: chain $chain differs from the uninterrupted run"; status=1
  else
    echo "ok: chain $chain: identical to the uninterrupted run ($(grep -vc '^#' "$b") lines; $draws_then before the resume)"
  fi
done
exit $status
