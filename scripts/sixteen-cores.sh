#!/usr/bin/env bash
# The 16-core measurements of docs/performance.md, as one script for a machine without Open MPI: the sampler
# at 16 ranks (auto and static) against 1 rank x 16 threads, with the draws compared; maprect bench at 16
# ranks and at 1 rank x 16 threads; maprect plan at 16 ranks. Outputs go to $OUT/r16.tgz, packed after every
# step, so that a step cut short by its timeout still leaves the others. Prepare the bundle into .devrun/ as
# ../shared/tools/device/README.md says (programs: build/bin/maprect), then run it there from the repository:
#   OUT=/some/dir bash scripts/sixteen-cores.sh
set -u
export BUNDLE=$PWD/.devrun/bundle
# shellcheck source=/dev/null
source .devrun/env.sh
R=/tmp/r16
rm -rf "$R" && mkdir -p "$R" && cd "$R" || exit 1
T0=$(date +%s)
pack() { tar czf "$OUT/r16.tgz" -C "$R" --exclude='*.csv' --exclude='*.lock' .; }
step() { echo "[$(($(date +%s) - T0)) s] $*" >>"$R/log.txt"; pack; }
{ nproc; lscpu | head -20; free -g; df -h /dev/shm; } >machine.txt 2>&1
mpi=(mpirun --bind-to none)
sample=(sample --model logreg --jobs 256 --points 1000 --chains 1 --warmup 150 --samples 150 --progress-seconds 5)
sizes=(--sizes "256x1000,1024x1000" --repeat 20)
step "sample, 1 rank x 16 threads"
MAPRECT_THREADS=16 timeout 60 "${mpi[@]}" -np 1 maprect "${sample[@]}" --output-dir t16 >sample_t16.txt 2>&1
step "sample, 16 ranks, auto"
MAPRECT_BALANCE=auto timeout 60 "${mpi[@]}" -x MAPRECT_BALANCE -np 16 maprect "${sample[@]}" --output-dir r16 \
  >sample_r16.txt 2>&1
step "sample, 16 ranks, static"
MAPRECT_BALANCE=static timeout 40 "${mpi[@]}" -x MAPRECT_BALANCE -np 16 maprect "${sample[@]}" --output-dir s16 \
  >sample_s16.txt 2>&1
for d in r16 s16; do
  if cmp <(grep -v "^#" t16/logreg-1.csv) <(grep -v "^#" "$d/logreg-1.csv") >/dev/null 2>&1; then
    echo "$d same"
  else echo "$d DIFFERS"; fi
done >csv_cmp.txt
step "bench, 16 ranks"
timeout 60 "${mpi[@]}" -np 16 maprect bench "${sizes[@]}" --json bench16.json >bench16.txt 2>&1
step "bench, 1 rank x 16 threads"
timeout 50 "${mpi[@]}" -np 1 maprect bench "${sizes[@]}" --threads 16 --json bench_t16.json >bench_t16.txt 2>&1
step "plan 256x1000"
timeout 30 "${mpi[@]}" -np 16 maprect plan --jobs 256 --points 1000 --ranks-max 16 --repeat 10 >plan256.txt 2>&1
step "plan 1024x1000"
timeout 30 "${mpi[@]}" -np 16 maprect plan --jobs 1024 --points 1000 --ranks-max 16 --repeat 10 >plan1024.txt 2>&1
step "done"
