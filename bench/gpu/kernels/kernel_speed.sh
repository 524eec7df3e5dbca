#!/usr/bin/env bash
# Kernel speed of the bbmmc-compiled CUDA samples against the roofline and hand-written
# kernels (issue 11; README.md). Builds nothing; runs on one GPU (CUDA_VISIBLE_DEVICES=0
# unless set):
#   bash bench/gpu/kernels/kernel_speed.sh STAGED_DIR [SAMPLE...]
# STAGED_DIR (or its bin/) holds handwritten_kernels (handwritten_kernels_nofma optional)
# and the bbmmc-compiled samples <name>_bbmmc_cuda (or <name>_cuda, not for heat3d, whose
# heat3d_cuda is the hand-written runtime sample); lib/ is added to LD_LIBRARY_PATH;
# kernel_time.py is taken from STAGED_DIR or beside this script. SAMPLE: heat2d heat3d
# jacobi1d fdtd2d bscholes gemm (default all, in this order).
#
# Per sample, after the ceiling (handwritten_kernels --ceiling: device bandwidth, FP64 peak):
#   1. small, verified: handwritten_kernels at a small size with --verify --grid-cap 3 (so
#      that the grid-stride loops iterate), and handwritten_kernels_nofma --verify; the
#      compiled sample at the same small size with its sequential reference (PASSED);
#   2. large, timed: handwritten_kernels at the large size (LARGE below); the compiled sample
#      with BBMM_SAMPLE_REFERENCE=0 BBMM_DEVICES=1 BBMM_TRACE=..., then kernel_time.py on
#      the trace: its kernels' time per step (first step left out, like handwritten_kernels).
# Sizes (about 17 GB on the device each; README.md): KERNEL_SPEED_SIZE_<sample>="..."
# overrides one (the sample's own arguments), KERNEL_SPEED_SCALE=small runs all at 1/4 of
# the elements (a quick try); KERNEL_SPEED_VARIANT=_rN times <name>_bbmmc_cuda_fast_rN (registers
# capped at N; samples/CMakeLists.txt BBMM_SAMPLE_REGISTER_CAPS) instead. Budget: KERNEL_SPEED_BUDGET_S (default 180 s); every command
# runs under `timeout`, a step that would start past the budget is skipped and reported.
#
# Writes under $OUT (default /tmp/bbmm-kernel-speed): logs.txt (every command and its
# output), results.txt (the CEILING and KERNEL lines, a RUN line per command), and
# kernel_speed.md (the table, also printed last); KERNEL_SPEED_KEEP_TRACES=1 keeps the
# traces (trace_<sample>.json). Exit status 0 unless a verification failed or the staged
# folder is unusable.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
G="$(cd "${1:-}" 2>/dev/null && pwd)" ||
  { echo "kernel_speed.sh: usage: kernel_speed.sh STAGED_DIR [SAMPLE...] (no folder '${1:-}')" >&2
    exit 1; }
shift
OUT="${OUT:-/tmp/bbmm-kernel-speed}"
BUDGET_S="${KERNEL_SPEED_BUDGET_S:-180}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"

# Kernels are loaded when the program starts, not at their first launch (CUDA loads them
# lazily by default): gemm's and bscholes' nests run once, and their one timed step would
# otherwise include the module load.
export CUDA_MODULE_LOADING=EAGER
find_bin() {  # find_bin NAME: its path in STAGED_DIR/bin or STAGED_DIR, or nothing
  local f
  for f in "$G/bin/$1" "$G/$1"; do
    [[ -x "$f" && -f "$f" ]] && { echo "$f"; return 0; }
  done
  return 1
}
HW="$(find_bin handwritten_kernels)" ||
  { echo "kernel_speed.sh: no handwritten_kernels in $G or $G/bin" >&2; exit 1; }
HWNOFMA="$(find_bin handwritten_kernels_nofma || true)"
KT="$G/kernel_time.py"
[[ -f "$KT" ]] || KT="$here/kernel_time.py"
[[ -f "$KT" ]] || { echo "kernel_speed.sh: kernel_time.py not found" >&2; exit 1; }

