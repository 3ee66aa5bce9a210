#!/bin/bash
# stan_csv.sh MPIEXEC MAPRECT WORKDIR: eight schools on 2 ranks, 2 chains; both files must read as CmdStanPy
# and cmdstanr read Stan CSV (check_stan_csv.py), with the model's columns in Stan's naming.
set -eu
mpiexec=$1 maprect=$2 work=$3
here=$(dirname "$0")
rm -rf "$work"
"$mpiexec" -np 2 "$maprect" sample --model eight_schools --chains 2 --warmup 300 --samples 300 --output-dir "$work"
columns=(mu tau)
for j in 1 2 3 4 5 6 7 8; do columns+=("theta_tilde[$j]"); done
for j in 1 2 3 4 5 6 7 8; do columns+=("theta[$j]"); done
for chain in 1 2; do python3 "$here/check_stan_csv.py" "$work/eight_schools-$chain.csv" 300 "${columns[@]}"; done
