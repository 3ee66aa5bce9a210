#!/bin/bash
# same_draws.sh MPIEXEC MAPRECT WORKDIR [OPTION...]: `maprect sample --chains 2` on 2, 3 and 6 ranks (1, 1-2
# and 3 ranks per chain) must write the same CSV files, timing lines apart: a chain's gradients are the same bits
# on any number of ranks, so its draws are too. OPTIONs are added to every run (e.g. --metric dense --thin 3).
set -u
mpiexec=$1 maprect=$2 work=$3
shift 3
extra=("$@")
rm -rf "$work" && mkdir -p "$work"
for np in 2 3 6; do
  mkdir -p "$work/np$np"
  (cd "$work/np$np" && "$mpiexec" -np $np "$maprect" sample --model logreg --jobs 8 --points 50 --chains 2 \
     --warmup 150 --samples 100 --seed 77 --output-dir out "${extra[@]}") > "$work/np$np.log" 2>&1 \
    || { echo "FAIL: np $np exited non-zero"; cat "$work/np$np.log"; exit 1; }
done
status=0
for np in 3 6; do
  for chain in 1 2; do
    a=$work/np2/out/logreg-$chain.csv b=$work/np$np/out/logreg-$chain.csv
    if ! diff <(grep -v 'seconds (' "$a") <(grep -v 'seconds (' "$b") >/dev/null; then
      echo "FAIL: chain $chain differs between 2 and $np ranks"; status=1
    else
      echo "ok: chain $chain: $(grep -vc '^#' "$b") lines identical on 2 and $np ranks"
    fi
  done
done
grep -q '^lp__' "$work/np2/out/logreg-1.csv" || { echo "FAIL: no CSV header"; status=1; }
exit $status
