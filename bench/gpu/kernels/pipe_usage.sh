#!/usr/bin/env bash
# What bounds a kernel: Nsight Compute (ncu, where the GPU machine has it) counters of the
# hand-written and the bbmmc-compiled kernels of one sample, one launch each: DRAM
# throughput, FP64 pipe and issue slots, as percentages of their peaks. Builds nothing:
#   bash bench/gpu/kernels/pipe_usage.sh STAGED_DIR [SAMPLE [SIZE...]]   (default bscholes 67108864)
# Writes $OUT/pipe_usage_<sample>.txt (default OUT=/tmp/bbmm-pipe-usage) and prints it.
# ncu runs the kernels at base clocks (its default clock control): compare percentages, not
# times. Exit status 0 with a message when ncu is missing or may not read the counters.
set -uo pipefail
G="$(cd "${1:?usage: pipe_usage.sh STAGED_DIR [SAMPLE [SIZE...]]}" && pwd)"
shift
sample="${1:-bscholes}"
shift || true
size=("$@")
(( ${#size[@]} )) || size=(67108864)
OUT="${OUT:-/tmp/bbmm-pipe-usage}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
NCU="$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)"
out="$OUT/pipe_usage_${sample}.txt"
if [[ -z "$NCU" ]]; then
  echo "pipe_usage.sh: no ncu on this machine" | tee "$out"
  exit 0
fi
metrics=dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active
metrics+=,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active
metrics+=,sm__issue_active.avg.pct_of_peak_sustained_active
metrics+=,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,gpu__time_duration.sum
{
  echo "== $(date -u); $("$NCU" --version | tail -1); $sample ${size[*]}"
  echo "== hand-written"
  timeout 120 "$NCU" --metrics "$metrics" -c 1 \
    "$G/bin/handwritten_kernels" "$sample" "${size[@]}" --no-verify 2>&1 | tail -12
  echo "== bbmmc (the compiled sample's first kernel launches)"
  BBMM_SAMPLE_REFERENCE=0 BBMM_DEVICES=1 timeout 120 "$NCU" --metrics "$metrics" -c 2 \
    -k "regex:kernel" "$G/bin/${sample}_bbmmc_cuda_fast" "${size[@]}" 2>&1 | tail -24
} > "$out" 2>&1
cat "$out"
