#!/usr/bin/env bash
# Where the calling thread's time per tile goes on a GPU machine, where no profiler runs
# (issue 10): jacobi2d_cuda with BBMM_CALL_PROFILE=1 (libbbmm's named scopes, summed per
# scope: core/call_profile.h) on 1 and 2 devices (logical devices of one GPU when the
# machine has fewer), then the same runs unprofiled under each issue-worker spin
# (BBMM_CUDA_WORKER_SPIN_US), and cuda_fake_tile_bench (the fake CUDA runtime: the same
# tile path on this machine's cores, no GPU) when staged.
#
#   bash .gpu/call_profile.sh STAGE        (on the GPU machine)
#
# CALL_PROFILE_BIN    the sample (default jacobi2d_cuda, in STAGE/bin)
# CALL_PROFILE_ARGS   its arguments (default: n=16386, 100 steps, 2 tiles per device)
# CALL_PROFILE_DEVS   device counts (default "1 2")
# CALL_PROFILE_SPINS  worker spins for the unprofiled runs (default "150 0 2000")
# CALL_PROFILE_REPS   unprofiled runs of each (default 3)
# Writes $OUT/call_profile.txt (the profiles and RESULT lines); prints a table last.
set -uo pipefail
stage="$(cd "${1:?usage: call_profile.sh STAGE}" && pwd)"
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp}"
bin="$stage/bin/${CALL_PROFILE_BIN:-jacobi2d_cuda}"
read -r -a args <<<"${CALL_PROFILE_ARGS:---n 16386 --steps 100 --tiles-per-device 2}"
read -r -a devs <<<"${CALL_PROFILE_DEVS:-1 2}"
read -r -a spins <<<"${CALL_PROFILE_SPINS:-150 0 2000}"
reps="${CALL_PROFILE_REPS:-3}"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
(( ngpu > 0 )) || ngpu=1
log="$out/call_profile.txt"
: > "$log"
per_gpu() { local g=$1; (( g > ngpu )) && echo $(( (g + ngpu - 1) / ngpu )) || echo 1; }
for g in "${devs[@]}"; do
  echo "== profiled: --devices $g (BBMM_CUDA_DEVICES_PER_GPU=$(per_gpu "$g"))" | tee -a "$log"
  BBMM_CALL_PROFILE=1 BBMM_CUDA_DEVICES_PER_GPU=$(per_gpu "$g") timeout 120 "$bin" --devices "$g" \
    "${args[@]}" 2>&1 | grep -E '^RESULT|^\||bbmm: call profile' | tee -a "$log"
done
for ((r = 1; r <= reps; r++)); do
  for spin in "${spins[@]}"; do
    for g in "${devs[@]}"; do
      line=$(BBMM_CUDA_WORKER_SPIN_US=$spin BBMM_CUDA_DEVICES_PER_GPU=$(per_gpu "$g") timeout 120 \
             "$bin" --devices "$g" "${args[@]}" 2>&1 | grep '^RESULT')
      echo "spin=$spin ${line:-RESULT missing}" | tee -a "$log"
    done
  done
done
if [[ -x "$stage/bin/cuda_fake_tile_bench" ]]; then
  echo "== cuda_fake_tile_bench (fake CUDA runtime, this machine's cores)" | tee -a "$log"
  timeout 120 "$stage/bin/cuda_fake_tile_bench" 2>&1 | grep -E '^Step' | tee -a "$log"
  echo "== cuda_fake_tile_bench, profiled (gpus:2, lag 100 us)" | tee -a "$log"
  BBMM_CALL_PROFILE=1 timeout 120 "$stage/bin/cuda_fake_tile_bench" \
    --benchmark_filter=gpus:2/lag_us:100 2>&1 | grep -E '^\||^Step' | tee -a "$log"
fi
python3 - "$log" <<'PY'
import statistics as st
import sys
rows = {}
for line in open(sys.argv[1]):
    if not line.startswith('spin='):
        continue
    kv = dict(t.split('=', 1) for t in line.split() if '=' in t)
    if 'seconds' not in kv:
        continue
    tiles = 2 * int(kv['steps']) * int(kv['gpus']) * int(kv['tiles_per_gpu'])
    rows.setdefault((int(kv['gpus']), int(kv['spin'])), []).append(
        (1e6 * float(kv['manager_seconds']) / tiles, 100 * float(kv['manager_seconds']) / float(kv['seconds']),
         kv.get('verified') == '1'))
print("\n| devices | worker spin us | runs | us per tile median (min-max) | libbbmm % median | verified |")
print("|---|---|---|---|---|---|")
for (g, spin), v in sorted(rows.items()):
    us = [u for u, _, _ in v]
    print(f"| {g} | {spin} | {len(v)} | {st.median(us):.2f} ({min(us):.2f}-{max(us):.2f}) "
          f"| {st.median([p for _, p, _ in v]):.2f} | {sum(ok for *_, ok in v)}/{len(v)} |")
PY
