#!/usr/bin/env bash
# Per-step kernel time of the bbmmc-compiled heat2d and heat3d (default-flags builds) for
# several values of BBMM_CUDA_MARCH (values of the outermost grid coordinate each thread
# runs; 1: one per thread) and of BBMM_CUDA_BLOCK (TUNE_BLOCKS, default "32,8,1"), one
# GPU; builds nothing:
#   [TUNE_BLOCKS="32,8,1 64,4,1"] [TUNE_TILES=T] [TUNE_FILL=B] [TUNE_SIZE_heat3d="384 50"]
#     bash bench/gpu/kernels/march_tune.sh STAGED_DIR [R...]
# (default R: 1 4 16 32 64). TUNE_TILES sets BBMM_TILES_PER_DEVICE (default: the sample's,
# 2), so that a GPU's tiles are as thin as on several GPUs (heat3d 384 with 8 tiles: 48
# planes, as 2 per GPU on 4 GPUs); TUNE_FILL sets BBMM_CUDA_FILL (default 8; 0 keeps R as
# given); TUNE_SIZE_<sample> overrides a sample's arguments. Prints one KERNEL line per run
# (kernel_time.py) with march=R block=X,Y,Z tiles=T fill=B appended; the runs' logs stay
# under $OUT only when they fail.
set -uo pipefail
G="$(cd "${1:-.gpu}" && pwd)" || exit 1
shift || true
marches=("$@")
[[ ${#marches[@]} -eq 0 ]] && marches=(1 4 16 32 64)
OUT="${OUT:-/tmp/bbmm-march-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
KT="$G/kernel_time.py"
[[ -f "$KT" ]] || KT="$(dirname "${BASH_SOURCE[0]}")/kernel_time.py"
declare -A size=([heat2d]="${TUNE_SIZE_heat2d:-16384 10}" [heat3d]="${TUNE_SIZE_heat3d:-640 10}")
tiles="${TUNE_TILES:-}"
fill="${TUNE_FILL:-}"
extra=()
[[ -n "$tiles" ]] && extra+=(BBMM_TILES_PER_DEVICE="$tiles")
[[ -n "$fill" ]] && extra+=(BBMM_CUDA_FILL="$fill")
for s in heat2d heat3d; do
  bin="$G/bin/${s}_bbmmc_cuda_fast"
  [[ -x "$bin" ]] || bin="$G/bin/${s}_bbmmc_cuda"
  [[ -x "$bin" ]] || { echo "march_tune.sh: no $s sample staged" >&2; continue; }
  read -r -a args <<<"${size[$s]}"
  for b in ${TUNE_BLOCKS:-32,8,1}; do
    for r in "${marches[@]}"; do
      trace="$OUT/march_${s}_$r.json"
      log="$OUT/march_${s}_${r}_${b//,/x}.log"
      if env BBMM_DEVICES=1 BBMM_SAMPLE_REFERENCE=0 BBMM_CUDA_MARCH="$r" BBMM_CUDA_BLOCK="$b" \
           "${extra[@]}" CUDA_MODULE_LOADING=EAGER BBMM_TRACE="$trace" timeout 60 "$bin" \
           "${args[@]}" > "$log" 2>&1; then
        echo "$(python3 "$KT" "$trace" "$s" "${args[@]}" | grep '^KERNEL') march=$r block=$b" \
          "tiles=${tiles:-default} fill=${fill:-default}"
        rm -f "$log"
      else
        echo "march_tune.sh: $s march=$r block=$b failed (log: $log)"
      fi
      rm -f "$trace"
    done
  done
done
