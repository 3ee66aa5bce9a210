#!/bin/bash
# rows_resume.sh MPIEXEC MAPRECT WORKDIR: a chain's CSV whose draw rows no longer match its checkpoint (one row
# split in two, the byte count kept, as an interleaving second writer would leave it) is refused on --resume,
# naming the file, the rows found and the rows expected.
set -u
mpiexec=$1 maprect=$2 work=$3
args=(sample --model eight_schools --chains 2 --warmup 50 --samples 100 --checkpoint-every 25 --output-dir "$work")
rm -rf "$work"
"$mpiexec" -np 2 "$maprect" "${args[@]}" > /dev/null 2>&1 || { echo "FAIL: the run failed"; exit 1; }
python3 - "$work/eight_schools-2.csv" <<'PY'
import sys
path = sys.argv[1]
lines = open(path).read().split("\n")
i = next(k for k, l in enumerate(lines) if l and l[0] not in "#l") + 10   # the 11th draw row
n = lines[i].count(",") + 1
half = ",".join(["0"] * n)
lines[i] = half + "\n" + half[:-1] + "0" * (len(lines[i]) - 2 * len(half) - 1) + "0"
open(path, "w").write("\n".join(lines))
PY
"${0%/*}/../cli/expect_error.sh" \
  "chain 2 failed: .*eight_schools-2.csv: 101 draw rows, expected 100 \(from its checkpoint .*eight_schools-2.checkpoint\)" \
  "$mpiexec" -np 2 "$maprect" "${args[@]}" --resume
