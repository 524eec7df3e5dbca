#!/usr/bin/env bash
# Which loop structure for bbmmc's CUDA kernels, and what limits them (issue 11): times
# stencil_variants' heat2d / heat3d kernel shapes over block shapes and march lengths, then
# profiles a few kernels with Nsight Compute (ncu, when it is installed and can read the
# counters): the stencil variants, and the bbmmc-compiled bscholes against the hand-written
# one. Builds nothing:
#   bash bench/gpu/kernels/variants.sh STAGED_DIR      (STAGED_DIR: bench/gpu/stage.sh's .gpu)
# Writes under $OUT (default /tmp/bbmm-variants): variants.txt (the VARIANT lines),
# ncu_*.txt (the profiles), logs.txt; prints a table of the variants last.
# VARIANTS_BUDGET_S (default 420) bounds the whole; every command runs under `timeout`.
set -uo pipefail
G="$(cd "${1:-}" 2>/dev/null && pwd)" ||
  { echo "variants.sh: usage: variants.sh STAGED_DIR" >&2; exit 1; }
OUT="${OUT:-/tmp/bbmm-variants}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
export CUDA_MODULE_LOADING=EAGER
BUDGET_S="${VARIANTS_BUDGET_S:-420}"
start=$SECONDS
SV="$G/bin/stencil_variants"
LOG="$OUT/logs.txt"
: >"$LOG"
: >"$OUT/variants.txt"

run() {  # run SECONDS CMD...: under timeout, output to the log; skipped past the budget
  local t=$1
  shift
  if (( SECONDS - start + t > BUDGET_S )); then
    echo "SKIPPED (budget) $*" | tee -a "$LOG"
    return 1
  fi
  echo "+ $*" >>"$LOG"
  timeout "$t" "$@" >>"$LOG.cur" 2>&1
  local rc=$?
  cat "$LOG.cur" >>"$LOG"
  grep '^VARIANT' "$LOG.cur" >>"$OUT/variants.txt"
  rm -f "$LOG.cur"
  echo "rc=$rc" >>"$LOG"
  return $rc
}

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1

# 1. Timing sweep (the sizes of kernel_speed.sh's LARGE: heat2d 32768^2, heat3d 1024^3);
# VARIANTS_SWEEP=0 leaves it out.
[[ "${VARIANTS_SWEEP:-1}" == 0 ]] || for blk in 32x8 64x4 128x2; do
  for m in 16 32; do
    run 60 "$SV" heat2d 32768 10 --block "$blk" --march "$m"
  done
done
[[ "${VARIANTS_SWEEP:-1}" == 0 ]] || for blk in 32x8 64x4 32x4; do
  for m in 16 32; do
    run 90 "$SV" heat3d 1024 10 --block "$blk" --march "$m"
  done
done

# 2. Profiles (smaller sizes: ncu replays each kernel once per counter pass).
NCU="$(command -v ncu || true)"
if [[ -z "$NCU" ]]; then
  for f in /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu; do
    [[ -x "$f" ]] && NCU="$f" && break
  done
fi
SECTIONS=(--section SpeedOfLight --section Occupancy --section LaunchStats
          --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis)
if [[ -n "$NCU" ]]; then
  run 150 "$NCU" --clock-control none "${SECTIONS[@]}" -k 'regex:h3_(gen|rot|hand|inner)' \
    -o "$OUT/ncu_heat3d" -f "$SV" heat3d 512 1 --block 32x8 --march 32
  "$NCU" -i "$OUT/ncu_heat3d.ncu-rep" --page details >"$OUT/ncu_heat3d.txt" 2>&1
  export BBMM_SAMPLE_REFERENCE=0 BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=1
  run 120 "$NCU" --clock-control none "${SECTIONS[@]}" -k 'regex:bscholes' \
    -o "$OUT/ncu_bscholes_bbmmc" -f "$G/bin/bscholes_bbmmc_cuda_fast" 67108864
  "$NCU" -i "$OUT/ncu_bscholes_bbmmc.ncu-rep" --page details >"$OUT/ncu_bscholes_bbmmc.txt" 2>&1
  run 120 "$NCU" --clock-control none "${SECTIONS[@]}" --kernel-name-base demangled \
    -k 'regex:BscholesOption' -c 1 \
    -o "$OUT/ncu_bscholes_hand" -f "$G/bin/handwritten_kernels" bscholes 67108864 1 --no-verify
  "$NCU" -i "$OUT/ncu_bscholes_hand.ncu-rep" --page details >"$OUT/ncu_bscholes_hand.txt" 2>&1
  rm -f "$OUT"/*.ncu-rep
else
  echo "variants.sh: no ncu found: profiles skipped" | tee -a "$LOG"
fi

echo "| sample | block | march | variant | ms | TB/s (roofline bytes) | max rel diff vs gen |"
echo "|---|---|---|---|---|---|---|"
sed -E 's/.*sample=([^ ]*) n=[^ ]* variant=([^ ]*) block=([^ ]*) march=([^ ]*) seconds=([^ ]*) best=[^ ]* tbps=([^ ]*) max_rel_diff=([^ ]*).*/| \1 | \3 | \4 | \2 | \5 | \6 | \7 |/' \
  "$OUT/variants.txt" | awk -F'|' '{ $6 = sprintf(" %.3f ", $6 * 1000); print }' OFS='|'
echo "variants.sh: done in $((SECONDS - start)) s"
