#!/usr/bin/env bash
# Compile-time budget of bbmmc (issue 13): compiles every PolyBench/C kernel at every
# dataset size and every input of the compiler's test corpora (golden, boxes, codegen,
# diagnostics, fuzz corpus, budget) for each target, one run at a time, and prints
#   cpu_s  wall_s  result  target  size  input
# slowest (CPU) first. cpu_s is the user + system time of bbmmc and its preprocessor, wall_s
# the elapsed time (inflated on a loaded machine). "ok" is exit status 0, "error" exit status
# 1 (a diagnosed rejection: expected for some inputs). Exits 1 when any run took longer than
# the budget (1 s of CPU time; BBMM_BUDGET_CLOCK=wall checks the elapsed time instead), hung
# (killed after BBMM_HANG_SECONDS, default 20) or crashed / hit an internal error (exit
# status 2 or a signal).
#
#   bench/polybench/compile_time.sh [POLYBENCH_DIR]
#
# POLYBENCH_DIR defaults to ../shared/polybench-4.2.1 relative to the repository root.
# Environment: BBMMC (the compiler, default build/default/bbmm-compiler/bbmmc),
# BBMM_TARGETS (default "host cuda opencl"), BBMM_SIZES (default all five),
# BBMM_BUDGET_SECONDS (default 1), BBMM_BUDGET_CLOCK (cpu or wall, default cpu),
# BBMM_HANG_SECONDS (default 20), BBMM_FILTER (an extended regex: only the inputs whose
# label, e.g. "heat-3d" or "fuzz_corpus/slow-unit-...", matches).
set -u -o pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pb=${1:-$root/../shared/polybench-4.2.1}
bbmmc=${BBMMC:-$root/build/default/bbmm-compiler/bbmmc}
targets=${BBMM_TARGETS:-host cuda opencl}
sizes=${BBMM_SIZES:-MINI SMALL MEDIUM LARGE EXTRALARGE}
budget=${BBMM_BUDGET_SECONDS:-1}
clock=${BBMM_BUDGET_CLOCK:-cpu}
hang=${BBMM_HANG_SECONDS:-20}
filter=${BBMM_FILTER:-}

if [[ ! -x $bbmmc ]]; then
  echo "compile_time.sh: no bbmmc at '$bbmmc' (build it, or set BBMMC)" >&2
  exit 2
fi
if [[ ! -f $pb/utilities/benchmark_list ]]; then
  echo "compile_time.sh: '$pb' is not PolyBench/C (no utilities/benchmark_list)" >&2
  exit 2
fi
pb=$(cd "$pb" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$tmp/rows

# run LABEL SIZE TARGET FILE [bbmmc options...]: one timed compilation, one row.
run() {
  local label=$1 size=$2 target=$3 file=$4
  shift 4
  if [[ -n $filter ]] && ! [[ $label =~ $filter ]]; then return; fi
  local rc result wall user sys
  /usr/bin/time -f '%e %U %S' -o "$tmp/time" \
    timeout -k 2 "$hang" "$bbmmc" "$file" --target="$target" -o "$tmp/out.c" "$@" \
    >/dev/null 2>"$tmp/err"
  rc=$?
  case $rc in
    0) result=ok ;;
    1) result=error ;;
    124 | 137) result=HANG ;;
    2) result=INTERNAL ;;
    *) result="CRASH($rc)" ;;
  esac
  # /usr/bin/time adds "Command exited with non-zero status N" before its line.
  read -r wall user sys < <(tail -n 1 "$tmp/time")
  printf '%s %s %s %s %s %s\n' "$(echo "$user + $sys" | bc -l)" "$wall" "$result" "$target" \
    "$size" "$label" >>"$rows"
}

while read -r rel; do
  rel=${rel#./}
  [[ -z $rel ]] && continue
  file=$pb/$rel
  dir=$(dirname "$file")
  name=$(basename "$file" .c)
  for size in $sizes; do
    for target in $targets; do
      run "$name" "$size" "$target" "$file" "-D${size}_DATASET" -DPOLYBENCH_DUMP_ARRAYS \
        -I "$pb/utilities" -I "$dir"
    done
  done
done <"$pb/utilities/benchmark_list"

for corpus in golden boxes codegen diagnostics fuzz_corpus budget; do
  for file in "$root/test/compiler/$corpus"/*; do
    case $file in
      *.c | */fuzz_corpus/*) ;;
      *) continue ;;
    esac
    # The fuzz units have no '.c' suffix, for which cc -E prints nothing: compile a copy.
    input=$file
    if [[ $file != *.c ]]; then
      input=$tmp/$(basename "$file").c
      cp "$file" "$input"
    fi
    for target in $targets; do
      run "$corpus/$(basename "$file")" - "$target" "$input"
    done
  done
done

sort -k1,1gr -k2,2gr "$rows" | awk -v budget="$budget" -v clock="$clock" '
  BEGIN {
    printf "%6s  %6s  %-8s  %-6s  %-10s  %s\n", "cpu_s", "wall_s", "result", "target", "size", "input"
  }
  {
    printf "%6.2f  %6.2f  %-8s  %-6s  %-10s  %s\n", $1, $2, $3, $4, $5, $6
    n++
    if ($3 == "ok") ok++; else if ($3 == "error") err++
    t = clock == "wall" ? $2 : $1
    if (t > budget || ($3 != "ok" && $3 != "error")) bad++
  }
  END {
    printf "%d compilations: %d ok, %d error (diagnosed), %d over %s s (%s) or hung or crashed\n",
           n, ok, err, bad, budget, clock
    exit bad > 0
  }'
