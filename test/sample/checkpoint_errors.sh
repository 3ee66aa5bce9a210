#!/bin/bash
# checkpoint_errors.sh MPIEXEC MAPRECT WORKDIR: a run with checkpoints, then --resume with other settings (a
# different seed, metric or jitter) and with chain 2's checkpoint damaged. Each must end every rank with one error line naming
# the chain and the reason; chain 1, which could go on, is stopped.
set -eu
mpiexec=$1 maprect=$2 work=$3
expect=$(dirname "$0")/../cli/expect_error.sh
run=("$mpiexec" -np 3 "$maprect" sample --model eight_schools --chains 2 --warmup 50 --samples 20
     --checkpoint-every 10 --output-dir "$work")
rm -rf "$work"
"${run[@]}" > /dev/null
"$expect" 'chain 1 failed: .*eight_schools-1.checkpoint: the checkpoint belongs to another run \(it was written with seed=1, this run has seed=2\); refusing to resume' \
  "${run[@]}" --resume --seed 2
# The sampler options are in the fingerprint too.
"$expect" 'chain 1 failed: .*the checkpoint belongs to another run \(it was written with metric=diag, this run has metric=dense\)' \
  "${run[@]}" --resume --metric dense
"$expect" 'chain 1 failed: .*the checkpoint belongs to another run \(it was written with stepsize_jitter=0, this run has stepsize_jitter=0.5\)' \
  "${run[@]}" --resume --stepsize-jitter 0.5
sed -i 's/^iteration .*/iteration 3/' "$work/eight_schools-2.checkpoint"
"$expect" '^maprect: error: chain 2 failed: .*eight_schools-2.checkpoint: damaged checkpoint: the checksum does not match its contents$' \
  "${run[@]}" --resume
