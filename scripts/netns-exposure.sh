# Sourced by scripts/netns-hosts.sh once its namespace hosts are up: what a run across hosts exposes, and
# faults of a rank on another host. Uses its PREFIX, N_HOSTS, SUBNET (eth1), NET2 (eth2), WORK, MAPRECT_ROOT,
# MAPRECT_BUILD_DIR, pass and fail. No sleeps decide anything: each run is inspected or struck while its rank
# 2 (on h3) waits inside a call (maprect-fault-case worker-pause), which the script learns from a file.
#
# check_network_binding: the slurm/ scripts' keep_mpi_on_network (taken from slurm/fit.sbatch; the three copies
# must be the same) turns MAPRECT_NETWORK into Open MPI's btl_tcp_if_include and oob_tcp_if_include. Runs at
# np=3 across the hosts with MAPRECT_NETWORK=eth2 (the interface form, the second network) and
# MAPRECT_NETWORK=$SUBNET.0/24 (the CIDR form, the first): every TCP connection of every host is on the named
# network (or the loopback), and so is every listening socket (libmaprect-bind-network.so, which the function
# preloads: Open MPI 4.1 itself binds its listeners to the wildcard address whatever the setting). Unset, the
# ranks connect over both networks and listen on the wildcard: the checks can fail.
#
# check_faults_across_hosts: rank 2 on h3 killed (SIGKILL in a functor), hung (MAPRECT_TIMEOUT=2), and its link
# taken down in the middle of a call (MAPRECT_TIMEOUT=2): each job exits non-zero within 10 s, its output names
# rank 2 and host h3.
# shellcheck shell=bash

: "${PREFIX:?}" "${WORK:?}" "${N_HOSTS:?}" "${SUBNET:?}" "${NET2:?}"
FAULT_CASE=$MAPRECT_BUILD_DIR/test/faults/maprect-fault-case

# The launcher of these checks: like mpirun-bridge but with no interface named, so that what MAPRECT_NETWORK
# sets is all that restricts Open MPI.
cat >"$WORK/mpirun-net" <<EOF
#!/bin/sh
exec timeout -k 15 120 ip netns exec "${PREFIX}h1" unshare --uts /bin/sh -c 'hostname h1; exec "\$0" "\$@"' \\
  mpirun --hostfile "$WORK/hostfile" --map-by node --bind-to none --mca plm_rsh_agent "$WORK/rsh" --mca btl self,tcp "\$@"
EOF
chmod +x "$WORK/mpirun-net"
# The launcher of the fault cases: mpirun-bridge's, with the hosts named h1..hN in the hostfile, as a cluster's
# hostfile or SLURM names its nodes, so that Open MPI's own messages name the host too.
sed "s|$WORK/hostfile\"|$WORK/hostfile-names\"|" "$WORK/mpirun-bridge" >"$WORK/mpirun-faults"
chmod +x "$WORK/mpirun-faults"

# Starts `maprect-fault-case worker-pause` at np=3 with the command line "$@" before the program (a launcher
# and its arguments) in the background (JOB_PID, output in $WORK/job.log), and waits until rank 2 is paused
# inside a call: returns 1 when the job ends first. FAULT_DIR holds the files that pause and resume it.
start_paused() {
  FAULT_DIR=$(mktemp -d "$WORK/fault.XXXXXX")
  "$@" -np "$N_HOSTS" -x MAPRECT_BALANCE=static -x MAPRECT_FAULT_DIR="$FAULT_DIR" \
    "$FAULT_CASE" worker-pause >"$WORK/job.log" 2>&1 &
  JOB_PID=$!
  while [ ! -e "$FAULT_DIR/paused" ]; do
    kill -0 "$JOB_PID" 2>/dev/null || { wait "$JOB_PID" || true; return 1; }
    sleep 0.05
  done
}

# Ends the pause and waits for the job; its exit status.
resume_job() {
  touch "$FAULT_DIR/resume"
  local status=0
  wait "$JOB_PID" || status=$?
  return "$status"
}

