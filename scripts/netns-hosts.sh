#!/usr/bin/env bash
# Runs the MPI tests across 3 "hosts" made of network namespaces on this machine, Open MPI over TCP between
# them (no shared memory), and checks that map_rect's results are the same bit for bit as over shared memory.
#
#   scripts/netns-hosts.sh            (stage `multihost` of scripts/test.sh; needs root for `ip netns`)
#
# Topology: namespaces mr<pid>h1..h3 (the hosts, UTS host names h1..h3) with two links each:
#   eth1, $SUBNET.<i>/24: a veth into a bridge in a fourth namespace mr<pid>sw (no added latency);
#   eth2, $NET2.<i>/24: a veth into a second bridge in mr<pid>sw (a second network, for the checks of
#        MAPRECT_NETWORK in scripts/netns-exposure.sh);
#   tun0, $SW_SUBNET.<i>/24 (MTU 9000): a TUN device served by maprect-delay-switch
#        (test/multihost/delay_switch.cpp), which runs in mr<pid>sw under SCHED_FIFO and hands each packet to
#        its destination host a fixed one-way delay after it arrived; it runs only while a delay is asked for.
# Nothing is added to the root namespace, so traffic stays between the namespaces; the per-run names let two
# runs coexist. mpirun starts in h1 and launches the daemons of h2 and h3 through an rsh agent that enters
# their namespace. Open MPI's own wire-up (oob) always goes over the bridge; the ranks' messages (btl tcp) go
# over the one subnet the launcher names: the bridge's, or the switch's where a delay is asked for.
#
# Checks (and those of scripts/netns-exposure.sh: MPI on the network MAPRECT_NETWORK names, faults of a rank
# on another host): every test binary in MPI_TESTS passes at np=3 with one rank per host; maprect-results-dump (values and
# gradients of a fixed set of calls as hex floats) writes the same file across the hosts as over shared memory
# at np=3 and in process (np=1). Namespaces, bridge, switch and any process left in them are removed on exit,
# also on failure. Where namespaces cannot be created it prints `SKIP: <reason>` and exits 0.
#
#   scripts/netns-hosts.sh --delay 200us                    the same through the switch with a one-way delay
#   scripts/netns-hosts.sh --plan-validate "0 20us 200us"   then `maprect plan` vs `maprect bench` at np 2 and 3
#                                                           (PLAN_SCRIPT=scripts/plan-deferred.sh: both reverse
#                                                           modes; PLAN_SIZES, PLAN_REPEAT: their sizes, repeat)
#                                                           across the hosts (scripts/plan-validate.sh): over
#                                                           the bridge, then through the switch at each delay
#   scripts/netns-hosts.sh --skewed "128x1000"              then the skewed standard model at each JxN and pk2cmt
#                                                           with stiff subjects (maprect-skewed-bench) on 2 hosts,
#                                                           one rank each, under MAPRECT_BALANCE=even, auto and
#                                                           hosts: speedups printed, bits checked; with
#                                                           SKEWED_BENCH=maprect-reduce-skewed-bench the same
#                                                           model as reduce_sum over its groups (logreg only)
#   scripts/netns-hosts.sh --uniform "64x100"               the same for the standard model with jobs alike at
#                                                           each JxN (with --skewed: after its runs)
#   scripts/netns-hosts.sh --pointwise "64x1000"            then `maprect bench --model pointwise_regression` on 2
#                                                           hosts, one rank each: eager against deferred at each
#                                                           GxK, with POINTWISE_COVARIATES covariates (default 98),
#                                                           POINTWISE_REPEAT rounds (6) and the records in
#                                                           POINTWISE_JSON when set
#   scripts/netns-hosts.sh --benches-only --skewed "128x1000"  the benchmarks asked for, without the checks above
# Delays are written 0, 20us, 0.2ms or 20 (microseconds). At each delay d the one-way time of 8-byte MPI round
# trips between h1 and h2 (maprect-pingpong: 10th percentile of 1000, best of 3 runs) must exceed the switch's
# own at delay 0 by at least 0.8 d, else FAIL. Delays always go through the switch, never `tc netem`: many
# kernels (this one) lack the netem qdisc, one mechanism everywhere keeps the figures comparable between
# machines, and the switch at delay 0 is the baseline over the same path. Without /dev/net/tun the delayed
# parts print SKIP.
#   MAPRECT_BUILD_DIR  build with the tests (default: <repo>/build; the needed targets are built if missing)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