samples=("$@")
[[ ${#samples[@]} -eq 0 ]] && samples=(heat2d heat3d jacobi1d fdtd2d bscholes gemm)

# Large sizes: ~17 GB of device arrays each (bscholes 8 arrays of 2.1 GB, fdtd2d 3 of
# 4.8 GB); gemm: ~1 s for a naive kernel on an H200. Small: odd sizes, verified.
declare -A LARGE=(
  [heat2d]="32768 20" [heat3d]="1024 20" [jacobi1d]="1073741824 20"
  [fdtd2d]="24576 24576 20" [bscholes]="268435456" [gemm]="12288 12288 12288")
declare -A QUICK=(
  [heat2d]="16384 20" [heat3d]="640 20" [jacobi1d]="268435456 20"
  [fdtd2d]="12288 12288 20" [bscholes]="67108864" [gemm]="6144 6144 6144")
declare -A SMALL=(
  [heat2d]="301 5" [heat3d]="45 4" [jacobi1d]="100003 5"
  [fdtd2d]="203 157 5" [bscholes]="100003" [gemm]="203 157 131")
for s in "${samples[@]}"; do
  [[ -n "${LARGE[$s]:-}" ]] ||
    { echo "kernel_speed.sh: unknown sample '$s' (heat2d heat3d jacobi1d fdtd2d bscholes gemm)" >&2
      exit 1; }
done

LOG="$OUT/logs.txt"
RES="$OUT/results.txt"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
: > "$LOG"
: > "$RES"
start=$SECONDS
{
  echo "== $(date -u) on $(hostname); samples: ${samples[*]}; budget $BUDGET_S s"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  nproc; free -g
} >> "$LOG" 2>&1
echo "kernel_speed.sh: ${samples[*]}; budget $BUDGET_S s; output in $OUT"

# run NAME LIMIT_S CMD...: runs CMD under timeout (capped by the budget left), appends its
# output to the log and its CEILING/KERNEL lines to results.txt; its output stays in
# $TMP/NAME. Returns CMD's exit status (125 when skipped for the budget).
run() {
  local name="$1" limit="$2"; shift 2
  local left=$((BUDGET_S - (SECONDS - start)))
  if (( left < 5 )); then
    printf '  %-26s SKIPPED (time budget)\n' "$name"
    printf 'RUN\t%s\tskip\t0\ttime budget\n' "$name" >> "$RES"
    echo "== $name: SKIPPED (time budget)" >> "$LOG"
    : > "$TMP/$name"
    return 125
  fi
  (( limit > left )) && limit=$left
  printf '  %-26s at %3d s ... ' "$name" "$((SECONDS - start))"
  echo "== $name (limit $limit s): $*" >> "$LOG"
  local t0=$SECONDS
  timeout -k 10 "$limit" "$@" > "$TMP/$name" 2>&1
  local rc=$?
  cat "$TMP/$name" >> "$LOG"
  echo "== $name: rc=$rc in $((SECONDS - t0)) s" >> "$LOG"
  printf 'RUN\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" >> "$RES"
  grep -E '^(CEILING|KERNEL) ' "$TMP/$name" >> "$RES"
  if (( rc == 124 || rc == 137 )); then
    echo "TIMEOUT after $limit s"
  else
    echo "rc=$rc, $((SECONDS - t0)) s"
  fi
  return $rc
}

failed=0
check() { (( $1 == 0 || $1 == 125 )) || failed=1; }  # a verification's status; 125: skipped
run ceiling 60 "$HW" --ceiling --bytes 2GiB
for s in "${samples[@]}"; do
  large="${LARGE[$s]}"
  [[ "${KERNEL_SPEED_SCALE:-}" == small ]] && large="${QUICK[$s]}"
  var="KERNEL_SPEED_SIZE_$s"
  [[ -n "${!var:-}" ]] && large="${!var}"
  small="${SMALL[$s]}"
  echo "$s: large $large, small $small"
  echo "SAMPLE $s large=${large// /x} small=${small// /x}" >> "$RES"
  read -r -a L <<<"$large"
  read -r -a S <<<"$small"
  run "${s}_hand_verify" 60 "$HW" "$s" "${S[@]}" --verify --grid-cap 3
  check $?
  if [[ -n "$HWNOFMA" ]]; then
    run "${s}_hand_nofma_verify" 60 "$HWNOFMA" "$s" "${S[@]}" --verify
    check $?
  fi
  run "${s}_hand" 90 "$HW" "$s" "${L[@]}" --no-verify
  # The default-flags build (<name>_bbmmc_cuda_fast) when staged: the verification build
  # <name>_bbmmc_cuda has its kernels compiled with -fmad=false.
  # KERNEL_SPEED_VARIANT=_rN: the build with registers capped at N (samples/CMakeLists.txt,
  # BBMM_SAMPLE_REGISTER_CAPS), nothing else.
  if [[ -n "${KERNEL_SPEED_VARIANT:-}" ]]; then
    bin="$(find_bin "${s}_bbmmc_cuda_fast${KERNEL_SPEED_VARIANT}" || true)"
  else
    bin="$(find_bin "${s}_bbmmc_cuda_fast" || find_bin "${s}_bbmmc_cuda" ||
           { [[ $s != heat3d ]] && find_bin "${s}_cuda"; } || true)"
  fi
  if [[ -z "$bin" ]]; then
    echo "  (no ${s}_bbmmc_cuda staged: no bbmmc columns)"
    printf 'RUN\t%s\tmissing\t0\tno %s_bbmmc_cuda\n' "${s}_bbmmc" "$s" >> "$RES"
    continue
  fi
  run "${s}_bbmmc_verify" 60 env BBMM_DEVICES=1 "$bin" "${S[@]}"
  rc=$?
  if (( rc == 0 )) &&
     grep -q "verification against the sequential program: PASSED" "$TMP/${s}_bbmmc_verify"; then
    echo "VERIFIED sample=$s impl=bbmmc size=${small// /x}" >> "$RES"
  else
    check $(( rc == 0 ? 2 : rc ))
  fi
  if ! grep -qa BBMM_SAMPLE_REFERENCE "$bin"; then
    # Built before samples/common/sample.h knew the switch: the large run would start with
    # the sequential reference (minutes).
    echo "  ($bin does not know BBMM_SAMPLE_REFERENCE=0: rebuild it; large run skipped)"
    printf 'RUN\t%s\tskip\t0\tstale binary\n' "${s}_bbmmc" >> "$RES"
    continue
  fi
  trace="$TMP/trace_$s.json"
  [[ "${KERNEL_SPEED_KEEP_TRACES:-0}" == 1 ]] && trace="$OUT/trace_$s.json"
  rm -f "$trace"
  if run "${s}_bbmmc" 150 env BBMM_DEVICES=1 BBMM_SAMPLE_REFERENCE=0 BBMM_TRACE="$trace" \
       "$bin" "${L[@]}"; then
    run "${s}_bbmmc_kernel_time" 30 python3 "$KT" "$trace" "$s" "${L[@]}"
  fi
done
echo "kernel_speed.sh: done in $((SECONDS - start)) s" | tee -a "$LOG"

# The table, from results.txt.
python3 - "$RES" > "$OUT/kernel_speed.md" <<'EOF'
import sys

ceiling, kernels, small, verified, runs = {}, {}, {}, set(), {}
order = []
current = ""  # the RUN whose output lines follow
for line in open(sys.argv[1], encoding="utf-8"):
    parts = line.rstrip("\n").split("\t") if line.startswith("RUN\t") else line.split()
    if not parts:
        continue
    if parts[0] == "RUN":
        runs[parts[1]] = parts[2]
        current = parts[1]
        continue
    kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
    if parts[0] == "CEILING" and not ceiling:
        ceiling = kv
    elif parts[0] == "SAMPLE":
        order.append(parts[1])
        small[parts[1]] = kv.get("small", "")
        kv["large"] = kv.get("large", "")
        kernels.setdefault(parts[1], {})["size"] = kv["large"]
    elif parts[0] == "KERNEL" and current in (kv.get("sample", "") + "_hand",
                                              kv.get("sample", "") + "_bbmmc_kernel_time"):
        kernels.setdefault(kv["sample"], {})[kv["impl"]] = kv  # the large runs only
    elif parts[0] == "VERIFIED":
        verified.add((kv["sample"], kv["impl"]))

dev_bw = float(ceiling.get("dev_bw", 0) or 0)
fp64 = float(ceiling.get("fp64_peak", 0) or 0)


def fnum(x, fmt="%.4g"):
    return fmt % x if x is not None else "-"


def frac(k, sample):
    """Fraction of the roofline: bytes/s over dev_bw; gemm: FLOP/s over the FP64 peak."""
    if not k:
        return None
    t = float(k["seconds_per_step"])
    if sample == "gemm":
        return float(k["flops_per_step"]) / t / fp64 if fp64 > 0 else None
    return float(k["bytes_per_step"]) / t / dev_bw if dev_bw > 0 else None


def verdict(names, passed):
    """'yes', 'not run' (missing or skipped) or 'NO' for the verification runs `names`."""
    status = [runs.get(n) for n in names if n in runs]
    if not status or any(x in ("skip", "missing") for x in status):
        return "not run"
    return "yes" if passed and all(x == "0" for x in status) else "NO"


print("Kernel speed, one GPU: time per step of the kernels (first step left out); "
      "device bandwidth %.1f GB/s (copy kernel, read+write), FP64 peak %.1f TFLOPS "
      "(no tensor cores)." % (dev_bw / 1e9, fp64 / 1e12))
print()
print("| sample | size | bbmmc s/step | handwritten s/step | bbmmc speed / handwritten | "
      "bbmmc of roofline | handwritten of roofline | verified (small size) | targets |")
print("|---|---|---|---|---|---|---|---|---|")
for s in order:
    k = kernels.get(s, {})
    b, h = k.get("bbmmc"), k.get("handwritten")
    tb = float(b["seconds_per_step"]) if b else None
    th = float(h["seconds_per_step"]) if h else None
    ratio = th / tb if tb and th else None
    fb, fh = frac(b, s), frac(h, s)
    unit = " (FP64)" if s == "gemm" else ""
    v = "bbmmc %s, hand %s" % (
        verdict([s + "_bbmmc_verify"], (s, "bbmmc") in verified),
        verdict([s + "_hand_verify", s + "_hand_nofma_verify"], True))
    goals = []
    if ratio is not None:
        goals.append(("%s >= 0.95 hand" % ("met" if ratio >= 0.95 else "MISSED")))
    if fb is not None and s != "gemm":
        goals.append(("%s >= 0.70 roofline" % ("met" if fb >= 0.70 else "MISSED")))
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        s, k.get("size", ""), fnum(tb), fnum(th), fnum(ratio, "%.3f"),
        fnum(fb, "%.3f") + (unit if fb is not None else ""),
        fnum(fh, "%.3f") + (unit if fh is not None else ""), v, "; ".join(goals) or "-"))
print()
print("Roofline: bytes_per_step (each element a phase reads + each it writes, once, 8 B) "
      "over the device bandwidth; gemm: operations of the C source (3 per i,j,k) per second "
      "over the FP64 peak. Speed ratio: handwritten s/step over bbmmc s/step (>1: bbmmc "
      "faster). Targets: bbmmc >= 0.70 of the roofline (stencils, bscholes) and >= 0.95 of "
      "the hand-written kernels' speed.")
EOF
echo
cat "$OUT/kernel_speed.md"
exit $failed