# "host local-address process" for each established TCP connection (listening ones with $1 = -l), every host.
sockets_of_hosts() {
  local i
  for i in $(seq 1 "$N_HOSTS"); do
    # shellcheck disable=SC2086 # $1 is an optional flag
    ip netns exec "${PREFIX}h$i" ss -Htnp ${1:-} | awk -v h="h$i" '{print h, $4, $6}'
  done
}

# "h1 10.213.0.1:1024 maprect-fault-c; ..." from lines of sockets_of_hosts.
listener_summary() {
  sed 's/users:(("\([^"]*\)".*/\1/' <<<"$1" | tr '\n' ';' | sed 's/;$//; s/;/; /g'
}

# The lines of $1 whose local address is neither the loopback nor in the network whose addresses start $2.
outside_network() {
  awk -v net="$2." '{ a = $2; sub(/:[0-9]+$/, "", a); gsub(/[][]/, "", a); sub(/^::ffff:/, "", a)
                      if (a !~ /^127\./ && a != "::1" && index(a, net) != 1) print }' <<<"$1"
}

# The OMPI_MCA_* assignments that slurm/fit.sbatch's keep_mpi_on_network makes of MAPRECT_NETWORK=$1 (unset if
# empty), one a line; fails with its message when it rejects the value.
network_settings() {
  (
    # shellcheck disable=SC2317 # called by the function taken from fit.sbatch
    die() { echo "$*" >&2; exit 2; }
    # shellcheck disable=SC2317
    log() { echo "$*" >&2; }
    # shellcheck disable=SC2034 # read by keep_mpi_on_network
    BIN=$MAPRECT_BUILD_DIR/bin/maprect  # the preload library is looked for beside it
    eval "$(sed -n '/^keep_mpi_on_network() {/,/^}/p' "$MAPRECT_ROOT/slurm/fit.sbatch")"
    unset OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include MAPRECT_NETWORK
    [ -z "$1" ] || export MAPRECT_NETWORK=$1
    # The batch node is h1: the value is checked against its interfaces and addresses.
    keep_mpi_on_network
    env | grep -E '^(OMPI_MCA_.*_if_include|MAPRECT_NETWORK|LD_PRELOAD)=' | sort || true
  )
}

