#!/usr/bin/env bash
# Out-of-core on one GPU (issue 12): the bbmmc-compiled heat2d with its data OOC_FACTOR
# (default 4) times the device memory it may use (BBMM_DEVICE_MEMORY), against the
# PCIe-bound ideal, and the same run with no limit. Builds nothing:
#   bash bench/gpu/out_of_core.sh STAGED_DIR      (bench/gpu/stage.sh's .gpu)
# OOC_N (default 16384) and OOC_STEPS (default 5) set the problem: arrays A and B of
# N x N doubles (4 GiB for 16384), each time step two phases (B from A, A from B).
#
# The ideal: the device holds a quarter of the data, so every phase must bring its source
# array in and take its destination array out (N*N*8 bytes each way; keeping a quarter of
# the data resident between phases could save at most that quarter); H2D and D2H overlap
# (full duplex), so a phase takes at least N*N*8 / min(H2D, D2H) seconds, with the
# bandwidths measured by `ceilings` in the same call. The duplex-bound ideal: both
# directions' bytes at the rate `ceilings` measures with H2D and D2H running at once
# (CEILING_DUPLEX total_bw; on 2 x H100, 2026-11-27, each direction then gets less than
# alone). Measured: the program's own time of
# kernel_heat2d ("bbmmc S s", arrays registered, computed and synchronised to the host;
# BBMM_SAMPLE_WARMUP=1: after a first call on a tiny input, so that creating the runtime,
# CUDA's driver and context start included, is left out, as in study.sh)
# minus the pinning of the host arrays at registration and their unpinning at the end
# (host_pin_seconds, host_unpin_seconds: setup and teardown costs, reported apart).
# The runs are not verified (BBMM_SAMPLE_REFERENCE=0: the sequential reference of 4 GiB
# would take minutes); run_all.sh samples verifies the same program with box-out.
# Output under $OUT (default /tmp/bbmm-ooc): logs.txt, results.txt, a table printed last.
set -uo pipefail
G="$(cd "${1:-}" 2>/dev/null && pwd)" ||
  { echo "out_of_core.sh: usage: out_of_core.sh STAGED_DIR" >&2; exit 1; }
OUT="${OUT:-/tmp/bbmm-ooc}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:${LD_LIBRARY_PATH:-}"
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
export CUDA_MODULE_LOADING=EAGER
N="${OOC_N:-16384}"
STEPS="${OOC_STEPS:-5}"
FACTOR="${OOC_FACTOR:-4}"
LOG="$OUT/logs.txt"
: >"$LOG"
BIN="$G/bin/${OOC_BIN:-heat2d_bbmmc_cuda_fast}"  # OOC_BIN: another staged build of it
[[ -x "$BIN" ]] || { echo "out_of_core.sh: no $BIN" >&2; exit 1; }

ceilings="$(timeout 60 "$G/bin/ceilings" --bytes 1GiB --reps 3 --devices 1 2>&1 | tee -a "$LOG")"
ceil="$(grep '^CEILING device=0' <<<"$ceilings")"
[[ -n "$ceil" ]] || { echo "out_of_core.sh: ceilings failed (see $LOG)" >&2; exit 1; }
h2d=$(sed -E 's/.*h2d_bw=([^ ]*).*/\1/' <<<"$ceil")
d2h=$(sed -E 's/.*d2h_bw=([^ ]*).*/\1/' <<<"$ceil")
# Both directions at once (CEILING_DUPLEX): what the link gives a run that copies both
# ways all the time; 0 when the ceilings binary predates it.
duplex=$(grep '^CEILING_DUPLEX device=0' <<<"$ceilings" | sed -E 's/.*total_bw=([^ ]*).*/\1/')
duplex=${duplex:-0}
data=$((2 * N * N * 8))
cap=$((data / FACTOR))

