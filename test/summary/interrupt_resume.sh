#!/bin/bash
# interrupt_resume.sh MPIEXEC MAPRECT WORKDIR TARGET: a sampling run gets SIGTERM (TARGET mpirun: sent to mpirun,
# which passes it on to the ranks; TARGET ranks: sent to every rank) once chain 2 has a checkpoint past warm-up.
# Every process must end, and rank 0 must print one line per chain with its last checkpoint and the command
# that resumes; that very command must then finish the run with the same draws as an uninterrupted run (timing
# lines apart), and say which iteration each chain resumes from. Synchronised on the checkpoint file, not on time.
set -u
mpiexec=$1 maprect=$2 work=$3 target=$4
args=(sample --model logreg --jobs 8 --points 200 --chains 2 --warmup 200 --samples 1500 --seed 5
      --checkpoint-every 25 --output-dir out)
rm -rf "$work" && mkdir -p "$work/straight" "$work/stopped"
(cd "$work/straight" && "$mpiexec" -np 2 "$maprect" "${args[@]}") > "$work/straight.log" 2>&1 \
  || { echo "FAIL: the uninterrupted run failed"; cat "$work/straight.log"; exit 1; }

cd "$work/stopped"
setsid "$mpiexec" -np 2 "$maprect" "${args[@]}" > ../stopped.log 2>&1 &
job=$!
for _ in $(seq 1 6000); do
  it=$(sed -n 's/^iteration //p' out/logreg-2.checkpoint 2>/dev/null)
  [[ -n $it && $it -gt 300 ]] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.01
done
kill -0 $job 2>/dev/null || { echo "FAIL: the run ended before the signal"; cat ../stopped.log; exit 1; }
descendants() { local child; for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done; }
pids=("$job" $(descendants "$job"))
if [[ $target == mpirun ]]; then kill -TERM "$job"
else
  ranks=()
  for pid in "${pids[@]}"; do [[ $(ps -o comm= -p "$pid") == maprect ]] && ranks+=("$pid"); done
  ((${#ranks[@]} == 2)) || { echo "FAIL: found ${#ranks[@]} ranks, expected 2"; exit 1; }
  kill -TERM "${ranks[@]}"
fi
wait $job; rc=$?
for pid in "${pids[@]}"; do  # every process of the job has ended (wait returned after mpirun, which reaps ranks)
  for _ in $(seq 1 500); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
  kill -0 "$pid" 2>/dev/null && { echo "FAIL: process $pid of the job still runs"; exit 1; }
done
echo "signal at checkpoint iteration $it: exit $rc"
cat ../stopped.log | grep -v '^chain [0-9]: iteration'
status=0
((rc != 0)) || { echo "FAIL: an interrupted run exited 0"; status=1; }
# Chain 1 may have finished before the signal (the wait is on chain 2's checkpoint): its line then says so,
# at its last iteration.
for chain in 1 2; do
  line=$(grep "^chain $chain: interrupted by SIGTERM\|^chain $chain: stopped with the interrupted chains\|^chain $chain: finished" \
    ../stopped.log)
  if ! grep -Eq "last checkpoint at iteration [0-9]+ of 1700 \(out/logreg-$chain.checkpoint\); resume with: .*--resume$" <<<"$line"; then
    echo "FAIL: no line for chain $chain with its checkpoint and the resume command"; status=1
  fi
  if [[ $line == "chain $chain: finished"* && $line != *"iteration 1700 of 1700"* ]]; then
    echo "FAIL: chain $chain finished short of iteration 1700: $line"; status=1
  fi
done
resume=$(grep -m1 -o 'resume with: .*' ../stopped.log | sed 's/^resume with: //')
[[ -n $resume ]] || { echo "FAIL: no resume command"; exit 1; }
echo "resuming with: $resume"
eval "$resume" > ../resumed.log 2>&1 || { echo "FAIL: the printed resume command failed"; cat ../resumed.log; exit 1; }
for chain in 1 2; do
  grep -Eq "^chain $chain: resuming from iteration [0-9]+ of 1700" ../resumed.log \
    || { echo "FAIL: the resumed run does not say where chain $chain resumes"; status=1; }
  a=$work/straight/out/logreg-$chain.csv b=$work/stopped/out/logreg-$chain.csv
  if diff <(grep -v 'seconds (' "$a") <(grep -v 'seconds (' "$b") >/dev/null; then
    echo "ok: chain $chain: identical to the uninterrupted run"
  else echo "FAIL: chain $chain differs from the uninterrupted run"; status=1; fi
done
exit $status