# One run with MAPRECT_NETWORK=$1 (unset if empty; more VAR=value settings after it): prints the settings, and
# sets CONNECTIONS and LISTENERS as they were while rank 2 was paused inside a call. Returns 1 when the run failed.
inspect_run() {
  local settings
  settings=$(ip netns exec "${PREFIX}h1" bash -c "$(declare -f network_settings); MAPRECT_ROOT=$MAPRECT_ROOT
    MAPRECT_BUILD_DIR=$MAPRECT_BUILD_DIR network_settings '$1'") || { fail "keep_mpi_on_network rejected MAPRECT_NETWORK='$1'"; return 1; }
  settings+=" ${*:2}"
  echo "MAPRECT_NETWORK='$1': ${settings//$'\n'/ }"
  # shellcheck disable=SC2086 # one assignment per word
  if ! start_paused env $settings "$WORK/mpirun-net"; then
    cat "$WORK/job.log"
    fail "worker-pause with MAPRECT_NETWORK='$1' ended before its pause"
    return 1
  fi
  CONNECTIONS=$(sockets_of_hosts)
  LISTENERS=$(sockets_of_hosts -l)
  if ! resume_job || ! grep -q "worker-pause done" "$WORK/job.log"; then
    cat "$WORK/job.log"
    fail "worker-pause with MAPRECT_NETWORK='$1' did not finish"
    return 1
  fi
}

# The checks of MAPRECT_NETWORK: the slurm/ scripts agree, each form keeps every connection on its network,
# and without it the ranks use both networks.
check_network_binding() {
  local f outside value prefix
  for f in sample scaling; do
    if cmp -s <(sed -n '/^keep_mpi_on_network() {/,/^}/p' "$MAPRECT_ROOT/slurm/fit.sbatch") \
      <(sed -n '/^keep_mpi_on_network() {/,/^}/p' "$MAPRECT_ROOT/slurm/$f.sbatch"); then :; else
      fail "slurm/$f.sbatch's keep_mpi_on_network differs from slurm/fit.sbatch's"
    fi
  done
  if settings=$(ip netns exec "${PREFIX}h1" bash -c "$(declare -f network_settings); MAPRECT_ROOT=$MAPRECT_ROOT
    MAPRECT_BUILD_DIR=$MAPRECT_BUILD_DIR network_settings eth9" 2>&1); then
    fail "MAPRECT_NETWORK=eth9 (no such interface) accepted: $settings"
  else
    pass "MAPRECT_NETWORK=eth9 rejected: $settings"
  fi
  for value in eth2:$NET2 "$SUBNET.0/24:$SUBNET"; do
    prefix=${value##*:}
    inspect_run "${value%:*}" || continue
    outside=$(outside_network "$CONNECTIONS" "$prefix")
    if [ -n "$CONNECTIONS" ] && [ -z "$outside" ]; then
      pass "MAPRECT_NETWORK=${value%:*}: all $(wc -l <<<"$CONNECTIONS") TCP connections of the 3 hosts on $prefix.0/24 or the loopback"
    else
      echo "$CONNECTIONS"
      fail "MAPRECT_NETWORK=${value%:*}: connections outside $prefix.0/24: ${outside//$'\n'/; }"
    fi
    outside=$(outside_network "$LISTENERS" "$prefix")
    if [ -n "$LISTENERS" ] && [ -z "$outside" ]; then
      pass "MAPRECT_NETWORK=${value%:*}: all $(wc -l <<<"$LISTENERS") listening sockets of the 3 hosts on $prefix.0/24 or the loopback: $(listener_summary "$LISTENERS")"
    else
      echo "$LISTENERS"
      fail "MAPRECT_NETWORK=${value%:*}: listening outside $prefix.0/24: ${outside//$'\n'/; }"
    fi
  done
  # tun0 (the delay switch's, without carrier here) is no network to use.
  inspect_run "" OMPI_MCA_btl_tcp_if_exclude=127.0.0.1/8,tun0 OMPI_MCA_oob_tcp_if_exclude=tun0 || return 0
  if [ -n "$(outside_network "$CONNECTIONS" "$SUBNET")" ] && [ -n "$(outside_network "$CONNECTIONS" "$NET2")" ]; then
    pass "MAPRECT_NETWORK unset: the ranks connect over both networks ($SUBNET.0/24 and $NET2.0/24): the check above can fail"
  else
    echo "$CONNECTIONS"
    fail "MAPRECT_NETWORK unset: the connections use one network only, so the check above proves nothing"
  fi
  if [ -n "$(outside_network "$LISTENERS" "$SUBNET")" ] && [ -n "$(outside_network "$LISTENERS" "$NET2")" ]; then
    pass "MAPRECT_NETWORK unset: Open MPI listens on every interface: $(listener_summary "$LISTENERS")"
  else
    echo "$LISTENERS"
    fail "MAPRECT_NETWORK unset: no listener on every interface, so the listener check above proves nothing"
  fi
}

# The processes left in the hosts h2..hN (every process there belongs to the job), as "host:pid:name".
left_in_hosts() {
  local i pid
  for i in $(seq 2 "$N_HOSTS"); do
    for pid in $(ip netns pids "${PREFIX}h$i" 2>/dev/null); do echo "h$i:$pid:$(cat "/proc/$pid/comm" 2>/dev/null)"; done
  done
}

# Ends what a case left in the hosts, and says so.
sweep_hosts() {
  local left entry
  left=$(left_in_hosts)
  [ -n "$left" ] || return 0
  echo "left after the job: ${left//$'\n'/ } (ended now)"
  for entry in $left; do
    entry=${entry#*:}
    kill -KILL "${entry%%:*}" 2>/dev/null || true
  done
}

# Judges a fault case: $1 its name, $2 the job's status, $3 milliseconds from $4 (what they count from) to the
# job's end, $5 the pattern (grep -E) its output must hold.
judge_fault() {
  local name=$1 status=$2 ms=$3 from=$4 pattern=$5 line left=""
  line=$(grep -Em1 -- "$pattern" "$WORK/job.log" || true)
  # As run_fault.sh: the daemons reap their ranks as mpirun exits; stragglers get 2 s.
  for _ in $(seq 10); do
    left=$(left_in_hosts)
    [ -n "$left" ] || break
    sleep 0.2
  done
  if [ "$status" -ne 0 ] && [ "$ms" -lt 10000 ] && [ -n "$line" ] && [ -z "$left" ]; then
    pass "$name: the job exited with status $status ${ms} ms after $from, nothing left on the hosts: '$line'"
  else
    cat "$WORK/job.log"
    fail "$name: status $status after $ms ms (from $from; at most 10000 ms), output matching '$pattern':" \
      "'${line:-none}', left on the hosts: '${left//$'\n'/ }'"
  fi
  sweep_hosts
}

# Milliseconds since $1 (from date +%s%N).
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# Runs fault case $1 at np=3 over the bridge, the hosts named h1..hN (more launcher arguments after it); JOB_STATUS, JOB_MS.
run_fault_case() {
  local case=$1 start
  shift
  start=$(date +%s%N)
  JOB_STATUS=0
  "$WORK/mpirun-faults" -np "$N_HOSTS" -x MAPRECT_BALANCE=static "$@" "$FAULT_CASE" "$case" >"$WORK/job.log" 2>&1 ||
    JOB_STATUS=$?
  JOB_MS=$(ms_since "$start")
}

check_faults_across_hosts() {
  local down_at pattern line pid
  run_fault_case worker-sigkill
  judge_fault "rank 2 on h3 killed (SIGKILL) in a call" "$JOB_STATUS" "$JOB_MS" "the start" \
    "rank 2 with PID [0-9]+ on node h3 exited on signal 9"
  run_fault_case worker-hang -x MAPRECT_TIMEOUT=2
  judge_fault "rank 2 on h3 hung in a call, MAPRECT_TIMEOUT=2" "$JOB_STATUS" "$JOB_MS" "the start" \
    "rank 2 did not answer call id 1 within 2 s \\(request 4, host h3\\)"
  # The link: h3's eth1 goes down while rank 2 is inside the 4th call; then rank 2 answers into the void.
  if ! start_paused "$WORK/mpirun-faults" -x MAPRECT_TIMEOUT=2; then
    cat "$WORK/job.log"
    fail "worker-pause (link down) ended before its pause"
    return 0
  fi
  ip netns exec "${PREFIX}h3" ip link set eth1 down
  down_at=$(date +%s%N)
  touch "$FAULT_DIR/resume"
  # The root names rank 2; Open MPI 4.1's mpirun then waits for the daemon of h3, which cannot hear it, in its
  # abort: the script ends mpirun once the line is out, as a batch system's time limit would.
  pattern="rank 2 did not answer call id 1 within 2 s \\(request 4, host h3\\)"
  while ! grep -Eq "$pattern" "$WORK/job.log" && kill -0 "$JOB_PID" 2>/dev/null &&
    [ "$(ms_since "$down_at")" -lt 10000 ]; do
    sleep 0.05
  done
  JOB_MS=$(ms_since "$down_at")
  line=$(grep -Em1 "$pattern" "$WORK/job.log" || true)
  if [ -n "$line" ] && [ "$JOB_MS" -lt 10000 ]; then
    pass "rank 2 on h3 cut off (its eth1 down) in a call, MAPRECT_TIMEOUT=2: named ${JOB_MS} ms after the link went down: '$line'"
  else
    cat "$WORK/job.log"
    fail "rank 2 on h3 cut off (its eth1 down) in a call, MAPRECT_TIMEOUT=2: no line matching '$pattern' within 10 s"
  fi
  for pid in $(ip netns pids "${PREFIX}h1"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mpirun ] || continue
    echo "note: mpirun still runs $(ms_since "$down_at") ms after the link went down (it waits for h3's daemon); ended now"
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait "$JOB_PID" 2>/dev/null || true
  ip netns exec "${PREFIX}h3" ip link set eth1 up
  sweep_hosts
}
