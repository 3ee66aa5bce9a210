#!/usr/bin/env bash
# Two builds side by side at NP (16) ranks split into hosts (MAPRECT_TEST_HOST_RANKS), for a machine without
# Open MPI: per round, in alternating order, each build's `maprect bench` (the standard model, both sizes) and
# maprect-bench-unequal with no rank, the root and worker 1 slowed 3 times (sleeping jobs; SLOW_RANKS names
# others). The old build's programs are bundled under the names maprect-old and maprect-bench-unequal-old.
# Outputs go to $OUT/ab16.tgz, packed after every step. Prepare the bundle into .devrun/ as
# ../shared/tools/device/README.md says (programs: build/bin/maprect build/bin/maprect-bench-unequal and the old
# build's, renamed), then run it there:
#   OUT=/some/dir [ROUNDS=6] [HOST_RANKS=4] [NP=16] [BENCH=1] [SLOW_RANKS="-1 0 1"] [JOB_MS=1] [REVERSE=] \
#     bash scripts/sixteen-hosts-ab.sh
# Where Open MPI is installed, LOCAL=1 takes the four programs from PATH instead of the bundle. BENCH=0 leaves out
# maprect bench. The unequal jobs are 12 per rank, JOB_MS milliseconds each. REVERSE, where set, is every
# program's MAPRECT_REVERSE (REVERSE=deferred BENCH=0: the deferred calls' claims).
set -u
ROUNDS=${ROUNDS:-6}
HOST_RANKS=${HOST_RANKS:-4}
NP=${NP:-16}
BENCH=${BENCH:-1}
JOB_MS=${JOB_MS:-1}
reverse_args=()
if [[ -n ${REVERSE:-} ]]; then
  export MAPRECT_REVERSE=$REVERSE
  reverse_args=(-x MAPRECT_REVERSE)
fi
read -r -a SLOW_RANKS <<<"${SLOW_RANKS:--1 0 1}"
if [[ ${LOCAL:-0} != 1 ]]; then
  export BUNDLE=$PWD/.devrun/bundle
  # shellcheck source=/dev/null
  source .devrun/env.sh
fi
R=/tmp/ab16
rm -rf "$R" && mkdir -p "$R" && cd "$R" || exit 1
T0=$(date +%s)
pack() { tar czf "$OUT/ab16.tgz" -C "$R" .; }
step() { echo "[$(($(date +%s) - T0)) s] $*" >>"$R/log.txt"; pack; }
{ nproc; lscpu | head -20; } >machine.txt 2>&1
hosts() {
  MAPRECT_TEST_HOST_RANKS=$HOST_RANKS timeout 60 mpirun --bind-to none -x MAPRECT_TEST_HOST_RANKS "${reverse_args[@]}" \
    -np "$NP" "$@"
}
run_build() {  # build suffix ("" or -old), round
  local b=$1 r=$2 name=${1:-new}
  name=${name#-}
  if ((BENCH)); then
    step "$name, bench, round $r"
    hosts "maprect$b" bench --sizes 256x1000,1024x1000 --repeat 20 >"bench-$name-$r.txt" 2>&1
  fi
  for slow_rank in "${SLOW_RANKS[@]}"; do
    step "$name, unequal, slow rank $slow_rank, round $r"
    hosts "maprect-bench-unequal$b" --jobs $((12 * NP)) --job-ms "$JOB_MS" --slow-factor 3 --slow-rank "$slow_rank" \
      --calls 30 2>&1 |
      grep "^kind=" | sed "s/^/round=$r build=$name /" >>unequal.txt
  done
}
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then run_build "" "$r"; run_build -old "$r"; else run_build -old "$r"; run_build "" "$r"; fi
done
step "done"