N_HOSTS=3
DELAY=0
PLAN_DELAYS=""
SKEWED=""
SKEWED_BENCH=${SKEWED_BENCH:-maprect-skewed-bench}
UNIFORM=""
POINTWISE=""
BENCHES_ONLY=""
while [ $# -gt 0 ]; do
  case $1 in
    --delay) DELAY=$2; shift 2 ;;
    --plan-validate) PLAN_DELAYS=$2; shift 2 ;;
    --skewed) SKEWED=$2; shift 2 ;;
    --uniform) UNIFORM=$2; shift 2 ;;
    --pointwise) POINTWISE=$2; shift 2 ;;
    --benches-only) BENCHES_ONLY=1; shift ;;
    *) echo "netns-hosts.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
SUBNET=10.211.0
SW_SUBNET=10.212.0
NET2=10.213.0
PREFIX=mr$$
MPI_TESTS=(test_mpi_map_rect test_mpi_errors test_mpi_subcomm test_mpi_deferred)
DUMP=$MAPRECT_BUILD_DIR/test/multihost/maprect-results-dump
SWITCH=$MAPRECT_BUILD_DIR/test/multihost/maprect-delay-switch
PINGPONG=$MAPRECT_BUILD_DIR/test/multihost/maprect-pingpong
SWITCH_PID=""
WORK=$(mktemp -d /tmp/maprect-multihost.XXXXXX)
failures=0

cleanup() {
  local ns pid
  stop_switch >/dev/null 2>&1 || true
  for ns in "$PREFIX"sw $(seq -f "${PREFIX}h%g" 1 "$N_HOSTS"); do
    ip netns list 2>/dev/null | grep -qw "$ns" || continue
    # Deleting a namespace does not end its processes (a hung rank or daemon): end ours first.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' INT TERM  # so that the EXIT trap runs when CI cancels the stage

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- the hosts ----------------------------------------------------------------------------------------------
command -v ip >/dev/null || { echo "SKIP: no ip command (install iproute2)"; exit 0; }
if ! err=$(ip netns add "${PREFIX}sw" 2>&1); then
  echo "SKIP: cannot create network namespaces (CAP_NET_ADMIN needed): $err"
  exit 0
fi
ip netns exec "${PREFIX}sw" ip link set lo up
ip netns exec "${PREFIX}sw" ip link add br0 type bridge
ip netns exec "${PREFIX}sw" ip link set br0 up
ip netns exec "${PREFIX}sw" ip link add br1 type bridge
ip netns exec "${PREFIX}sw" ip link set br1 up
for i in $(seq 1 "$N_HOSTS"); do
  h=${PREFIX}h$i
  ip netns add "$h"
  # Both ends are created inside their namespaces: the root namespace never sees them.
  ip link add eth1 netns "$h" type veth peer name "p$i" netns "${PREFIX}sw"
  ip netns exec "${PREFIX}sw" ip link set "p$i" master br0 up
  ip netns exec "$h" ip addr add "$SUBNET.$i/24" dev eth1
  ip netns exec "$h" ip link set eth1 up
  ip link add eth2 netns "$h" type veth peer name "q$i" netns "${PREFIX}sw"
  ip netns exec "${PREFIX}sw" ip link set "q$i" master br1 up
  ip netns exec "$h" ip addr add "$NET2.$i/24" dev eth2
  ip netns exec "$h" ip link set eth2 up
  ip netns exec "$h" ip link set lo up
  # The switch's side: a persistent TUN device (no carrier, so no traffic, until the switch attaches to it).
  if [ -c /dev/net/tun ]; then
    ip netns exec "$h" ip tuntap add dev tun0 mode tun
    ip netns exec "$h" ip link set tun0 mtu 9000 up
    ip netns exec "$h" ip addr add "$SW_SUBNET.$i/24" dev tun0
  fi
  echo "$SUBNET.$i slots=1" >>"$WORK/hostfile"
  echo "h$i slots=1" >>"$WORK/hostfile-names"
done
log "multihost: $N_HOSTS hosts ${PREFIX}h1..h$N_HOSTS on $SUBNET.0/24"

# rsh agent for Open MPI: "<agent> <host address> <command...>" runs the command in that host's namespace,
# under its own host name so that Open MPI sees separate nodes (no shared-memory shortcut between them).
cat >"$WORK/rsh" <<EOF
#!/bin/sh
host=\$1; shift
case \$host in
  $SUBNET.[0-9]*) i=\${host##*.} ;;
  h[0-9]*) i=\${host#h} ;;
  *) echo "netns rsh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "${PREFIX}h\$i" unshare --uts /bin/sh -c "hostname h\$i; \$*"
