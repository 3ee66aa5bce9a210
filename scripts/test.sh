#!/usr/bin/env bash
# CI entry point: installs what is missing, builds in Release, then runs every test stage in order.
# A stage is a function named stage_<name>; add it and list its name in STAGES.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

# MAPRECT_STAGES="setup tsan" scripts/test.sh runs only the stages named (in the order given).
read -r -a STAGES <<<"${MAPRECT_STAGES:-setup ctest slurm multihost soak tsan valgrind sanitize fuzz}"

# The clang builds of the tsan and sanitize stages (the fuzz stage's binaries are part of the sanitize build) start once
# setup has passed, one after the other at the lowest CPU priority: they take what the stages before theirs leave of the
# cores (the ctest stage keeps them 60% busy, slurm and multihost mostly wait on daemons and delays) and yield it to the
# tests. A stage waits for its build, then runs its script, whose build then finds nothing to do (or, after a failed
# build ahead, fails in the foreground with the compiler's messages).
PREBUILDS=(tsan sanitize)
PREBUILD_LOGS=$MAPRECT_BUILD_DIR/prebuild
PREBUILD_PID=

start_prebuilds() {
  rm -rf "$PREBUILD_LOGS"
  mkdir -p "$PREBUILD_LOGS"
  # setsid: a process group of its own, so that an early end of the run stops the compilers too. A new session
  # is also a new scheduler autogroup where the kernel has them (sched_autogroup_enabled): autogroups share
  # the CPU equally whatever their processes' nice, so the group's own nice is raised as well.
  setsid nice -n 19 bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
    logs=$1
    shift
    for name in "$@"; do
      status=0
      "scripts/$name.sh" --build-only >"$logs/$name.log" 2>&1 || status=$?
      echo "$status" >"$logs/$name.status"
    done' prebuild "$PREBUILD_LOGS" "${PREBUILDS[@]}" &
  PREBUILD_PID=$!
  log "builds ahead: ${PREBUILDS[*]} at nice 19 (logs in $PREBUILD_LOGS)"
}

stop_prebuilds() {
  [ -z "$PREBUILD_PID" ] || kill -TERM -- "-$PREBUILD_PID" 2>/dev/null || true
}
trap stop_prebuilds EXIT

# Waits for the build ahead of stage $1, where one was started (not when the stages named leave out setup).
await_prebuild() {
  local name=$1 start=$SECONDS
  [ -n "$PREBUILD_PID" ] || return 0
  until [ -f "$PREBUILD_LOGS/$name.status" ]; do
    # Gone without a verdict (killed): the stage builds in the foreground.
    kill -0 "$PREBUILD_PID" 2>/dev/null || { log "$name: no build ahead finished"; return 0; }
    sleep 2
  done
  log "$name: build ahead exit $(cat "$PREBUILD_LOGS/$name.status"), waited $((SECONDS - start)) s for it"
}

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
  await_prebuild tsan
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
  await_prebuild sanitize
  scripts/sanitize.sh
}

# libFuzzer with ASan + UBSan on every reader of a file, 20 s per target from the seed corpus, in
# build-sanitize/: no findings (the long pass is `scripts/fuzz.sh --long`).
stage_fuzz() {
  await_prebuild sanitize
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
  if [ "$stage" = setup ]; then start_prebuilds; fi
done

if [ -n "$failed" ]; then
  log "stages: ${passed[*]:-none} passed; $failed failed; $((SECONDS - start_all)) s"
  exit "$status"
fi
log "stages: all ${#passed[@]} passed (${passed[*]}); $((SECONDS - start_all)) s"
