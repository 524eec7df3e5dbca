#!/usr/bin/env bash
# The size of the staging buffers (BBMM_CUDA_STAGING_BUFFER) against what it costs: the
# runtime's creation (every device pins 2 x copy streams x 2 buffers there when arrays may be
# staged) and the staged copies' bandwidth. In one call, on the GPU machine, from a staged
# folder (bench/gpu/stage.sh with gpu_bench, heat2d_bbmmc_cuda and jacobi2d_cuda):
#
#   bash .gpu/staging_buffers.sh .gpu        ($OUT/staging_buffers.txt; a table last)
#
# STAGING_SETTINGS  settings to compare, space-separated, each VAR=VALUE[,VAR=VALUE...]
#                   (default: buffers of 4, 8, 16 and 32 MiB, and 8 and 16 MiB with one copy
#                   stream per direction, BBMM_CUDA_COPY_STREAMS=1: half the lanes)
# STAGING_REPS        runs of each creation setting (default 3)
# STAGING_JACOBI_REPS runs of each jacobi2d setting (default 2)
# 1. gpu_bench staged: 1 GiB of pageable memory to the GPUs and back in 64 MiB boxes, per
#    size (and the copier thread counts), with the backend's creation time;
# 2. the runtime's creation (the "created:" line of BBMM_STATS=table) of heat2d_bbmmc_cuda at
#    a small size (a PolyBench-sized run: creation is most of it) on 1 and 2 logical devices;
# 3. jacobi2d_cuda n=16386, 100 steps, staged (the default), on one GPU: seconds per setting.
set -uo pipefail
stage="$(cd "${1:?usage: staging_buffers.sh STAGE}" && pwd)"
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp}"
S=BBMM_CUDA_STAGING_BUFFER
read -r -a settings <<<"${STAGING_SETTINGS:-$S=4MiB $S=8MiB $S=16MiB $S=32MiB $S=8MiB,BBMM_CUDA_COPY_STREAMS=1 $S=16MiB,BBMM_CUDA_COPY_STREAMS=1}"
reps="${STAGING_REPS:-3}"
log="$out/staging_buffers.txt"
: > "$log"
B="$stage/bin"

echo "## gpu_bench staged" | tee -a "$log"
timeout 300 "$B/gpu_bench" staged 2>&1 | tee -a "$log"

echo "## creation (heat2d_bbmmc_cuda 512 10, BBMM_STATS=table)" | tee -a "$log"
for ((r = 1; r <= reps; r++)); do
  for s in "${settings[@]}"; do
    for per in 1 2; do
      IFS=',' read -r -a set_env <<<"$s"
      created=$(env "${set_env[@]}" BBMM_CUDA_DEVICES_PER_GPU=$per BBMM_STATS=table \
                timeout 60 "$B/heat2d_bbmmc_cuda" 512 10 2>&1 | grep -E 'created:|^create_seconds|PASSED|FAILED' | tr '\n' ' ')
      echo "CREATE setting=$s per_gpu=$per $created" | tee -a "$log"
    done
  done
done

echo "## jacobi2d_cuda n=16386, 100 steps, 1 GPU, staged" | tee -a "$log"
jreps="${STAGING_JACOBI_REPS:-2}"
for ((r = 1; r <= jreps; r++)); do
  for s in "${settings[@]}"; do
    IFS=',' read -r -a set_env <<<"$s"
    line=$(env "${set_env[@]}" timeout 120 "$B/jacobi2d_cuda" --devices 1 --n 16386 \
           --steps 100 --tiles-per-device 2 2>&1 | grep '^RESULT')
    echo "JACOBI setting=$s ${line:-RESULT missing}" | tee -a "$log"
  done
done

python3 - "$log" <<'PY'
import re
import statistics as st
import sys
create, jac = {}, {}
for line in open(sys.argv[1]):
    if line.startswith("CREATE"):
        m = re.search(r"setting=(\S+) per_gpu=(\d+)", line)
        total = re.search(r"create_seconds(?:\s+[\d.]+)*\s+([\d.]+)", line)
        staging = re.search(r"staging buffers ([\d.]+) s", line)
        if total:
            create.setdefault((m.group(1), int(m.group(2))), []).append(
                (float(total.group(1)), float(staging.group(1)) if staging else float("nan")))
    elif line.startswith("JACOBI"):
        m = re.search(r"setting=(\S+)", line)
        sec = re.search(r"seconds=([\d.]+)", line)
        ok = re.search(r"verified=(\d)", line)
        if sec:
            jac.setdefault(m.group(1), []).append((float(sec.group(1)), ok and ok.group(1) == "1"))
print("\n| setting | logical devices | runs | creation s (median) | of it staging buffers s |")
print("|---|---|---|---|---|")
for (s, per), v in sorted(create.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"| {s} | {per} | {len(v)} | {st.median(t for t, _ in v):.3f} | {st.median(b for _, b in v):.3f} |")
print("\n| setting | jacobi2d runs | seconds (median, min-max) | verified |")
print("|---|---|---|---|")
for s, v in jac.items():
    secs = [x for x, _ in v]
    print(f"| {s} | {len(v)} | {st.median(secs):.4f} ({min(secs):.4f}-{max(secs):.4f}) | {sum(ok for _, ok in v)}/{len(v)} |")
PY
