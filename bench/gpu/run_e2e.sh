#!/usr/bin/env bash
# Runs the end-to-end suites staged by bench/gpu/stage_e2e.sh on the GPU machine; builds
# nothing. Each suite's program (its kernels compiled by bbmmc for CUDA, checked bit for
# bit against the same kernels compiled as they are) runs in the configurations of the
# ctest e2e.<name>.cuda test and more:
#   1dev     one device, 2 tiles per device
#   2dev     two devices (two GPUs where there are two, else two logical devices of GPU 0),
#            2 tiles per device, checking mode (the ctest configuration)
#   4dev     four logical devices of GPU 0, 2 tiles per device, checking mode
#   racecheck, synccheck   compute-sanitizer on 1dev (where compute-sanitizer is)
# and prints a table. Writes $OUT/e2e.log (every command and its output) and
# $OUT/e2e.md (the table).
#
#   OUT=$OUT/e2e bash .e2e/run_e2e.sh .e2e
set -uo pipefail
E="$(cd "${1:-.e2e}" && pwd)" || { echo "run_e2e.sh: no staged folder '${1:-.e2e}'" >&2; exit 2; }
OUT="${OUT:-/tmp/bbmm-e2e-out}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$E/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
log="$OUT/e2e.log"
: >"$log"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
SAN=""
for c in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer; do
  if command -v "$c" >/dev/null 2>&1; then SAN="$(command -v "$c")"; break; fi
done
if (( ngpu >= 2 )); then two="BBMM_DEVICES=2"; else two="BBMM_DEVICES=2 BBMM_CUDA_DEVICES_PER_GPU=2"; fi
configs=(
  "1dev|BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=2"
  "2dev|$two BBMM_TILES_PER_DEVICE=2 BBMM_CHECK=1"
  "4dev|BBMM_DEVICES=4 BBMM_CUDA_DEVICES_PER_GPU=4 BBMM_TILES_PER_DEVICE=2 BBMM_CHECK=1"
)
passed="verification against the sequential program: PASSED"
header="| suite | arg |"
sep="|---|---:|"
for c in "${configs[@]}"; do header+=" ${c%%|*} |"; sep+="---|"; done
[[ -n "$SAN" ]] && { header+=" racecheck | synccheck |"; sep+="---|---|"; }
rows=()
fails=0
while IFS=$'\t' read -r name arg; do
  bin="$E/bin/e2e_${name}_cuda"
  row="| $name | $arg |"
  for c in "${configs[@]}"; do
    read -r -a env_words <<<"${c#*|}"
    t0=$SECONDS
    out="$(env BBMM_BACKEND=cuda "${env_words[@]}" timeout -k 5 120 "$bin" $arg 2>&1)"
    rc=$?
    { echo "### $name ${c%%|*}: ${c#*|} $bin $arg (rc=$rc, $((SECONDS - t0)) s)"; echo "$out"; } >>"$log"
    if [[ $rc -eq 0 && "$out" == *"$passed"* ]]; then row+=" PASS |"; else row+=" FAIL (rc $rc) |"; fails=$((fails + 1)); fi
  done
  if [[ -n "$SAN" ]]; then
    for tool in racecheck synccheck; do
      out="$(env BBMM_BACKEND=cuda BBMM_DEVICES=1 BBMM_TILES_PER_DEVICE=2 timeout -k 5 300 \
        "$SAN" --tool "$tool" --error-exitcode 1 --print-limit 20 "$bin" $arg 2>&1)"
      rc=$?
      { echo "### $name $tool (rc=$rc)"; echo "$out"; } >>"$log"
      summary="$(grep -oE '(RACECHECK|ERROR) SUMMARY: [0-9]+ [a-z]+' <<<"$out" | tail -n 1)"
      if [[ $rc -eq 0 && "$out" == *"$passed"* ]]; then row+=" clean |"; else row+=" FAIL ($summary, rc $rc) |"; fails=$((fails + 1)); fi
    done
  fi
  rows+=("$row")
done <"$E/suites.tsv"
{
  echo "$header"
  echo "$sep"
  printf '%s\n' "${rows[@]}"
  echo
  echo "GPUs: $ngpu ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)); failures: $fails"
} | tee "$OUT/e2e.md"
(( fails == 0 ))
