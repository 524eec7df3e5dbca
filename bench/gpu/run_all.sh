#!/usr/bin/env bash
# Runs every GPU test and benchmark from a staged folder (bench/gpu/stage.sh);
# builds nothing. Writes logs.txt, gpu_bench.md and summary.md under $OUT and
# prints the summary table last.
#   bash bench/gpu/run_all.sh .gpu
set -uo pipefail
G="$(cd "${1:-.gpu}" && pwd)"
OUT="${OUT:-/tmp/bbmm-gpu-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
LOG="$OUT/logs.txt"
: > "$LOG"
summary=()
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
{ echo "== $(date -u) on $(hostname)"; nvidia-smi -L; nvidia-smi topo -m; } >> "$LOG" 2>&1

# run NAME CMD...: runs CMD, appends its output to logs.txt, records a row.
run() {
  local name="$1"; shift
  local t0=$SECONDS
  echo "== $name: $*" >> "$LOG"
  "$@" > "$OUT/.cur" 2>&1
  local rc=$?
  cat "$OUT/.cur" >> "$LOG"
  local what
  what=$(grep -E "^\[  (PASSED|FAILED)  \]|tests ran|PASSED|FAILED|ERROR SUMMARY|SKIP" "$OUT/.cur" | tail -3 | tr '\n' ' ' | cut -c1-150)
  summary+=("| $name | $rc | $((SECONDS - t0)) s | $what |")
  echo "== $name: rc=$rc" >> "$LOG"
}

have() { [[ -x "$G/bin/$1" ]]; }

run cuda_backend_test "$G/bin/cuda_backend_test"
have cuda_conformance_test && run cuda_conformance "$G/bin/cuda_conformance_test"
have cuda_fuzz_test && run cuda_fuzz env BBMM_FUZZ_TRACES=2000 "$G/bin/cuda_fuzz_test"
if command -v compute-sanitizer >/dev/null; then
  run memcheck_backend env CUDA_VISIBLE_DEVICES=0 compute-sanitizer --tool memcheck \
    --error-exitcode 1 "$G/bin/cuda_backend_test"
  run memcheck_jacobi env CUDA_VISIBLE_DEVICES=0 compute-sanitizer --tool memcheck \
    --error-exitcode 1 "$G/bin/jacobi2d_cuda" --n 258 --steps 3 --capacity auto
  have cuda_conformance_test && run memcheck_conformance env CUDA_VISIBLE_DEVICES=0 \
    compute-sanitizer --tool memcheck --error-exitcode 1 "$G/bin/cuda_conformance_test" --gtest_filter="*cuda_kernel*"
fi
for d in 1 2 4; do
  [[ $d -le $ngpu ]] || continue
  run "jacobi_${d}gpu" "$G/bin/jacobi2d_cuda" --devices "$d" --n 4098 --steps 10
  run "jacobi_${d}gpu_boxout" "$G/bin/jacobi2d_cuda" --devices "$d" --n 4098 --steps 10 \
    --capacity auto
done
run gpu_bench_all sh -c "'$G/bin/gpu_bench' > '$OUT/gpu_bench.md'; rc=\$?; cat '$OUT/gpu_bench.md'; exit \$rc"

{
  echo "| run | rc | time | result |"
  echo "|---|---|---|---|"
  printf '%s\n' "${summary[@]}"
} > "$OUT/summary.md"
rm -f "$OUT/.cur"
cat "$OUT/summary.md"
