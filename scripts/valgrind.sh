#!/usr/bin/env bash
# valgrind memcheck over the MPI tests at np=3 (CTest tests labelled `mpi` that run a binary under
# `mpiexec -n 3`: every such binary and every setting of them, see below), each rank under valgrind: zero
# errors and no definite leaks (Open MPI / PMIx internals suppressed, nothing of maprect's). Tests run side
# by side, as many as the cores; the reports come in order.
#   scripts/valgrind.sh          (stage `valgrind` of scripts/test.sh) on the Release build in build/
#   MAPRECT_VALGRIND_ALL=1       every np=3 MPI test, not the cover of binaries and settings described below
#   MAPRECT_VALGRIND_TESTS=REGEX every np=3 MPI test whose CTest name matches (Python re.search)
#   MAPRECT_VALGRIND_JOBS=N      tests run at a time (default: the cores, MAPRECT_JOBS)
#   MAPRECT_VALGRIND_ORIGINS=1   every test with --track-origins=yes (else a failing test's rerun only)
#   MAPRECT_VALGRIND_DEBUG=1 scripts/valgrind.sh
#                                the same on a RelWithDebInfo build in build-valgrind/, for file:line in the
#                                reports (costs a second build; CI uses the Release binaries it already has)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

NP=3
BUILD=$MAPRECT_BUILD_DIR
if [ "${MAPRECT_VALGRIND_DEBUG:-0}" = 1 ]; then
  BUILD=$MAPRECT_ROOT/build-valgrind
  cmake -S "$MAPRECT_ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(compiler_launcher) >/dev/null
fi
[ -f "$BUILD/CMakeCache.txt" ] || build

