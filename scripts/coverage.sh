#!/usr/bin/env bash
# Line coverage of the whole test suite: a gcc build with --coverage at -O1 in build-coverage/, every CTest
# test run once (--coverage in CMAKE_CXX_FLAGS, which the install tests pass on to the programs they build
# against the installed library), then each source file's lines that no test executed, the library's first
# (scripts/coverage-report.py). A process that aborts (MPI_Abort, the fault tests' kills) writes no counts, so
# the abort paths read as never run. Not a stage of scripts/test.sh: the build alone takes about 15 minutes on
# 2 cores.
#   scripts/coverage.sh [--lines]   --lines: print every never-run line, not only the counts per file
#   MAPRECT_COVERAGE_BUILD_DIR      build directory (default: <repo>/build-coverage)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

BUILD=${MAPRECT_COVERAGE_BUILD_DIR:-$MAPRECT_ROOT/build-coverage}
log "coverage: configure $BUILD (gcc --coverage, -O1)"
cmake -S "$MAPRECT_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS=--coverage \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_EXE_LINKER_FLAGS=--coverage \
  -DCMAKE_SHARED_LINKER_FLAGS=--coverage $(compiler_launcher) >/dev/null
log "coverage: build -j$MAPRECT_JOBS"
cmake --build "$BUILD" -j"$MAPRECT_JOBS"
find "$BUILD" -name '*.gcda' -delete  # counts of this run only
log "coverage: every test"
status=0
ctest --test-dir "$BUILD" --timeout 900 -j"$MAPRECT_TEST_JOBS" > "$BUILD/coverage-ctest.log" 2>&1 || status=$?
grep -E '^[0-9]+% tests passed' "$BUILD/coverage-ctest.log" || true
# A failing test's counts still go into the report; the failure is named after it.
python3 "$MAPRECT_ROOT/scripts/coverage-report.py" "$MAPRECT_ROOT" "$BUILD" "$@"
if [ "$status" -ne 0 ]; then
  sed -n '/The following tests FAILED/,$p' "$BUILD/coverage-ctest.log"
  echo "coverage: FAILED: ctest exit $status (log: $BUILD/coverage-ctest.log)"
  exit "$status"
fi
