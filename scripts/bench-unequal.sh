#!/usr/bin/env bash
# Time per gradient at 4 ranks when one rank is s times slower than the others (issue #32's measurement):
# 48 jobs of 1 ms, each a sleep, s times longer on the slow rank, so that the ranks' speeds hold on 2 cores.
# Cases: no slow rank, the root slow, worker 1 slow; each under every MAPRECT_BALANCE of BALANCES. A run's
# figure is its median call against the balanced bound (total work / sum of the ranks' speeds: 12 ms equal,
# 14.4 ms with one rank at a third). Runs are interleaved over ROUNDS rounds; the table shows per case the
# median of the rounds' ratios and their range. maprect-bench-unequal also checks that every call's value and
# gradient are the bits of the first call and of the in-process call, and fails the script if not.
# KIND=reduce_sum times the same jobs as the slices of a reduce_sum call (two terms each).
#   ROUNDS=6 CALLS=30 JOBS=48 JOB_MS=1 SLOW=3 BALANCES="auto static hosts" RANKS=4 KIND=map_rect \
#     scripts/bench-unequal.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

ROUNDS="${ROUNDS:-6}"
CALLS="${CALLS:-30}"
JOBS="${JOBS:-48}"
JOB_MS="${JOB_MS:-1}"
SLOW="${SLOW:-3}"
RANKS="${RANKS:-4}"
KIND="${KIND:-map_rect}"
read -r -a balances <<<"${BALANCES:-auto static hosts}"
cases=(none root worker)
program="$MAPRECT_BUILD_DIR/bin/maprect-bench-unequal"

build maprect-bench-unequal >/dev/null

# Open MPI refuses root without these; oversubscribe lets ranks exceed cores; self,vader keeps all
# traffic in shared memory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none

# slow_rank CASE: the rank whose jobs are slowed (-1: none).
slow_rank() {
  case "$1" in
    none) echo -1 ;;
    root) echo 0 ;;
    worker) echo 1 ;;
  esac
}

# median_range DIGITS VALUES...: "median (min–max)" of the values, with DIGITS decimals.
median_range() {
  local digits=$1
  shift
  printf '%s\n' "$@" | sort -g | awk -v d="$digits" '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    f = "%." d "f (%." d "f-%." d "f)"
    printf f, m, v[1], v[NR] }'
}

log "bench-unequal: $KIND, $(nproc) cores, $RANKS ranks, $JOBS jobs of $JOB_MS ms, s = $SLOW, $ROUNDS rounds of $CALLS calls"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A ratios measured ms bound
for round in $(seq "$ROUNDS"); do
  for balance in "${balances[@]}"; do
    for case_ in "${cases[@]}"; do
      line=$(MAPRECT_BALANCE="$balance" mpirun -np "$RANKS" --oversubscribe "$program" --jobs "$JOBS" \
        --job-ms "$JOB_MS" --slow-factor "$SLOW" --slow-rank "$(slow_rank "$case_")" --calls "$CALLS" --kind "$KIND")
      key="$balance/$case_"
      ratios[$key]+=" $(sed -n 's/.* ratio=\([0-9.]*\).*/\1/p' <<<"$line")"
      measured[$key]+=" $(sed -n 's/.*measured_ratio=\([0-9.]*\).*/\1/p' <<<"$line")"
      ms[$key]+=" $(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' <<<"$line")"
      bound[$key]=$(sed -n 's/.* bound_ms=\([0-9.]*\).*/\1/p' <<<"$line")
      log "round $round: MAPRECT_BALANCE=$balance slow=$case_: $line"
    done
  done
done
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Table: one row per balance mode and case; the ratio is the one to compare with the targets (at most 1.15
# with a slow root or worker, 1.10 with equal ranks).
printf '%-7s %-7s %10s %-22s %-24s %-24s\n' "balance" "slow" "bound (ms)" "median ms (range)" \
  "ratio to bound (range)" "to measured bound"
for balance in "${balances[@]}"; do
  for case_ in "${cases[@]}"; do
    key="$balance/$case_"
    read -r -a r <<<"${ratios[$key]}"
    read -r -a m <<<"${ms[$key]}"
    read -r -a v <<<"${measured[$key]}"
    printf '%-7s %-7s %10s %-22s %-24s %-24s\n' "$balance" "$case_" "${bound[$key]}" "$(median_range 2 "${m[@]}")" \
      "$(median_range 3 "${r[@]}")" "$(median_range 3 "${v[@]}")"
  done
done