EOF
chmod +x "$WORK/rsh"

# The launchers across the hosts: "<it> -np N program args", TCP only, the ranks' messages on one subnet only
# (mpirun-bridge: the bridge; mpirun-switch: the delay switch). Unbound: each host's daemon sees one slot and
# would bind its rank to core 0, so that every rank shared one core.
for link in bridge:$SUBNET switch:$SW_SUBNET; do
  cat >"$WORK/mpirun-${link%%:*}" <<EOF
#!/bin/sh
exec timeout -k 15 180 ip netns exec "${PREFIX}h1" unshare --uts /bin/sh -c 'hostname h1; exec "\$0" "\$@"' \\
  mpirun --hostfile "$WORK/hostfile" --map-by node --bind-to none --mca plm_rsh_agent "$WORK/rsh" --mca btl self,tcp \\
  --mca btl_tcp_if_include "${link#*:}.0/24" --mca oob_tcp_if_include "$SUBNET.0/24" "\$@"
EOF
  chmod +x "$WORK/mpirun-${link%%:*}"
done

# --- the delay switch -------------------------------------------------------------------------------------------
# Microseconds from a delay as written on the command line: 0, 20us, 0.2ms, 20 (microseconds).
delay_us() {
  python3 -c "import re, sys
m = re.fullmatch(r'([0-9]+(?:\.[0-9]*)?)(us|ms)?', sys.argv[1])
if not m: sys.exit(f'netns-hosts.sh: delay {sys.argv[1]!r}: expected 0, 20us, 0.2ms or 20 (microseconds)')
print(f'{float(m[1]) * (1000 if m[2] == \"ms\" else 1):g}')" "$1"
}

# Stops the switch (SIGTERM: it must exit 0) and prints its summary line; nothing where none runs.
stop_switch() {
  [ -n "$SWITCH_PID" ] || return 0
  local rc=0
  kill -TERM "$SWITCH_PID" 2>/dev/null || true
  wait "$SWITCH_PID" || rc=$?
  SWITCH_PID=""
  tail -1 "$WORK/switch.log"
  if [ "$rc" -ne 0 ]; then
    cat "$WORK/switch.log"
    fail "maprect-delay-switch exited with status $rc on SIGTERM"
  fi
}

# (Re)starts the switch with one-way delay $1 between the hosts' tun0 and waits until every device has carrier.
switch_at() {
  local us ports=() i
  us=$(delay_us "$1")
  stop_switch
  for i in $(seq 1 "$N_HOSTS"); do ports+=("/var/run/netns/${PREFIX}h$i:tun0:$SW_SUBNET.$i"); done
  ip netns exec "${PREFIX}sw" chrt -f 10 "$SWITCH" --delay-us "$us" "${ports[@]}" >"$WORK/switch.log" 2>&1 &
  SWITCH_PID=$!
  for _ in $(seq 50); do
    kill -0 "$SWITCH_PID" 2>/dev/null || break
    [ -s "$WORK/switch.log" ] || { sleep 0.1; continue; }  # its first line follows the attachments
    for i in $(seq 1 "$N_HOSTS"); do
      [ "$(ip netns exec "${PREFIX}h$i" cat /sys/class/net/tun0/carrier)" = 1 ] || { sleep 0.1; continue 2; }
    done
    log "multihost: $(head -1 "$WORK/switch.log")"
    return 0
  done
  cat "$WORK/switch.log"
  fail "maprect-delay-switch did not attach to the hosts' devices within 5 s (or exited)"
  return 1
}

