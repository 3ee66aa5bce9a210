#!/usr/bin/env bash
# ASan + UBSan build of the programs the test suite runs, MPI tests included, in build-sanitize/, with clang
# (Debian's clang and libclang-rt, as the fuzz stage): it compiles this code with the sanitizers in half
# gcc's time (a typical MPI test file: 18.7 s of CPU against 37.9 s), and its sanitizers are the reference
# implementation. RelWithDebInfo at -O1, the level ASan's authors advise: the build takes a third less time
# than at -O2; Debug would trip Boost debug asserts unrelated to maprect. -g1 (line tables) gives every
# frame of a report its file and line, inlined frames included, as -g does, for a fifth less compile time
# and half the object size (no local variables for a debugger). Runs every CTest test except those that
# cannot work under the sanitizers (see EXCLUDE below) and fails on any finding.
#   scripts/sanitize.sh        (stage `sanitize` of scripts/test.sh)
#   scripts/sanitize.sh --build-only   configure and build, run nothing (scripts/test.sh builds ahead of the stage)
#   MAPRECT_SANITIZE_BUILD_DIR build directory (default: <repo>/build-sanitize)
#
# Suppressions (scripts/sanitizers/) cover Open MPI / PMIx / hwloc / libevent internals only, never maprect.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

BUILD=${MAPRECT_SANITIZE_BUILD_DIR:-$MAPRECT_ROOT/build-sanitize}
SUPP=$MAPRECT_ROOT/scripts/sanitizers
# Excluded labels:
#   faults  the fault cases kill ranks with SIGKILL, exit mid-call or leave the root without releasing the
#           workers (root-leak leaks on purpose), and run_fault.sh times them against a 10 s limit: under ASan
#           their deliberate leaks and aborts are findings by design, and the slowdown breaks the timing.
#   fault-program  a test that runs the fault cases' program (threads_bound_warning): its deliberate leaks are
#           findings under ASan as the fault cases' are.
#   slurm   starts real SLURM daemons and submits the Release program (only present with MAPRECT_TEST_SLURM).
#   install installs the library and builds programs against the installed package, whose code is the code
#           the other tests run: they check the package (CMake config, headers, a user's model built outside
#           the tree), which the Release ctest stage does, and took 175 s of the stage's test time here, most
#           of it compiling.
EXCLUDE='^(faults|fault-program|slurm|install)$'

log "sanitize: configure $BUILD (clang, ASan + UBSan, RelWithDebInfo at -O1)"
configure_sanitize "$BUILD"
# Only the programs the tests run (target maprect-test-programs): the benchmarks and tools no test runs are
# left to the Release build. And the fuzz stage's libFuzzer binaries (maprect-fuzzers), which link this
# build's libraries, so that its build ahead (scripts/test.sh) is this one.
log "sanitize: build maprect-test-programs maprect-fuzzers -j$MAPRECT_JOBS"
cmake --build "$BUILD" -j"$MAPRECT_JOBS" --target maprect-test-programs maprect-fuzzers
cc -shared -fPIC -O2 -o "$BUILD/libkeep_modules.so" "$SUPP/keep_modules.c"
[ "${1:-}" != --build-only ] || exit 0

# Open MPI's plugins are built without frame pointers, so the fast unwinder stops at their first frame. With
# dlclose a no-op (keep_modules.c, not instrumented: it is preloaded into mpirun and the shells too) that frame
# names its module at exit, and the suppressions match it. The slow unwinder would find the whole stack, at
# ten times the CPU in the sampler's allocations (test_sample_statistics: 709 s against 9 s in Release).
export LD_PRELOAD=$BUILD/libkeep_modules.so
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="suppressions=$SUPP/ubsan.supp:print_stacktrace=1:halt_on_error=1"

# A report fails the stage even where the test passed: tests that expect a non-zero exit (the CLI error
# cases) or match their output against a pattern would otherwise hide a sanitizer abort. CTest keeps every
# test's full output in Testing/Temporary/LastTest.log.
FINDING='runtime error:|ERROR: (AddressSanitizer|LeakSanitizer)|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer)'
findings=0
scan() {
  local n
  n=$(grep -cE "$FINDING" "$1" || true)
  if [ "$n" -gt 0 ]; then
    echo "=== sanitizer findings in $1:"
    grep -nE -A25 "$FINDING" "$1" | head -200
    findings=$((findings + n))
  fi
}

# test_ad_memory's last case asserts that VmRSS stays flat over 10^5 gradients: ASan's quarantine, shadow
# memory and fake stacks grow RSS by design, so that one case is left to the Release build (stage ctest);
# the binary's other cases run here, directly.
status=0
ctest --test-dir "$BUILD" --output-on-failure --timeout 300 --label-exclude "$EXCLUDE" -E '^test_ad_memory$' -j"$MAPRECT_TEST_JOBS" ||
  status=$?
scan "$BUILD/Testing/Temporary/LastTest.log"
mem_log=$BUILD/Testing/Temporary/test_ad_memory-sanitize.log
"$BUILD/test/ad/test_ad_memory" --use-colour no '~a hundred thousand gradient() calls keep memory flat' \
  >"$mem_log" 2>&1 || { cat "$mem_log"; status=1; }
scan "$mem_log"

if [ "$findings" -gt 0 ]; then
  echo "sanitize: FAILED: $findings sanitizer report line(s)"
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize: FAILED: ctest exit $status"
  exit "$status"
fi
log "sanitize: no findings ($(ctest --test-dir "$BUILD" -N --label-exclude "$EXCLUDE" | sed -n 's/^Total Tests: //p') tests)"
