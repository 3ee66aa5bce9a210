#!/usr/bin/env bash
# Installs the Debian packages maprect needs (only those missing) and builds it in Release into build/:
# every target, or only those named (`scripts/setup.sh maprect-cli`).
# Run it directly, or source it from the other scripts: sourcing defines the functions without running them.
set -euo pipefail

# Every Debian package the build, the tests and the tools need. Append new ones here.
MAPRECT_PACKAGES=(
  build-essential cmake ninja-build
  libopenmpi-dev openmpi-bin
  libboost-mpi-dev libboost-serialization-dev libboost-dev
  libeigen3-dev catch2 libcli11-dev liblbfgspp-dev
  python3 python3-matplotlib
  valgrind iproute2
  nlohmann-json3-dev
  r-base-core r-cran-posterior
  ccache
  clang libclang-rt-14-dev
)

MAPRECT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$MAPRECT_ROOT}  # used only where ccache is the compiler launcher
MAPRECT_BUILD_DIR="${MAPRECT_BUILD_DIR:-$MAPRECT_ROOT/build}"
# Parallel compile jobs: the cores.
MAPRECT_JOBS="${MAPRECT_JOBS:-$(nproc)}"
# Parallel CTest slots (a test declares one per rank, PROCESSORS): four per core. The tests wait much of
# their time (mpirun starting ranks, jobs that sleep, timeouts, ranks waiting on each other): with one slot
# per core the Release suite kept 2 cores 31% busy and took 332 s, with four 60% and 145 s.
MAPRECT_TEST_JOBS="${MAPRECT_TEST_JOBS:-$((4 * MAPRECT_JOBS))}"

log() { printf '[maprect] %s\n' "$*"; }

# Installs only what dpkg reports missing, so a warm machine touches no network.
install_packages() {
  local missing=() pkg
  for pkg in "${MAPRECT_PACKAGES[@]}"; do
    # dpkg -s succeeds for removed-but-configured packages too: require "install ok installed".
    if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "packages: all ${#MAPRECT_PACKAGES[@]} present"
    return 0
  fi
  log "packages: installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  # CI has no standard input: never let apt or debconf prompt.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

# The compiler launcher flag: ccache where it is installed (a package above, so that every build on a CI
# machine after its first takes its objects from the cache; with CCACHE_BASEDIR, set above, a clone anywhere
# shares the cache).
compiler_launcher() {
  if command -v ccache >/dev/null; then echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
}

# configure_clang BUILD CMAKE_ARG...: configures BUILD with Ninja and clang++ (the sanitizer and fuzz builds),
# RelWithDebInfo at -O1 plus the arguments given. A directory configured with another compiler is configured
# anew: CMake keeps the compiler of an existing cache.
configure_clang() {
  local build=$1
  shift
  if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' "$build/CMakeCache.txt"; then
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  fi
  cmake -S "$MAPRECT_ROOT" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "$@" $(compiler_launcher) >/dev/null
}

# configure_sanitize BUILD: the ASan + UBSan build of the sanitize and fuzz stages (scripts/sanitize.sh,
# scripts/fuzz.sh), the same arguments from both so that neither makes the other's objects stale.
configure_sanitize() {
  configure_clang "$1" -DMAPRECT_SANITIZE=ON -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
}

# Configures (first time) and builds maprect in Release: every target, or only the targets given.
build() {
  log "configure: $MAPRECT_BUILD_DIR (Release, Ninja)"
  cmake -S "$MAPRECT_ROOT" -B "$MAPRECT_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release $(compiler_launcher) >/dev/null
  log "build: cmake --build -j$MAPRECT_JOBS${1:+ --target $*}"
  cmake --build "$MAPRECT_BUILD_DIR" -j"$MAPRECT_JOBS" ${1:+--target "$@"}
}

# For the scripts that run `maprect plan` beside `maprect bench` (plan-validate.sh, plan-deferred.sh): BIN
# (bin/maprect, built if missing), Open MPI's settings for root and more ranks than cores, the launcher
# MAPRECT_PLAN_MPIRUN (default: mpirun over shared memory), and WORK, a folder removed at exit.
plan_script_setup() {
  BIN=$MAPRECT_BUILD_DIR/bin/maprect
  [ -x "$BIN" ] || cmake --build "$MAPRECT_BUILD_DIR" -j2 --target maprect-cli
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  if [ -z "${MAPRECT_PLAN_MPIRUN:-}" ]; then
    MAPRECT_PLAN_MPIRUN="mpirun --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
  fi
  WORK=$(mktemp -d "/tmp/maprect-plan-$1.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
}

# The packages, then the Release build of every target, or only of the targets given.
setup() {
  install_packages
  build "$@"
}

# Run only when executed, not when sourced.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cd "$MAPRECT_ROOT"
  setup "$@"
  log "setup: done"
fi