# "p10 median": the 10th percentile and the median one-way time (us) of 1000 8-byte round trips between h1
# and h2 over launcher $1 (maprect-pingpong).
one_way_us() {
  "$1" -np 2 "$PINGPONG" 1000 >"$WORK/pingpong.log" 2>&1 || { cat "$WORK/pingpong.log" >&2; return 1; }
  sed -n 's/^one-way us: min [0-9.]* p10 \([0-9.]*\) median \([0-9.]*\)$/\1 \2/p' "$WORK/pingpong.log"
}

# The one-way time over the bridge, for comparison.
bridge_latency() {
  local p10 median
  read -r p10 median <<<"$(one_way_us "$WORK/mpirun-bridge")"
  echo "one-way latency h1-h2 over the bridge: $p10 us (10th percentile), $median us (median)"
}

# The least delay whose end-to-end effect is asserted: the switch's one-way time at delay 0 moves by 15-40 us
# between runs on a shared machine, so below this the added delay hides in that spread.
E2E_DELAY_MIN_US=100

# The switch really delays. At every delay the switch's own count of the packets it forwarded during one
# pingpong must cover the 2000 messages of its 1000 round trips (the traffic went through it, held until due).
# From E2E_DELAY_MIN_US on, its one-way time at delay $1 must also exceed its own at delay 0 by 0.8 $1 or more:
# three rounds at 0, then at $1, each measured by its 10th percentile; the least of the rounds counts (a busy
# machine only ever adds time). Leaves the switch stopped.
check_latency() {
  local us round d times p10 median fast_0 fast_d added forwarded least=""
  local -A fast=([0]="" [$1]="")
  us=$(delay_us "$1")
  [ "$us" != 0 ] || return 0
  for round in 1 2 3; do
    for d in 0 "$1"; do
      switch_at "$d" >/dev/null || return 0
      if ! times=$(one_way_us "$WORK/mpirun-switch") || [ -z "$times" ]; then
        fail "one-way latency through the switch at delay $d: maprect-pingpong did not measure it"
        return 0
      fi
      read -r p10 median <<<"$times"
      echo "one-way latency h1-h2 through the switch at delay $d (round $round): $p10 us (10th percentile)," \
        "$median us (median)"
      fast[$d]+=" $p10"
      [ "$d" = 0 ] && continue
      stop_switch >"$WORK/switch-summary"
      forwarded=$(sed -n 's/.*stopped; \([0-9]*\) packets forwarded.*/\1/p' "$WORK/switch-summary")
      cat "$WORK/switch-summary"
      [ -n "$least" ] && [ "${forwarded:-0}" -ge "$least" ] || least=${forwarded:-0}
    done
  done
  if [ "$least" -ge 2000 ]; then
    pass "the switch at delay $1 forwarded at least $least packets per pingpong of 2000 messages"
  else
    fail "the switch at delay $1 forwarded only $least packets in a pingpong of 2000 messages"
  fi
  read -r fast_0 fast_d added < <(python3 -c "import sys
b, d = (min(map(float, a.split())) for a in sys.argv[1:])
print(b, d, round(d - b, 1))" "${fast[0]}" "${fast[$1]}")
  if python3 -c "import sys; sys.exit(float(sys.argv[1]) >= float(sys.argv[2]))" "$us" "$E2E_DELAY_MIN_US"; then
    echo "one-way latency through the switch at delay $1: $fast_d us against $fast_0 us at delay 0: $added us" \
      "added (printed: below $E2E_DELAY_MIN_US us the delay is within the spread between runs)"
  elif python3 -c "import sys; sys.exit(float(sys.argv[1]) < 0.8 * float(sys.argv[2]))" "$added" "$us"; then
    pass "one-way latency through the switch at delay $1: $fast_d us against $fast_0 us at delay 0: $added us" \
      "added (at least 0.8 x $us us)"
  else
    fail "one-way latency through the switch at delay $1: $fast_d us against $fast_0 us at delay 0: only $added us" \
      "added (less than 0.8 x $us us)"
  fi
}

for d in $DELAY $PLAN_DELAYS; do delay_us "$d" >/dev/null || exit 2; done

# --- what to run ----------------------------------------------------------------------------------------------
targets=()
[ -n "$BENCHES_ONLY" ] || targets+=(maprect-results-dump "${MPI_TESTS[@]}" test_balance_hosts test_reduce_sum_cluster
  test_reduce_sum_claims maprect-fault-case)
[ -z "$SKEWED$UNIFORM" ] || targets+=("$SKEWED_BENCH")
[ "$(delay_us "$DELAY")" = 0 ] && [ -z "$PLAN_DELAYS" ] || targets+=(maprect-delay-switch maprect-pingpong)
missing=()
for t in "${targets[@]}"; do
  [ -x "$(find "$MAPRECT_BUILD_DIR" -name "$t" -type f -perm -u+x -print -quit 2>/dev/null)" ] || missing+=("$t")
done
[ -f "$MAPRECT_BUILD_DIR/lib/libmaprect-bind-network.so" ] || missing+=(maprect-bind-network)
if [ "${#missing[@]}" -gt 0 ]; then
  log "multihost: building ${missing[*]}"
  cmake --build "$MAPRECT_BUILD_DIR" -j2 --target "${missing[@]}"
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Ranks poll while they wait; three on two cores answer sooner when they yield.
export OMPI_MCA_mpi_yield_when_idle=1
unset OMPI_MCA_btl

# The link of the test binaries: the bridge, or the switch at the delay asked for (checked against delay 0).
LINK=bridge
NO_TUN="SKIP: delays need /dev/net/tun for maprect-delay-switch (the kernel's tun module)"
if [ "$(delay_us "$DELAY")" != 0 ]; then
  [ -c /dev/net/tun ] || { echo "$NO_TUN"; exit 0; }
  bridge_latency
  check_latency "$DELAY"
  switch_at "$DELAY" || exit 1
  LINK=switch
fi
DEVICE=$([ "$LINK" = bridge ] && echo eth1 || echo tun0)

# np=3 across the hosts, one rank each.
netns_mpirun() {
  "$WORK/mpirun-$LINK" -np "$N_HOSTS" "$@"
}
# Shared memory on this host, as the CTest tests run.
shm_mpirun() {
  timeout -k 15 180 mpirun --mca btl self,vader --mca btl_vader_single_copy_mechanism none "$@"
}

# --- the checks (all but --benches-only) ------------------------------------------------------------------
if [ -z "$BENCHES_ONLY" ]; then
  # --- the MPI tests across the hosts ---------------------------------------------------------------------------
  for t in "${MPI_TESTS[@]}"; do
    bin=$(find "$MAPRECT_BUILD_DIR/test" -name "$t" -type f -print -quit)
    start=$SECONDS
    if netns_mpirun "$bin" --use-colour no >"$WORK/$t.log" 2>&1; then
      pass "$t np=$N_HOSTS across $N_HOSTS hosts over TCP ($((SECONDS - start)) s): $(grep -E '^(All tests passed|test cases)' "$WORK/$t.log" | tail -1)"
    else
      cat "$WORK/$t.log"
      fail "$t np=$N_HOSTS across $N_HOSTS hosts over TCP"
    fi
  done

  # Claims across hosts (MAPRECT_BALANCE=hosts): any rank runs any worker's jobs, with the bits of in process;
  # then with the root held (MAPRECT_TEST_HOLD_RANK=0), so that the workers take the slow root's jobs in every call.
  bin=$(find "$MAPRECT_BUILD_DIR/test" -name test_balance_hosts -type f -print -quit)
  for held in "" 0; do
    env_args=()
    [ -z "$held" ] || env_args=(-x "MAPRECT_TEST_HOLD_RANK=$held")
    what="test_balance_hosts np=$N_HOSTS under MAPRECT_BALANCE=hosts across $N_HOSTS hosts over TCP"
    what+="${held:+, rank $held held}"
    start=$SECONDS
    if netns_mpirun -x MAPRECT_BALANCE=hosts "${env_args[@]}" "$bin" --use-colour no >"$WORK/balance_hosts.log" 2>&1; then
      summary=$(grep -E '^(All tests passed|test cases)' "$WORK/balance_hosts.log" | tail -1)
      pass "$what ($((SECONDS - start)) s): $summary"
    else
      cat "$WORK/balance_hosts.log"
      fail "$what"
    fi
  done

  # reduce_sum across hosts: under auto every steady call claims slices by message between any two ranks, the
  # root's included; test_reduce_sum_claims holds the slow rank (MAPRECT_TEST_HOLD_RANK), worker 1 and then the
  # root, so that others claim from it in every call.
  reduce_runs=("test_reduce_sum_cluster||" "test_reduce_sum_claims|1|" "test_reduce_sum_claims|0|[slow_root]")
  for run in "${reduce_runs[@]}"; do
    IFS='|' read -r t held filter <<<"$run"
    bin=$(find "$MAPRECT_BUILD_DIR/test" -name "$t" -type f -print -quit)
    env_args=() filter_args=()
    [ -z "$held" ] || env_args=(-x "MAPRECT_TEST_HOLD_RANK=$held")
    [ -z "$filter" ] || filter_args=("$filter")
    start=$SECONDS
    if netns_mpirun "${env_args[@]}" "$bin" --use-colour no "${filter_args[@]}" >"$WORK/$t.$held.log" 2>&1; then
      pass "$t${filter:+ $filter} np=$N_HOSTS across $N_HOSTS hosts over TCP${held:+, rank $held held} ($((SECONDS - start)) s): $(grep -E '^(All tests passed|test cases)' "$WORK/$t.$held.log" | tail -1)"
    else
      cat "$WORK/$t.$held.log"
      fail "$t${filter:+ $filter} np=$N_HOSTS across $N_HOSTS hosts over TCP${held:+, rank $held held}"
    fi
  done

  # Two ranks a host (round-robin: rank r on host r % N_HOSTS): the workers of a host claim each other's jobs
  # and slices in host memory, and across hosts by message; the last rank held, so that its host's other
  # worker claims in every call.
  bin=$(find "$MAPRECT_BUILD_DIR/test" -name test_host_peer_claims -type f -print -quit)
  np=$((2 * N_HOSTS))
  what="test_host_peer_claims np=$np across $N_HOSTS hosts over TCP, two ranks a host, rank $((np - 1)) held"
  start=$SECONDS
  if "$WORK/mpirun-$LINK" -np "$np" --oversubscribe -x "MAPRECT_TEST_HOLD_RANK=$((np - 1))" \
    -x "PEER_CLAIMS_HOSTS_BY_NODE=$N_HOSTS" "$bin" --use-colour no >"$WORK/host_peer_claims.log" 2>&1; then
    pass "$what ($((SECONDS - start)) s): $(grep -E '^(All tests passed|test cases)' "$WORK/host_peer_claims.log" | tail -1)"
  else
    cat "$WORK/host_peer_claims.log"
    fail "$what"
  fi

  # --- bit equality: across the hosts vs shared memory vs in process ---------------------------------------------
  if netns_mpirun "$DUMP" "$WORK/tcp.txt" >"$WORK/dump-tcp.log" 2>&1 &&
    shm_mpirun -np "$N_HOSTS" "$DUMP" "$WORK/shm.txt" >"$WORK/dump-shm.log" 2>&1 &&
    shm_mpirun -np 1 "$DUMP" "$WORK/np1.txt" >"$WORK/dump-np1.log" 2>&1; then
    hosts=$(sed -n 's/^rank [0-9]* on host //p' "$WORK/dump-tcp.log" | sort -u | tr '\n' ' ')
    if [ "$(sed -n 's/^rank [0-9]* on host //p' "$WORK/dump-tcp.log" | sort -u | wc -l)" -eq "$N_HOSTS" ]; then
      pass "results dump ran on $N_HOSTS distinct hosts: $hosts"
    else
      cat "$WORK/dump-tcp.log"
      fail "results dump ran on hosts '$hosts', expected $N_HOSTS distinct ones"
    fi
    entries=$(grep -c '^value\|^d_' "$WORK/shm.txt" || true)
    if cmp "$WORK/tcp.txt" "$WORK/shm.txt"; then
      pass "TCP across hosts == shared memory, bit for bit ($entries values and gradient entries, $(wc -l <"$WORK/shm.txt") lines)"
    else
      diff "$WORK/shm.txt" "$WORK/tcp.txt" | head -20
      fail "TCP across hosts differs from shared memory"
    fi
    if cmp "$WORK/np1.txt" "$WORK/shm.txt"; then
      pass "shared memory np=$N_HOSTS == in process (np=1), bit for bit"
    else
      diff "$WORK/np1.txt" "$WORK/shm.txt" | head -20
      fail "shared memory np=$N_HOSTS differs from in process"
    fi
  else
    cat "$WORK"/dump-*.log
    fail "maprect-results-dump did not run to the end"
  fi

  # MPI on the network MAPRECT_NETWORK names, and faults of a rank on another host.
  # shellcheck source-path=SCRIPTDIR source=netns-exposure.sh
  source "$MAPRECT_ROOT/scripts/netns-exposure.sh"
  check_network_binding
  check_faults_across_hosts

  # The ranks really talked over their link: bytes received by every host's interface.
  rx=()
  for i in $(seq 1 "$N_HOSTS"); do
    rx+=("h$i $(ip netns exec "${PREFIX}h$i" cat "/sys/class/net/$DEVICE/statistics/rx_bytes") B")
  done
  echo "traffic received over the $LINK ($DEVICE): ${rx[*]}"
fi

# --- the cost model against measurements across the hosts, at each delay (printed, not asserted) -----------------
# One block of scripts/plan-validate.sh rows, labelled $1, over launcher $2.
plan_rows() {
  local start=$SECONDS
  if MAPRECT_PLAN_MPIRUN=$2 MAPRECT_PLAN_NPS="2 3" MAPRECT_PLAN_SIZES=${PLAN_SIZES:-64x100} \
    MAPRECT_PLAN_REPEAT=${PLAN_REPEAT:-50} MAPRECT_PLAN_LABEL=$1 MAPRECT_PLAN_HEADER=$plan_header \
    "${PLAN_SCRIPT:-scripts/plan-validate.sh}"; then
    plan_header=0
    log "multihost: plan vs bench, $1, in $((SECONDS - start)) s"
  else
    fail "plan-validate across the hosts, $1"
  fi
}

if [ -n "$PLAN_DELAYS" ]; then
  plan_header=1
  plan_rows bridge "$WORK/mpirun-bridge"
  if [ -c /dev/net/tun ]; then
    bridge_latency
    for d in $PLAN_DELAYS; do
      check_latency "$d"
      switch_at "$d" || break
      plan_rows "switch $d" "$WORK/mpirun-switch"
    done
    if [ "$LINK" = switch ]; then switch_at "$DELAY" || exit 1; else stop_switch; fi
  else
    echo "$NO_TUN"
  fi
fi

# --- the skewed standard model on 2 hosts: a static split against claims across hosts (printed; bits checked) --
# What the cost model predicts for `logreg J N`, measured by `maprect plan` across the same 2 hosts: speedups of a
# static split and of claims over one rank (printed beside the measured ones, not asserted).
skewed_prediction() {
  if "$WORK/mpirun-$LINK" -np 2 sh -c "$pin" "$MAPRECT_BUILD_DIR/bin/maprect" plan --jobs "$2" --points "$3" \
    --skew 10 --job-data --ranks-max 2 --repeat 5 --json "$WORK/skewed-plan.json" >"$WORK/skewed-plan.log" 2>&1; then
    python3 - "$WORK/skewed-plan.json" "$2x$3" <<'PY'
import json
import sys

doc = json.load(open(sys.argv[1]))
one, two = (next(r for r in doc["predictions"] if r["ranks"] == p) for p in (1, 2))
print(f"predicted skewed logreg {sys.argv[2]} at 2 ranks (maprect plan --skew 10 --job-data): static split "
      f"{one['us_per_gradient'] / two['us_per_gradient_flat']:.2f}x, claims "
      f"{one['us_per_gradient'] / two['us_per_gradient_claims']:.2f}x")
PY
  else
    cat "$WORK/skewed-plan.log"
    fail "maprect plan --skew 10 $2x$3 across 2 hosts"
  fi
}

if [ -n "$SKEWED$UNIFORM" ]; then
  skewed_bin=$(find "$MAPRECT_BUILD_DIR/test" -name "$SKEWED_BENCH" -type f -print -quit)
  # Each run: model J N repeats (the logreg sizes asked, with the dear tenth last and then first, in the
  # root's chunk; then pk2cmt with its stiff tenth of subjects).
  # The launcher leaves the ranks unbound; for steady figures the two ranks are pinned to cores 0 and 1.
  cores=$(nproc)
  pin='exec taskset -c $((OMPI_COMM_WORLD_RANK % '"$cores"')) "$0" "$@"'
  runs=()
  for size in $SKEWED; do
    runs+=("logreg ${size%x*} ${size#*x} 31")
    [ "$SKEWED_BENCH" != maprect-skewed-bench ] || runs+=("logreg-first ${size%x*} ${size#*x} 31")
  done
  [ -z "$SKEWED" ] || [ "$SKEWED_BENCH" != maprect-skewed-bench ] || runs+=("pk2cmt 64 1000 11")
  [ "$SKEWED_BENCH" != maprect-skewed-bench ] || for size in $UNIFORM; do runs+=("uniform ${size%x*} ${size#*x} 31"); done
  [ -x "$MAPRECT_BUILD_DIR/bin/maprect" ] || cmake --build "$MAPRECT_BUILD_DIR" -j2 --target maprect-cli
  for run in "${runs[@]}"; do
    # shellcheck disable=SC2086 # the run's words are its arguments
    [ "${run%% *}" != logreg ] || [ "$SKEWED_BENCH" != maprect-skewed-bench ] || skewed_prediction $run
    for balance in even auto hosts; do
      # shellcheck disable=SC2086 # the run's words are its arguments
      if "$WORK/mpirun-$LINK" -np 2 -x MAPRECT_BALANCE=$balance sh -c "$pin" "$skewed_bin" $run \
        >"$WORK/skewed.log" 2>&1; then
        pass "$(grep '^skewed' "$WORK/skewed.log") across 2 hosts over TCP"
      else
        cat "$WORK/skewed.log"
        fail "$SKEWED_BENCH $run under MAPRECT_BALANCE=$balance across 2 hosts"
      fi
    done
  done
fi

if [ -n "$POINTWISE" ]; then
  [ -x "$MAPRECT_BUILD_DIR/bin/maprect" ] || cmake --build "$MAPRECT_BUILD_DIR" -j2 --target maprect-cli
  cores=$(nproc)
  pin='exec taskset -c $((OMPI_COMM_WORLD_RANK % '"$cores"')) "$0" "$@"'
  if "$WORK/mpirun-$LINK" -np 2 sh -c "$pin" "$MAPRECT_BUILD_DIR/bin/maprect" bench --model pointwise_regression \
    --sizes "${POINTWISE// /,}" --covariates "${POINTWISE_COVARIATES:-98}" --repeat "${POINTWISE_REPEAT:-6}" \
    ${POINTWISE_JSON:+--json "$POINTWISE_JSON"} >"$WORK/pointwise.log" 2>&1; then
    sed -n '/^median time/,$p' "$WORK/pointwise.log"
    pass "maprect bench --model pointwise_regression ${POINTWISE} across 2 hosts over TCP"
  else
    cat "$WORK/pointwise.log"
    fail "maprect bench --model pointwise_regression ${POINTWISE} across 2 hosts"
  fi
fi

stop_switch
if [ "$failures" -gt 0 ]; then
  echo "multihost: $failures check(s) FAILED"
  exit 1
fi
echo "multihost: all checks passed"
