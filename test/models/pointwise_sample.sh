#!/bin/bash
# pointwise_sample.sh MPIEXEC MAPRECT DATA.json WORKDIR: `maprect sample --model pointwise_regression` writes the
# pointwise log likelihood as Stan CSV columns log_lik.1..N after the parameters, equal to their recomputation
# from each draw's parameters (check_log_lik.py); `maprect summary` reads them; and a run killed (SIGKILL to the
# whole job) past warm-up and resumed from its checkpoints writes the same files as an uninterrupted run.
set -u
mpiexec=$1 maprect=$2 data=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
args=(sample --model pointwise_regression --data "$data" --chains 2 --warmup 200 --samples 4000 --seed 5
      --checkpoint-every 25 --output-dir out)
rm -rf "$work" && mkdir -p "$work/straight" "$work/killed" && cd "$work" || exit 1
(cd straight && "$mpiexec" -np 2 "$maprect" "${args[@]}") > straight.log 2>&1 \
  || { cat straight.log; fail "the uninterrupted run failed"; }
python3 "$here/check_log_lik.py" "$data" straight/out/pointwise_regression-{1,2}.csv || exit 1
"$maprect" summary straight/out/pointwise_regression-{1,2}.csv --csv - > summary.csv 2> summary.log \
  || { cat summary.log; fail "maprect summary failed"; }
grep -q '^"\?log_lik\.12"\?,' summary.csv || { head -30 summary.csv; fail "no summary row for log_lik.12"; }
echo "ok: maprect summary lists the log_lik columns"

cd killed || exit 1
setsid "$mpiexec" -np 2 "$maprect" "${args[@]}" > ../killed.log 2>&1 &
job=$!
for _ in $(seq 1 2000); do
  it=$(sed -n 's/^iteration //p' out/pointwise_regression-2.checkpoint 2>/dev/null)
  [[ -n $it && $it -gt 300 ]] && break
  kill -0 $job 2>/dev/null || break
  sleep 0.01
done
kill -0 $job 2>/dev/null || fail "the run ended before it could be killed"
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
((alive == 0)) || fail "processes of the killed job still run: ${pids[*]}"
"$mpiexec" -np 2 "$maprect" "${args[@]}" --resume > ../resumed.log 2>&1 || { cat ../resumed.log; fail "--resume failed"; }
for chain in 1 2; do
  a=../straight/out/pointwise_regression-$chain.csv b=out/pointwise_regression-$chain.csv
  diff -q <(grep -v 'seconds (' "$a") <(grep -v 'seconds (' "$b") > /dev/null \
    || fail "chain $chain resumed from iteration $it differs from the uninterrupted run"
done
echo "ok: killed at checkpoint iteration $it and resumed: the same files as the uninterrupted run"
