#!/bin/bash
# subnormal_resume.sh MPIEXEC MAPRECT WORKDIR: eight schools with 4 chains, no warm-up and checkpoints, then the
# same with --resume on 4 ranks: the draws written (accept_stat__ can be subnormal there, e.g. 6.98e-316) must
# read back, so that --resume completes and leaves the draws as they were (timing lines apart).
set -u
mpiexec=$1 maprect=$2 work=$3
args=(sample --model eight_schools --chains 4 --warmup 0 --samples 200 --checkpoint-every 50 --output-dir "$work/out")
rm -rf "$work" && mkdir -p "$work"
"$mpiexec" -np 4 "$maprect" "${args[@]}" > "$work/first.log" 2>&1 || { echo "FAIL: the run failed"; cat "$work/first.log"; exit 1; }
cp -r "$work/out" "$work/first"
subnormal=$(grep -h -v '^#' "$work"/out/*.csv | grep -Eo '[0-9.]+e-3(0[89]|[1-2][0-9]|3[0-9])' | head -3 | tr '\n' ' ')
echo "subnormal values in the CSV files: ${subnormal:-none}"
"$mpiexec" -np 4 "$maprect" "${args[@]}" --resume > "$work/resumed.log" 2>&1 \
  || { echo "FAIL: --resume failed"; cat "$work/resumed.log"; exit 1; }
status=0
for chain in 1 2 3 4; do
  a=$work/first/eight_schools-$chain.csv b=$work/out/eight_schools-$chain.csv
  if diff <(grep -v 'seconds (' "$a") <(grep -v 'seconds (' "$b") >/dev/null; then echo "ok: chain $chain unchanged by --resume"
  else echo "FAIL: chain $chain changed"; status=1; fi
  grep -q "^chain $chain: resuming from iteration 200 of 200" "$work/resumed.log" || { echo "FAIL: no resume line for chain $chain"; status=1; }
done
exit $status
