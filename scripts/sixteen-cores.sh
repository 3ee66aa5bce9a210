#!/usr/bin/env bash
# The 16-core measurements of docs/performance.md, as one script for a machine without Open MPI: the sampler
# at 16 ranks under auto against 1 rank x 16 threads in ROUNDS interleaved rounds (the order alternating), and
# once under static, with the draws compared; maprect plan and maprect bench at 16 ranks in PLAN_ROUNDS
# interleaved rounds; unequal ranks (sleeping jobs, one rank slowed) by plan and maprect-bench-unequal in
# UNEQUAL_ROUNDS interleaved rounds; the same 16 ranks split into hosts of 4 (MAPRECT_TEST_HOST_RANKS: every claim
# goes by message through the root) against one host in HOSTS_ROUNDS interleaved rounds; maprect bench at 1 rank
# x 16 threads unless NO_THREADS=1. Outputs go to
# $OUT/r16.tgz, packed after every step, so that a step cut short by its timeout still leaves the others.
# Prepare the bundle into .devrun/ as ../shared/tools/device/README.md says (programs: build/bin/maprect
# build/bin/maprect-bench-unequal), then run it there from the repository:
#   OUT=/some/dir [ROUNDS=6] [PLAN_ROUNDS=3] [UNEQUAL_ROUNDS=3] [HOSTS_ROUNDS=0] [NO_THREADS=0] \
#     bash scripts/sixteen-cores.sh
# On a 16-vCPU Xeon a sampler round took about 26 s, a plan-and-bench round 21 s and an unequal round 36 s:
# about 6.5 minutes at the defaults.
set -u
ROUNDS=${ROUNDS:-6}
PLAN_ROUNDS=${PLAN_ROUNDS:-3}
UNEQUAL_ROUNDS=${UNEQUAL_ROUNDS:-3}
HOSTS_ROUNDS=${HOSTS_ROUNDS:-0}
NO_THREADS=${NO_THREADS:-0}
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
threads16() {
  MAPRECT_THREADS=16 timeout 60 "${mpi[@]}" -np 1 maprect "${sample[@]}" --output-dir "t16-$1" >"sample_t16-$1.txt" 2>&1
}
ranks16() {
  MAPRECT_BALANCE=$2 timeout 60 "${mpi[@]}" -x MAPRECT_BALANCE -np 16 maprect "${sample[@]}" --output-dir "$2-$1" \
    >"sample_$2-$1.txt" 2>&1
}
for ((r = 1; r <= ROUNDS; r++)); do
  step "sample round $r"
  if ((r % 2)); then threads16 "$r"; ranks16 "$r" auto; else ranks16 "$r" auto; threads16 "$r"; fi
  grep -h "ms/gradient" "sample_t16-$r.txt" "sample_auto-$r.txt" | sed "s/^/round $r: /" >>sample-rounds.txt
done
if ((ROUNDS > 0)); then
  step "sample, 16 ranks, static"
  ranks16 1 static
  grep -h "ms/gradient" sample_static-1.txt | sed "s/^/static: /" >>sample-rounds.txt
  for d in auto-1 static-1 t16-2; do
    if cmp <(grep -v "^#" t16-1/logreg-1.csv) <(grep -v "^#" "$d/logreg-1.csv") >/dev/null 2>&1; then
      echo "$d same as t16-1"
    else echo "$d DIFFERS from t16-1"; fi
  done >csv_cmp.txt
fi
# The plan's predictions and the bench's measurements in interleaved rounds: the cores' speeds drift between
# launches, so each prediction is compared with the measurement next to it.
for ((r = 1; r <= PLAN_ROUNDS; r++)); do
  for jobs in 256 1024; do
    step "plan ${jobs}x1000, round $r"
    timeout 30 "${mpi[@]}" -np 16 maprect plan --jobs "$jobs" --points 1000 --ranks-max 16 --repeat 10 \
      --json "plan$jobs-$r.json" >"plan$jobs-$r.txt" 2>&1
  done
  step "bench, 16 ranks, round $r"
  timeout 60 "${mpi[@]}" -np 16 maprect bench "${sizes[@]}" --json "bench16-$r.json" >"bench16-$r.txt" 2>&1
done
# Unequal ranks at 16: sleeping jobs (their speeds hold whatever the cores do), none, the root or worker 1
# slowed s = 3 times, plan's prediction and maprect-bench-unequal under auto and static, interleaved rounds.
unequal=(--jobs 192 --job-ms 1)
for ((r = 1; r <= UNEQUAL_ROUNDS; r++)); do
  for slow_rank in -1 0 1; do
    slow=()
    ((slow_rank >= 0)) && slow=(--slow-rank "$slow_rank" --slow-factor 3)
    step "unequal, slow rank $slow_rank, round $r"
    timeout 30 "${mpi[@]}" -np 16 maprect plan --model sleep "${unequal[@]}" "${slow[@]}" --repeat 5 --ranks-max 16 \
      --json "unequal-plan$slow_rank-$r.json" >"unequal-plan$slow_rank-$r.txt" 2>&1
    for balance in auto static; do
      MAPRECT_BALANCE=$balance timeout 30 "${mpi[@]}" -x MAPRECT_BALANCE -np 16 maprect-bench-unequal "${unequal[@]}" \
        --slow-factor 3 --slow-rank "$slow_rank" --calls 30 2>&1 | grep "^kind=" | sed "s/^/round=$r /" >>unequal.txt
    done
  done
done
# Hosts of 4 ranks against one host: the claims by message through the root against those in host memory,
# on the standard model and on sleeping jobs with one rank slowed.
hosts() {
  MAPRECT_TEST_HOST_RANKS=$1 MAPRECT_BALANCE=$2 timeout 60 "${mpi[@]}" -x MAPRECT_TEST_HOST_RANKS -x MAPRECT_BALANCE \
    -np 16 "${@:3}"
}
for ((r = 1; r <= HOSTS_ROUNDS; r++)); do
  for spec in "16 auto" "4 auto" "4 static"; do
    read -r host_ranks balance <<<"$spec"
    step "hosts of $host_ranks, $balance, bench, round $r"
    hosts "$host_ranks" "$balance" maprect bench "${sizes[@]}" --json "hosts$host_ranks-$balance-$r.json" \
      >"hosts$host_ranks-$balance-$r.txt" 2>&1
  done
  for slow_rank in -1 0 1; do
    for host_ranks in 16 4; do
      step "hosts of $host_ranks, unequal, slow rank $slow_rank, round $r"
      hosts "$host_ranks" auto maprect-bench-unequal "${unequal[@]}" --slow-factor 3 --slow-rank "$slow_rank" \
        --calls 30 2>&1 | grep "^kind=" | sed "s/^/round=$r host_ranks=$host_ranks /" >>hosts-unequal.txt
    done
  done
done
((NO_THREADS)) && { step "done"; exit 0; }
step "bench, 1 rank x 16 threads"
timeout 50 "${mpi[@]}" -np 1 maprect bench "${sizes[@]}" --threads 16 --json bench_t16.json >bench_t16.txt 2>&1
step "done"