# The np=3 MPI tests, each with its environment from CTest (variables joined by \x1f, "-" for none: a test
# such as test_threads_settings checks what its MAPRECT_* variables make of the cluster) and its command:
# [mpiexec, -n, 3, binary, args...]. By default a cover of them: every test binary once, and every MAPRECT_*
# setting (VAR=value) once, in the first test (fewest settings, then name) that has it. Open MPI starting
# and ending under memcheck costs about 12 s of CPU per test at 3 ranks, most of a typical test's; the 79
# tests of the whole set took 681 s on 2 cores, their cover of 33 less than half.
mapfile -t tests < <(ctest --test-dir "$BUILD" --show-only=json-v1 | python3 -c '
import json, re, sys
pattern, everything = sys.argv[1], sys.argv[1] or sys.argv[2] == "1"
rows = []
for t in json.load(sys.stdin)["tests"]:
    labels = [l for p in t.get("properties", []) if p["name"] == "LABELS" for l in p["value"]]
    cmd = t.get("command", [])
    # Test binaries run by mpiexec directly (not the shell pipelines that compare program outputs).
    env = [e for p in t.get("properties", []) if p["name"] == "ENVIRONMENT" for e in p["value"]]
    if (re.search(pattern, t["name"]) and "mpi" in labels and len(cmd) > 3
            and cmd[0].split("/")[-1] in ("mpiexec", "mpirun") and cmd[1:3] == ["-n", "3"]):
        rows.append((t["name"], env, cmd))
binaries, settings = set(), set()
for name, env, cmd in sorted(rows, key=lambda r: (sum(e.startswith("MAPRECT_") for e in r[1]), r[0])):
    own = {e for e in env if e.startswith("MAPRECT_")}
    if everything or cmd[3] not in binaries or not own <= settings:
        binaries.add(cmd[3])
        settings |= own
        print(name, "\x1f".join(env) or "-", *cmd, sep="\t")' "${MAPRECT_VALGRIND_TESTS:-}" \
  "${MAPRECT_VALGRIND_ALL:-0}")
[ "${#tests[@]}" -gt 0 ] || { echo "valgrind: no np=3 MPI tests found in $BUILD"; exit 1; }
targets=()
for line in "${tests[@]}"; do
  IFS=$'\t' read -r -a f <<<"$line"
  targets+=("$(basename "${f[5]}")")
done
cmake --build "$BUILD" -j"$MAPRECT_JOBS" --target "${targets[@]}"

LOGS=$BUILD/valgrind-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
# Three ranks under valgrind on two cores: polling ranks must yield or every message waits a time slice.
export OMPI_MCA_mpi_yield_when_idle=1
VALGRIND=(valgrind --tool=memcheck --error-exitcode=42 --leak-check=full --errors-for-leak-kinds=definite
  --show-leak-kinds=definite --num-callers=30
  --suppressions=/usr/share/openmpi/openmpi-valgrind.supp
  --suppressions="$MAPRECT_ROOT/scripts/sanitizers/valgrind-mpi.supp")
# --track-origins=yes finds no more errors, it names where an uninitialised value came from, for a third
# more CPU: a failing test runs again with it (MAPRECT_VALGRIND_ORIGINS=1: every test).
ORIGINS=()
[ "${MAPRECT_VALGRIND_ORIGINS:-0}" = 1 ] && ORIGINS=(--track-origins=yes)

# One test under valgrind; its verdict line goes to stdout and to $LOGS/<name>.verdict (PASS or FAIL first).
check_one() {
  local f name mpiexec binary environment=() start=$SECONDS status=0 errors=0 definite=0 e d l
  IFS=$'\t' read -r -a f <<<"$1"
  name=${f[0]} mpiexec=${f[2]} binary=${f[5]}
  [ "${f[1]}" = - ] || IFS=$'\x1f' read -r -a environment <<<"${f[1]}"
  # The first five fields are name, environment, mpiexec, -n, 3; the binary and its arguments follow.
  rm -f "$LOGS/$name".*.log
  env "${environment[@]}" timeout -k 15 300 "$mpiexec" -n "$NP" "${VALGRIND[@]}" "${ORIGINS[@]}" --log-file="$LOGS/$name.%p.log" \
    "$binary" "${f[@]:6}" >"$LOGS/$name.out" 2>&1 || status=$?
  for l in "$LOGS/$name".*.log; do
    e=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$l" | tr -d , | tail -1)
    d=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$l" | tr -d , | tail -1)
    [ -n "$e" ] || e=1  # no summary: the rank did not finish under valgrind
    errors=$((errors + e)) definite=$((definite + ${d:-0}))
  done
  if [ "$status" -eq 0 ] && [ "$errors" -eq 0 ] && [ "$definite" -eq 0 ]; then
    echo "PASS: $name under valgrind: 0 errors, 0 bytes definitely lost, $NP ranks ($((SECONDS - start)) s)" |
      tee "$LOGS/$name.verdict"
  else
    echo "FAIL: $name under valgrind: exit $status, $errors error(s), $definite bytes definitely lost" |
      tee "$LOGS/$name.verdict"
  fi
}

# MAPRECT_VALGRIND_JOBS tests at a time (default MAPRECT_JOBS, the cores): a test's ranks wait on each other
# much of the time, which another test's ranks then use.
JOBS=${MAPRECT_VALGRIND_JOBS:-$MAPRECT_JOBS}
for line in "${tests[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  check_one "$line" &
done
wait

failures=0
rerun=$((${#ORIGINS[@]} == 0))
ORIGINS=(--track-origins=yes)  # for the reruns
for line in "${tests[@]}"; do
  name=${line%%$'\t'*}
  grep -q '^PASS' "$LOGS/$name.verdict" 2>/dev/null && continue
  if [ "$rerun" = 1 ]; then  # again, with the origins of uninitialised values in the reports
    cp "$LOGS/$name.verdict" "$LOGS/$name.first-verdict" 2>/dev/null || true
    cp "$LOGS/$name.out" "$LOGS/$name.first-out" 2>/dev/null || true
    check_one "$line" >/dev/null
    # A failing assertion may not come again: the first run's output is what failed.
    echo "(the first run: $(cat "$LOGS/$name.first-verdict" 2>/dev/null); its output:)"
    cat "$LOGS/$name.first-out" 2>/dev/null || true
    echo "(the reports below: again with --track-origins=yes)"
  fi
  cat "$LOGS/$name.out"
  for l in "$LOGS/$name".*.log; do
    grep -q 'ERROR SUMMARY: 0 errors' "$l" || { echo "=== $l"; cat "$l"; }
  done
  cat "$LOGS/$name.verdict" 2>/dev/null || echo "FAIL: $name under valgrind: no verdict"
  failures=$((failures + 1))
done
[ "$failures" -eq 0 ] || { echo "valgrind: $failures test(s) FAILED (logs in $LOGS)"; exit 1; }
echo "valgrind: all ${#tests[@]} np=$NP MPI tests run clean ($JOBS at a time)"
