#!/bin/bash
# output_lock.sh MPIEXEC MAPRECT WORKDIR PYTHON: one writer per output directory.
# 1. A process that holds chain 2's slot of the lock (an earlier run's rank that outlived its mpirun) makes a
#    new run refuse, naming the holder's host and pid, before it writes anything; once it lets go, the run works.
# 2. A second run started while a first one is writing (synchronised on the first one's checkpoint file) is
#    refused, naming the first run's rank 0; the first run then still ends with a complete, readable output.
set -u
mpiexec=$1 maprect=$2 work=$3 python=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/held" "$work/busy"
status=0
fail() { echo "FAIL: $*"; status=1; }
wait_for() { for _ in $(seq 1 6000); do [[ -e $1 ]] && return 0; kill -0 "$2" 2>/dev/null || return 1; sleep 0.01; done; return 1; }

args=(sample --model eight_schools --chains 2 --warmup 50 --samples 50 --seed 3)
"$python" "$here/hold_lock.py" "$work/held/maprect.lock" 2 "$work/ready" "$work/release" &
holder=$!
wait_for "$work/ready" $holder || { echo "FAIL: the lock holder did not start"; exit 1; }
out=$("$mpiexec" -np 2 "$maprect" "${args[@]}" --output-dir "$work/held" 2>&1); rc=$?
error=$(grep '^maprect: error:' <<<"$out")
pattern="held is in use by another maprect run \(chain 2's writer, host $(hostname) pid $holder, since test\)"
if ((rc == 0)) || ! grep -Eq "$pattern" <<<"$error"; then fail "a held lock: exit $rc, '$error'"; echo "$out"
else echo "ok: refused: $error"; fi
[[ -e $work/held/eight_schools-1.csv ]] && fail "the refused run wrote eight_schools-1.csv"
touch "$work/release"; wait $holder
"$mpiexec" -np 2 "$maprect" "${args[@]}" --output-dir "$work/held" > "$work/after.log" 2>&1 \
  && echo "ok: the run works once the holder let go" || { fail "the run after the holder let go"; cat "$work/after.log"; }

# A first run long enough never to end on its own; it is stopped with SIGTERM at the end. mpirun passes
# SIGTERM on odls_base_sigkill_timeout seconds late and sends SIGKILL as long after (1 by default): under the
# sanitizers on a loaded machine an iteration may take longer than 1 s (docs/sampling.md).
export OMPI_MCA_odls_base_sigkill_timeout=5
long=(sample --model logreg --jobs 4 --points 2000 --chains 2 --warmup 20 --samples 200000 --checkpoint-every 10
      --output-dir "$work/busy")
setsid "$mpiexec" -np 2 "$maprect" "${long[@]}" > "$work/first.log" 2>&1 &
first=$!
for _ in $(seq 1 6000); do  # until chain 2 has a checkpoint with draws (iteration > 60), or the run ended
  it=$(sed -n 's/^iteration //p' "$work/busy/logreg-2.checkpoint" 2>/dev/null)
  [[ -n $it && $it -gt 60 ]] && break
  kill -0 $first 2>/dev/null || break
  sleep 0.01
done
[[ -n ${it:-} && $it -gt 60 ]] || { echo "FAIL: the first run wrote no checkpoint past iteration 60"; cat "$work/first.log"; exit 1; }
out=$("$mpiexec" -np 2 "$maprect" "${long[@]}" --resume 2>&1); rc=$?
error=$(grep '^maprect: error:' <<<"$out")
if ((rc == 0)) || ! grep -Eq "busy is in use by another maprect run \(the run \(rank 0\), host $(hostname) pid [0-9]+" <<<"$error"; then
  fail "a second run: exit $rc, '$error'"; echo "$out"
else echo "ok: second run refused: $error"; fi
kill -TERM $first; wait $first
grep -q '^chain 2: interrupted' "$work/first.log" || { fail "the first run did not stop cleanly"; cat "$work/first.log"; }
for chain in 1 2; do
  "$maprect" summary "$work/busy/logreg-$chain.csv" --csv - > /dev/null 2>&1 \
    && echo "ok: chain $chain's CSV of the first run reads back" || fail "chain $chain's CSV is damaged"
done
exit $status
