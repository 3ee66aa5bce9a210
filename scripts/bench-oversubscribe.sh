#!/usr/bin/env bash
# Time per gradient of the standard model (J=64 x N=100, var/var) at 2 and 4 ranks under each wait
# policy, and the ratio np4/np2: what idle workers cost a root that shares their cores when there are more
# ranks than cores. Builds maprect-bench-wait if needed. Runs are interleaved over ROUNDS rounds; the table
# shows each configuration's best round, and the lines after it the ratios taken within each round (whose
# runs follow each other) with their median, the figure least skewed by the machine's drift. The
# workers' CPU time per gradient (from the same run) shows what waiting costs the other processes.
# GAP_US=n makes the root compute alone for n us after each gradient (workers idle meanwhile; the time
# per gradient includes the gap).
#   ROUNDS=3 REPEATS=2000 GAP_US=0 POLICIES="spin sleep auto" RANKS="2 4" scripts/bench-oversubscribe.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

ROUNDS="${ROUNDS:-3}"
REPEATS="${REPEATS:-2000}"
GAP_US="${GAP_US:-0}"
read -r -a policies <<<"${POLICIES:-spin sleep auto}"
read -r -a ranks <<<"${RANKS:-2 4}"
program="$MAPRECT_BUILD_DIR/bin/maprect-bench-wait"

build maprect-bench-wait >/dev/null

# Open MPI refuses root without these; oversubscribe lets ranks exceed cores; self,vader keeps all
# traffic in shared memory.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none

cores=$(nproc)
log "bench-oversubscribe: $cores cores, ranks ${ranks[*]}, ${ROUNDS} rounds of $REPEATS gradients per run," \
  "root alone for ${GAP_US} us after each"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A best cpu ratios
for round in $(seq "$ROUNDS"); do
  for policy in "${policies[@]}"; do
    for np in "${ranks[@]}"; do
      line=$(MAPRECT_WAIT="$policy" mpirun -np "$np" "$program" "$REPEATS" "$GAP_US")
      median=$(sed -n 's/.*median_us=\([0-9.]*\).*/\1/p' <<<"$line")
      workers_cpu=$(sed -n 's/.*workers_cpu_us=\([0-9.]*\).*/\1/p' <<<"$line")
      key="$policy/$np"
      if [ -z "${best[$key]:-}" ] || awk -v a="$median" -v b="${best[$key]}" 'BEGIN { exit !(a < b) }'; then
        best[$key]=$median
        cpu[$key]=$workers_cpu
      fi
      log "round $round: MAPRECT_WAIT=$policy np=$np median ${median} us, workers' CPU ${workers_cpu} us"
      # The runs of one round and policy follow each other: their ratio is the least disturbed by drift.
      if [ "$np" != "${ranks[0]}" ]; then
        ratios[$policy/$np]+=" $(awk -v a="$median" -v b="$first_median" 'BEGIN { printf "%.3f", a / b }')"
      else
        first_median=$median
      fi
    done
  done
done
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Table: one row per policy, microseconds per gradient at each rank count, each count against the first
# (np4/np2 with the defaults), then the CPU microseconds all workers together used per gradient.
header=$(printf '%-8s' "wait")
for np in "${ranks[@]}"; do header+=$(printf ' %12s' "np=$np (us)"); done
for np in "${ranks[@]:1}"; do header+=$(printf ' %10s' "np$np/np${ranks[0]}"); done
for np in "${ranks[@]}"; do header+=$(printf ' %14s' "cpu np=$np (us)"); done
echo "$header"
for policy in "${policies[@]}"; do
  row=$(printf '%-8s' "$policy")
  for np in "${ranks[@]}"; do row+=$(printf ' %12s' "${best[$policy/$np]}"); done
  for np in "${ranks[@]:1}"; do
    row+=$(awk -v a="${best[$policy/$np]}" -v b="${best[$policy/${ranks[0]}]}" 'BEGIN { printf " %10.2f", a / b }')
  done
  for np in "${ranks[@]}"; do row+=$(printf ' %14s' "${cpu[$policy/$np]}"); done
  echo "$row"
done
# The same ratios taken within each round, and their median: the figure to compare with a target.
for policy in "${policies[@]}"; do
  for np in "${ranks[@]:1}"; do
    read -r -a rs <<<"${ratios[$policy/$np]}"
    median=$(printf '%s\n' "${rs[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
    echo "$policy np$np/np${ranks[0]} per round: ${rs[*]}; median $median"
  done
done
if [ "$cores" -lt "${ranks[-1]}" ]; then
  echo "auto waits as spin where ranks <= cores and as sleep where ranks > cores ($cores cores here)."
fi
