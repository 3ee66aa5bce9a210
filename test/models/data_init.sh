#!/bin/bash
# data_init.sh MPIEXEC MAPRECT DATA_DIR WORKDIR: `maprect sample` with CmdStan JSON data and --init.
# - eight_schools from data/eight_schools.json draws exactly what it draws from its embedded data;
# - an init file giving every parameter (and a misspelt name, noted and ignored) gives the same draws twice
#   and others than the default --init 2, and so does --init 0;
# - a checkpoint written with --init 2 is refused by --resume --init 0, naming init.
set -u
mpiexec=$1 maprect=$2 data=$3 work=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
run=(sample --model eight_schools --chains 2 --warmup 100 --samples 50 --seed 3)
draws() { grep -v '^#' "$1"; }  # the header names the data file and the output directory
sample() {  # sample DIR ARGS...: runs in DIR/ with --output-dir out
  local dir=$1; shift
  mkdir -p "$dir" && (cd "$dir" && "$mpiexec" -np 2 "$maprect" "${run[@]}" --output-dir out "$@") > "$dir.log" 2>&1 \
    || { cat "$dir.log"; fail "$dir: exit non-zero"; }
}
sample embedded
sample json --data "$data/eight_schools.json"
for c in 1 2; do
  cmp -s <(draws embedded/out/eight_schools-$c.csv) <(draws json/out/eight_schools-$c.csv) \
    || fail "chain $c: JSON data and embedded data give different draws"
done
echo "ok: JSON data and embedded data give the same draws"

cat > init.json <<'JSON'
{"mu": 1.5, "tau": 2.0, "theta_tilde": [0.1, -0.2, 0.3, 0, 0.5, -0.6, 0.7, -0.8], "taux": 1, "theta": [1]}
JSON
sample init-a --init ../init.json
sample init-b --init ../init.json
sample zero --init 0
cmp -s <(draws init-a/out/eight_schools-1.csv) <(draws init-b/out/eight_schools-1.csv) \
  || fail "the same --init file gave different draws"
cmp -s <(draws init-a/out/eight_schools-1.csv) <(draws embedded/out/eight_schools-1.csv) \
  && fail "--init file.json changed nothing"
cmp -s <(draws zero/out/eight_schools-1.csv) <(draws embedded/out/eight_schools-1.csv) \
  && fail "--init 0 changed nothing"
grep -q "note: ../init.json: 'taux' is not a variable of eight_schools (ignored)" init-a.log \
  || { cat init-a.log; fail "no note about the misspelt 'taux'"; }
grep -q "'theta' is not a variable" init-a.log && fail "the generated quantity theta was called unknown"
echo "ok: --init file and --init 0 start elsewhere than --init 2, deterministically; 'taux' noted"

sample checkpointed --checkpoint-every 50
output=$(cd checkpointed && "$mpiexec" -np 2 "$maprect" "${run[@]}" --output-dir out --resume --init 0 2>&1) \
  && fail "--resume with another --init was accepted"
grep -q "init" <<<"$output" || { echo "$output"; fail "the refusal does not name init"; }
echo "ok: --resume with another --init refused: $(grep 'maprect: error' <<<"$output" | head -1)"
