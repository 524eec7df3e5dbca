#!/usr/bin/env bash
# The compiled samples' function time with their host arrays staged, by the number of
# copier threads (BBMM_CUDA_STAGING_THREADS) and GPU count, against the same runs with
# the arrays pinned (BBMM_CUDA_HOST_COPIES=pinned, registration timed in), all in one
# call: the host's memory bandwidth, which bounds staged copies, differs between lent
# machines by up to 1.5x (sequential heat2d 0.19-0.30 s), so only ratios within a call
# mean anything.
#
#   bash .gpu/staging_threads.sh .gpu      (on the GPU machine; $OUT/staging_threads.txt)
#
# STAGING_SAMPLES  rows "name|args" separated by ';' (default heat2d 8192 100, heat3d 384 50)
# STAGING_COUNTS   GPU counts (default "1 4", capped at the GPUs present)
# STAGING_THREADS  copier thread counts (default "8 16 32"; 0 = the default), then pinned
# STAGING_REPEATS  runs of each (default 2; the table shows the fastest)
# STAGING_NGPU     the GPU count (default: nvidia-smi's)
set -uo pipefail
stage="${1:-.gpu}"
stage="$(cd "$stage" && pwd)"
out="${OUT:-/tmp}"
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
IFS=';' read -r -a rows <<<"${STAGING_SAMPLES:-heat2d|8192 100;heat3d|384 50}"
ngpu=${STAGING_NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
counts=()
for g in ${STAGING_COUNTS:-1 4}; do (( g <= ngpu )) && counts+=("$g"); done
read -r -a threads <<<"${STAGING_THREADS:-8 16 32}"
repeats="${STAGING_REPEATS:-2}"
log="$out/staging_threads.txt"
: > "$log"
# The sequential references first, in parallel, into a cache every run verifies against.
cache="${STAGING_CACHE:-/tmp/bbmm_staging_cache}"
mkdir -p "$cache"
for row in "${rows[@]}"; do
  # shellcheck disable=SC2086
  [[ -x "$stage/bin/${row%%|*}_bbmmc_cuda" ]] &&
    BBMM_SAMPLE_REFERENCE=only BBMM_SAMPLE_CACHE="$cache" timeout -k 5 300 \
      "$stage/bin/${row%%|*}_bbmmc_cuda" ${row#*|} > /dev/null 2>&1 &
done
wait
table="| sample | GPUs | setting | function s (fastest of $repeats) | verified |"$'\n'"|---|---|---|---|---|"
for row in "${rows[@]}"; do
  name="${row%%|*}"
  args="${row#*|}"
  bin="$stage/bin/${name}_bbmmc_cuda"
  [[ -x "$bin" ]] || { echo "staging_threads: no $bin" | tee -a "$log"; continue; }
  for g in "${counts[@]}"; do
    for setting in "${threads[@]}" pinned; do
      envs=(BBMM_BACKEND=cuda BBMM_DEVICES="$g" BBMM_SAMPLE_WARMUP=1
            BBMM_SAMPLE_CACHE="$cache")
      if [[ "$setting" == pinned ]]; then
        envs+=(BBMM_CUDA_HOST_COPIES=pinned)
      else
        envs+=(BBMM_CUDA_STAGING_THREADS="$setting")
      fi
      best="" verified=yes
      for _ in $(seq 1 "$repeats"); do
        # shellcheck disable=SC2086
        res=$(env "${envs[@]}" timeout -k 5 120 "$bin" $args 2>&1)
        echo "== $name $g $setting: $res" >> "$log"
        t=$(grep -o 'bbmmc [0-9.]* s' <<<"$res" | grep -o '[0-9.]*' | head -1)
        grep -q 'sequential program: PASSED' <<<"$res" || verified=NO
        [[ -n "$t" ]] || { verified=NO; continue; }
        if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $t < $best else 1)"; then
          best=$t
        fi
      done
      label=$([[ "$setting" == pinned ]] && echo "pinned" || echo "staged, $setting threads")
      line="| $name | $g | $label | ${best:--} | $verified |"
      echo "$line"
      table+=$'\n'"$line"
    done
  done
done
echo
echo "$table" | tee -a "$log"
