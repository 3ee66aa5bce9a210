#!/bin/bash
# stan_csv.sh MPIEXEC MAPRECT WORKDIR: eight schools on 2 ranks, 2 chains; both files must read as CmdStanPy
# and cmdstanr read Stan CSV (check_stan_csv.py), with the model's columns in Stan's naming; the header records
# the target acceptance eight_schools samples at by default (0.9), and --delta when given.
set -eu
mpiexec=$1 maprect=$2 work=$3
here=$(dirname "$0")
rm -rf "$work"
"$mpiexec" -np 2 "$maprect" sample --model eight_schools --chains 2 --warmup 300 --samples 300 --output-dir "$work"
columns=(mu tau)
for j in 1 2 3 4 5 6 7 8; do columns+=("theta_tilde[$j]"); done
for j in 1 2 3 4 5 6 7 8; do columns+=("theta[$j]"); done
for chain in 1 2; do python3 "$here/check_stan_csv.py" "$work/eight_schools-$chain.csv" 300 "${columns[@]}"; done
for chain in 1 2; do
  grep -qx '#       delta = 0.9' "$work/eight_schools-$chain.csv" || { echo "FAIL: chain $chain: no 'delta = 0.9'"; exit 1; }
done
"$mpiexec" -np 1 "$maprect" sample --model eight_schools --chains 1 --warmup 30 --samples 10 --delta 0.85 \
  --output-dir "$work/delta"
grep -qx '#       delta = 0.85' "$work/delta/eight_schools-1.csv" || { echo "FAIL: --delta 0.85 not in the header"; exit 1; }
