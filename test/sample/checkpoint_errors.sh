#!/bin/bash
# checkpoint_errors.sh MPIEXEC MAPRECT WORKDIR: a run with checkpoints, then --resume with other settings (a
# different seed, metric or jitter), with chain 1's CSV holding more draws than its checkpoint recorded, missing,
# or shorter than its checkpoint covers, and with chain 2's checkpoint damaged. Each must end every rank with one
# error line naming the chain and the reason; chain 1, which could go on, is stopped.
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
# Chain 1's CSV holds one draw more than its checkpoint recorded, within the bytes the checkpoint covers (short
# draws, the first padded with zeros to the same length).
cp "$work/eight_schools-1.csv" "$work/kept.csv"
python3 - "$work/eight_schools-1.checkpoint" "$work/eight_schools-1.csv" <<'PY'
import sys
size = int(next(l.split()[1] for l in open(sys.argv[1]) if l.startswith("output_bytes ")))
lines = open(sys.argv[2]).read()[:size].splitlines(keepends=True)
names = next(i for i, l in enumerate(lines) if l.startswith("lp__"))
first = next(i for i in range(names + 1, len(lines)) if not lines[i].startswith("#"))
head, draws = "".join(lines[:first]), len(lines) - first
short = ",".join(["0"] * (lines[names].count(",") + 1)) + "\n"
pad = size - len(head) - (draws + 1) * len(short)
assert pad >= 1, pad
open(sys.argv[2], "w").write(head + "0." + "0" * (pad - 1) + short[1:] + short * draws)
PY
"$expect" '^maprect: error: chain 1 failed: .*eight_schools-1.csv: 21 draw rows, expected 20 \(from its checkpoint .*eight_schools-1.checkpoint\); another process may have written to it$' \
  "${run[@]}" --resume
mv "$work/kept.csv" "$work/eight_schools-1.csv"
# Chain 1's CSV gone, then cut short of the bytes its checkpoint covers: refused, and neither file is touched
# (a resume cuts the CSV back only to the checkpoint's length), so that the run resumes once the CSV is back.
fingerprint() { sha256sum "$work/eight_schools-1.csv" "$work/eight_schools-1.checkpoint" 2>/dev/null || true; }
# refused_untouched PATTERN: --resume ends with the error PATTERN, and chain 1's files are as they were.
refused_untouched() {
  local before
  before=$(fingerprint)
  "$expect" "$1" "${run[@]}" --resume
  [ "$(fingerprint)" = "$before" ] || { echo "FAIL: a refused resume changed chain 1's files"; exit 1; }
}
mv "$work/eight_schools-1.csv" "$work/away.csv"
refused_untouched 'chain 1 failed: .*eight_schools-1.csv: missing, but its checkpoint .*eight_schools-1.checkpoint is there'
bytes=$(sed -n 's/^output_bytes //p' "$work/eight_schools-1.checkpoint")
head -c 100 "$work/away.csv" > "$work/eight_schools-1.csv"
refused_untouched "chain 1 failed: .*eight_schools-1.csv: shorter than the checkpoint says \\($bytes bytes\\); the output \
does not belong to this checkpoint"
mv "$work/away.csv" "$work/eight_schools-1.csv"
whole=$(sha256sum < "$work/eight_schools-1.csv")
"${run[@]}" --resume > /dev/null || { echo "FAIL: the resume with chain 1's CSV back failed"; exit 1; }
[ "$(sha256sum < "$work/eight_schools-1.csv")" = "$whole" ] || { echo "FAIL: the resume changed it"; exit 1; }
echo "ok: with its CSV back, chain 1 resumes, and its finished CSV stays as it was"
sed -i 's/^iteration .*/iteration 3/' "$work/eight_schools-2.checkpoint"
"$expect" '^maprect: error: chain 2 failed: .*eight_schools-2.checkpoint: damaged checkpoint: the checksum does not match its contents$' \
  "${run[@]}" --resume
