#!/usr/bin/env bash
# CI entry point: installs what is missing, builds in Release, then runs every test stage in order.
# A stage is a function named stage_<name>; add it and list its name in STAGES.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

STAGES=(setup ctest tsan slurm multihost soak valgrind sanitize fuzz)

stage_setup() {
  setup
}

# Every CTest test (unit, MPI at several rank counts, the installed-package consumer). Each test has its
# own timeout in CMake; --timeout is a backstop for tests that do not. Tests run side by side on
# MAPRECT_TEST_JOBS slots (four per core), each taking as many as it has ranks (PROCESSORS).
stage_ctest() {
  ctest --test-dir "$MAPRECT_BUILD_DIR" --output-on-failure --timeout 300 -j"$MAPRECT_TEST_JOBS"
}

# ThreadSanitizer build of the in-process tests (ad, map_rect, threads) in build-tsan/: no findings.
stage_tsan() {
  scripts/tsan.sh
}

# The batch scripts in slurm/ on a real single-node SLURM started and stopped by the stage itself (root;
# installs the SLURM packages if missing). Prints SKIP with the reason where SLURM cannot be installed.
stage_slurm() {
  MAPRECT_BUILD_DIR=$MAPRECT_BUILD_DIR "$MAPRECT_ROOT/scripts/test-slurm.sh"
}

# MPI tests across 3 network-namespace hosts over TCP, bit-equal to shared memory (SKIP without CAP_NET_ADMIN);
# then maprect plan vs maprect bench across them at one-way delays 0, 20 and 200 us, and the skewed model's
# predicted and measured speedups (even, auto, hosts) and a uniform size's on 2 of them (printed; bits asserted).
stage_multihost() {
  scripts/netns-hosts.sh --plan-validate "0 20us 200us" --skewed "128x1000" --uniform "64x100"
}

# Short soak (the full one is `scripts/soak.sh 100000`): bit-identical results, flat RSS on every rank.
stage_soak() {
  scripts/soak.sh 10000
}

# valgrind memcheck over the np=3 MPI tests: no errors, no definite leaks.
stage_valgrind() {
  scripts/valgrind.sh
}

# ASan + UBSan build of the whole test suite in build-sanitize/: no findings.
stage_sanitize() {
  scripts/sanitize.sh
}

# libFuzzer with ASan + UBSan on every reader of a file, 20 s per target from the seed corpus, in build-fuzz/:
# no findings (the long pass is `scripts/fuzz.sh --long`).
stage_fuzz() {
  scripts/fuzz.sh
}

passed=() failed=""
start_all=$SECONDS
for stage in "${STAGES[@]}"; do
  log "stage $stage: start"
  start=$SECONDS
  # A subshell with errexit of its own: in a `||` list bash would ignore set -e inside the stage.
  set +e
  (set -e; "stage_$stage")
  status=$?
  set -e
  log "stage $stage: $([ "$status" -eq 0 ] && echo ok || echo "FAILED (exit $status)") in $((SECONDS - start)) s"
  if [ "$status" -ne 0 ]; then failed=$stage; break; fi
  passed+=("$stage")
done

if [ -n "$failed" ]; then
  log "stages: ${passed[*]:-none} passed; $failed failed; $((SECONDS - start_all)) s"
  exit "$status"
fi
log "stages: all ${#passed[@]} passed (${passed[*]}); $((SECONDS - start_all)) s"
