#!/usr/bin/env bash
# Copies between GPUs issued by the destination device's worker (pull, the default) or by
# the source's (push, BBMM_CUDA_PEER_PUSH=1), on every GPU of the machine; builds nothing:
#   bash .gpu/peer_issuer.sh .gpu
# 1. push checked: cuda_backend_test's batch tests (peer_push variants among them),
#    cuda_conformance_test and cuda_fuzz_test (PEER_ISSUER_TRACES random traces, default
#    1000) with BBMM_CUDA_PEER_PUSH=1, and the bbmmc samples heat2d, heat3d, jacobi1d,
#    fdtd2d, floyd and lu at their run_all.sh medium sizes on all GPUs, 2 tiles per GPU,
#    verified against the sequential program;
# 2. pull against push, unverified (BBMM_SAMPLE_REFERENCE=0): the stencils' long runs
#    (study.sh's "long" sizes), untraced (the sample's "bbmmc S s", runtime creation
#    excluded) and traced; issue_report.py's table of the traces (run, idle, idle with
#    the next kernel not yet issued, workers blocked on other workers, issue lead).
# Writes under $OUT: peer_issuer_logs.txt, peer_issuer.md (the tables, printed last) and
# traces.tgz. Exit status 0 unless a check failed.
set -uo pipefail
G="$(cd "${1:-.gpu}" && pwd)" || { echo "peer_issuer.sh: no staged folder '${1:-.gpu}'" >&2; exit 1; }
B="$G/bin"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPORT="$G/issue_report.py"
[[ -f "$REPORT" ]] || REPORT="$here/issue_report.py"
OUT="${OUT:-/tmp/bbmm-peer-issuer}"
mkdir -p "$OUT"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}" NCCL_NVLS_ENABLE=0
LOG="$OUT/peer_issuer_logs.txt"
: > "$LOG"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
(( ngpu >= 1 )) || { echo "peer_issuer.sh: no GPU" | tee -a "$LOG"; exit 1; }
failed=0
checks=()
# check NAME CMD...: runs CMD (60 s at most), logs it, records PASS/FAIL.
check() {
  local name="$1"; shift
  echo "== $name: $*" >> "$LOG"
  if timeout 60 "$@" >> "$LOG" 2>&1; then checks+=("| $name | PASS |")
  else checks+=("| $name | FAIL (rc $?) |"); failed=1; fi
}
check backend_batch "$B/cuda_backend_test" --gtest_filter='*CudaBatchTest*:*CudaChainTest*'
check conformance_push env BBMM_CUDA_PEER_PUSH=1 "$B/cuda_conformance_test"
check fuzz_push env BBMM_CUDA_PEER_PUSH=1 BBMM_FUZZ_TRACES="${PEER_ISSUER_TRACES:-1000}" \
  "$B/cuda_fuzz_test"
declare -A medium=([heat2d]="512 20" [heat3d]="64 10" [jacobi1d]="200000 20"
                   [fdtd2d]="400 400 10" [floyd]="300" [lu]="300")
for s in heat2d heat3d jacobi1d fdtd2d floyd lu; do
  [[ -x "$B/${s}_bbmmc_cuda" ]] || continue
  # shellcheck disable=SC2086  # the arguments are words
  check "${s}_push_${ngpu}gpu" sh -c "BBMM_CUDA_PEER_PUSH=1 BBMM_DEVICES=$ngpu BBMM_CHECK=1 \
    BBMM_TILES_PER_DEVICE=2 '$B/${s}_bbmmc_cuda' ${medium[$s]} | grep -q 'sequential program: PASSED'"
done
declare -A long=([heat2d]="8192 400" [fdtd2d]="6144 6144 200" [heat3d]="384 200"
                 [jacobi1d]="67108864 200")
rows=()
traces=()
for s in heat2d fdtd2d heat3d jacobi1d; do
  [[ -x "$B/${s}_bbmmc_cuda" ]] || continue
  for mode in pull push; do
    push=0; [[ $mode == push ]] && push=1
    # shellcheck disable=SC2086
    t=$(env BBMM_CUDA_PEER_PUSH=$push BBMM_DEVICES="$ngpu" BBMM_SAMPLE_REFERENCE=0 \
        BBMM_SAMPLE_WARMUP=1 timeout 60 "$B/${s}_bbmmc_cuda" ${long[$s]} 2>&1 | tee -a "$LOG" |
        sed -n 's/.*bbmmc \([0-9.]*\) s.*/\1/p' | head -1)
    tr="$TMP/${s}_${mode}.json"
    # shellcheck disable=SC2086
    env BBMM_CUDA_PEER_PUSH=$push BBMM_DEVICES="$ngpu" BBMM_SAMPLE_REFERENCE=0 \
      BBMM_SAMPLE_WARMUP=0 BBMM_TRACE="$tr" timeout 60 "$B/${s}_bbmmc_cuda" ${long[$s]} \
      >> "$LOG" 2>&1
    [[ -s "$tr" ]] && traces+=("$tr")
    rows+=("| $s ${long[$s]} | $mode | ${t:-?} |")
  done
done
{
  echo "## Copies between GPUs: pulled or pushed ($(date -u +%F), $ngpu x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_'))"
  echo
  echo "| check (BBMM_CUDA_PEER_PUSH=1 unless named) | result |"
  echo "|---|---|"
  printf '%s\n' "${checks[@]}"
  echo
  echo "Untraced function seconds (the sample's \"bbmmc S s\"; pinning included), $ngpu GPUs:"
  echo
  echo "| sample | copies between GPUs | s |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Traced runs (issue_report.py):"
  echo
  (( ${#traces[@]} > 0 )) && python3 "$REPORT" "${traces[@]}"
} > "$OUT/peer_issuer.md"
(( ${#traces[@]} > 0 )) && tar czf "$OUT/traces.tgz" -C "$TMP" "${traces[@]##*/}"
cat "$OUT/peer_issuer.md"
exit $failed
