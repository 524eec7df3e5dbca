#!/usr/bin/env bash
# libbbmm's host time per tile (the calling thread's time in acquire, launch,
# flow_out and release, reservations excluded), by GPU count and setting: the
# diagnostic of why the host thread gets slower per tile as GPUs are added.
#
#   bash .gpu/host_cost.sh .gpu            (on the GPU machine; $OUT/host_cost.txt)
#
# HOST_COST_SAMPLES  rows "name|args" separated by ';' (default: the long stencils; their
#                    sequential references take minutes: short runs measure the same)
# HOST_COST_COUNTS   GPU counts (default "1 2 4", capped at the GPUs present)
# HOST_COST_REPEATS  runs of each (default 2)
# HOST_COST_SETTINGS which settings (default "default peer_kernel jemalloc")
# HOST_COST_BACKEND, HOST_COST_NGPU: for a dry run off the GPU machine (host, a count)
# Settings: default; peer_kernel (BBMM_CUDA_PEER_COPY_KERNEL=1); jemalloc (the
# same binary with libjemalloc preloaded, when <stage>/lib/libjemalloc.so.2 is
# there: tells whether the glibc allocator's cross-thread frees cost the time);
# pinned, staged (BBMM_CUDA_HOST_COPIES); noreserve (BBMM_RESERVE=0); trace
# (BBMM_TRACE, overwritten by each run); slow<N> (BBMM_SLOW_CALL_US=N: the calls
# that took N us or more, with the allocations' waits, in
# $OUT/host_cost_slow.txt).
# Prints one line per run and a table of medians last.
set -uo pipefail
stage="${1:-.gpu}"
stage="$(cd "$stage" && pwd)"
out="${OUT:-/tmp}"
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
IFS=';' read -r -a rows <<<"${HOST_COST_SAMPLES:-heat2d|8192 400;heat3d|384 200;jacobi1d|67108864 200}"
ngpu=${HOST_COST_NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
counts=()
for g in ${HOST_COST_COUNTS:-1 2 4}; do (( g <= ngpu )) && counts+=("$g"); done
repeats="${HOST_COST_REPEATS:-2}"
read -r -a settings <<<"${HOST_COST_SETTINGS:-default peer_kernel jemalloc}"
if [[ ! -f "$stage/lib/libjemalloc.so.2" ]]; then
  kept=()
  for s in "${settings[@]}"; do [[ "$s" == jemalloc ]] || kept+=("$s"); done
  settings=("${kept[@]}")
fi
log="$out/host_cost.txt"
: > "$log"
# The sequential references first, in parallel, into a cache that every run
# verifies against (as study.sh does).
cache="${HOST_COST_CACHE:-/tmp/bbmm_host_cost_cache}"
mkdir -p "$cache"
for row in "${rows[@]}"; do
  name="${row%%|*}"
  args="${row#*|}"
  # shellcheck disable=SC2086
  [[ -x "$stage/bin/${name}_bbmmc_cuda" ]] &&
    BBMM_SAMPLE_REFERENCE=only BBMM_SAMPLE_CACHE="$cache" timeout -k 5 300 \
      "$stage/bin/${name}_bbmmc_cuda" $args > /dev/null 2>&1 &
done
wait
for row in "${rows[@]}"; do
  name="${row%%|*}"
  args="${row#*|}"
  bin="$stage/bin/${name}_bbmmc_cuda"
  [[ -x "$bin" ]] || { echo "host_cost: no $bin" | tee -a "$log"; continue; }
  for g in "${counts[@]}"; do
    for s in "${settings[@]}"; do
      envs=(BBMM_BACKEND="${HOST_COST_BACKEND:-cuda}" BBMM_DEVICES="$g" BBMM_SAMPLE_WARMUP=1
            BBMM_STATS=json BBMM_SAMPLE_CACHE="$cache")
      case "$s" in
        peer_kernel) envs+=(BBMM_CUDA_PEER_COPY_KERNEL=1) ;;
        jemalloc) envs+=(LD_PRELOAD="$stage/lib/libjemalloc.so.2") ;;
        pinned|staged) envs+=(BBMM_CUDA_HOST_COPIES="$s") ;;
        noreserve) envs+=(BBMM_RESERVE=0) ;;
        trace) envs+=(BBMM_TRACE="$out/host_cost_trace.json") ;;
        slow*) envs+=(BBMM_SLOW_CALL_US="${s#slow}") ;;
      esac
      for r in $(seq 1 "$repeats"); do
        res=$(env "${envs[@]}" timeout -k 5 120 "$bin" $args 2>&1)
        if [[ "$s" == slow* ]]; then
          { echo "== $name $args, $g GPU(s), run $r"; grep 'bbmm: slow call' <<<"$res" |
              sed 's/[0-9][0-9]* us\b/N us/g' | sort | uniq -c | sort -rn | head -20
            grep 'bbmm: slow call' <<<"$res" | head -20; } >> "$out/host_cost_slow.txt"
        fi
        line=$(python3 - "$name" "$g" "$s" "$res" <<'EOF'
import json, re, sys
name, g, s = sys.argv[1:4]
text = sys.argv[4]
ok = "PASSED" in text
m = re.search(r"bbmmc ([0-9.]+) s", text)
js = [l for l in text.splitlines() if l.startswith("{\"backend\"")]
if not js or not m:
    print(f"{name} {g} {s} FAILED")
    sys.exit(0)
t = json.loads(js[-1])["total"]
tiles = max(t["tiles"], 1)
host = t["manager_seconds"] - t["reserve_seconds"]
print(f"{name} {g} {s} run_s={float(m.group(1)):.4f} tiles={tiles} "
      f"us_per_tile={1e6 * host / tiles:.2f} host_pct={100 * host / float(m.group(1)):.1f} "
      f"verified={'yes' if ok else 'NO'}")
EOF
)
        echo "$line" | tee -a "$log"
      done
    done
  done
done
echo
echo "| sample | GPUs | setting | run s (median) | libbbmm us/tile (median) | libbbmm % of run |"
echo "|---|---|---|---|---|---|"
python3 - "$log" <<'EOF'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 4 or "=" not in f[3]:
        continue
    kv = dict(x.split("=", 1) for x in f[3:])
    runs[(f[0], int(f[1]), f[2])].append(kv)
for (name, g, s), v in runs.items():
    med = lambda k: statistics.median(float(x[k]) for x in v)
    ok = all(x["verified"] == "yes" for x in v)
    print(f"| {name} | {g} | {s} | {med('run_s'):.4f} | {med('us_per_tile'):.2f} | "
          f"{med('host_pct'):.1f}{'' if ok else ' (NOT VERIFIED)'} |")
EOF
