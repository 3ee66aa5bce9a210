#!/bin/bash
# posterior_reference.sh MPIEXEC MAPRECT WORKDIR: samples eight schools (4 chains on 4 ranks), then compares
# `maprect summary --sig-figs 17 --csv` with R's posterior on the same CSV files (posterior_reference.R).
# Skips (exit 77) only when Rscript is missing; scripts/setup.sh installs it with r-cran-posterior.
set -u
mpiexec=$1 maprect=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v Rscript >/dev/null; then
  echo "SKIP: Rscript not found; install r-base-core and r-cran-posterior (scripts/setup.sh does)"; exit 77
fi
rm -rf "$work" && mkdir -p "$work"
"$mpiexec" -np 4 "$maprect" sample --model eight_schools --chains 4 --warmup 300 --samples 400 --seed 11 \
  --output-dir "$work" > "$work/sample.log" 2>&1 || { echo "FAIL: sampling failed"; cat "$work/sample.log"; exit 1; }
files=("$work"/eight_schools-{1,2,3,4}.csv)
"$maprect" summary "${files[@]}" --sig-figs 17 --csv "$work/table.csv" > "$work/summary.log" 2>&1 \
  || { echo "FAIL: maprect summary failed"; cat "$work/summary.log"; exit 1; }
Rscript "$here/posterior_reference.R" "$work/table.csv" "${files[@]}"
