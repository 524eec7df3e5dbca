#!/usr/bin/env bash
# When each GPU starts (2026-11-26: on 4 x H200 the GPUs' first read-ins ran one after the
# other, docs/performance.md "four H200s"): heat3d_bbmmc_cuda 384 10 and heat2d_bbmmc_cuda
# 4096 10 on every GPU with BBMM_TRACE, under each copy-path setting, and the first read-in
# and first kernel of every device (first_starts.py). From a staged folder, builds nothing:
#   bash .gpu/start_order.sh .gpu
# Writes $OUT/start_order.txt (also printed) and $OUT/start_<sample>_<setting>.json.gz.
set -uo pipefail
G="$(cd "${1:-.gpu}" && pwd)" || { echo "start_order.sh: no staged folder" >&2; exit 1; }
OUT="${OUT:-/tmp/bbmm-gpu-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
settings=("default|X=1" "engine|BBMM_CUDA_COPY_KERNEL=0" "peer_kernel|BBMM_CUDA_PEER_COPY_KERNEL=1"
          "1stream|BBMM_CUDA_COPY_STREAMS=1" "staged|BBMM_PEER_ACCESS=0")
{
  echo "start_order.sh: $ngpu GPU(s), $(date -u)"
  for sample in "heat3d 384 10" "heat2d 4096 10"; do
    read -r name args <<<"$sample"
    for s in "${settings[@]}"; do
      label="${s%%|*}" env_set="${s#*|}"
      trace="$OUT/start_${name}_${label}.json"
      # shellcheck disable=SC2086  # the arguments are words
      out=$(env $env_set BBMM_BACKEND=cuda BBMM_DEVICES="$ngpu" BBMM_TRACE="$trace" \
              BBMM_CUDA_SLOW_ISSUE_US=300 timeout 120 "$G/bin/${name}_bbmmc_cuda" $args 2>&1)
      echo "== $name $args, $label ($env_set): $(grep -o 'verification against the sequential program: [A-Z]*' <<<"$out")"
      grep "bbmm: cuda worker" <<<"$out" | head -8
      python3 "$G/first_starts.py" "$trace"
      gzip -9f "$trace"
    done
  done
} 2>&1 | tee "$OUT/start_order.txt"
