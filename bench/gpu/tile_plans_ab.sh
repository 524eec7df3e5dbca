#!/usr/bin/env bash
# libbbmm's host time per tile with and without tile plans (BBMM_TILE_PLANS=1|0,
# core/tile_plans.h), runs alternating in one call on jacobi2d_cuda: 1 GPU, 2 logical
# devices of GPU 0 (BBMM_CUDA_DEVICES_PER_GPU=2) and, where two GPUs are visible, 2 GPUs.
# Every run is verified against the sequential loop (jacobi2d_cuda's own check).
#
#   bash .gpu/tile_plans_ab.sh .gpu        (on the GPU machine; $OUT/tile_plans_ab.txt)
#
# AB_REPEATS  runs of each setting per configuration (default 3)
# AB_ARGS     jacobi2d_cuda's arguments besides --devices (default "--n 16386 --steps 100
#             --tiles-per-device 2": the run of issue 10's targets)
# AB_BIN      the binary (default <stage>/bin/jacobi2d_cuda; off the GPU machine, e.g.
#             build/default/samples/jacobi2d_host for a dry run)
# Prints one line per run and, last, a table of medians: seconds, libbbmm seconds, tiles,
# planned tiles, us of libbbmm per tile.
set -uo pipefail
stage="${1:-.gpu}"
stage="$(cd "$stage" && pwd)"
out="${OUT:-/tmp}"
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin="${AB_BIN:-$stage/bin/jacobi2d_cuda}"
repeats="${AB_REPEATS:-3}"
read -r -a args <<<"${AB_ARGS:---n 16386 --steps 100 --tiles-per-device 2}"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
configs=("1gpu|1|1" "2logical|2|2")
(( ngpu >= 2 )) && configs+=("2gpus|2|1")
log="$out/tile_plans_ab.txt"
: >"$log"
for ((r = 1; r <= repeats; ++r)); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name devices per_gpu <<<"$c"
    for plans in 1 0; do
      o=$(BBMM_TILE_PLANS=$plans BBMM_CUDA_DEVICES_PER_GPU=$per_gpu "$bin" --devices "$devices" \
          "${args[@]}" 2>&1)
      rc=$?
      result=$(grep '^RESULT' <<<"$o" | head -1)
      tiles=$(awk '$1 == "tiles" {print $NF}' <<<"$o" | head -1)
      planned=$(awk '$1 == "planned_tiles" {print $NF}' <<<"$o" | head -1)
      secs=$(sed -n 's/.* seconds=\([0-9.]*\).*/\1/p' <<<"$result")
      mgr=$(sed -n 's/.* manager_seconds=\([0-9.]*\).*/\1/p' <<<"$result")
      ver=$(sed -n 's/.* verified=\([0-9]\).*/\1/p' <<<"$result")
      echo "config=$name plans=$plans repeat=$r rc=$rc seconds=${secs:-?} manager_seconds=${mgr:-?}" \
           "tiles=${tiles:-?} planned=${planned:-?} verified=${ver:-?}" | tee -a "$log"
      (( rc == 0 )) || echo "$o" | tail -5 | tee -a "$log"
    done
  done
done
python3 - "$log" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = dict(re.findall(r"(\w+)=(\S+)", line))
    if "config" not in m or m.get("seconds", "?") == "?" or m.get("tiles", "?") == "?":
        continue
    rows.setdefault((m["config"], m["plans"]), []).append(m)
print("| config | plans | runs | seconds | libbbmm s | tiles | planned | us libbbmm / tile | verified |")
print("|---|---|---|---|---|---|---|---|---|")
for (config, plans), runs in rows.items():
    med = lambda k: statistics.median(float(r[k]) for r in runs)
    each = [1e6 * float(r["manager_seconds"]) / float(r["tiles"]) for r in runs]
    ok = sum(r.get("verified") == "1" for r in runs)
    listed = ", ".join("%.2f" % u for u in each)
    print("| %s | %s | %d | %.4f | %.4f | %s | %s | %.2f (%s) | %d/%d |" % (
        config, plans, len(runs), med("seconds"), med("manager_seconds"), runs[0]["tiles"],
        runs[0]["planned"], statistics.median(each), listed, ok, len(runs)))
PY
