#!/bin/bash
# kill_group_resume.sh MPIEXEC MAPRECT WORKDIR: the corruption case. A run is killed with SIGKILL to
# mpirun's process group only, once chain 2 has a checkpoint past warm-up, and --resume is started at once,
# while ranks of the killed run may still be writing. Each --resume must either be refused (the output
# directory is in use, naming the holder) and leave the files alone, or run; it is retried until one runs.
# The files must then be those of an uninterrupted run, bit for bit (timing lines apart), whatever the order.
set -u
mpiexec=$1 maprect=$2 work=$3
args=(sample --model logreg --jobs 8 --points 200 --chains 2 --warmup 200 --samples 1500 --seed 5
      --checkpoint-every 25 --output-dir out)
rm -rf "$work" && mkdir -p "$work/straight" "$work/killed"
(cd "$work/straight" && "$mpiexec" -np 2 "$maprect" "${args[@]}") > "$work/straight.log" 2>&1 \
  || { echo "FAIL: the uninterrupted run failed"; cat "$work/straight.log"; exit 1; }
cd "$work/killed"
setsid "$mpiexec" -np 2 "$maprect" "${args[@]}" > ../killed.log 2>&1 &
job=$!
for _ in $(seq 1 6000); do
  it=$(sed -n 's/^iteration //p' out/logreg-2.checkpoint 2>/dev/null)
  [[ -n $it && $it -gt 300 ]] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.01
done
kill -0 $job 2>/dev/null || { echo "FAIL: the run ended before it could be killed"; exit 1; }
kill -KILL -- -"$job"
refused=0
for attempt in $(seq 1 600); do
  if "$mpiexec" -np 2 "$maprect" "${args[@]}" --resume > ../resumed.log 2>&1; then break; fi
  grep -q 'is in use by another maprect run' ../resumed.log || { echo "FAIL: --resume failed otherwise"; cat ../resumed.log; exit 1; }
  refused=$((refused + 1))
  sleep 0.05
done
echo "killed at checkpoint iteration $it; --resume refused $refused time(s) while the old ranks held the directory"
status=0
for chain in 1 2; do
  a=$work/straight/out/logreg-$chain.csv b=$work/killed/out/logreg-$chain.csv
  if diff <(grep -v 'seconds (' "$a") <(grep -v 'seconds (' "$b") >/dev/null; then echo "ok: chain $chain identical to the uninterrupted run"
  else echo "FAIL: chain $chain differs from the uninterrupted run"; status=1; fi
done
exit $status
