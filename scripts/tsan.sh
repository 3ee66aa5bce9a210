#!/usr/bin/env bash
# ThreadSanitizer build (clang) of the tests that run in one process without MPI (test/ad, test/map_rect,
# test/threads, test/reduce_sum; and the claims engine's rules with its batch_aside thread), in build-tsan/
# (RelWithDebInfo at -O1 -g1: line tables, so that reports carry file and line, as in scripts/sanitize.sh), run
# with no finding allowed. Only those test targets are built, which keeps the stage to a few minutes on 2 cores.
#   scripts/tsan.sh            (stage `tsan` of scripts/test.sh)
#   scripts/tsan.sh --build-only   configure and build, run nothing (scripts/test.sh builds ahead of the stage)
#   MAPRECT_TSAN_BUILD_DIR     build directory (default: <repo>/build-tsan)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

BUILD=${MAPRECT_TSAN_BUILD_DIR:-$MAPRECT_ROOT/build-tsan}
TARGETS=(test_ad test_ad_memory test_map_rect test_threads test_reduce_sum test_grant_rule)

log "tsan: configure $BUILD (clang, ThreadSanitizer, RelWithDebInfo at -O1)"
# clang, as the sanitize stage: half gcc's compile time with the sanitizers.
configure_clang "$BUILD" -DMAPRECT_TSAN=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DMAPRECT_BUILD_PROGRAMS=OFF
log "tsan: build ${TARGETS[*]} -j$MAPRECT_JOBS"
cmake --build "$BUILD" -j"$MAPRECT_JOBS" --target "${TARGETS[@]}"
[ "${1:-}" != --build-only ] || exit 0

# halt_on_error: the first race ends its test with a failure; the scan below also catches a report in a
# test that passed anyway.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
FINDING='WARNING: ThreadSanitizer|ThreadSanitizer: reported|SUMMARY: ThreadSanitizer'
status=0
ctest --test-dir "$BUILD" --output-on-failure --timeout 300 -j"$MAPRECT_TEST_JOBS" -R "^($(IFS='|'; echo "${TARGETS[*]}"))\$" || status=$?
log_file=$BUILD/Testing/Temporary/LastTest.log
findings=$(grep -cE "$FINDING" "$log_file" || true)
if [ "$findings" -gt 0 ]; then
  grep -nE -A30 "$FINDING" "$log_file" | head -200
  echo "tsan: FAILED: $findings ThreadSanitizer report line(s)"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "tsan: FAILED: ctest exit $status"
  exit "$status"
fi
log "tsan: no findings (${TARGETS[*]})"