run() {  # run LABEL CAPACITY: one run, its RESULT line in the log
  local label=$1 capacity=$2 out
  local limit=()
  [[ $capacity -gt 0 ]] && limit=(BBMM_DEVICE_MEMORY="$capacity")
  # OOC_TRACE=1: the out-of-core run also writes its trace (trace_ooc.json, for
  # plot_trace.py: which streams overlap).
  [[ $capacity -gt 0 && "${OOC_TRACE:-0}" == 1 ]] && limit+=(BBMM_TRACE="$OUT/trace_ooc.json")
  env BBMM_SAMPLE_REFERENCE=0 BBMM_SAMPLE_WARMUP=1 BBMM_DEVICES=1 BBMM_STATS=json "${limit[@]}" \
    timeout 300 "$BIN" "$N" "$STEPS" >"$OUT/run.txt" 2>&1
  local rc=$?
  echo "+ [$label] ${limit[*]} $BIN $N $STEPS (rc=$rc)" >>"$LOG"
  cat "$OUT/run.txt" >>"$LOG"
  python3 - "$label" "$rc" "$capacity" "$h2d" "$d2h" "$N" "$STEPS" "$OUT/run.txt" "$duplex" <<'EOF'
import json, re, sys
label, rc, cap, h2d, d2h, n, steps, path, duplex = sys.argv[1:]
text = open(path).read()
m = re.search(r"bbmmc ([0-9.]+) s", text)
j = re.search(r'\{"backend".*\}', text)
tot = {}
if j:
    try:
        tot = json.loads(j.group(0)).get("total", {})
    except Exception:
        tot = {}
secs = float(m.group(1)) if m else float("nan")
pin = float(tot.get("host_pin_seconds", 0.0))
unpin = float(tot.get("host_unpin_seconds", 0.0))
n, steps = int(n), int(steps)
must = steps * 2 * n * n * 8  # per phase: the source in and the destination out, each way
ideal = must / min(float(h2d), float(d2h))
# Both directions' bytes at the rate the two directions get together.
ideal_duplex = 2 * must / float(duplex) if float(duplex) > 0 else float("nan")
t = secs - pin - unpin
print(f"RESULT label={label} rc={rc} capacity={cap} seconds={secs:.4f} pin={pin:.4f} "
      f"unpin={unpin:.4f} "
      f"timed={t:.4f} ideal={ideal:.4f} ideal_over_timed={ideal / t if t > 0 else float('nan'):.3f} "
      f"ideal_duplex={ideal_duplex:.4f} "
      f"ideal_duplex_over_timed={ideal_duplex / t if t > 0 else float('nan'):.3f} "
      f"h2d_bytes={tot.get('bytes_h2d', 0)} d2h_bytes={tot.get('bytes_d2h', 0)} "
      f"must_each_way={must} evictions={tot.get('evictions', 0)}")
print(f"ROW | {label} | {'whole device' if cap == '0' else cap} | {t:.4f} | {pin:.4f} | "
      f"{unpin:.4f} | {ideal:.4f} | "
      f"{ideal / t if t > 0 else float('nan'):.3f} | {ideal_duplex:.4f} | "
      f"{ideal_duplex / t if t > 0 else float('nan'):.3f} | {int(tot.get('bytes_h2d', 0)) >> 20} | "
      f"{int(tot.get('bytes_d2h', 0)) >> 20} | {tot.get('evictions', 0)} |")
EOF
}
{
  run "in-core (no limit)" 0
  run "out-of-core (data = ${FACTOR}x capacity)" "$cap"
} | tee -a "$LOG" >"$OUT/results.txt"

echo "heat2d N=$N, $STEPS steps, data $((data >> 20)) MiB; H2D $(python3 -c "print(f'{$h2d/1e9:.1f}')") GB/s, D2H $(python3 -c "print(f'{$d2h/1e9:.1f}')") GB/s, both at once $(python3 -c "print(f'{$duplex/1e9:.1f}')") GB/s"
echo "| run | capacity | seconds (pinning, unpinning left out) | pinning s | unpinning s | PCIe-bound ideal s | ideal / measured | duplex-bound ideal s | duplex ideal / measured | H2D MiB | D2H MiB | evictions |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
sed -n 's/^ROW //p' "$OUT/results.txt"
