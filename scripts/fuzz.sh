#!/usr/bin/env bash
# Fuzzes every reader of a file the user gives (test/fuzz/fuzz_<target>.cpp) with libFuzzer, ASan and UBSan (clang), in
# the sanitize stage's build-sanitize/, starting from the seed corpus in test/fuzz/corpus/<target>/. Fails on any
# finding: a crash, an uncaught exception, an error that is not one line naming the file, a sanitizer report, a leak, an
# input slower than 10 s, more than 2 GB resident or one allocation over 64 MB.
#   scripts/fuzz.sh                   every target for 20 s (stage `fuzz` of scripts/test.sh)
#   scripts/fuzz.sh --seconds 300     every target for 300 s
#   scripts/fuzz.sh --long            every target for 10^6 executions (the figures in docs/reliability.md)
#   scripts/fuzz.sh ... TARGET...     only these targets (e.g. checkpoint)
#   scripts/fuzz.sh --build-only      configure and build, fuzz nothing (scripts/test.sh builds ahead of the stage)
#   MAPRECT_SANITIZE_BUILD_DIR        build directory (default: <repo>/build-sanitize, scripts/sanitize.sh's)
# A finding's input is left in build-sanitize/findings/<target>/; the grown corpus in
# build-sanitize/corpus/<target>/.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

BUILD=${MAPRECT_SANITIZE_BUILD_DIR:-$MAPRECT_ROOT/build-sanitize}
FUZZ_DIR=$MAPRECT_ROOT/test/fuzz
limit=(-max_total_time=20)
build_only=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --long) limit=(-runs=1000000) ;;
    --build-only) build_only=1 ;;
    --seconds) limit=(-max_total_time="$2"); shift ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1") ;;
  esac
  shift
done
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^maprect_fuzz_target(\([a-z_0-9]*\).*/\1/p' "$FUZZ_DIR/CMakeLists.txt")
fi

log "fuzz: configure $BUILD (clang, ASan + UBSan; libFuzzer's coverage in the readers)"
configure_sanitize "$BUILD"
log "fuzz: build ${targets[*]}"
cmake --build "$BUILD" -j"$MAPRECT_JOBS" --target "${targets[@]/#/fuzz_}"
[ "$build_only" = 0 ] || exit 0

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# One target; its summary goes to $BUILD/fuzz-<target>.summary, its exit status to .status.
fuzz_one() {
  local target=$1 status=0 runs speed cover dict=()
  local corpus=$BUILD/corpus/$target findings=$BUILD/findings/$target log_file=$BUILD/fuzz-$target.log
  mkdir -p "$corpus" "$findings"
  if [ -f "$FUZZ_DIR/dict/$target.dict" ]; then dict=(-dict="$FUZZ_DIR/dict/$target.dict"); fi
  "$BUILD/test/fuzz/fuzz_$target" "${limit[@]}" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=64 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "$FUZZ_DIR/corpus/$target" \
    >"$log_file" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log_file")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log_file")
  cover=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log_file" | tail -1 || true)
  {
    log "fuzz: $target: ${runs:-?} executions, ${speed:-?} exec/s, ${cover:-no coverage line}, exit $status"
    if [ "$status" -ne 0 ]; then
      grep -E -m1 -A30 'ERROR|runtime error|fuzz finding|deadly signal|uncaught' "$log_file" | head -40 || true
      log "fuzz: $target: FINDING; input in $findings/, full log $log_file"
    fi
  } >"$BUILD/fuzz-$target.summary"
  echo "$status" >"$BUILD/fuzz-$target.status"
}

# A fuzzer is one process on one core: the targets run MAPRECT_JOBS at a time (the cores).
log "fuzz: ${targets[*]} (${limit[*]} each, $MAPRECT_JOBS at a time)"
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$MAPRECT_JOBS" ]; do wait -n || true; done
  rm -f "$BUILD/fuzz-$target.status"
  fuzz_one "$target" &
done
wait
failed=()
for target in "${targets[@]}"; do
  cat "$BUILD/fuzz-$target.summary" 2>/dev/null || log "fuzz: $target: no summary"
  [ "$(cat "$BUILD/fuzz-$target.status" 2>/dev/null)" = 0 ] || failed+=("$target")
done
if [ "${#failed[@]}" -gt 0 ]; then
  log "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
log "fuzz: no findings in ${targets[*]}"
