#!/usr/bin/env bash
# Eager, deferred and auto over a sweep of K x M (issue #33's measurement): `maprect bench --model
# pointwise_regression` at J jobs of K = 1, 10, 100, 1000 observations each and M = C + 2 parameters per job for
# C = 1, 8, 98 covariates (K M from 3 to 10^5), each size's backends timed round-robin over ROUNDS rounds, on
#   one host:   1 rank x 2 threads (in process) and 2 ranks over shared memory;
#   two hosts:  2 network-namespace hosts, one rank each, over TCP (scripts/netns-hosts.sh; needs root).
# The table shows per setting and size the medians eager, deferred and auto, the mode auto chose, and auto's
# time against the faster mode's. The records go to OUT (default build/reverse-sweep/).
#   ROUNDS=6 JOBS=16 POINTS="1 10 100 1000" COVARIATES="1 8 98" SETTINGS="threads ranks hosts" \
#     scripts/reverse-sweep.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$MAPRECT_ROOT"

ROUNDS="${ROUNDS:-6}"
JOBS="${JOBS:-16}"
read -r -a points <<<"${POINTS:-1 10 100 1000}"
read -r -a covariates <<<"${COVARIATES:-1 8 98}"
read -r -a settings <<<"${SETTINGS:-threads ranks hosts}"
OUT="${OUT:-$MAPRECT_BUILD_DIR/reverse-sweep}"
mkdir -p "$OUT"
sizes=$(printf "${JOBS}x%s," "${points[@]}")
sizes=${sizes%,}

build maprect-cli >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cli="$MAPRECT_BUILD_DIR/bin/maprect"

for c in "${covariates[@]}"; do
  for setting in "${settings[@]}"; do
    json="$OUT/$setting-c$c.json"
    log "reverse-sweep: $setting, C = $c, sizes $sizes, $ROUNDS rounds"
    case "$setting" in
      threads) MAPRECT_THREADS=2 mpirun -np 1 --bind-to none "$cli" bench --model pointwise_regression \
        --sizes "$sizes" --covariates "$c" --repeat "$ROUNDS" --json "$json" >"$OUT/$setting-c$c.log" ;;
      ranks) OMPI_MCA_btl=self,vader mpirun -np 2 "$cli" bench --model pointwise_regression --sizes "$sizes" \
        --covariates "$c" --repeat "$ROUNDS" --json "$json" >"$OUT/$setting-c$c.log" ;;
      hosts) POINTWISE_COVARIATES=$c POINTWISE_REPEAT=$ROUNDS POINTWISE_JSON=$json \
        scripts/netns-hosts.sh --pointwise "${sizes//,/ }" >"$OUT/$setting-c$c.log" ;;
      *) echo "reverse-sweep: unknown setting '$setting' (threads, ranks or hosts)" >&2; exit 2 ;;
    esac
  done
done

python3 - "$OUT" "${settings[@]}" <<'PY'
import glob, json, os, sys
out, settings = sys.argv[1], sys.argv[2:]
print("| setting | J×K | M | K·M | eager µs | deferred µs | auto µs | auto chose | auto / faster |")
print("|---|---|---|---|---:|---:|---:|---|---:|")
worst = {}
for setting in settings:
    prefix = "in_process" if setting == "threads" else "cluster"
    rows = []
    for path in glob.glob(os.path.join(out, f"{setting}-c*.json")):
        for r in json.load(open(path))["records"]:
            if r["backend"].startswith(prefix):
                rows.append(r)
    keys = sorted({(r["parameters_per_job"], r["points"], r["jobs"]) for r in rows})
    for m, k, j in keys:
        rs = {r["backend"][len(prefix):]: r for r in rows
              if (r["parameters_per_job"], r["points"], r["jobs"]) == (m, k, j)}
        e, d, a = rs[""]["median_us"], rs["_deferred"]["median_us"], rs["_auto"]["median_us"]
        ratio = a / min(e, d)
        worst[setting] = max(worst.get(setting, 0), ratio)
        print(f"| {setting} | {j}×{k} | {m} | {k * m} | {e:.0f} | {d:.0f} | {a:.0f} | {rs['_auto']['reverse']} | "
              f"{ratio:.2f} |")
print()
for setting, w in worst.items():
    print(f"{setting}: auto at most {w:.2f}x the faster mode")
PY
