#!/bin/bash
# user_model.sh BUILD_DIR WORK_DIR GENERATOR CXX CXX_FLAGS BUILD_TYPE MPIEXEC PYTHON: installs maprect, builds
# test/install/user_model against the installed package with maprect_add_program, and samples it: the same
# draws on 1 and 3 ranks, posterior means against the closed forms, its plan's figures (check_plan.py), and
# bad --data and --init refused with their messages.
set -u
build=$1 work=$2 generator=$3 cxx=$4 flags=$5 type=$6 mpiexec=$7 python=$8
src=$(cd "$(dirname "$0")/user_model" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" || fail "install"
cmake -S "$src" -B "$work/build" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" "-DCMAKE_CXX_FLAGS=$flags" \
  -DCMAKE_BUILD_TYPE="$type" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
program=$work/build/normal_sampler
run=(sample --model normal_model --warmup 300 --seed 11)
data=(--data "$src/data.json")
cd "$work"
for np in 1 3; do  # the same --output-dir in two directories: the CSV header names it
  mkdir np$np && (cd np$np && "$mpiexec" -np $np "$program" "${run[@]}" "${data[@]}" --samples 500 --chains 1 --output-dir out) \
    > np$np.log 2>&1 || { cat np$np.log; fail "sampling at $np ranks"; }
done
diff <(grep -v 'seconds (' np1/out/normal_model-1.csv) <(grep -v 'seconds (' np3/out/normal_model-1.csv) > /dev/null \
  || fail "the draws differ between 1 and 3 ranks"
echo "ok: $(grep -vc '^#' np3/out/normal_model-1.csv) CSV lines identical on 1 and 3 ranks (3 ranks serve one chain)"
"$mpiexec" -np 3 "$program" "${run[@]}" "${data[@]}" --chains 3 --samples 1000 --output-dir chains3 > chains3.log 2>&1 \
  || { cat chains3.log; fail "three chains"; }
"$python" "$src/check_posterior.py" "$src/data.json" chains3/normal_model-{1,2,3}.csv || fail "posterior"
# plan: the model's map_rect call site measured here, predicted at 1 ... 64 ranks.
"$mpiexec" -np 2 "$program" plan --model normal_model "${data[@]}" --ranks-max 64 --repeat 3 --json plan.json \
  > plan.log 2>&1 || { cat plan.log; fail "plan"; }
grep -q "us/gradient" plan.log || { cat plan.log; fail "plan printed no table"; }
"$python" "$src/check_plan.py" "$src/data.json" plan.json 2 64 || { cat plan.log; fail "plan's figures"; }
# Errors: a value outside its bounds in an init file, a variable of the wrong shape in the data.
echo '{"mu": 0.5, "p": 1.5}' > bad-init.json
"$program" "${run[@]}" "${data[@]}" --chains 1 --init bad-init.json --output-dir bad > bad-init.log 2>&1 && fail "bad init accepted"
grep -q "bad-init.json: parameter p = 1.5 is outside its bounds <lower=0, upper=1>" bad-init.log \
  || { cat bad-init.log; fail "bad init message"; }
sed 's/"M": 12/"M": 11/' "$src/data.json" > bad-data.json
"$program" "${run[@]}" --data bad-data.json --chains 1 --output-dir bad > bad-data.log 2>&1 && fail "bad data accepted"
grep -q "data variable 'c' in bad-data.json: expected shape \[11\], got \[12\]" bad-data.log \
  || { cat bad-data.log; fail "bad data message"; }
echo "ok: bad --init and --data refused with their messages"
